"""`python -m benchmarks [NAME ...] [--quick]` (`make bench`): run the benchmarks, write benchmarks/results/NAME.json.

BENCHMARKS is the registry: a name -> a function taking `quick` and returning the results dict that
lands in `results/<name>.json`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.measure import RESULTS_DIR, write_results


def _runtime(quick: bool) -> dict[str, Any]:
    from benchmarks.runtime_bench import RuntimeBenchConfig, run

    return run(RuntimeBenchConfig.quick() if quick else RuntimeBenchConfig())


def _tasks(quick: bool) -> dict[str, Any]:
    from benchmarks.tasks_bench import run

    return run(quick)


def _reward_integrity(quick: bool) -> dict[str, Any]:
    from benchmarks.reward_integrity import run

    return run(quick)


def _real_inputs(quick: bool) -> dict[str, Any]:
    from benchmarks.real_inputs import run

    return run(quick)


def _agent_world(quick: bool) -> dict[str, Any]:
    from benchmarks.agent_world_release import run

    return run(quick)


def _evolve(quick: bool) -> dict[str, Any]:
    from benchmarks.evolve_bench import run

    return run(quick)


BENCHMARKS: dict[str, Callable[[bool], dict[str, Any]]] = {
    "runtime": _runtime,
    "tasks": _tasks,
    "reward_integrity": _reward_integrity,
    "real_inputs": _real_inputs,
    "agent_world": _agent_world,
    "evolve": _evolve,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("names", nargs="*", help=f"benchmarks to run (default: all of {', '.join(BENCHMARKS)})")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: checks the harness, not the targets")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="directory for the JSON results")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}")
    failed = 0
    for name in args.names or list(BENCHMARKS):
        results = BENCHMARKS[name](args.quick)
        path = write_results(name, results, args.out)
        targets = results.get("targets", {})
        for key, t in targets.items():
            print(f"{name}.{key:24} {'PASS' if t['pass'] else 'FAIL'}  {t['value']!s:>12}  ({t['target']})")
        failed += sum(not t["pass"] for t in targets.values())
        print(f"wrote {path}", file=sys.stderr)
    if failed:
        print(json.dumps({"targets_failed": failed}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
