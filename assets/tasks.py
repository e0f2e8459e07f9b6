"""Tasks: graph-walk and program tasks per environment, and the verifier audit that gates them."""

import os

import dagster as dg

from assets.build import tool_graphs, tool_tests
from assets.partitions import category_partitions
from assets.results import progress_logger, stage_result
from factory.tasks import stages
from resources import SandboxResource, StoreResource

TASKS = {"group_name": "tasks", "partitions_def": category_partitions}


class TaskConfig(dg.Config):
    """How many tasks to generate per environment (before filtering), and the seed of walks and programs."""

    n: int = int(os.environ.get("FACTORY_TASKS_PER_ENV", "20"))
    seed: int = 0


class SplitConfig(dg.Config):
    """Environments per category held out for the arena (never trained on), and the sampling seed."""

    arena_per_category: int = 5
    seed: int = 0


@dg.asset(deps=[tool_tests, tool_graphs], code_version=stages.TASKS_CODE_VERSION, kinds={"parquet"}, **TASKS)
def tasks(
    context: dg.AssetExecutionContext, config: TaskConfig, store: StoreResource, sandbox: SandboxResource
) -> dg.MaterializeResult:
    """Tasks: weighted walks over each tool graph, executed on the database, and programs with loops and
    aggregations; only tasks that execute, change what they claim and replay consistently survive."""
    with sandbox.pool():
        run = stages.synthesize_category_tasks(
            store.get(), context.partition_key, n=config.n, seed=config.seed, progress=progress_logger(context)
        )
    return stage_result(run, ["generated", "candidates", "graph", "program", "filter_drops"])


@dg.asset(
    deps=[tasks],
    code_version=stages.VERIFIERS_CODE_VERSION,
    kinds={"parquet"},
    check_specs=[dg.AssetCheckSpec("verifier_audit", asset="verifiers", blocking=True)],
    **TASKS,
)
def verifiers(
    context: dg.AssetExecutionContext, config: SplitConfig, store: StoreResource, sandbox: SandboxResource
) -> dg.MaterializeResult:
    """Verifiers: every candidate's verifier must pass the gold, fail a no-op, an answer-only run and
    mutated end states, and give the same verdict on replay. Kept tasks get their split (train or arena)."""
    with sandbox.pool():
        run = stages.audit_category_tasks(
            store.get(),
            context.partition_key,
            seed=config.seed,
            arena_per_category=config.arena_per_category,
            progress=progress_logger(context),
        )
    gate = stages.audit_check(store.get(), run.manifest)
    check = dg.AssetCheckResult(
        check_name="verifier_audit", passed=gate.passed, metadata={"detail": dg.MetadataValue.md(gate.detail)}
    )
    return stage_result(run, ["candidates", "tasks", "audit_drops", "mutation_tasks"], [check])
