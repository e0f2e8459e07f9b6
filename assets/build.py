"""Build: per category, from topics to gated environments and their tool graphs.

Each asset is one stage of the offline (or LLM) environment generator; each runs per taxonomy
category and reuses the environments whose inputs did not change.
"""

import dagster as dg

from assets.discovery import taxonomy, topics
from assets.partitions import category_partitions
from assets.results import progress_logger, stage_result
from factory import building
from resources import SandboxResource, StoreResource

BUILD = {"group_name": "build", "partitions_def": category_partitions}


class DatasetConfig(dg.Config):
    """Seed for the procedural data generator and the state backend of new environments."""

    seed: int = 0
    backend: str = "sqlite"


@dg.asset(deps=[topics, taxonomy], code_version=building.DATASETS_CODE_VERSION, kinds={"json"}, **BUILD)
def mined_datasets(
    context: dg.AssetExecutionContext, config: DatasetConfig, store: StoreResource
) -> dg.MaterializeResult:
    """Mined datasets: for each topic of the category, its entities (inferred from the tool schemas or
    taken from OpenAPI) and seeded rows consistent across foreign keys."""
    run = building.mine_datasets(
        store.get(), context.partition_key, seed=config.seed, backend=config.backend, progress=progress_logger(context)
    )
    return stage_result(run, ["entities", "rows", "tools_mapped", "tools_unmapped"])


@dg.asset(deps=[mined_datasets], code_version=building.DATABASES_CODE_VERSION, kinds={"sqlite"}, **BUILD)
def databases(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
    """Databases: the schema (keys, foreign keys, CHECKs) and seed state of each environment."""
    run = building.build_databases(store.get(), context.partition_key, progress=progress_logger(context))
    return stage_result(run, ["tables", "rows", "bytes"])


@dg.asset(deps=[mined_datasets], code_version=building.TOOL_CODE_CODE_VERSION, kinds={"python"}, **BUILD)
def tool_code(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
    """Tool code: `tools.py` per environment, one function per tool the source offers."""
    run = building.write_tool_code(store.get(), context.partition_key, progress=progress_logger(context))
    return stage_result(run, ["tools", "lines"])


@dg.asset(
    deps=[databases, tool_code],
    code_version=building.TOOL_TESTS_CODE_VERSION,
    kinds={"python"},
    check_specs=[dg.AssetCheckSpec("tool_test_gate", asset="tool_tests", blocking=True)],
    **BUILD,
)
def tool_tests(
    context: dg.AssetExecutionContext, store: StoreResource, sandbox: SandboxResource
) -> dg.MaterializeResult:
    """Tool tests and the gate: generated cases run in the sandbox; a tool is kept above 0.5 accuracy,
    an environment when its code compiles and at least one tested tool is kept. The kept
    environments are the bundles every later stage uses."""
    with sandbox.pool():
        run = building.gate_tool_tests(store.get(), context.partition_key, progress=progress_logger(context))
    gate = building.gate_check(run.manifest)
    check = dg.AssetCheckResult(
        check_name="tool_test_gate", passed=gate.passed, metadata={"detail": dg.MetadataValue.md(gate.detail)}
    )
    return stage_result(run, ["tools", "tools_kept", "tests", "tests_passed"], [check])


@dg.asset(deps=[tool_tests], code_version=building.TOOL_GRAPHS_CODE_VERSION, kinds={"networkx"}, **BUILD)
def tool_graphs(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
    """Tool graphs: which tool feeds which (strong 3 / weak 2 / independent 1), the map that
    graph-walk tasks follow."""
    run = building.build_tool_graphs(store.get(), context.partition_key, progress=progress_logger(context))
    return stage_result(run, ["tools", "strong_edges", "weak_edges"])
