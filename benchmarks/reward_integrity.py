"""Reward integrity: how often the kept tasks' verifiers pay an attack, and how often they pay correct work.

Per catalog environment: build it with the offline generator, `synthesize_tasks(n, seed=0)` (generation, filter,
audit: the tasks a user gets), then for every kept task build the probes of factory/verify/attacks.py again from
a fresh gold run and score each the way a user's trajectory is scored: replayed from the seed in a fresh session
by `score_trajectory` (state mutants have no calls, so their built end state is judged). An attack passes a task
when any of its probes is paid; a variant passes when all of its probes are. The audit's own drop reasons are
counted too: they say which attack or variant removed the tasks that are not in the measurement.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.measure import machine_info

QUICK_TOPICS = ["online-shop", "issue-tracker", "note-taking"]
FULL_N, QUICK_N = 20, 6
VARIANT_TARGET = 0.98
MAX_EXAMPLES = 20  # paid attacks and rejected variants listed with their task, to debug from


def _share(passed: int, built: int) -> float:
    return round(passed / built, 4) if built else 0.0


def _tally() -> dict[str, Any]:
    return {"generated": 0, "kept": 0, "dropped_by": Counter(), "probes": {}}


def _count(tally: dict[str, Any], name: str, passed: bool) -> None:
    entry = tally["probes"].setdefault(name, {"built": 0, "passed": 0})
    entry["built"] += 1
    entry["passed"] += passed


def _measure_env(topic: str, root: Path, n: int, tallies: dict[str, dict[str, Any]], examples: list[dict]) -> dict:
    """Synthesize one environment's tasks and score every probe of every kept task into `tallies` (by kind)."""
    from factory.envs.build import build_env
    from factory.envs.bundle import Bundle
    from factory.models import Trajectory
    from factory.tasks.synthesize import reason_code, synthesize_tasks
    from factory.verify.attacks import build_probes
    from factory.verify.scoring import environment_session_factory, judge, run_gold, score_trajectory

    path = root / topic
    report = build_env(topic, path)
    if not report.kept:
        return {"error": "not kept by the gate: " + "; ".join(report.reasons)}
    started = time.perf_counter()
    result = synthesize_tasks(path, n=n, seed=0)
    synthesis_s = time.perf_counter() - started
    for d in result.dropped:
        tallies[d.kind]["dropped_by"].update({reason_code(r) for r in d.reasons})
    for kind in ("graph", "program"):
        tallies[kind]["generated"] += sum(1 for d in result.dropped if d.kind == kind)
        tallies[kind]["generated"] += sum(1 for t in result.tasks if t.kind == kind)
        tallies[kind]["kept"] += sum(1 for t in result.tasks if t.kind == kind)
    bundle = Bundle.open(path)
    env, sessions = environment_session_factory(bundle)
    started = time.perf_counter()
    with env:
        for task in result.tasks:
            gold = run_gold(task, sessions)
            probes = build_probes(bundle, task, gold, sessions)
            for name in dict.fromkeys(p.name for p in probes.probes):
                paid = []
                for p in probes.named(name):
                    if p.calls is None:
                        verdict = judge(task, gold.replay.initial, p.final, p.answer)
                    else:
                        trajectory = Trajectory(tool_calls=p.calls, final_answer=p.answer)
                        verdict = score_trajectory(bundle, task, trajectory, sessions)
                    paid.append(verdict.passed)
                must_pass = name.startswith("variant_")
                passed = all(paid) if must_pass else any(paid)
                _count(tallies[task.kind], name, passed)
                if passed != must_pass and len(examples) < MAX_EXAMPLES:
                    examples.append({"env": topic, "task": task.id, "kind": task.kind, "probe": name})
    return {
        "generated": result.generated,
        "kept": len(result.tasks),
        "synthesis_s": round(synthesis_s, 3),
        "probe_scoring_s": round(time.perf_counter() - started, 3),
    }


def _summary(tallies: list[dict[str, Any]]) -> dict[str, Any]:
    """Generated, kept, drop reasons and per-probe shares of one kind (or, summed, of all)."""
    probes: dict[str, dict[str, int]] = {}
    dropped: Counter[str] = Counter()
    for t in tallies:
        dropped.update(t["dropped_by"])
        for name, e in t["probes"].items():
            into = probes.setdefault(name, {"built": 0, "passed": 0})
            into["built"] += e["built"]
            into["passed"] += e["passed"]
    generated = sum(t["generated"] for t in tallies)
    kept = sum(t["kept"] for t in tallies)

    def shares(prefix: str) -> dict[str, dict[str, Any]]:
        return {
            name: {**e, "share": _share(e["passed"], e["built"])}
            for name, e in sorted(probes.items())
            if name.startswith(prefix)
        }

    variants = shares("variant_")
    built = sum(e["built"] for e in variants.values())
    passed = sum(e["passed"] for e in variants.values())
    return {
        "generated": generated,
        "kept": kept,
        "yield": _share(kept, generated),
        "dropped_by": dict(sorted(dropped.items())),
        "attacks": shares("attack_"),
        "variants": variants,
        "variants_overall": {"built": built, "passed": passed, "share": _share(passed, built)},
    }


def run(quick: bool = False, topics: list[str] | None = None) -> dict[str, Any]:
    from factory.topics import load_catalog
    from factory.verify.attacks import ATTACKS

    catalog = [t.id for t in load_catalog()]
    chosen = topics or (QUICK_TOPICS if quick else catalog)
    missing = [t for t in chosen if t not in catalog]
    if missing:
        raise KeyError(f"benchmark topics not in the catalog: {', '.join(missing)}")
    n = QUICK_N if quick else FULL_N
    tallies = {kind: _tally() for kind in ("graph", "program")}
    examples: list[dict[str, Any]] = []
    per_env: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for topic in chosen:
            try:
                per_env[topic] = _measure_env(topic, Path(tmp), n, tallies, examples)
            except Exception as e:  # one broken environment must not lose the others' measurements
                per_env[topic] = {"error": f"{type(e).__name__}: {e}"}
    overall = _summary(list(tallies.values()))
    targets: dict[str, dict[str, Any]] = {
        name: {
            "value": overall["attacks"].get(name, {}).get("share", 0.0),
            "target": "0% of the kept tasks it applies to",
            "pass": overall["attacks"].get(name, {}).get("passed", 0) == 0,
        }
        for name in ATTACKS
    }
    variants = overall["variants_overall"]
    targets["variants"] = {
        "value": variants["share"],
        "target": f">= {VARIANT_TARGET:.0%} of the correct variants built",
        "pass": variants["built"] > 0 and variants["share"] >= VARIANT_TARGET,
    }
    errors = {t: e["error"] for t, e in per_env.items() if "error" in e}
    targets["every_environment_measured"] = {
        "value": len(per_env) - len(errors),
        "target": len(per_env),
        "pass": not errors,
    }
    return {
        "machine": machine_info(),
        "environments": len(per_env),
        "tasks_per_env_requested": n,
        "tasks_generated": overall["generated"],
        "tasks_kept": overall["kept"],
        "yield": overall["yield"],
        "overall": overall,
        "by_kind": {kind: _summary([t]) for kind, t in tallies.items()},
        "failures": examples,
        "per_env": per_env,
        "targets": targets,
        "method": "offline generator; per environment: synthesize_tasks(n, seed=0) = generation + solvability filter + "
        "audit; for each kept task, the probes of factory.verify.attacks.build_probes built from a fresh gold run and "
        "scored by score_trajectory (fresh-session replay, default rubric reward); state mutants judged on their "
        "built end state. Shares: attacks = kept tasks on which any probe was paid / kept tasks it was built for; "
        "variants = (task, variant) pairs with every probe paid / pairs built",
    }
