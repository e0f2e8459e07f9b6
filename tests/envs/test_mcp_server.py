"""`factory serve`: the official MCP SDK's client over stdio and streamable HTTP, against a real bundle."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from factory.envs.mcp_server import SessionBinding, build_server, mcp_tools
from factory.envs.runtime import Environment
from factory.models import EnvSpec, GateReport, ToolSpec
from factory.store import write_json_atomic

FACTORY = str(Path(sys.executable).with_name("factory"))

TOOLS_PY = """
def list_notes(state, owner=None):
    sql, args = "SELECT id, owner, text FROM notes", ()
    if owner is not None:
        sql, args = sql + " WHERE owner = ?", (owner,)
    rows = state.execute(sql + " ORDER BY id", args).fetchall()
    return {"items": [{"id": r[0], "owner": r[1], "text": r[2]} for r in rows], "total": len(rows)}


def add_note(state, owner, text):
    cur = state.execute("INSERT INTO notes (owner, text) VALUES (?, ?)", (owner, text))
    return {"id": cur.lastrowid, "owner": owner, "text": text}


def get_note(state, note_id):
    row = state.execute("SELECT id, owner, text FROM notes WHERE id = ?", (note_id,)).fetchone()
    if row is None:
        return {"error": {"code": "not_found", "message": f"note {note_id} does not exist"}}
    return {"id": row[0], "owner": row[1], "text": row[2]}


def count_notes(state):
    return state.execute("SELECT COUNT(*) FROM notes").fetchone()[0]
"""

SEED = [("ada", "buy milk"), ("alan", "fix the bombe")]


def _obj(props: dict, required: list[str]) -> dict:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


SPEC = EnvSpec(
    id="notes",
    title="Notes",
    topic_id="notes",
    description="Shared notes.",
    backend="sqlite",
    tools=[
        ToolSpec(
            name="list_notes",
            description="List notes, optionally one owner's.",
            parameters=_obj({"owner": {"type": "string"}}, []),
        ),
        ToolSpec(
            name="add_note",
            description="Add a note.",
            parameters=_obj({"owner": {"type": "string"}, "text": {"type": "string"}}, ["owner", "text"]),
            mutates=True,
        ),
        ToolSpec(
            name="get_note",
            description="One note by id.",
            parameters=_obj({"note_id": {"type": "integer"}}, ["note_id"]),
        ),
        ToolSpec(name="count_notes", description="How many notes there are.", parameters=_obj({}, [])),
    ],
)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    """A hand-written sqlite bundle: env.json, tools.py, schema.sql, seed.sqlite and a gate report."""
    d = tmp_path_factory.mktemp("notes") / "bundle"
    d.mkdir()
    schema = "CREATE TABLE notes (id INTEGER PRIMARY KEY, owner TEXT NOT NULL, text TEXT NOT NULL);\n"
    (d / "schema.sql").write_text(schema)
    conn = sqlite3.connect(d / "seed.sqlite")
    conn.executescript(schema)
    conn.executemany("INSERT INTO notes (owner, text) VALUES (?, ?)", SEED)
    conn.commit()
    conn.close()
    (d / "tools.py").write_text(TOOLS_PY)
    write_json_atomic(d / "env.json", SPEC)
    kept = ["list_notes", "add_note", "get_note"]  # count_notes "failed" the gate: it must not be served
    write_json_atomic(d / "report.json", GateReport(compiled=True, kept=True, kept_tools=kept))
    return d


def _text(result: types.CallToolResult) -> object:
    assert len(result.content) == 1 and isinstance(result.content[0], types.TextContent)
    return json.loads(result.content[0].text)


def _assert_tools_match_env_json(listed: list[types.Tool]) -> None:
    expected = {t.name: t for t in SPEC.tools if t.name != "count_notes"}
    assert {t.name for t in listed} == set(expected)
    for tool in listed:
        spec = expected[tool.name]
        assert tool.description == spec.description
        assert tool.input_schema == spec.parameters
        assert tool.annotations is not None and tool.annotations.read_only_hint is (not spec.mutates)


def _child_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "FACTORY_HOME", "LANG", "PYTHONPATH")}


async def _exercise(client: Client, owner: str) -> None:
    """One client's session: its write is visible to itself, errors come back as MCP error results."""
    added = await client.call_tool("add_note", {"owner": owner, "text": f"note of {owner}"})
    assert not added.is_error and added.structured_content == _text(added)
    mine = await client.call_tool("list_notes", {})
    rows = _text(mine)["items"]
    assert [(r["owner"], r["text"]) for r in rows] == [*SEED, (owner, f"note of {owner}")]


@pytest.mark.parametrize("mode", ["legacy", "auto"])  # stdio serves both protocol eras: the process is the session
def test_stdio_lists_and_calls_tools_in_one_session(bundle: Path, mode: str) -> None:
    params = StdioServerParameters(command=FACTORY, args=["serve", str(bundle)], env=_child_env())

    async def main() -> None:
        async with Client(params, mode=mode) as client:
            _assert_tools_match_env_json((await client.list_tools()).tools)
            await _exercise(client, "grace")
            missing = await client.call_tool("get_note", {"note_id": 99})
            assert missing.is_error
            assert _text(missing) == {
                "error": {"code": "not_found", "message": "note 99 does not exist"},
                "env_error": False,
            }
            bad = await client.call_tool("get_note", {"note_id": "three"})
            assert bad.is_error and _text(bad)["error"]["code"] == "invalid_arguments"
            dropped = await client.call_tool("count_notes", {})
            assert dropped.is_error and _text(dropped)["error"]["code"] == "unknown_tool"

    anyio.run(main)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def http_url(bundle: Path):
    port = _free_port()
    proc = subprocess.Popen(
        [FACTORY, "serve", str(bundle), "--http", f"127.0.0.1:{port}"],
        env=_child_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"server exited: {proc.stderr.read().decode() if proc.stderr else ''}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_http_fifty_concurrent_sessions_are_isolated(http_url: str) -> None:
    async def one(i: int) -> None:
        async with Client(http_url) as client:  # mode "auto": the server steers it to a stateful session
            await _exercise(client, f"client-{i:02d}")

    async def main() -> None:
        async with Client(http_url) as client:
            _assert_tools_match_env_json((await client.list_tools()).tools)
            missing = await client.call_tool("get_note", {"note_id": 7})
            assert missing.is_error and _text(missing)["error"]["code"] == "not_found"
        async with anyio.create_task_group() as tg:
            for i in range(50):
                tg.start_soon(one, i)

    started = time.perf_counter()
    anyio.run(main)
    assert time.perf_counter() - started < 30


def test_http_refuses_sessionless_tool_calls(http_url: str) -> None:
    async def main() -> None:
        async with Client(http_url, mode="2026-07-28") as client:
            assert {t.name for t in (await client.list_tools()).tools} == {"list_notes", "add_note", "get_note"}
            with pytest.raises(Exception, match="stateful"):
                await client.call_tool("add_note", {"owner": "x", "text": "y"})

    anyio.run(main)


def test_an_mcp_session_closes_its_environment_session(bundle: Path) -> None:
    with Environment.open(bundle) as env:
        binding = SessionBinding(env, process=False)
        server = build_server(env, SPEC, binding)

        async def main() -> None:
            async with Client(server, mode="legacy") as client:
                assert not (await client.call_tool("add_note", {"owner": "a", "text": "b"})).is_error
                assert _text(await client.call_tool("count_notes", {})) == 3
                assert len(env._sessions) == 1
            async with Client(server, mode="legacy") as client:
                assert _text(await client.call_tool("count_notes", {})) == 2  # a new session starts from the seed

        anyio.run(main)
        assert env._sessions == {}


def test_tool_annotations_follow_mutates() -> None:
    tools = {t.name: t for t in mcp_tools(SPEC, kept=["add_note", "list_notes"])}
    assert set(tools) == {"add_note", "list_notes"}
    assert tools["add_note"].annotations.read_only_hint is False
    assert tools["list_notes"].annotations.idempotent_hint is True


def test_declared_annotations_are_advertised_as_the_server_declared_them() -> None:
    declared = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False}
    add = SPEC.tool("add_note").model_copy(update={"annotations": declared})
    spec = SPEC.model_copy(update={"tools": [add, SPEC.tool("list_notes")]})
    tools = {t.name: t for t in mcp_tools(spec)}
    # derived from mutates, add_note would be neither destructive nor idempotent
    assert tools["add_note"].annotations.model_dump(by_alias=True, exclude_none=True) == declared
    assert tools["list_notes"].annotations.read_only_hint is True  # none declared: still from mutates
