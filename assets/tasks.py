"""Tasks: graph-walk and program tasks per environment, and the verifier audit that gates them."""

import dagster as dg

from assets.build import tool_graphs, tool_tests
from assets.partitions import category_partitions
from assets.results import depth_metadata, gate_result, progress_logger, shortfall_metadata, stage_result
from factory.pipeline.artifacts import CANDIDATES_PARQUET, TASKS_PARQUET
from factory.pipeline.registry import TASKS, VERIFIERS
from factory.pipeline.tasks.tasks import PHRASING_COUNTS, category_tasks, synthesize_category_tasks
from factory.pipeline.tasks.verifiers import audit_category_tasks, audit_check
from factory.tasks.depth import depth_report
from factory.tasks.difficulty import KNOBS, DifficultyError, Knobs, knobs_for, shortfall_summary
from resources import SandboxResource, StoreResource

TASKS_GROUP = {"group_name": TASKS.group, "partitions_def": category_partitions}


class TaskConfig(dg.Config):
    """Tasks generated per environment before filtering (empty: FACTORY_TASKS_PER_ENV, else 20), the seed of
    walks and programs, and the difficulty: a preset (easy, medium, hard; empty: FACTORY_DIFFICULTY, else
    medium) with any knob set on top (each a floor per task: gold calls, pages of one listing, constraints,
    obscured names, near-miss rows, refused calls to recover from)."""

    n: int | None = None
    seed: int = 0
    difficulty: str | None = None
    chain_length: int | None = None
    pages: int | None = None
    constraints: int | None = None
    obscured: bool | None = None
    distractors: int | None = None
    recovery: int | None = None

    def knobs(self) -> Knobs:
        try:
            return knobs_for(self.difficulty, **{k: getattr(self, k) for k in KNOBS})
        except DifficultyError as e:
            raise dg.Failure(f"tasks config: {e}") from e


class SplitConfig(dg.Config):
    """Environments per category held out for the arena (never trained on), and the sampling seed."""

    arena_per_category: int = 5
    seed: int = 0


@dg.asset(deps=[tool_tests, tool_graphs], code_version=TASKS.code_version, kinds={"parquet"}, **TASKS_GROUP)
def tasks(
    context: dg.AssetExecutionContext, config: TaskConfig, store: StoreResource, sandbox: SandboxResource
) -> dg.MaterializeResult:
    """Tasks: weighted walks over each tool graph, executed on the database, and programs with loops and
    aggregations; only tasks that execute, change what they claim and replay consistently survive."""
    knobs = config.knobs()
    run = synthesize_category_tasks(
        store.get(),
        context.partition_key,
        pool=sandbox.get(),
        n=config.n,
        seed=config.seed,
        knobs=knobs,
        progress=progress_logger(context),
    )
    made = category_tasks(store.get(), TASKS, context.partition_key, CANDIDATES_PARQUET)
    depth = depth_metadata(depth_report(made)) | shortfall_metadata(shortfall_summary(made, knobs), knobs)
    columns = ["generated", "candidates", "graph", "program", "filter_drops", *PHRASING_COUNTS]
    return stage_result(TASKS, run, columns, extra=depth)


@dg.asset(
    deps=[tasks],
    code_version=VERIFIERS.code_version,
    kinds={"parquet"},
    check_specs=[dg.AssetCheckSpec("verifier_audit", asset=VERIFIERS.name, blocking=True)],
    **TASKS_GROUP,
)
def verifiers(
    context: dg.AssetExecutionContext, config: SplitConfig, store: StoreResource, sandbox: SandboxResource
) -> dg.MaterializeResult:
    """Verifiers: every candidate's verifier must pass the gold, fail a no-op, an answer-only run and
    mutated end states, and give the same verdict on replay. Kept tasks get their split (train or arena)."""
    run = audit_category_tasks(
        store.get(),
        context.partition_key,
        pool=sandbox.get(),
        seed=config.seed,
        arena_per_category=config.arena_per_category,
        progress=progress_logger(context),
    )
    check = gate_result("verifier_audit", audit_check(store.get(), run.manifest))
    depth = depth_metadata(depth_report(category_tasks(store.get(), VERIFIERS, context.partition_key, TASKS_PARQUET)))
    columns = ["candidates", "tasks", "audit_drops", "mutation_tasks"]
    return stage_result(VERIFIERS, run, columns, [check], extra=depth)
