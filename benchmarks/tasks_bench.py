"""Task synthesis at each difficulty: how deep the kept tasks are, and how fast they are made.

Each environment is built with the offline generator, then at each difficulty preset (easy, medium, hard)
`synthesize_tasks` generates, filters and audits its tasks (graph walks and programs) exactly as the `tasks`
and `verifiers` assets do. Per difficulty: the distribution of `gold_calls` (mean, p50, p90, share over 20),
the shares that mutate and need pagination, and tasks synthesized and audited per second.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.measure import machine_info

FULL_TOPICS = ["online-shop", "procurement", "team-chat", "issue-tracker", "retail-banking", "hotel-reservations"]
QUICK_TOPICS = ["online-shop"]
LEVELS = ("easy", "medium", "hard")
# The depth targets: (level, depth field, at least).
DEPTH_TARGETS = (("medium", "gold_calls_mean", 6.0), ("hard", "gold_calls_mean", 12.0), ("hard", "share_over_20", 0.25))


def run(quick: bool = False) -> dict[str, Any]:
    from factory.envs.build import build_env
    from factory.tasks.depth import depth
    from factory.tasks.difficulty import knobs_for
    from factory.tasks.synthesize import synthesize_tasks
    from factory.topics import load_catalog

    known = {t.id for t in load_catalog()}
    topics = QUICK_TOPICS if quick else FULL_TOPICS
    missing = [t for t in topics if t not in known]
    if missing:
        raise KeyError(f"benchmark topics not in the catalog: {', '.join(missing)}")
    n = 6 if quick else 20
    levels: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for topic in topics:
            build_env(topic, Path(tmp) / topic)
        for level in LEVELS:
            knobs = knobs_for(level)
            per_env: dict[str, dict[str, Any]] = {}
            kept_tasks = []
            reasons: Counter[str] = Counter()
            short: Counter[str] = Counter()
            for topic in topics:
                started = time.perf_counter()
                result = synthesize_tasks(Path(tmp) / topic, n=n, seed=0, knobs=knobs)
                seconds = time.perf_counter() - started
                kinds = Counter(t.kind for t in result.tasks)
                kept_tasks += result.tasks
                per_env[topic] = {
                    "generated": result.generated,
                    "kept": len(result.tasks),
                    "graph": kinds["graph"],
                    "program": kinds["program"],
                    "seconds": round(seconds, 3),
                    "gold_calls_mean": depth(result.tasks).gold_calls_mean,
                    "fell_short": {k: v.tasks for k, v in result.shortfalls.items()},
                }
                reasons.update(k for k in result.audit_summary if k != "kept")
                short.update({k: v.tasks for k, v in result.shortfalls.items()})
            generated = sum(e["generated"] for e in per_env.values())
            kept = sum(e["kept"] for e in per_env.values())
            seconds = sum(e["seconds"] for e in per_env.values())
            levels[level] = {
                "knobs": knobs.model_dump(),
                "tasks_generated": generated,
                "tasks_kept": kept,
                "yield": round(kept / generated, 3) if generated else 0.0,
                "seconds": round(seconds, 3),
                "tasks_synthesized_per_s": round(generated / seconds, 3) if seconds else 0.0,
                "tasks_audited_per_s": round(kept / seconds, 3) if seconds else 0.0,
                "depth": depth(kept_tasks).model_dump(),
                "depth_by_kind": {
                    k: depth([t for t in kept_tasks if t.kind == k]).model_dump() for k in ("graph", "program")
                },
                "fell_short": dict(sorted(short.items())),
                "drop_reasons_seen": sorted(reasons),
                "per_env": per_env,
            }
    targets = {
        f"{level}_{field}": {
            "value": levels[level]["depth"][field],
            "target": f">= {bound}",
            "pass": levels[level]["depth"][field] >= bound,
        }
        for level, field, bound in DEPTH_TARGETS
    }
    return {
        "machine": machine_info(),
        "tasks_per_env_requested": n,
        "environments": len(topics),
        "levels": levels,
        "targets": {} if quick else targets,
        "method": "offline generator; per environment and difficulty preset: synthesize_tasks(n, seed=0, "
        "knobs=knobs_for(level)) = generation + solvability filter (5 validation runs) + verifier audit; "
        "wall time of that call, environment build excluded",
    }
