"""build-env: from a topic to a gated environment bundle.

Pipeline: infer entities -> seeded rows -> state (sqlite or files) -> tools.py -> tests.json -> env.json
-> gate -> report.json. The bundle is built aside and swapped in whole (factory.store.atomic_dir), is
written even when the gate rejects it (report.json says why), and the same topic and seed give the same
bytes. The final env.json offers only the tools the gate kept.
"""

from __future__ import annotations

from pathlib import Path

from factory.envs.bundle import TOOLS_PY
from factory.envs.codegen import generate_tools
from factory.envs.gate import gate_environment
from factory.envs.state import Rows, write_state
from factory.mining.datasets import draft_environment
from factory.models import EnvSpec, GateReport, Lineage, StateBackend, TaxonomyPath, Topic
from factory.store import atomic_dir, write_text_atomic


def assemble_bundle(spec: EnvSpec, rows: Rows, out: Path) -> GateReport:
    """Write the state, tools.py and gate of a drafted environment into `out`, swapped in whole."""
    with atomic_dir(Path(out)) as tmp:
        write_state(spec, rows, tmp)
        write_text_atomic(tmp / TOOLS_PY, generate_tools(spec))
        return gate_environment(spec, rows, tmp)


def build_bundle(
    topic: Topic,
    out: Path,
    *,
    seed: int = 0,
    backend: StateBackend = "sqlite",
    taxonomy: TaxonomyPath | None = None,
    lineage: Lineage | None = None,
    scale: float = 1.0,
) -> GateReport:
    """Build and gate the environment of `topic` into the directory `out`; returns the gate's report.

    `scale` multiplies the seeded row counts."""
    spec, rows = draft_environment(topic, seed=seed, backend=backend, taxonomy=taxonomy, lineage=lineage, scale=scale)
    return assemble_bundle(spec, rows, out)


_SOURCE_SUFFIXES = {".json", ".yaml", ".yml"}


def resolve_topic(source: str) -> Topic:
    """A catalog topic id, or a file (OpenAPI, MCP tools/list) holding exactly one topic."""
    from factory.topics import SourceError, get_topic, load_source

    path = Path(source)
    if path.is_dir():
        found = sorted(str(f.relative_to(path)) for f in path.rglob("*") if f.suffix in _SOURCE_SUFFIXES)[:5]
        hint = f" (it holds {', '.join(found)})" if found else ""
        raise SourceError(source, f"is a directory: build-env takes one OpenAPI or MCP tools/list file{hint}")
    if not path.is_file():
        if path.suffix or "/" in source:
            raise SourceError(source, "no such file")
        try:
            return get_topic(source)
        except KeyError as e:
            raise SourceError(source, str(e.args[0])) from e
    topics = load_source(path)
    if len(topics) != 1:
        names = ", ".join(t.id for t in topics) or "none"
        raise SourceError(source, f"holds {len(topics)} topics ({names}); build-env needs a source with exactly one")
    return topics[0]


def build_env(
    source: str, out: Path, seed: int = 0, backend: StateBackend = "sqlite", scale: float = 1.0
) -> GateReport:
    """`factory build-env`: build and gate the environment of a catalog topic id or a source file."""
    return build_bundle(resolve_topic(source), Path(out), seed=seed, backend=backend, scale=scale)
