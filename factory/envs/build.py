"""build-env: from a topic to a gated environment bundle.

Pipeline: infer entities -> seeded rows -> state (sqlite or files) -> tools.py -> tests.json -> env.json
-> gate -> report.json. The bundle is built aside and swapped in whole (factory.store.atomic_dir), is
written even when the gate rejects it (report.json says why), and the same topic and seed give the same
bytes. The final env.json offers only the tools the gate kept.
"""

from __future__ import annotations

from pathlib import Path

from factory.envs.bundle import ENV_JSON, REPORT_JSON, TESTS_JSON, TOOLS_PY
from factory.envs.codegen import TIMESTAMP_FIELDS, generate_tools
from factory.envs.gate import run_gate
from factory.envs.testgen import generate_tests
from factory.models import EntitySpec, EnvSpec, GateReport, Lineage, StateBackend, TaxonomyPath, Topic
from factory.store import atomic_dir, hash_value, write_json_atomic, write_text_atomic

CODE_VERSION = "1"


def bookkeeping_columns(entities: list[EntitySpec]) -> list[str]:
    """ "table.column" of the timestamp-like columns the tools maintain; verifiers ignore them."""
    return [f"{e.table}.{f.name}" for e in entities for f in e.fields if f.name in TIMESTAMP_FIELDS]


def draft_environment(
    topic: Topic,
    *,
    seed: int = 0,
    backend: StateBackend = "sqlite",
    taxonomy: TaxonomyPath | None = None,
    lineage: Lineage | None = None,
    scale: float = 1.0,
) -> tuple[EnvSpec, dict[str, list[dict]]]:
    """The mined dataset of a topic: its env.json before the gate (every tool) and its seeded rows."""
    from factory.envs.entities import infer_entities
    from factory.mining.procedural import generate_rows

    entities, tools = infer_entities(topic)
    spec = EnvSpec(
        id=topic.id,
        title=topic.title,
        topic_id=topic.id,
        taxonomy=taxonomy or topic.taxonomy_hint,
        description=topic.description,
        backend=backend,
        tools=tools,
        entities=entities,
        seed=seed,
        scale=scale,
        bookkeeping=bookkeeping_columns(entities),
        lineage=lineage or Lineage(stage="build_env", code_version=CODE_VERSION, inputs={"topic": hash_value(topic)}),
    )
    return spec, generate_rows(entities, seed, scale)


def write_state(spec: EnvSpec, rows: dict[str, list[dict]], out: Path) -> None:
    """The database of the environment: schema.sql + seed.sqlite, or state/ collections."""
    from factory.envs.state import write_files_state, write_sqlite_state

    if spec.backend == "sqlite":
        write_sqlite_state(spec.entities, rows, out)
    else:
        write_files_state(spec.entities, rows, out)


def tool_code(spec: EnvSpec) -> str:
    """tools.py of the environment."""
    return generate_tools(spec)


def gate_environment(spec: EnvSpec, rows: dict[str, list[dict]], out: Path) -> GateReport:
    """Generate the tool tests into a bundle that has its state and tools.py, run the gate, and write
    env.json (kept tools only), tests.json and report.json."""
    cases = generate_tests(spec, rows, spec.seed)
    write_json_atomic(out / ENV_JSON, spec)
    report = run_gate(out, cases)
    kept = set(report.kept_tools)
    write_json_atomic(out / ENV_JSON, spec.model_copy(update={"tools": [t for t in spec.tools if t.name in kept]}))
    write_json_atomic(out / TESTS_JSON, [c.model_dump(mode="json") for c in cases if c.tool in kept])
    write_json_atomic(out / REPORT_JSON, report)
    return report


def build_bundle(
    topic: Topic,
    out: Path,
    *,
    seed: int = 0,
    backend: StateBackend = "sqlite",
    taxonomy: TaxonomyPath | None = None,
    lineage: Lineage | None = None,
) -> GateReport:
    """Build and gate the environment of `topic` into the directory `out`; returns the gate's report."""
    spec, rows = draft_environment(topic, seed=seed, backend=backend, taxonomy=taxonomy, lineage=lineage)
    with atomic_dir(Path(out)) as tmp:
        write_state(spec, rows, tmp)
        write_text_atomic(tmp / TOOLS_PY, tool_code(spec))
        return gate_environment(spec, rows, tmp)


def resolve_topic(source: str) -> Topic:
    """A catalog topic id, or a file (OpenAPI, MCP tools/list) holding exactly one topic."""
    from factory.topics import SourceError, get_topic, load_source

    path = Path(source)
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


def build_env(source: str, out: Path, seed: int = 0, backend: StateBackend = "sqlite") -> GateReport:
    """`factory build-env`: build and gate the environment of a catalog topic id or a source file."""
    return build_bundle(resolve_topic(source), Path(out), seed=seed, backend=backend)
