"""Task synthesis throughput: tasks synthesized, filtered and audited per second on catalog environments.

Each environment is built with the offline generator, then `synthesize_tasks` generates, filters and
audits its tasks (graph walks and programs) exactly as the `tasks` and `verifiers` assets do.
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


def run(quick: bool = False) -> dict[str, Any]:
    from factory.envs.build import build_env
    from factory.tasks.synthesize import synthesize_tasks
    from factory.topics import load_catalog

    known = {t.id for t in load_catalog()}
    topics = QUICK_TOPICS if quick else FULL_TOPICS
    missing = [t for t in topics if t not in known]
    if missing:
        raise KeyError(f"benchmark topics not in the catalog: {', '.join(missing)}")
    n = 6 if quick else 20
    per_env: dict[str, dict[str, Any]] = {}
    reasons: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for topic in topics:
            bundle = Path(tmp) / topic
            build_env(topic, bundle)
            started = time.perf_counter()
            result = synthesize_tasks(bundle, n=n, seed=0)
            seconds = time.perf_counter() - started
            kinds = Counter(t.kind for t in result.tasks)
            per_env[topic] = {
                "generated": result.generated,
                "kept": len(result.tasks),
                "graph": kinds["graph"],
                "program": kinds["program"],
                "seconds": round(seconds, 3),
                "mean_graph_calls": _mean_calls(result.tasks),
            }
            reasons.update(k for k in result.audit_summary if k != "kept")
    generated = sum(e["generated"] for e in per_env.values())
    kept = sum(e["kept"] for e in per_env.values())
    seconds = sum(e["seconds"] for e in per_env.values())
    return {
        "machine": machine_info(),
        "tasks_per_env_requested": n,
        "environments": len(per_env),
        "tasks_generated": generated,
        "tasks_kept": kept,
        "yield": round(kept / generated, 3) if generated else 0.0,
        "seconds": round(seconds, 3),
        "tasks_synthesized_per_s": round(generated / seconds, 3) if seconds else 0.0,
        "tasks_audited_per_s": round(kept / seconds, 3) if seconds else 0.0,
        "drop_reasons_seen": sorted(reasons),
        "per_env": per_env,
        "method": "offline generator; per environment: synthesize_tasks(n, seed=0) = generation + solvability "
        "filter (5 validation runs) + verifier audit; wall time of that call, environment build excluded",
    }


def _mean_calls(tasks: list) -> float:
    graph = [t for t in tasks if t.kind == "graph"]
    return round(sum(len(t.gold) for t in graph) / len(graph), 2) if graph else 0.0
