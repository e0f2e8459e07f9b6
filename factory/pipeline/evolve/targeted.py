"""Targeted tasks: the next training tasks for the weak environments of a category, made at the knobs the
diagnosis's guidelines turn (the environment complexified first when a guideline asks for a bigger database),
or, as the control, the same budget spent on random knobs. Environments no guideline names get nothing; a
category without a weak environment keeps an empty record.

Each targeted task is profiled: the round's policy plays it as many times as in the arena, and its pass rate is
kept (`pass_rates.json`), so the training export can drop what the policy always or never solves.

`artifacts/targeted_tasks/<category>/<env>/` holds `tasks.parquet`, `targeted.json` (the guidelines, the runs),
`profile.parquet`, `pass_rates.json` and, when complexified, the new version of the environment in `bundle/`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from factory.agents.rollouts import pass_rates, pool_tasks, write_rollouts
from factory.envs.bundle import Bundle
from factory.evolve.diagnosis import TargetedGuideline
from factory.evolve.targeting import random_control, synthesize_targeted
from factory.mining.complexify import ComplexifyError, complexify
from factory.models import Model, Task
from factory.pipeline.artifacts import TASKS_PARQUET, bundles
from factory.pipeline.evolve.diagnoses import load_diagnosis
from factory.pipeline.evolve.rollouts import PASS_RATES_JSON, play, round_seed, write_pass_rates
from factory.pipeline.evolve.rounds import archive
from factory.pipeline.registry import DIAGNOSES, TARGETED_TASKS, TOOL_TESTS
from factory.pipeline.runner import (
    EnvOutcome,
    EnvWork,
    Progress,
    StageRun,
    env_dir,
    env_input_hash,
    require_manifest,
    run_stage,
)
from factory.sandbox import SandboxPool
from factory.store import Store, hash_value, write_json_atomic
from factory.tasks.difficulty import Knobs, knobs_for
from factory.tasks.table import read_tasks, write_tasks

TARGETED_JSON = "targeted.json"
PROFILE_PARQUET = "profile.parquet"  # the round's policy on the targeted tasks: their pass rates
POOLS = ("too_easy", "learnable", "too_hard")
BUNDLE_DIR = "bundle"

Control = Literal["diagnosis", "random"]


class TargetedSettings(Model):
    """The targeted budget: tasks per weak environment, the seed, and whether the guidelines (`diagnosis`) or
    random knobs (`random`, the control) choose where the budget goes."""

    tasks_per_env: int = Field(default=4, ge=1)
    seed: int = 0
    control: Control = "diagnosis"
    knobs: Knobs = Field(default_factory=knobs_for)


class TargetedRecord(Model):
    """targeted.json: what one weak environment got this round and why."""

    env_id: str
    round: int
    control: Control
    guidelines: list[TargetedGuideline]
    complexified: str | None = None  # what complexification changed, when it ran
    complexify_error: str | None = None
    runs: dict[str, dict[str, int]] = Field(default_factory=dict)  # run key -> generated / kept / dropped


def _complexified(bundle: Bundle, guidelines: list[TargetedGuideline], seed: int, out: Path) -> tuple[Bundle, str]:
    """The bundle the tasks are made on: a complexified version when a guideline asks for one and its gate
    passes; else the original, with the reason."""
    if not any(g.complexify_db for g in guidelines):
        return bundle, ""
    try:
        path, report = complexify(bundle.path, seed=seed, out=out / BUNDLE_DIR)
    except ComplexifyError as e:
        return bundle, str(e)
    if not report.kept:
        return bundle, f"the complexified environment failed its gate: {'; '.join(report.reasons)}"
    return Bundle.open(path), ""


def synthesize_category_targeted(
    store: Store,
    category: str,
    settings: TargetedSettings,
    *,
    pool: SandboxPool,
    progress: Progress | None = None,
) -> StageRun:
    """Targeted tasks for every weak environment of the category named by the latest diagnosis."""
    record = load_diagnosis(store)
    round = record.round
    by_env = {b.spec.id: b for b in bundles(store, category)}
    guidelines = [g for g in record.diagnosis.guidelines if g.env_id in by_env and g.category == category]
    weak = sorted({g.env_id for g in guidelines})
    synthesize = synthesize_targeted if settings.control == "diagnosis" else random_control

    def job(env_id: str) -> EnvWork:
        mine = [g for g in guidelines if g.env_id == env_id]

        def make(out: Path) -> EnvOutcome:
            complexify_error = None
            bundle = by_env[env_id]
            if settings.control == "diagnosis":
                bundle, complexify_error = _complexified(bundle, mine, settings.seed, out)
            made = synthesize(
                bundle,
                mine,
                settings.tasks_per_env,
                round_seed(settings.seed, round, "targeted"),
                round,
                base_knobs=settings.knobs,
                pool=pool,
            )
            write_tasks(made.tasks, out / TASKS_PARQUET)
            profile = play(bundle, made.tasks, record.arena, pool) if record.arena and made.tasks else []
            write_rollouts(profile, out / PROFILE_PARQUET)
            write_pass_rates(profile, out / PASS_RATES_JSON)
            pools = pool_tasks(pass_rates(profile))
            write_json_atomic(
                out / TARGETED_JSON,
                TargetedRecord(
                    env_id=env_id,
                    round=round,
                    control=settings.control,
                    guidelines=mine,
                    complexified=bundle.spec.description if bundle is not by_env[env_id] else None,
                    complexify_error=complexify_error or None,
                    runs={
                        k: {"generated": r.generated, "kept": len(r.tasks), "dropped": len(r.dropped)}
                        for k, r in made.runs.items()
                    },
                ),
            )
            return EnvOutcome(
                env_id=env_id,
                kept=bool(made.tasks),
                reason=None if made.tasks else "no targeted task survived the filter and the audit",
                counts={
                    "guidelines": len(mine),
                    "tasks": len(made.tasks),
                    "needs_pagination": sum(1 for t in made.tasks if t.needs_pagination),
                    "mutation_tasks": sum(1 for t in made.tasks if t.mutates),
                    "complexified": float(bundle is not by_env[env_id]),
                    **{f"pool_{name}": sum(1 for p in pools.values() if p == name) for name in POOLS},
                },
            )

        inputs = {
            "bundle": env_input_hash(store, TOOL_TESTS, category, env_id),
            "guidelines": hash_value([g.model_dump(mode="json") for g in mine]),
            "round": round,
            "settings": settings,
        }
        return EnvWork(env_id, inputs, make)

    run = run_stage(
        store,
        TARGETED_TASKS,
        category,
        [job(e) for e in weak],
        upstream={DIAGNOSES.name: hash_value(record.model_dump(mode="json"))},
        progress=progress,
        round=round,
        generator="procedural",
    )
    for env_id in run.manifest.kept:
        archive(
            store,
            round,
            f"targeted_tasks/{category}/{env_id}.parquet",
            env_dir(store, TARGETED_TASKS, category, env_id) / TASKS_PARQUET,
        )
    return run


def targeted_bundle_dir(store: Store, category: str, env_id: str) -> Path:
    """The environment a targeted task was made on: its complexified version when there is one."""
    complexified = env_dir(store, TARGETED_TASKS, category, env_id) / BUNDLE_DIR
    return complexified if complexified.is_dir() else env_dir(store, TOOL_TESTS, category, env_id)


def category_targeted(store: Store, category: str) -> list[Task]:
    """The targeted tasks a category's latest targeted round kept."""
    manifest = require_manifest(store, TARGETED_TASKS, category)
    return [t for e in manifest.kept for t in read_tasks(env_dir(store, TARGETED_TASKS, category, e) / TASKS_PARQUET)]
