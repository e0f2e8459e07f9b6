"""Real inputs, as users bring them: per OpenAPI document and MCP tool list, how much of it the factory keeps
and what it costs. The inputs are the unchanged public copies in ../shared/real/ plus generated documents of
Stripe's and WorkOS's shapes (benchmarks/api_shapes.py).

Per input: operations declared, tools kept by the gate, gate results checked against their tool's advertised
output schema and how many broke it, build seconds and peak MB (`factory build-env` in its own process), then
tasks kept by kind and seconds per task (`factory tasks --n N` in its own process, stopped after a time limit,
which is then recorded). Targets from the issue: at least 85% of operations kept across
the set, every result valid against its schema, and tasks on every environment with three or more kept tools.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.api_shapes import stripe_like, workos_like
from benchmarks.measure import machine_info

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "real"
TASKS_PER_INPUT = 10
TASK_SECONDS = 300  # a tasks run still going after this long is stopped and recorded as such
KEPT_TARGET = 0.85
QUICK = ("onfido-openapi.json", "workos-like.json", "mcp-git-tools-list.json")


def _inputs(tmp: Path) -> dict[str, Path]:
    """Name -> file of every real input, and the two generated documents written into `tmp`."""
    found: dict[str, Path] = {}
    for p in sorted((REAL / "openapi").glob("*")):
        if p.suffix in (".yaml", ".yml", ".json"):
            found[p.name] = p
    conjur = REAL / "openapi" / "conjur" / "spec" / "openapi.yml"
    if conjur.is_file():
        found["conjur"] = conjur
    for p in sorted((REAL / "mcp").glob("*.json")):
        found[p.name] = p
    for name, doc in (("stripe-like.json", stripe_like()), ("workos-like.json", workos_like())):
        (tmp / name).write_text(json.dumps(doc))
        found[name] = tmp / name
    return found


# Runs the command and reports its own peak resident size (os.wait4 sees that one process, not the run's others).
_WAIT4 = """import os, subprocess, sys
p = subprocess.Popen(sys.argv[1:])
_, status, usage = os.wait4(p.pid, 0)
sys.stderr.write("\\nPEAK_KB %d\\n" % usage.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def _run(args: list[str], timeout: float) -> tuple[int | None, float, float | None, str]:
    """(exit code, None when stopped at `timeout`; wall seconds; the command's peak MB; its stderr's tail)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", _WAIT4, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        _, err = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        code = None
    seconds = time.perf_counter() - started
    lines = (err or "").splitlines()
    peaks = [int(line.split()[1]) for line in lines if line.startswith("PEAK_KB ")]
    tail = "\n".join(line for line in lines if not line.startswith("PEAK_KB "))[-500:]
    return code, seconds, round(peaks[-1] / 1024, 1) if peaks else None, tail


def _measure(source: Path, out: Path) -> dict[str, Any]:
    from factory.tasks.table import read_tasks
    from factory.topics import load_source
    from factory.topics.documents import SourceError

    factory = [sys.executable, "-c", "from assets.cli import main; main()"]
    try:
        operations = sum(len(t.tools) for t in load_source(source))
    except SourceError as e:  # a document that describes no operations (webhooks only) is reported, not built
        return {"operations": 0, "tools_kept": 0, "error": str(e)}
    code, seconds, peak, err = _run([*factory, "build-env", str(source), "--out", str(out)], timeout=900)
    row: dict[str, Any] = {"operations": operations, "build_seconds": round(seconds, 1), "build_peak_mb": peak}
    report_path = out / "report.json"
    if not report_path.is_file():
        return {**row, "tools_kept": 0, "error": f"build exit {code}: {err}"}
    report = json.loads(report_path.read_text())
    kept = report["kept_tools"]
    row["tools_kept"] = len(kept)
    row["results_checked"] = sum(t.get("results_checked", 0) for t in report["tools"].values())
    row["results_invalid"] = sum(t.get("results_invalid", 0) for t in report["tools"].values())
    if not kept:
        return row
    table = out.with_name(f"{out.name}.tasks.parquet")
    args = [*factory, "tasks", str(out), "--out", str(table), "--n", str(TASKS_PER_INPUT)]
    code, seconds, _, err = _run(args, timeout=TASK_SECONDS)
    tasks = read_tasks(table) if table.is_file() else []
    row.update(
        tasks_seconds=round(seconds, 1),
        tasks_kept={k: sum(t.kind == k for t in tasks) for k in ("graph", "program")},
        seconds_per_task=round(seconds / len(tasks), 1) if tasks else None,
    )
    if code is None:
        row["tasks_note"] = f"stopped after {TASK_SECONDS} s"
    elif not tasks:
        row["tasks_note"] = err.strip().splitlines()[-1] if err.strip() else f"exit {code}"
    return row


def run(quick: bool = False) -> dict[str, Any]:
    per_input: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        inputs = _inputs(tmp)
        if quick:
            inputs = {k: v for k, v in inputs.items() if k in QUICK}
        for name, source in inputs.items():
            per_input[name] = _measure(source, tmp / "bundles" / name.replace(".", "-"))
            print(f"real_inputs {name}: {per_input[name]}", file=sys.stderr, flush=True)
    operations = sum(r["operations"] for r in per_input.values())
    kept = sum(r["tools_kept"] for r in per_input.values())
    checked = sum(r.get("results_checked", 0) for r in per_input.values())
    invalid = sum(r.get("results_invalid", 0) for r in per_input.values())
    without = sorted(
        n for n, r in per_input.items() if r["tools_kept"] >= 3 and not sum(r.get("tasks_kept", {}).values())
    )
    targets = {
        "operations_kept": {
            "value": round(kept / operations, 3) if operations else 0.0,
            "target": f">= {KEPT_TARGET}",
            "pass": operations > 0 and kept / operations >= KEPT_TARGET,
        },
        "results_valid_against_their_schema": {
            "value": f"{invalid} of {checked} gate results invalid",
            "target": "0 invalid",
            "pass": invalid == 0,
        },
        "tasks_on_every_env_with_3_tools": {
            "value": f"{len(without)} without tasks" + (f": {', '.join(without)}" if without else ""),
            "target": "0 without tasks",
            "pass": not without,
        },
    }
    return {
        "machine": machine_info(),
        "inputs": len(per_input),
        "operations": operations,
        "tools_kept": kept,
        "per_input": per_input,
        "targets": {} if quick else targets,
        "method": "each input: `factory build-env` then `factory tasks --n "
        f"{TASKS_PER_INPUT}` in their own processes (tasks stopped after {TASK_SECONDS} s); build peak MB is the "
        "build process's own peak resident size (os.wait4), sandbox workers not included",
    }
