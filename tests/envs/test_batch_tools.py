"""Batch tools (one call, an array of items): the operation, the generated code and the gate's cases.

The tools are those of the reference memory MCP server (modelcontextprotocol/servers, src/memory): rows
named by `name`, relations whose ends are entity names, camelCase item keys.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from factory.envs.codegen import generate_tools, unsupported_tools
from factory.envs.entities import infer_entities
from factory.envs.gate import OutputCheck, check_case, run_gate
from factory.envs.schema import schema_sql
from factory.envs.testgen import generate_tests
from factory.models import EnvSpec, Snapshot, ToolOperation, ToolResult
from factory.store import write_json_atomic
from factory.topics.mcp import topics_from_tools_list

REAL = Path(__file__).resolve().parents[2].parent / "shared" / "real" / "mcp" / "mcp-memory-tools-list.json"
NAME = {"type": "string", "description": "The name of the entity"}
ENTITY = {
    "type": "object",
    "properties": {
        "name": NAME,
        "entityType": {"type": "string", "description": "The type of the entity"},
        "observations": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name", "entityType", "observations"],
    "additionalProperties": False,
}
RELATION = {
    "type": "object",
    "properties": {
        "from": {"type": "string", "description": "The name of the entity where the relation starts"},
        "to": {"type": "string", "description": "The name of the entity where the relation ends"},
        "relationType": {"type": "string", "description": "The type of the relation"},
    },
    "required": ["from", "to", "relationType"],
    "additionalProperties": False,
}
WRITE = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False}
DESTROY = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False}
READ = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}


def _tool(name: str, annotations: dict, prop: str, items: dict) -> dict:
    schema = {"type": "object", "properties": {prop: {"type": "array", "items": items}}, "required": [prop]}
    return {"name": name, "description": name.replace("_", " "), "inputSchema": schema, "annotations": annotations}


MEMORY = {
    "tools": [
        _tool("create_entities", WRITE, "entities", ENTITY),
        _tool("create_relations", WRITE, "relations", RELATION),
        _tool("delete_entities", DESTROY, "entityNames", {"type": "string"}),
        _tool("delete_relations", DESTROY, "relations", RELATION),
        _tool("open_nodes", READ, "names", {"type": "string"}),
    ]
}
ROWS = {
    "entities": [
        {"id": "ent_0001", "name": "Ada", "entity_type": "person"},
        {"id": "ent_0002", "name": "Bob", "entity_type": "person"},
        {"id": "ent_0003", "name": "Cyd", "entity_type": "robot"},
        {"id": "ent_0004", "name": "Dee", "entity_type": "robot"},
    ],
    "relations": [{"id": "rel_0001", "from": "Ada", "to": "Bob", "relation_type": "knows"}],
    "nodes": [{"id": "nod_0001", "name": "Ada"}, {"id": "nod_0002", "name": "Bob"}],
}


def memory_spec() -> EnvSpec:
    [topic] = topics_from_tools_list(MEMORY, "memory.json")
    entities, tools = infer_entities(topic)
    return EnvSpec(id="memory", title="Memory", topic_id=topic.id, description="", tools=tools, entities=entities)


def seed_sqlite(spec: EnvSpec, conn: sqlite3.Connection) -> sqlite3.Connection:
    """ROWS in the real schema (column names quoted: `from` is an SQL keyword)."""
    conn.execute("PRAGMA foreign_keys=ON")
    conn.executescript(schema_sql(spec.entities))
    for table, rows in ROWS.items():
        for r in rows:
            columns = ", ".join(f'"{c}"' for c in r)
            conn.execute(f'INSERT INTO "{table}" ({columns}) VALUES ({", ".join("?" * len(r))})', list(r.values()))
    conn.commit()
    return conn


class Memory:
    """The generated tools of the memory spec, run in-process on a state seeded with ROWS."""

    def __init__(self, backend: str = "sqlite", where: Path | None = None) -> None:
        self.spec = memory_spec().model_copy(update={"backend": backend})
        self.ns: dict[str, Any] = {}
        exec(compile(generate_tools(self.spec), "tools.py", "exec"), self.ns)
        self.state: Any
        if backend == "sqlite":
            self.state = seed_sqlite(self.spec, sqlite3.connect(":memory:"))
        else:
            assert where is not None
            where.mkdir(parents=True)
            for table, rows in ROWS.items():
                (where / f"{table}.json").write_text(json.dumps(rows))
            self.state = str(where)

    def call(self, name: str, **args: Any) -> Any:
        return self.ns[name](self.state, **args)

    def table(self, table: str) -> list[dict]:
        if isinstance(self.state, str):
            return json.loads((Path(self.state) / f"{table}.json").read_text())
        cur = self.state.execute(f'SELECT * FROM "{table}" ORDER BY 1')
        return [dict(zip([c[0] for c in cur.description], r, strict=True)) for r in cur.fetchall()]

    def snapshot(self) -> Snapshot:
        return Snapshot(tables={t: self.table(t) for t in ROWS})


@pytest.fixture
def memory(backend: str, tmp_path: Path) -> Memory:
    return Memory(backend, tmp_path / "state")


def test_batch_tools_get_the_single_item_operation_over_their_array() -> None:
    spec = memory_spec()
    ops = {t.name: t.operation.model_dump(exclude_none=True) for t in spec.tools if t.operation}
    assert ops == {
        "create_entities": {"kind": "create", "entity": "entity", "batch_param": "entities"},
        "create_relations": {"kind": "create", "entity": "relation", "batch_param": "relations"},
        "delete_entities": {"kind": "delete", "entity": "entity", "batch_param": "entityNames", "key_field": "name"},
        "delete_relations": {"kind": "delete", "entity": "relation", "batch_param": "relations"},
        "open_nodes": {"kind": "get", "entity": "node", "batch_param": "names", "key_field": "name"},
    }
    create = spec.tool("create_entities")
    assert create.parameters["properties"]["entities"]["items"] == ENTITY  # the declared interface is kept
    assert (create.mutates, spec.tool("open_nodes").mutates) == (True, False)
    fields = {e.name: {f.name: f for f in e.fields} for e in spec.entities}
    assert fields["relation"]["from"].references == "entity.name"  # relations name entities by name
    assert fields["relation"]["to"].references == "entity.name"
    assert fields["entity"]["name"].unique
    assert unsupported_tools(spec) == {}
    # single-item operations serialize as before: no batch keys unless set
    assert "batch_param" not in ToolOperation(kind="get", entity="node").model_dump()


def test_batches_without_a_single_item_meaning_get_no_code() -> None:
    observation = {
        "type": "object",
        "properties": {"entityName": NAME, "observations": {"type": "array", "items": {"type": "string"}}},
        "required": ["entityName", "observations"],
    }
    tools = [
        *MEMORY["tools"],
        _tool(
            "add_observations",
            WRITE,
            "observations",
            {**observation, "properties": {"entityName": NAME, "contents": observation["properties"]["observations"]}},
        ),
        _tool("delete_observations", DESTROY, "deletions", observation),
        _tool("delete_colors", DESTROY, "colors", {"type": "string"}),
    ]
    [topic] = topics_from_tools_list({"tools": tools}, "memory.json")
    entities, finished = infer_entities(topic)
    spec = EnvSpec(id="m", title="M", topic_id=topic.id, description="", tools=finished, entities=entities)
    # a deletion that names contents inside a row (no column holds them) is no row delete
    assert unsupported_tools(spec)["delete_observations"] == "batch items hold values that are no field: observations"
    assert "delete_colors" in unsupported_tools(spec)
    fields = {f.name: f.references for f in {e.name: e for e in entities}["observation"].fields}
    assert fields["entity_name"] == "entity.name"  # `<x>_name` names a row of x


def test_a_batch_create_writes_one_row_per_item(memory: Memory) -> None:
    items = [
        {"name": "Eve", "entityType": "person", "observations": ["likes tea"]},
        {"name": "Fay", "entityType": "robot", "observations": []},
    ]
    result = memory.call("create_entities", entities=items)
    assert OutputCheck(memory.spec.tool("create_entities").output or {}).problem(result) is None
    assert [(r["name"], r["entity_type"]) for r in result["entities"]] == [("Eve", "person"), ("Fay", "robot")]
    assert [r["id"] for r in result["entities"]] == ["ent_0005", "ent_0006"]
    assert len(memory.table("entities")) == 6
    relation = {"from": "Eve", "to": "Fay", "relationType": "knows"}
    assert len(memory.call("create_relations", relations=[relation, relation])["relations"]) == 2


def test_one_bad_item_fails_the_call_and_writes_nothing(memory: Memory) -> None:
    before = memory.snapshot()
    good = {"from": "Ada", "to": "Cyd", "relationType": "knows"}
    bad = {"from": "Ada", "to": "Nobody", "relationType": "knows"}
    assert memory.call("create_relations", relations=[good, bad])["error"]["code"] == "invalid_reference"
    assert memory.call("delete_entities", entityNames=["Cyd", "Nobody"])["error"]["code"] == "not_found"
    assert memory.call("delete_entities", entityNames=["Dee", "Ada"])["error"]["code"] == "conflict"  # Ada is related
    assert memory.call("open_nodes", names=["Ada", "Zed"])["error"]["code"] == "not_found"
    eve = {"name": "Eve", "entityType": "person", "observations": []}
    twice = memory.call("create_entities", entities=[eve, {**eve, "entityType": "robot"}])
    assert twice["error"]["code"] == "conflict"  # checked before anything is written
    taken = memory.call("create_entities", entities=[eve, {**eve, "name": "Bob"}])
    assert taken["error"] == {"code": "conflict", "message": "a entity with name 'Bob' already exists"}
    assert memory.snapshot() == before


def test_batch_deletes_and_gets_name_rows_by_their_key_field(memory: Memory) -> None:
    assert memory.call("delete_entities", entityNames=["Cyd", "Dee"]) == {
        "deleted": True,
        "entityNames": ["Cyd", "Dee"],
    }
    assert [r["name"] for r in memory.table("entities")] == ["Ada", "Bob"]
    gone = memory.call("delete_relations", relations=[{"from": "Ada", "to": "Bob", "relationType": "knows"}])
    assert gone["deleted"] is True and memory.table("relations") == []
    nodes = memory.call("open_nodes", names=["Bob", "Ada"])
    assert [n["name"] for n in nodes["nodes"]] == ["Bob", "Ada"]
    assert OutputCheck(memory.spec.tool("open_nodes").output or {}).problem(nodes) is None
    assert (
        OutputCheck(memory.spec.tool("delete_entities").output or {}).problem({"deleted": True, "entityNames": []})
        is None
    )


def test_the_gate_cases_of_batch_tools_hold() -> None:
    spec = memory_spec()
    cases = generate_tests(spec, ROWS, seed=0)
    by_tool: dict[str, list[str]] = {}
    for case in cases:
        by_tool.setdefault(case.tool, []).append(case.name)
        memory = Memory()
        value = memory.call(case.tool, **case.args)
        error = value.get("error") if isinstance(value, dict) else None
        result = ToolResult(ok=error is None, value=None if error else value, error=error)
        output = OutputCheck(spec.tool(case.tool).output or {})
        assert check_case(case, result, memory.snapshot(), output) is None, case.name
    assert set(by_tool) == {t.name for t in spec.tools}
    create = next(c for c in cases if c.tool == "create_entities" and c.expect.ok)
    assert len(create.args["entities"]) == 2 and [s.count for s in create.state] == [1, 1]  # N items, N rows
    assert any(c.expect.error_code == "invalid_reference" for c in cases if c.tool == "create_relations")
    assert any(c.expect.error_code == "not_found" for c in cases if c.tool == "open_nodes")
    delete = next(c for c in cases if c.tool == "delete_entities" and c.expect.ok)
    assert [s.count for s in delete.state] == [0, 0]


def test_batch_tools_pass_the_gate_in_the_sandbox(tmp_path: Path) -> None:
    spec = memory_spec()
    bundle = tmp_path / "memory"
    bundle.mkdir()
    write_json_atomic(bundle / "env.json", spec)
    (bundle / "tools.py").write_text(generate_tools(spec))
    seed_sqlite(spec, sqlite3.connect(bundle / "seed.sqlite")).close()
    report = run_gate(bundle, generate_tests(spec, ROWS, seed=0))
    assert report.kept_tools == [t.name for t in spec.tools], report.reasons
    assert all(r.accuracy == 1.0 for r in report.tools.values())


@pytest.mark.skipif(not REAL.is_file(), reason="../shared/real is not here")
def test_the_real_memory_server_keeps_its_batch_tools() -> None:
    [topic] = topics_from_tools_list(json.loads(REAL.read_text()), REAL)
    entities, tools = infer_entities(topic)
    spec = EnvSpec(id="memory", title="Memory", topic_id=topic.id, description="", tools=tools, entities=entities)
    coded = {t.name for t in tools if t.operation is not None} - set(unsupported_tools(spec))
    assert len(coded) >= 7, unsupported_tools(spec)
