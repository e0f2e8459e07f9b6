"""Tasks: weighted walks over each tool graph, executed on the database, and programs with loops and
aggregations; only tasks that execute, change what they claim and replay consistently survive.

`artifacts/tasks/<category>/<env>/candidates.parquet` holds the tasks that passed the solvability
filter, `dropped.json` says why the others went.
"""

from __future__ import annotations

from pathlib import Path

from factory.environment import env_number
from factory.envs.bundle import Bundle
from factory.models import Task
from factory.pipeline.artifacts import CANDIDATES_PARQUET, DROPPED_JSON, bundles
from factory.pipeline.registry import TASKS, TOOL_GRAPHS, TOOL_TESTS, Stage
from factory.pipeline.runner import (
    EnvOutcome,
    EnvWork,
    Progress,
    StageRun,
    drop_counts,
    env_dir,
    env_input_hash,
    manifest_hashes,
    require_manifest,
    run_stage,
)
from factory.sandbox import SandboxPool
from factory.store import Store, write_json_atomic
from factory.tasks.difficulty import Knobs, knobs_for
from factory.tasks.phrasing import phrasing_report
from factory.tasks.synthesize import nothing_kept, synthesize_tasks
from factory.tasks.table import read_tasks, write_tasks

TASKS_PER_ENV_VARIABLE = "FACTORY_TASKS_PER_ENV"
DEFAULT_TASKS_PER_ENV = 20
# How the questions read, per environment (factory/tasks/phrasing.py): distinct templates, questions naming a
# raw field, questions with a reference nothing defines.
PHRASING_COUNTS = ("distinct_templates", "raw_field_names", "undefined_references")


def tasks_per_env(n: int | None) -> int:
    """`n`, else FACTORY_TASKS_PER_ENV (read when called), else 20."""
    return n if n is not None else env_number(TASKS_PER_ENV_VARIABLE, DEFAULT_TASKS_PER_ENV, int, "a whole number")


def synthesize_category_tasks(
    store: Store,
    category: str,
    *,
    pool: SandboxPool,
    n: int | None = None,
    seed: int = 0,
    knobs: Knobs | None = None,
    progress: Progress | None = None,
) -> StageRun:
    """Graph-walk and program tasks at the difficulty `knobs` (None: FACTORY_DIFFICULTY, else medium) for
    every gated environment of the category, solvability-filtered."""
    n = tasks_per_env(n)
    knobs = knobs or knobs_for()

    def job(bundle: Bundle) -> EnvWork:
        def make(out: Path) -> EnvOutcome:
            result = synthesize_tasks(bundle, n=n, seed=seed, kind="both", audit=False, pool=pool, knobs=knobs)
            write_tasks(result.tasks, out / CANDIDATES_PARQUET)
            write_json_atomic(out / DROPPED_JSON, [d.model_dump(mode="json") for d in result.dropped])
            kinds = [t.kind for t in result.tasks]
            phrasing = phrasing_report([t.question for t in result.tasks], bundle.spec)
            return EnvOutcome(
                env_id=bundle.spec.id,
                kept=bool(result.tasks),
                reason=None if result.tasks else nothing_kept(result),
                counts={
                    "generated": result.generated,
                    "candidates": len(result.tasks),
                    "graph": kinds.count("graph"),
                    "program": kinds.count("program"),
                    "filter_drops": len(result.dropped),
                    "seconds": round(result.seconds, 2),
                    **{k: phrasing[k] for k in PHRASING_COUNTS},
                    **drop_counts(result.audit_summary),
                },
            )

        inputs = {
            "bundle": env_input_hash(store, TOOL_TESTS, category, bundle.spec.id),
            "n": n,
            "seed": seed,
            "knobs": knobs,
        }
        return EnvWork(bundle.spec.id, inputs, make)

    return run_stage(
        store,
        TASKS,
        category,
        [job(b) for b in bundles(store, category)],
        upstream=manifest_hashes(store, category, TOOL_TESTS, TOOL_GRAPHS),
        progress=progress,
    )


def category_tasks(store: Store, stage: Stage, category: str, file: str) -> list[Task]:
    """The tasks one stage kept for a category (`file` in each kept environment's directory)."""
    manifest = require_manifest(store, stage, category)
    return [t for env_id in manifest.kept for t in read_tasks(env_dir(store, stage, category, env_id) / file)]
