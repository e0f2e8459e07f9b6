"""Measuring helpers shared by the benchmarks: machine facts, CPU pinning, process-tree memory, results files."""

from __future__ import annotations

import contextlib
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from factory.store import write_json_atomic

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def machine_info() -> dict[str, Any]:
    """What the numbers were measured on; load average says how busy the machine was."""
    info: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "cpus_allowed": len(os.sched_getaffinity(0)),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "loadavg_1m_at_start": os.getloadavg()[0],
    }
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    with contextlib.suppress(OSError, ValueError):
        mem = Path("/proc/meminfo").read_text().split("\n", 1)[0].split()
        info["mem_total_mb"] = round(int(mem[1]) / 1024)
    return info


@contextlib.contextmanager
def pinned_to_one_core(cpu: int | None = None) -> Iterator[int]:
    """Run this process, and every process it starts meanwhile, on one CPU; the affinity is restored after."""
    before = os.sched_getaffinity(0)
    core = cpu if cpu is not None else max(before)
    os.sched_setaffinity(0, {core})
    try:
        yield core
    finally:
        os.sched_setaffinity(0, before)


def rates(loops: dict[str, tuple[Callable[[], object], int]], repeats: int) -> dict[str, float]:
    """Calls per second of each `name: (fn, n)`: the best of `repeats` timed loops of `n` calls, after a warm-up.

    The loops are interleaved round by round, so a busy spell on the machine hits every one of them alike
    and their ratios stay fair.
    """
    best = dict.fromkeys(loops, float("inf"))
    for i in range(repeats + 1):
        for name, (fn, n) in loops.items():
            started = time.perf_counter()
            for _ in range(n):
                fn()
            if i:
                best[name] = min(best[name], time.perf_counter() - started)
    return {name: loops[name][1] / best[name] for name in loops}


def timed_ms(fn: Callable[[], object], n: int) -> list[float]:
    """Wall milliseconds of each of `n` calls of `fn`."""
    out = []
    for _ in range(n):
        started = time.perf_counter()
        fn()
        out.append((time.perf_counter() - started) * 1000)
    return out


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def process_tree(root: int | None = None) -> list[int]:
    """`root` (default: this process) and all its descendants (sandbox workers, servers)."""
    root = os.getpid() if root is None else root
    tree = _children()
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(tree.get(pid, []))
    return out


class Memory(BaseModel):
    """Memory of a set of processes. RSS counts shared pages once per process; PSS splits them fairly."""

    processes: int
    rss_mb: float
    pss_mb: float


def memory_of(pids: list[int]) -> Memory:
    """Sum of VmRSS (/proc/PID/status) and Pss (/proc/PID/smaps_rollup) over `pids` that still exist."""
    rss = pss = 0
    counted = 0
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        counted += 1
        rss += _kb(status, "VmRSS:")
        pss += _kb(rollup, "Pss:")
    return Memory(processes=counted, rss_mb=round(rss / 1024, 1), pss_mb=round(pss / 1024, 1))


def _kb(text: str, key: str) -> int:
    for line in text.splitlines():
        if line.startswith(key):
            return int(line.split()[1])
    return 0


def write_results(name: str, data: dict[str, Any], out_dir: Path | None = None) -> Path:
    """Write `<out_dir>/<name>.json` atomically (temp file + rename)."""
    path = (out_dir or RESULTS_DIR) / f"{name}.json"
    write_json_atomic(path, data)
    return path
