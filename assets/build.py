"""Build: per category, from topics to gated environments and their tool graphs.

Each asset is one stage of the offline environment generator; each runs per taxonomy category and
reuses the environments whose inputs and stage code did not change.
"""

import dagster as dg

from assets.discovery import taxonomy, topics
from assets.partitions import category_partitions
from assets.results import gate_result, progress_logger, stage_result
from factory.models import StateBackend
from factory.pipeline.build.databases import build_databases
from factory.pipeline.build.mined_datasets import mine_datasets
from factory.pipeline.build.tool_code import write_tool_code
from factory.pipeline.build.tool_graphs import build_tool_graphs
from factory.pipeline.build.tool_tests import gate_check, gate_tool_tests
from factory.pipeline.registry import DATABASES, MINED_DATASETS, TOOL_CODE, TOOL_GRAPHS, TOOL_TESTS
from resources import SandboxResource, StoreResource

BUILD = {"group_name": MINED_DATASETS.group, "partitions_def": category_partitions}


class DatasetConfig(dg.Config):
    """Seed and row-count scale of the procedural data generator, and the state backend of new environments.

    `scale` None means $FACTORY_SEED_SCALE when the run starts, else 1.0."""

    seed: int = 0
    backend: StateBackend = "sqlite"
    scale: float | None = None


@dg.asset(deps=[topics, taxonomy], code_version=MINED_DATASETS.code_version, kinds={"json"}, **BUILD)
def mined_datasets(
    context: dg.AssetExecutionContext, config: DatasetConfig, store: StoreResource
) -> dg.MaterializeResult:
    """Mined datasets: for each topic of the category, its entities (inferred from the tool schemas or
    taken from OpenAPI) and seeded rows consistent across foreign keys."""
    run = mine_datasets(
        store.get(),
        context.partition_key,
        seed=config.seed,
        backend=config.backend,
        scale=config.scale,
        progress=progress_logger(context),
    )
    return stage_result(MINED_DATASETS, run, ["entities", "rows", "tools_mapped", "tools_unmapped"])


@dg.asset(deps=[mined_datasets], code_version=DATABASES.code_version, kinds={"sqlite"}, **BUILD)
def databases(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
    """Databases: the schema (keys, foreign keys, CHECKs) and seed state of each environment."""
    run = build_databases(store.get(), context.partition_key, progress=progress_logger(context))
    return stage_result(DATABASES, run, ["tables", "rows", "bytes"])


@dg.asset(deps=[mined_datasets], code_version=TOOL_CODE.code_version, kinds={"python"}, **BUILD)
def tool_code(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
    """Tool code: `tools.py` per environment, one function per tool the source offers."""
    run = write_tool_code(store.get(), context.partition_key, progress=progress_logger(context))
    return stage_result(TOOL_CODE, run, ["tools", "lines"])


@dg.asset(
    deps=[databases, tool_code],
    code_version=TOOL_TESTS.code_version,
    kinds={"python"},
    check_specs=[dg.AssetCheckSpec("tool_test_gate", asset=TOOL_TESTS.name, blocking=True)],
    **BUILD,
)
def tool_tests(
    context: dg.AssetExecutionContext, store: StoreResource, sandbox: SandboxResource
) -> dg.MaterializeResult:
    """Tool tests and the gate: generated cases run in the sandbox; a tool is kept above 0.5 accuracy,
    an environment when its code compiles and at least one tested tool is kept. The kept
    environments are the bundles every later stage uses."""
    run = gate_tool_tests(store.get(), context.partition_key, pool=sandbox.get(), progress=progress_logger(context))
    check = gate_result("tool_test_gate", gate_check(run.manifest))
    return stage_result(TOOL_TESTS, run, ["tools", "tools_kept", "tests", "tests_passed"], [check])


@dg.asset(deps=[tool_tests], code_version=TOOL_GRAPHS.code_version, kinds={"networkx"}, **BUILD)
def tool_graphs(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
    """Tool graphs: which tool feeds which (strong 3 / weak 2 / independent 1), the map that
    graph-walk tasks follow."""
    run = build_tool_graphs(store.get(), context.partition_key, progress=progress_logger(context))
    return stage_result(TOOL_GRAPHS, run, ["tools", "strong_edges", "weak_edges"])
