"""Tool tests and the gate: generated cases run in the sandbox; a tool is kept above 0.5 accuracy, an
environment when its code compiles and at least one tested tool is kept. The kept bundles, in
`artifacts/tool_tests/<category>/<env>/`, are what every later stage uses."""

from __future__ import annotations

import shutil
from pathlib import Path

from factory.envs.bundle import SCHEMA_SQL, SEED_SQLITE, STATE_DIR, TOOLS_PY
from factory.envs.gate import gate_environment
from factory.pipeline.artifacts import load_dataset
from factory.pipeline.registry import DATABASES, MINED_DATASETS, TOOL_CODE, TOOL_TESTS
from factory.pipeline.runner import (
    CheckOutcome,
    EnvOutcome,
    EnvWork,
    Progress,
    StageManifest,
    StageRun,
    env_dir,
    env_input_hash,
    manifest_hashes,
    require_manifest,
    run_stage,
)
from factory.sandbox import SandboxPool
from factory.store import Store


def gate_tool_tests(store: Store, category: str, *, pool: SandboxPool, progress: Progress | None = None) -> StageRun:
    """Assemble each environment from its database and tool code, generate its tests and gate it."""
    env_ids = sorted(
        set(require_manifest(store, DATABASES, category).kept) & set(require_manifest(store, TOOL_CODE, category).kept)
    )

    def job(env_id: str) -> EnvWork:
        def make(out: Path) -> EnvOutcome:
            spec, rows = load_dataset(store, category, env_id)
            _copy_state(env_dir(store, DATABASES, category, env_id), out)
            shutil.copyfile(env_dir(store, TOOL_CODE, category, env_id) / TOOLS_PY, out / TOOLS_PY)
            report = gate_environment(spec, rows, out, pool=pool)
            return EnvOutcome(
                env_id=env_id,
                kept=report.kept,
                reason=None if report.kept else "; ".join(report.reasons) or "rejected by the gate",
                counts={
                    "tools": len(report.tools),
                    "tools_kept": len(report.kept_tools),
                    "tools_tested": sum(1 for r in report.tools.values() if r.cases),
                    "tests": sum(r.cases for r in report.tools.values()),
                    "tests_passed": sum(r.passed for r in report.tools.values()),
                },
            )

        inputs = {s.name: env_input_hash(store, s, category, env_id) for s in (MINED_DATASETS, DATABASES, TOOL_CODE)}
        return EnvWork(env_id, inputs, make)

    return run_stage(
        store,
        TOOL_TESTS,
        category,
        [job(e) for e in env_ids],
        upstream=manifest_hashes(store, category, DATABASES, TOOL_CODE),
        progress=progress,
    )


def _copy_state(src: Path, out: Path) -> None:
    for name in (SCHEMA_SQL, SEED_SQLITE):
        if (src / name).is_file():
            shutil.copyfile(src / name, out / name)
    if (src / STATE_DIR).is_dir():
        shutil.copytree(src / STATE_DIR, out / STATE_DIR)


def gate_check(manifest: StageManifest) -> CheckOutcome:
    """The blocking tool-test gate: every kept environment keeps a tested tool; fails only when nothing passes."""
    kept = manifest.kept
    bad = [e for e in kept if manifest.envs[e].counts.get("tools_kept", 0) < 1]
    dropped = {e: o.reason for e, o in manifest.envs.items() if not o.kept}
    lines = [f"kept {len(kept)} of {len(manifest.envs)} environments"]
    lines += [f"- dropped `{e}`: {r}" for e, r in dropped.items()]
    lines += [f"- kept `{e}` without a tested tool" for e in bad]
    return CheckOutcome(passed=bool(kept) and not bad, detail="\n".join(lines))
