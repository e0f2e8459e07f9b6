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
        # the server's open_nodes answers {"entities": [...], "relations": [...]}: rows of entity, not of a node
        {
            **_tool("open_nodes", READ, "names", {"type": "string"}),
            "outputSchema": {
                "type": "object",
                "properties": {"entities": {"type": "array", "items": ENTITY}, "relations": {"type": "array"}},
            },
        },
    ]
}
OBSERVATION = {
    "type": "object",
    "properties": {"entityName": NAME, "observations": {"type": "array", "items": {"type": "string"}}},
    "required": ["entityName", "observations"],
}
ADDITION = {
    **OBSERVATION,
    "properties": {"entityName": NAME, "contents": OBSERVATION["properties"]["observations"]},
    "required": ["entityName", "contents"],
}
LIST_EDITS = [
    _tool("add_observations", WRITE, "observations", ADDITION),
    _tool("delete_observations", DESTROY, "deletions", OBSERVATION),
]
ROWS = {
    "entities": [
        {"id": "ent_0001", "name": "Ada", "entity_type": "person", "observations": ["likes tea", "codes"]},
        {"id": "ent_0002", "name": "Bob", "entity_type": "person", "observations": []},
        {"id": "ent_0003", "name": "Cyd", "entity_type": "robot", "observations": ["beeps"]},
        {"id": "ent_0004", "name": "Dee", "entity_type": "robot", "observations": ["beeps", "rolls"]},
    ],
    "relations": [{"id": "rel_0001", "from": "Ada", "to": "Bob", "relation_type": "knows"}],
}
LISTS = {"entities": ("observations",)}  # list columns, JSON text in sqlite


def memory_spec() -> EnvSpec:
    [topic] = topics_from_tools_list({"tools": [*MEMORY["tools"], *LIST_EDITS]}, "memory.json")
    entities, tools = infer_entities(topic)
    return EnvSpec(id="memory", title="Memory", topic_id=topic.id, description="", tools=tools, entities=entities)


def seed_sqlite(spec: EnvSpec, conn: sqlite3.Connection) -> sqlite3.Connection:
    """ROWS in the real schema (column names quoted: `from` is an SQL keyword)."""
    conn.execute("PRAGMA foreign_keys=ON")
    conn.executescript(schema_sql(spec.entities))
    for table, rows in ROWS.items():
        for r in rows:
            columns = ", ".join(f'"{c}"' for c in r)
            values = [json.dumps(v) if isinstance(v, list) else v for v in r.values()]
            conn.execute(f'INSERT INTO "{table}" ({columns}) VALUES ({", ".join("?" * len(r))})', values)
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
        rows = [dict(zip([c[0] for c in cur.description], r, strict=True)) for r in cur.fetchall()]
        return [{k: json.loads(v) if k in LISTS.get(table, ()) else v for k, v in r.items()} for r in rows]

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
        "open_nodes": {"kind": "get", "entity": "entity", "batch_param": "names", "key_field": "name"},
        "add_observations": {
            "kind": "action",
            "entity": "entity",
            "action": "append",
            "field": "observations",
            "batch_param": "observations",
            "key_field": "name",
        },
        "delete_observations": {
            "kind": "action",
            "entity": "entity",
            "action": "remove",
            "field": "observations",
            "batch_param": "deletions",
            "key_field": "name",
        },
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
    tools = [*MEMORY["tools"], _tool("delete_colors", DESTROY, "colors", {"type": "string"})]
    [topic] = topics_from_tools_list({"tools": tools}, "memory.json")
    entities, finished = infer_entities(topic)
    spec = EnvSpec(id="m", title="M", topic_id=topic.id, description="", tools=finished, entities=entities)
    assert "delete_colors" in unsupported_tools(spec)
    assert set(unsupported_tools(spec)) == {"delete_colors"}


def test_observations_are_a_list_field_that_batch_edits_append_to_and_remove_from() -> None:
    """`add_observations({entityName, contents})` edits the named entity's `observations`, the list its create
    items carry: no `observation` table whose rows hold no content."""
    spec = memory_spec()
    assert [e.name for e in spec.entities] == ["entity", "relation"]
    fields = {f.name: f for f in spec.entities[0].fields}
    assert fields["observations"].format == "list" and fields["observations"].required
    add, remove = spec.tool("add_observations").operation, spec.tool("delete_observations").operation
    assert add is not None and remove is not None
    assert (add.kind, add.action, add.field, add.key_field, add.batch_param) == (
        "action",
        "append",
        "observations",
        "name",
        "observations",
    )
    assert (remove.action, remove.field, remove.batch_param) == ("remove", "observations", "deletions")
    assert spec.tool("open_nodes").operation.entity == "entity"  # type: ignore[union-attr]


@pytest.mark.parametrize("backend", ["sqlite", "files"])
def test_list_edits_add_what_a_row_lacks_and_remove_what_it_holds(memory: Memory) -> None:
    added = memory.call(
        "add_observations",
        observations=[
            {"entityName": "Ada", "contents": ["hikes", "likes tea"]},
            {"entityName": "Bob", "contents": ["x"]},
        ],
    )
    assert [(r["name"], r["observations"]) for r in added["entities"]] == [
        ("Ada", ["likes tea", "codes", "hikes"]),  # held once, in order
        ("Bob", ["x"]),
    ]
    assert OutputCheck(memory.spec.tool("add_observations").output or {}).problem(added) is None
    removed = memory.call("delete_observations", deletions=[{"entityName": "Dee", "observations": ["beeps", "z"]}])
    assert removed["entities"][0]["observations"] == ["rolls"]
    rows = {r["name"]: r["observations"] for r in memory.table("entities")}
    assert rows == {"Ada": ["likes tea", "codes", "hikes"], "Bob": ["x"], "Cyd": ["beeps"], "Dee": ["rolls"]}
    before = memory.snapshot()
    missing = memory.call("add_observations", observations=[{"entityName": "Zed", "contents": ["y"]}])
    assert missing["error"]["code"] == "not_found" and memory.snapshot() == before
    read = memory.call("open_nodes", names=["Dee"])
    assert read["entities"][0]["observations"] == ["rolls"]  # read back as a list, not JSON text


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
    assert [n["name"] for n in nodes["entities"]] == ["Bob", "Ada"]
    assert OutputCheck(memory.spec.tool("open_nodes").output or {}).problem(nodes) is None
    assert (
        OutputCheck(memory.spec.tool("delete_entities").output or {}).problem({"deleted": True, "entityNames": []})
        is None
    )


def test_a_delete_that_says_it_takes_the_relations_along_does(tmp_path: Path) -> None:
    """The server's `delete_entities` deletes "entities and their associated relations": no conflict, the
    relations naming a deleted entity go too, the others stay; a delete that does not say so still refuses."""
    tools = [
        {**t, "description": "Delete multiple entities and their associated relations from the knowledge graph"}
        if t["name"] == "delete_entities"
        else t
        for t in MEMORY["tools"]
    ]
    [topic] = topics_from_tools_list({"tools": tools}, "memory.json")
    entities, finished = infer_entities(topic)
    spec = EnvSpec(id="m", title="M", topic_id=topic.id, description="", tools=finished, entities=entities)
    assert spec.tool("delete_entities").operation.cascade == ["relations"]  # type: ignore[union-attr]
    assert memory_spec().tool("delete_entities").operation.cascade is None  # type: ignore[union-attr]
    ns: dict[str, Any] = {}
    exec(compile(generate_tools(spec), "tools.py", "exec"), ns)
    conn = seed_sqlite(spec, sqlite3.connect(":memory:"))
    conn.execute("INSERT INTO relations VALUES (?, ?, ?, ?)", ("rel_0002", "Cyd", "Dee", "knows"))
    assert ns["delete_entities"](conn, entityNames=["Bob"]) == {"deleted": True, "entityNames": ["Bob"]}
    left = conn.execute('SELECT "from", "to" FROM relations').fetchall()
    assert left == [("Cyd", "Dee")]  # Ada -> Bob went with Bob
    assert [r[0] for r in conn.execute("SELECT name FROM entities ORDER BY 1")] == ["Ada", "Cyd", "Dee"]
    cases = [c for c in generate_tests(spec, ROWS, seed=0) if c.tool == "delete_entities"]
    along = next(c for c in cases if c.name.endswith("a row and what points at it"))
    assert {s.table for s in along.state} == {"entities", "relations"} and all(s.count == 0 for s in along.state)
    assert not any(c.expect.error_code == "conflict" for c in cases)


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
    assert coded == {t["name"] for t in json.loads(REAL.read_text())["tools"]}, unsupported_tools(spec)
    ops = {t.name: t.operation for t in tools}
    # every read acts on the entities the tools write (no `nodes` table that nothing fills)
    assert {ops[n].entity for n in ("search_nodes", "open_nodes", "read_graph")} == {"entity"}  # type: ignore[union-attr]
    assert (ops["add_observations"].action, ops["delete_observations"].action) == ("append", "remove")  # type: ignore[union-attr]
