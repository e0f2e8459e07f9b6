"""The Agent-World release as published: how much of an `environment_mix/` the import keeps, and whether it
replays the verified tool chains that the release's own code replays on the released data.

The mix is `tests/fixtures/agent_world/environment_mix` (our own environments in the release's format), or a
checkout of the release's `environment_mix/` named by AGENT_WORLD_MIX. Per environment: tools declared and
kept by the gate, each question's chain run the release's way (RELEASE_REPLAY, one process per environment)
and ours (`import_agent_world_tasks`), questions kept as tasks. Targets from the issue: at least 5 of 6
environments kept, at least 85% of their declared tools kept, and at least 90% of the chains the release's
code replays replayed by ours.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.measure import machine_info

FIXTURE_MIX = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "agent_world" / "environment_mix"
ENVS_TARGET = 5 / 6
TOOLS_TARGET = 0.85
CHAINS_TARGET = 0.90

# The release's way of running a chain (its synthesis code binds tools so): every implementation exec'd into one
# namespace under its name with non-identifier characters replaced, MCP_DB_DIR pointing at a fresh copy of the
# environment's data for each chain, the working directory a scratch one, each call `fn(**args)`. A call that
# raises or answers an error shape fails the chain. Prints one JSON list: per question, whether it replayed.
RELEASE_REPLAY = """
import json, os, re, shutil, sys, tempfile
mix, env_id = sys.argv[1], sys.argv[2]
ck = json.load(open(os.path.join(mix, env_id + "_step4_checkpoint.json"), encoding="utf-8"))
schemas = ck["data"]["ToolDesignAgent"]["tool_schemas"]
tasks = json.load(open(os.path.join(mix, "questions", env_id + ".json"), encoding="utf-8"))["tasks"]
def failed(v):
    if not isinstance(v, dict):
        return False
    status = str(v.get("status", "")).lower()
    return bool(v.get("error")) or bool(v.get("errors")) or status in ("error", "failed") or v.get("success") is False
out = []
for t in tasks:
    work = tempfile.mkdtemp()
    shutil.copytree(os.path.join(mix, env_id), os.path.join(work, "database"))
    os.environ["MCP_DB_DIR"] = os.path.join(work, "database")
    os.chdir(work)
    ns = {"__name__": "chainenv"}
    fns = {}
    for s in schemas:
        try:
            exec(s.get("implementation") or "", ns)
        except Exception:
            continue
        fn = ns.get(re.sub(r"[^0-9A-Za-z_]", "_", s["name"]))
        if callable(fn):
            fns[s["name"]] = fn
    ok = True
    for call in t["grading_rubric"]["verified_tool_chain"]:
        try:
            ok = call["tool"] in fns and not failed(fns[call["tool"]](**(call.get("args") or {})))
        except Exception:
            ok = False
        if not ok:
            break
    out.append(ok)
    os.chdir(mix)
    shutil.rmtree(work, ignore_errors=True)
print(json.dumps(out))
"""


def release_replays(mix: Path, env_id: str, cwd: Path) -> list[bool]:
    """Per question of `env_id`, whether the release's own code replays its verified chain on the released data."""
    run = subprocess.run(
        [sys.executable, "-c", RELEASE_REPLAY, str(mix), env_id],
        capture_output=True,
        text=True,
        check=True,
        cwd=cwd,
        timeout=600,
    )
    return json.loads(run.stdout.strip().splitlines()[-1])


def _measure(mix: Path, env_dir: Path, out: Path) -> dict[str, Any]:
    from factory.envs.importers import AgentWorldImportError, import_agent_world
    from factory.tasks.agent_world import import_agent_world_tasks, load_questions, questions_path

    checkpoint = json.loads((mix / f"{env_dir.name}_step4_checkpoint.json").read_text(encoding="utf-8"))
    declared = len(checkpoint["data"]["ToolDesignAgent"]["tool_schemas"])
    theirs = release_replays(mix, env_dir.name, out.parent)
    row: dict[str, Any] = {"tools_declared": declared, "questions": len(theirs), "release_replays": sum(theirs)}
    started = time.perf_counter()
    try:
        report = import_agent_world(env_dir, out)
    except AgentWorldImportError as e:
        return {**row, "kept": False, "tools_kept": 0, "ours_replays": 0, "error": str(e)}
    row.update(kept=report.kept, tools_kept=len(report.kept_tools) if report.kept else 0)
    if not report.kept:
        return {**row, "ours_replays": 0, "error": "; ".join(report.reasons)[:500]}
    result = import_agent_world_tasks(out, questions_path(env_dir))
    failed = {d.question for d in result.dropped if d.reason.startswith(("chain_fails", "import_error"))}
    ours = [q.task not in failed for q in load_questions(questions_path(env_dir))]
    row.update(
        ours_replays=sum(o for t, o in zip(theirs, ours, strict=True) if t),
        questions_kept=len(result.tasks),
        seconds=round(time.perf_counter() - started, 1),
        dropped=dict(Counter(d.reason.split(":", 1)[0] for d in result.dropped)),
    )
    return row


def run(quick: bool = False) -> dict[str, Any]:
    mix = Path(os.environ.get("AGENT_WORLD_MIX") or FIXTURE_MIX).resolve()
    envs = sorted(
        p
        for p in mix.iterdir()
        if p.is_dir() and p.name != "questions" and (mix / f"{p.name}_step4_checkpoint.json").is_file()
    )
    if quick:
        envs = envs[:2]
    per_env: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for env_dir in envs:
            per_env[env_dir.name] = _measure(mix, env_dir, Path(tmp) / env_dir.name)
            print(f"agent_world {env_dir.name}: {per_env[env_dir.name]}", file=sys.stderr, flush=True)
    kept = sum(r["kept"] for r in per_env.values())
    declared = sum(r["tools_declared"] for r in per_env.values())
    tools = sum(r["tools_kept"] for r in per_env.values())
    theirs = sum(r["release_replays"] for r in per_env.values())
    ours = sum(r["ours_replays"] for r in per_env.values())
    targets = {
        "environments_kept": {
            "value": f"{kept}/{len(per_env)}",
            "target": ">= 5 of 6",
            "pass": bool(per_env) and kept / len(per_env) >= ENVS_TARGET,
        },
        "declared_tools_kept": {
            "value": round(tools / declared, 3) if declared else 0.0,
            "target": f">= {TOOLS_TARGET}",
            "pass": declared > 0 and tools / declared >= TOOLS_TARGET,
        },
        "release_chains_replayed": {
            "value": f"{ours}/{theirs}",
            "target": f">= {CHAINS_TARGET:.0%} of those the release's code replays",
            "pass": theirs == 0 or ours / theirs >= CHAINS_TARGET,
        },
    }
    return {
        "machine": machine_info(),
        "mix": str(mix),
        "environments": len(per_env),
        "per_environment": per_env,
        "targets": {} if quick else targets,
        "method": "per environment: RELEASE_REPLAY (the release's binding, a fresh data copy per chain) in its own "
        "process, then `factory import agent-world` in process (import_agent_world + import_agent_world_tasks)",
    }
