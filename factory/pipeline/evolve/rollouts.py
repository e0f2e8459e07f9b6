"""Rollouts: the round's arena. For each arena environment of a category (held out from training by the
verifiers' split), tasks are synthesized fresh for the round with a seed of its own, audited like every task,
and rolled out with the configured policy; each task's pass rate over the samples is kept with it.

A held-out environment (never trained on, never diagnosed) plays a fixed final-evaluation set every round, its
first verified tasks, so a user can see whether arena gains carry over.

`artifacts/rollouts/<category>/<env>/` holds `arena_tasks.parquet`, `rollouts.parquet` and `pass_rates.json`, or
for a held-out environment `final_eval.parquet`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from pydantic import Field

from factory.agents.policies import make_policy
from factory.agents.rollouts import (
    Backend,
    RolloutRow,
    pass_rates,
    pool_tasks,
    read_rollouts,
    run_rollouts,
    write_rollouts,
)
from factory.envs.bundle import Bundle
from factory.evolve.targeting import split_budget, stamped
from factory.models import Model, Split, Task
from factory.pipeline.artifacts import TASKS_PARQUET, bundles
from factory.pipeline.evolve.rounds import archive
from factory.pipeline.registry import ROLLOUTS, TOOL_TESTS, VERIFIERS
from factory.pipeline.runner import (
    EnvOutcome,
    EnvWork,
    Progress,
    StageRun,
    env_dir,
    env_input_hash,
    manifest_hashes,
    require_manifest,
    run_stage,
)
from factory.sandbox import SandboxPool
from factory.store import Store, hash_value, read_json, write_json_atomic
from factory.tasks.difficulty import Knobs, knobs_for
from factory.tasks.synthesize import nothing_kept, synthesize_tasks
from factory.tasks.table import read_tasks, write_tasks

ARENA_TASKS_PARQUET = "arena_tasks.parquet"
ROLLOUTS_PARQUET = "rollouts.parquet"
PASS_RATES_JSON = "pass_rates.json"
ARENA_JSON = "arena.json"  # the round's settings: which policy played, so its targeted tasks are profiled by it
FINAL_EVAL_PARQUET = "final_eval.parquet"
FINAL_EVAL = "final_eval_"  # the prefix of the final evaluation's counts
# The arena spans difficulty levels: the diagnosis finds a gap by contrast, which one level alone may not offer.
ARENA_LEVELS = ("easy", "medium")
POLICY_VARIABLE = "FACTORY_POLICY"
DEFAULT_POLICY = "first-page"  # offline and fails where agents fail (pagination): a round has something to find
# Settings that change how rollouts run, not what they are: a rerun that differs only in these reuses them.
HOW_NOT_WHAT = {"policy_config", "workers", "backend", "ray_address"}


class ArenaSettings(Model):
    """One round of the arena: which policy plays, on how many fresh tasks per environment, how many times."""

    round: int = Field(ge=1)
    policy: str = DEFAULT_POLICY
    policy_config: dict[str, Any] = Field(default_factory=dict)
    tasks_per_env: int = Field(default=4, ge=1)
    samples: int = Field(default=2, ge=1)  # rollouts per task: the k of each task's pass rate
    seed: int = 0
    final_eval_tasks: int = Field(default=8, ge=0)  # per held-out environment: the fixed final-evaluation set
    levels: list[Knobs] = Field(default_factory=lambda: [knobs_for(level) for level in ARENA_LEVELS], min_length=1)
    workers: int = Field(default=4, ge=1)
    backend: Backend = "local"
    ray_address: str | None = None


def default_policy() -> str:
    """FACTORY_POLICY (read when called), else the scripted `first-page` profile."""
    return os.environ.get(POLICY_VARIABLE, "").strip() or DEFAULT_POLICY


def round_seed(seed: int, round: int, purpose: str = "arena") -> int:
    """The seed of a round's work (`purpose`: the arena's tasks and episodes, the targeted tasks): fresh every
    round, the same on a rerun."""
    return int(hash_value([purpose, seed, round])[:8], 16)


def env_splits(store: Store, category: str) -> dict[str, Split]:
    """The split the verifiers gave each environment of the category that kept tasks."""
    manifest = require_manifest(store, VERIFIERS, category)
    out: dict[str, Split] = {}
    for env_id in manifest.kept:
        tasks = read_tasks(env_dir(store, VERIFIERS, category, env_id) / TASKS_PARQUET)
        if tasks:
            out[env_id] = tasks[0].split
    return out


def arena_envs(store: Store, category: str) -> list[str]:
    return sorted(e for e, split in env_splits(store, category).items() if split == "arena")


def play(bundle: Bundle, tasks: list[Task], settings: ArenaSettings, pool: SandboxPool) -> list[RolloutRow]:
    """The round's policy on `tasks`, `settings.samples` times each, with the round's seed."""
    policy = make_policy(settings.policy, **settings.policy_config)
    return run_rollouts(
        bundle.path,
        tasks,
        policy,
        round_seed(settings.seed, settings.round),
        workers=settings.workers,
        samples=settings.samples,
        round=settings.round,
        pool=pool,
        backend=settings.backend,
        ray_address=settings.ray_address,
    )


def _counts(rows: list[RolloutRow], wall: float, prefix: str = "") -> dict[str, float]:
    counted = [r for r in rows if r.counted]
    passed = sum(1 for r in counted if r.verdict and r.verdict.passed)
    counts = {
        "episodes": len(rows),
        "counted": len(counted),
        "passed": passed,
        "pass_rate": round(passed / len(counted), 4) if counted else 0.0,
        "env_faults": sum(1 for r in rows if r.env_errors),
        "episodes_per_s": round(len(rows) / wall, 2) if wall > 0 else 0.0,
        "env_share": round(sum(r.env_s for r in rows) / max(sum(r.wall_s for r in rows), 1e-9), 4),
    }
    return {f"{prefix}{k}": v for k, v in counts.items()}


def write_pass_rates(rows: list[RolloutRow], path: Path) -> None:
    """Each task's pass rate over its counted rollouts and its pool (too easy / learnable / too hard)."""
    rates = pass_rates(rows)
    pools = pool_tasks(rates)
    write_json_atomic(path, {t: {"pass_rate": r, "pool": pools[t]} for t, r in rates.items()})


def load_arena_settings(store: Store, category: str) -> ArenaSettings | None:
    """The settings the category's latest arena round was played with (None: no arena environment played)."""
    manifest = require_manifest(store, ROLLOUTS, category)
    for env_id in manifest.kept:
        path = env_dir(store, ROLLOUTS, category, env_id) / ARENA_JSON
        if path.is_file():
            return ArenaSettings.model_validate(read_json(path))
    return None


def final_eval_tasks(store: Store, category: str, env_id: str, limit: int) -> list[Task]:
    """A held-out environment's fixed final-evaluation tasks: its first `limit` verified tasks by id."""
    tasks = read_tasks(env_dir(store, VERIFIERS, category, env_id) / TASKS_PARQUET)
    return sorted(tasks, key=lambda t: t.id)[:limit]


def roll_out_category(
    store: Store,
    category: str,
    settings: ArenaSettings,
    *,
    pool: SandboxPool,
    progress: Progress | None = None,
) -> StageRun:
    """The round's arena for one category: fresh audited tasks per arena environment, rolled out; and the fixed
    final evaluation on its held-out environments, which no diagnosis reads."""
    seed = round_seed(settings.seed, settings.round)
    by_env = {b.spec.id: b for b in bundles(store, category)}
    splits = env_splits(store, category)

    def arena(bundle: Bundle, out: Path) -> EnvOutcome:
        budget = split_budget(settings.tasks_per_env, len(settings.levels))
        runs = [
            synthesize_tasks(bundle, n=k, seed=seed, pool=pool, knobs=knobs)
            for knobs, k in zip(settings.levels, budget, strict=True)
            if k > 0
        ]
        unique = {t.id: t for r in runs for t in r.tasks}.values()
        tasks = [stamped(t, settings.round).model_copy(update={"split": "arena"}) for t in unique]
        started = time.perf_counter()
        rows = play(bundle, tasks, settings, pool)
        wall = time.perf_counter() - started
        write_tasks(tasks, out / ARENA_TASKS_PARQUET)
        write_rollouts(rows, out / ROLLOUTS_PARQUET)
        write_pass_rates(rows, out / PASS_RATES_JSON)
        write_json_atomic(out / ARENA_JSON, settings.model_dump(mode="json", exclude={"ray_address"}))
        return EnvOutcome(
            env_id=bundle.spec.id,
            kept=bool(tasks),
            reason=None if tasks else "; ".join(nothing_kept(r) for r in runs),
            counts={"arena_tasks": len(tasks), **_counts(rows, wall)},
        )

    def final_eval(bundle: Bundle, out: Path) -> EnvOutcome:
        tasks = final_eval_tasks(store, category, bundle.spec.id, settings.final_eval_tasks)
        started = time.perf_counter()
        rows = play(bundle, tasks, settings, pool)
        write_rollouts(rows, out / FINAL_EVAL_PARQUET)
        return EnvOutcome(
            env_id=bundle.spec.id,
            counts={"final_eval_tasks": len(tasks), **_counts(rows, time.perf_counter() - started, FINAL_EVAL)},
        )

    def job(env_id: str) -> EnvWork:
        bundle = by_env[env_id]
        inputs = {
            "bundle": env_input_hash(store, TOOL_TESTS, category, env_id),
            "policy": make_policy(settings.policy, **settings.policy_config).identity(),
            "settings": settings.model_dump(mode="json", exclude=HOW_NOT_WHAT),
        }
        if splits[env_id] == "heldout":
            inputs["final_eval"] = env_input_hash(store, VERIFIERS, category, env_id)
            return EnvWork(env_id, inputs, lambda out: final_eval(bundle, out))
        return EnvWork(env_id, inputs, lambda out: arena(bundle, out))

    run = run_stage(
        store,
        ROLLOUTS,
        category,
        [job(e) for e, split in sorted(splits.items()) if split in ("arena", "heldout") and e in by_env],
        upstream=manifest_hashes(store, category, TOOL_TESTS, VERIFIERS),
        progress=progress,
        round=settings.round,
    )
    for env_id in run.manifest.kept:
        for name in (ROLLOUTS_PARQUET, FINAL_EVAL_PARQUET):
            path = env_dir(store, ROLLOUTS, category, env_id) / name
            if path.is_file():
                archive(store, settings.round, f"rollouts/{category}/{env_id}/{name}", path)
    return run


def category_arena(store: Store, category: str) -> tuple[list[Task], list[RolloutRow]]:
    """The arena tasks and rollouts of a category's latest round (the final evaluation left out)."""
    manifest = require_manifest(store, ROLLOUTS, category)
    tasks: list[Task] = []
    rows: list[RolloutRow] = []
    for env_id in manifest.kept:
        d = env_dir(store, ROLLOUTS, category, env_id)
        if not (d / ARENA_TASKS_PARQUET).is_file():  # a held-out environment's final evaluation: never diagnosed
            continue
        tasks += read_tasks(d / ARENA_TASKS_PARQUET)
        rows += read_rollouts(d / ROLLOUTS_PARQUET)
    return tasks, rows
