"""The evolution loop's speed: rollout throughput per backend, and what a targeted round costs next to a full one.

A small FACTORY_HOME is built in a temp dir by the pipeline's own stage functions, as the assets run them
(topics, taxonomy, then per category: mined datasets, databases, tool code, tool tests, tool graphs, tasks,
verifiers), two topics per category so each category has one arena environment. Then, side by side in one run:

- rollouts: episodes per second of the `oracle` policy on every environment's verified tasks with the local
  and the Ray backend (`episodes_per_second`), and the share of the episodes' time spent in tool calls;
- rounds: a full round (the arena in all N categories, the diagnosis, targeted tasks for every category with
  a guideline) against a targeted round (the arena in k categories only, so the diagnosis covers those, and
  their targeted tasks). Each measurement is a round of its own number, so every stage does its work afresh;
  full and targeted rounds alternate so a busy spell on the shared machine hits both alike, and the medians
  are compared against the issue's bound: targeted / full <= k/N + 0.15.

`--quick` checks the harness only: two categories, fewer tasks, one pair of rounds, no Ray, no targets.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from benchmarks.measure import machine_info, median
from factory.sandbox import SandboxPool
from factory.store import Store

FULL_TOPICS = [
    "online-shop",
    "marketplace",
    "team-chat",
    "email-inbox",
    "issue-tracker",
    "code-review",
    "cloud-drive",
    "team-wiki",
]
QUICK_TOPICS = ["online-shop", "marketplace", "team-chat", "email-inbox"]
TARGET_MARGIN = 0.15  # a targeted round of k of N categories costs at most k/N + this share of a full round
ROLLOUT_SAMPLES = 2


def build_home(store: Store, topics: list[str], pool: SandboxPool, tasks_per_env: int) -> list[str]:
    """Discovery, then every build and task stage per category, as the assets run them; the categories."""
    from factory.pipeline.build.databases import build_databases
    from factory.pipeline.build.mined_datasets import mine_datasets
    from factory.pipeline.build.tool_code import write_tool_code
    from factory.pipeline.build.tool_graphs import build_tool_graphs
    from factory.pipeline.build.tool_tests import gate_tool_tests
    from factory.pipeline.discovery.taxonomy import classify_topics
    from factory.pipeline.discovery.topics import discover_topics
    from factory.pipeline.tasks.tasks import synthesize_category_tasks
    from factory.pipeline.tasks.verifiers import audit_category_tasks

    discover_topics(store, sources=[], include=topics)
    taxonomy, _ = classify_topics(store)
    categories = taxonomy.categories()
    for c in categories:
        mine_datasets(store, c)
        build_databases(store, c)
        write_tool_code(store, c)
        gate_tool_tests(store, c, pool=pool)
        build_tool_graphs(store, c)
        synthesize_category_tasks(store, c, pool=pool, n=tasks_per_env)
        audit_category_tasks(store, c, pool=pool)
    return categories


def rollout_speeds(
    store: Store, categories: list[str], backend: Literal["local", "ray"], workers: int
) -> dict[str, Any]:
    """`oracle` on every environment's verified tasks with one backend: per environment, and over all of them
    (episodes over the summed wall time; the environment's share weighted by each environment's episodes)."""
    from factory.agents.policies import make_policy
    from factory.agents.ray_backend import episodes_per_second
    from factory.pipeline.artifacts import TASKS_PARQUET, bundles
    from factory.pipeline.registry import VERIFIERS
    from factory.pipeline.runner import env_dir
    from factory.tasks.table import read_tasks

    policy = make_policy("oracle")
    per_env: dict[str, dict[str, Any]] = {}
    for c in categories:
        for bundle in bundles(store, c):
            tasks = read_tasks(env_dir(store, VERIFIERS, c, bundle.spec.id) / TASKS_PARQUET)
            if tasks:
                speed = episodes_per_second(
                    bundle.path, tasks, policy, backend=backend, workers=workers, samples=ROLLOUT_SAMPLES
                )
                per_env[bundle.spec.id] = speed.model_dump(exclude={"backend", "workers"})
    episodes = sum(e["episodes"] for e in per_env.values())
    wall = sum(e["wall_s"] for e in per_env.values())
    env_share = sum(e["env_share"] * e["episodes"] for e in per_env.values()) / episodes if episodes else 0.0
    return {
        "backend": backend,
        "workers": workers,
        "episodes": episodes,
        "wall_s": round(wall, 3),
        "episodes_per_s": round(episodes / wall, 2) if wall > 0 else 0.0,
        "env_share": round(env_share, 3),
        "orchestration_share": round(1 - env_share, 3),
        "per_env": per_env,
    }


@contextlib.contextmanager
def _ray_session() -> Iterator[None]:
    """A local Ray for the Ray backend's measurement, shut down after (its start-up is not timed)."""
    from factory.agents.ray_backend import connect

    ray = connect()
    try:
        yield
    finally:
        ray.shutdown()


def timed_round(
    store: Store, categories: list[str], round: int, pool: SandboxPool, tasks_per_env: int
) -> dict[str, Any]:
    """One arena round over `categories`: rollouts, the diagnosis, targeted tasks for its targeted categories;
    seconds per stage and in all."""
    from factory.pipeline.evolve.diagnoses import diagnose_round
    from factory.pipeline.evolve.rollouts import ArenaSettings, roll_out_category
    from factory.pipeline.evolve.targeted import TargetedSettings, synthesize_category_targeted

    arena = ArenaSettings(round=round, policy="first-page", tasks_per_env=tasks_per_env)
    targeted = TargetedSettings(tasks_per_env=tasks_per_env)
    stages: dict[str, float] = {}
    started = time.perf_counter()
    for c in categories:
        t = time.perf_counter()
        roll_out_category(store, c, arena, pool=pool)
        stages[f"rollouts/{c}"] = round_s(time.perf_counter() - t)
    t = time.perf_counter()
    record, _ = diagnose_round(store)
    stages["diagnoses"] = round_s(time.perf_counter() - t)
    if record.round != round or record.categories != sorted(categories):
        raise RuntimeError(f"round {round} diagnosed {record.categories} at round {record.round}, not {categories}")
    for c in record.targeted_categories:
        t = time.perf_counter()
        synthesize_category_targeted(store, c, targeted, pool=pool)
        stages[f"targeted_tasks/{c}"] = round_s(time.perf_counter() - t)
    return {
        "round": round,
        "categories": sorted(categories),
        "targeted_categories": record.targeted_categories,
        "wall_s": round_s(time.perf_counter() - started),
        "stages_s": stages,
    }


def round_s(seconds: float) -> float:
    return round(seconds, 3)


def run(quick: bool = False) -> dict[str, Any]:
    from factory.sandbox import open_pool
    from factory.topics import load_catalog

    topics = QUICK_TOPICS if quick else FULL_TOPICS
    known = {t.id for t in load_catalog()}
    missing = [t for t in topics if t not in known]
    if missing:
        raise KeyError(f"benchmark topics not in the catalog: {', '.join(missing)}")
    tasks_per_env = 4 if quick else 8
    pairs = 1 if quick else 2
    workers = 4
    machine = machine_info()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp))
        pool = open_pool()
        try:
            started = time.perf_counter()
            categories = build_home(store, topics, pool, 4 if quick else 8)
            build_s = round_s(time.perf_counter() - started)
            n = len(categories)
            k = 1 if n <= 2 else 2
            subset = categories[:k]
            speeds = {"local": rollout_speeds(store, categories, "local", workers)}
            if not quick:
                with _ray_session():
                    speeds["ray"] = rollout_speeds(store, categories, "ray", workers)
            full: list[dict[str, Any]] = []
            targeted: list[dict[str, Any]] = []
            for i in range(pairs):
                full.append(timed_round(store, categories, 2 * i + 1, pool, tasks_per_env))
                targeted.append(timed_round(store, subset, 2 * i + 2, pool, tasks_per_env))
        finally:
            pool.close()
    full_s = median([r["wall_s"] for r in full])
    targeted_s = median([r["wall_s"] for r in targeted])
    ratio = round(targeted_s / full_s, 3) if full_s > 0 else float("inf")
    bound = round(k / n + TARGET_MARGIN, 3)
    targets = {
        "targeted_round_cost": {"value": ratio, "target": f"<= k/N + {TARGET_MARGIN} = {bound}", "pass": ratio <= bound}
    }
    return {
        "machine": machine,
        "topics": topics,
        "categories": categories,
        "build_s": build_s,
        "rollouts": speeds,
        "rounds": {
            "n_categories": n,
            "k_categories": k,
            "targeted_subset": subset,
            "tasks_per_env": tasks_per_env,
            "full_wall_s_median": full_s,
            "targeted_wall_s_median": targeted_s,
            "ratio": ratio,
            "bound": bound,
            "full": full,
            "targeted": targeted,
        },
        "targets": {} if quick else targets,
        "method": f"home built by the pipeline's stage functions in a temp FACTORY_HOME on one sandbox pool; "
        f"rollouts: episodes_per_second(oracle, workers={workers}, samples={ROLLOUT_SAMPLES}) on each "
        "environment's verified tasks, local and Ray (a local Ray started before the clock, actors' start-up "
        "timed); env_share = tool-call seconds / episode seconds; rounds: roll_out_category (first-page, "
        "fresh round number each) per category + diagnose_round + synthesize_category_targeted per targeted "
        f"category, full (all N) and targeted (first k) alternating {pairs}x, medians compared",
    }
