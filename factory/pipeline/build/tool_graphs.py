"""Tool graphs: which tool feeds which (strong 3 / weak 2 / independent 1), as node-link JSON; the
map that graph-walk tasks follow."""

from __future__ import annotations

from pathlib import Path

from factory.envs.bundle import Bundle
from factory.graphs import build_tool_graph, graph_to_json
from factory.pipeline.artifacts import GRAPH_JSON
from factory.pipeline.registry import TOOL_GRAPHS, TOOL_TESTS
from factory.pipeline.runner import (
    EnvOutcome,
    EnvWork,
    Progress,
    StageRun,
    env_dir,
    env_input_hash,
    manifest_hashes,
    require_manifest,
    run_stage,
)
from factory.store import Store, write_json_atomic


def build_tool_graphs(store: Store, category: str, *, progress: Progress | None = None) -> StageRun:
    """The tool dependency graph of each gated environment."""

    def job(env_id: str) -> EnvWork:
        def make(out: Path) -> EnvOutcome:
            g = build_tool_graph(Bundle.open(env_dir(store, TOOL_TESTS, category, env_id)).spec)
            write_json_atomic(out / GRAPH_JSON, graph_to_json(g))
            kinds = [d.get("kind") for _, _, d in g.edges(data=True)]
            counts = {
                "tools": g.number_of_nodes(),
                "strong_edges": kinds.count("strong"),
                "weak_edges": kinds.count("weak"),
            }
            return EnvOutcome(env_id=env_id, counts=counts)

        return EnvWork(env_id, {"bundle": env_input_hash(store, TOOL_TESTS, category, env_id)}, make)

    return run_stage(
        store,
        TOOL_GRAPHS,
        category,
        [job(e) for e in require_manifest(store, TOOL_TESTS, category).kept],
        upstream=manifest_hashes(store, category, TOOL_TESTS),
        progress=progress,
    )
