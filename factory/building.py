"""The build stages per category: mined datasets -> databases -> tool code -> tool tests (gate) -> tool graphs.

Each stage is one step of `factory.envs.build`, run for every environment of a category through
the stage runner (reuse of unchanged inputs, atomic outputs, manifests). The gated bundles live in
`artifacts/tool_tests/<category>/<env>/`; later stages read them from there.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from factory import discovery
from factory.envs import build
from factory.envs.bundle import ENV_JSON, SCHEMA_SQL, SEED_SQLITE, STATE_DIR, TOOLS_PY, Bundle
from factory.models import EnvSpec, Lineage, StateBackend
from factory.stages import (
    CheckOutcome,
    EnvOutcome,
    EnvWork,
    Progress,
    StageManifest,
    StageRun,
    manifest_hash,
    require_manifest,
    run_stage,
    stage_dir,
)
from factory.store import Store, hash_dir, hash_value, read_json, write_json_atomic

DATASETS_CODE_VERSION = "1"
DATABASES_CODE_VERSION = "1"
TOOL_CODE_CODE_VERSION = "1"
TOOL_TESTS_CODE_VERSION = "1"
TOOL_GRAPHS_CODE_VERSION = "1"

ROWS_JSON = "rows.json"
GRAPH_JSON = "graph.json"


def _env_dir(store: Store, stage: str, category: str, env_id: str) -> Path:
    return stage_dir(store, stage, category) / env_id


def env_input_hash(store: Store, stage: str, category: str, env_id: str) -> str:
    """The content of an upstream environment directory as it is now (a tampered file counts as a change)."""
    return hash_dir(_env_dir(store, stage, category, env_id))


def _upstream(store: Store, category: str, *stages: str) -> dict[str, str]:
    return {s: manifest_hash(store, s, category) for s in stages}


def _kept_work(store: Store, stage: str, category: str) -> list[str]:
    return require_manifest(store, stage, category).kept


def mine_datasets(
    store: Store, category: str, *, seed: int = 0, backend: StateBackend = "sqlite", progress: Progress | None = None
) -> StageRun:
    """Entities and seeded rows for every topic of the category (the draft env.json plus rows.json)."""
    topics = discovery.topics_in_category(store, category)

    def job(topic, path) -> EnvWork:
        def make(out: Path) -> EnvOutcome:
            lineage = Lineage(
                stage="mined_datasets", code_version=DATASETS_CODE_VERSION, inputs={"topic": hash_value(topic)}
            )
            spec, rows = build.draft_environment(topic, seed=seed, backend=backend, taxonomy=path, lineage=lineage)
            write_json_atomic(out / ENV_JSON, spec)
            write_json_atomic(out / ROWS_JSON, rows)
            mapped = sum(1 for t in spec.tools if t.operation is not None)
            return EnvOutcome(
                env_id=spec.id,
                kept=mapped > 0,
                reason=None if mapped else "no tool could be mapped to an operation",
                counts={
                    "entities": len(spec.entities),
                    "rows": sum(len(r) for r in rows.values()),
                    "tools_mapped": mapped,
                    "tools_unmapped": len(spec.tools) - mapped,
                },
            )

        return EnvWork(topic.id, {"topic": topic, "taxonomy": path, "seed": seed, "backend": backend}, make)

    return run_stage(
        store,
        "mined_datasets",
        category,
        DATASETS_CODE_VERSION,
        [job(t, p) for t, p in topics],
        upstream={"taxonomy": discovery.taxonomy_hash(store), "topics": discovery.topics_hash(store)},
        progress=progress,
    )


def _draft(store: Store, category: str, env_id: str) -> tuple[EnvSpec, dict[str, list[dict]]]:
    d = _env_dir(store, "mined_datasets", category, env_id)
    return EnvSpec.model_validate(read_json(d / ENV_JSON)), read_json(d / ROWS_JSON)


def _from_datasets(
    store: Store,
    stage: str,
    code_version: str,
    category: str,
    make: Callable[[EnvSpec, dict[str, list[dict]], Path], dict[str, float]],
    progress: Progress | None,
) -> StageRun:
    """A stage that turns each kept mined dataset into one output directory; `make` returns its counts."""
    upstream = require_manifest(store, "mined_datasets", category)

    def job(env_id: str) -> EnvWork:
        def build_one(out: Path) -> EnvOutcome:
            spec, rows = _draft(store, category, env_id)
            return EnvOutcome(env_id=env_id, counts=make(spec, rows, out))

        return EnvWork(env_id, {"dataset": env_input_hash(store, "mined_datasets", category, env_id)}, build_one)

    return run_stage(
        store,
        stage,
        category,
        code_version,
        [job(e) for e in upstream.kept],
        upstream=_upstream(store, category, "mined_datasets"),
        progress=progress,
    )


def build_databases(store: Store, category: str, *, progress: Progress | None = None) -> StageRun:
    """The schema and seed state of each environment (schema.sql + seed.sqlite, or state/ collections)."""

    def make(spec: EnvSpec, rows: dict[str, list[dict]], out: Path) -> dict[str, float]:
        build.write_state(spec, rows, out)
        size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
        return {"tables": len(spec.entities), "rows": sum(len(r) for r in rows.values()), "bytes": size}

    return _from_datasets(store, "databases", DATABASES_CODE_VERSION, category, make, progress)


def write_tool_code(store: Store, category: str, *, progress: Progress | None = None) -> StageRun:
    """tools.py for each environment: one function per tool the source offers."""

    def make(spec: EnvSpec, rows: dict[str, list[dict]], out: Path) -> dict[str, float]:
        source = build.tool_code(spec)
        (out / TOOLS_PY).write_text(source)
        return {"tools": sum(1 for t in spec.tools if t.operation), "lines": source.count("\n")}

    return _from_datasets(store, "tool_code", TOOL_CODE_CODE_VERSION, category, make, progress)


def gate_tool_tests(store: Store, category: str, *, progress: Progress | None = None) -> StageRun:
    """Generate each environment's tool tests, run them in the sandbox, and keep what passes the gate."""
    databases = require_manifest(store, "databases", category)
    code = require_manifest(store, "tool_code", category)
    env_ids = sorted(set(databases.kept) & set(code.kept))

    def job(env_id: str) -> EnvWork:
        def make(out: Path) -> EnvOutcome:
            spec, rows = _draft(store, category, env_id)
            _copy_state(_env_dir(store, "databases", category, env_id), out)
            shutil.copyfile(_env_dir(store, "tool_code", category, env_id) / TOOLS_PY, out / TOOLS_PY)
            report = build.gate_environment(spec, rows, out)
            tested = sum(1 for r in report.tools.values() if r.cases)
            return EnvOutcome(
                env_id=env_id,
                kept=report.kept,
                reason=None if report.kept else "; ".join(report.reasons) or "rejected by the gate",
                counts={
                    "tools": len(report.tools),
                    "tools_kept": len(report.kept_tools),
                    "tools_tested": tested,
                    "tests": sum(r.cases for r in report.tools.values()),
                    "tests_passed": sum(r.passed for r in report.tools.values()),
                },
            )

        inputs = {
            stage: env_input_hash(store, stage, category, env_id)
            for stage in ("mined_datasets", "databases", "tool_code")
        }
        return EnvWork(env_id, inputs, make)

    return run_stage(
        store,
        "tool_tests",
        category,
        TOOL_TESTS_CODE_VERSION,
        [job(e) for e in env_ids],
        upstream=_upstream(store, category, "databases", "tool_code"),
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


def bundles(store: Store, category: str) -> list[Bundle]:
    """The gated environment bundles of a category (kept by the tool-test gate)."""
    manifest = require_manifest(store, "tool_tests", category)
    return [Bundle.open(_env_dir(store, "tool_tests", category, e)) for e in manifest.kept]


def build_tool_graphs(store: Store, category: str, *, progress: Progress | None = None) -> StageRun:
    """The tool dependency graph of each gated environment, as node-link JSON."""
    from factory.graphs import build_tool_graph, graph_to_json

    gated = require_manifest(store, "tool_tests", category)

    def job(env_id: str) -> EnvWork:
        def make(out: Path) -> EnvOutcome:
            spec = Bundle.open(_env_dir(store, "tool_tests", category, env_id)).spec
            g = build_tool_graph(spec)
            write_json_atomic(out / GRAPH_JSON, graph_to_json(g))
            kinds = [d.get("kind") for _, _, d in g.edges(data=True)]
            return EnvOutcome(
                env_id=env_id,
                counts={
                    "tools": g.number_of_nodes(),
                    "strong_edges": kinds.count("strong"),
                    "weak_edges": kinds.count("weak"),
                },
            )

        return EnvWork(env_id, {"bundle": env_input_hash(store, "tool_tests", category, env_id)}, make)

    return run_stage(
        store,
        "tool_graphs",
        category,
        TOOL_GRAPHS_CODE_VERSION,
        [job(e) for e in gated.kept],
        upstream=_upstream(store, category, "tool_tests"),
        progress=progress,
    )
