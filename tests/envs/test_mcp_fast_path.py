"""`factory serve --http` answers `tools/call` and `ping` on an open session without the SDK's per-request
machinery: the answer must be byte for byte the SDK's, idle reaping must still see the calls, and anything
unusual must reach the SDK untouched."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from factory.envs import mcp_server
from factory.envs.mcp_server import ServingLimits
from factory.envs.runtime import Environment
from factory.models import EnvSpec, ToolSpec
from factory.store import write_json_atomic
from tests.builders import serving_http

TOOLS_PY = """
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


def nest(state, depth):
    value = {}
    for _ in range(depth):
        value = {"a": value}
    return value
"""


def _obj(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


SPEC = EnvSpec(
    id="notes",
    title="Notes",
    topic_id="notes",
    description="Shared notes.",
    backend="sqlite",
    tools=[
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
        ToolSpec(
            name="nest",
            description="A value nested `depth` objects deep.",
            parameters=_obj({"depth": {"type": "integer"}}, ["depth"]),
        ),
    ],
)
PROTOCOL = HANDSHAKE_PROTOCOL_VERSIONS[-1]
ACCEPT = "application/json, text/event-stream"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("notes") / "bundle"
    d.mkdir()
    schema = "CREATE TABLE notes (id INTEGER PRIMARY KEY, owner TEXT NOT NULL, text TEXT NOT NULL);\n"
    (d / "schema.sql").write_text(schema)
    conn = sqlite3.connect(d / "seed.sqlite")
    conn.executescript(schema)
    conn.execute("INSERT INTO notes (owner, text) VALUES ('ada', 'buy milk — ünïcode')")
    conn.commit()
    conn.close()
    (d / "tools.py").write_text(TOOLS_PY)
    write_json_atomic(d / "env.json", SPEC)
    return d


@pytest.fixture
def fast_replies(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The methods the fast path answered, in order (everything else went through the SDK)."""
    answered: list[str] = []
    reply = mcp_server._FastCalls._reply

    async def counted(self: mcp_server._FastCalls, call: mcp_server._Call, connection: Any) -> bytes:
        answered.append(call.method)
        return await reply(self, call, connection)

    monkeypatch.setattr(mcp_server._FastCalls, "_reply", counted)
    return answered


@contextmanager
def serving(bundle: Path, limits: ServingLimits, fast_path: bool = True) -> Iterator[tuple[str, Environment]]:
    with serving_http(bundle, limits, fast_path, kept=["add_note", "get_note"]) as served:
        yield served


def _open(client: httpx.Client, url: str) -> dict[str, str]:
    """Initialize a session as a client does; the headers every later request carries."""
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }
    opened = client.post(url, json=init, headers={"Accept": ACCEPT})
    assert opened.status_code == 200, opened.text
    headers = {"Accept": ACCEPT, "Mcp-Session-Id": opened.headers["mcp-session-id"], "Mcp-Protocol-Version": PROTOCOL}
    notified = client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    assert notified.status_code == 202
    return headers


def _call(name: str, arguments: dict[str, Any], request_id: int | str = 1) -> bytes:
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    return json.dumps(body).encode()


EXCHANGES: list[tuple[str, bytes, dict[str, str]]] = [
    ("ok", _call("get_note", {"note_id": 1}), {}),
    ("write", _call("add_note", {"owner": "grace", "text": "ünï"}, "req-7"), {}),
    ("read back", _call("get_note", {"note_id": 2}, 3), {}),
    ("tool error", _call("get_note", {"note_id": 99}), {}),
    ("unknown tool", _call("count_notes", {}), {}),  # dropped by the gate: not served
    ("invalid arguments", _call("get_note", {"note_id": "three"}), {}),
    ("no arguments", b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_note"}}', {}),
    ("ping", b'{"jsonrpc":"2.0","id":5,"method":"ping"}', {}),
    ("malformed JSON", b'{"jsonrpc":"2.0","id":6,', {}),
    ("not JSON-RPC", b'{"id":6,"method":"tools/call"}', {}),
    (
        "arguments not an object",
        b'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"get_note","arguments":[1]}}',
        {},
    ),
    ("tools/list", b'{"jsonrpc":"2.0","id":8,"method":"tools/list"}', {}),
    ("bad content type", _call("get_note", {"note_id": 1}), {"Content-Type": "text/plain"}),
    ("not acceptable", _call("get_note", {"note_id": 1}), {"Accept": "text/html"}),
    ("unsupported protocol version", _call("get_note", {"note_id": 1}), {"Mcp-Protocol-Version": "1999-01-01"}),
    ("foreign host", _call("get_note", {"note_id": 1}), {"Host": "evil.example"}),  # DNS rebinding: refused
    ("foreign origin", _call("get_note", {"note_id": 1}), {"Origin": "http://evil.example"}),
    ("ok again", _call("get_note", {"note_id": 1}), {}),  # a refusal is not remembered for the good headers
]


def _exchange(bundle: Path, fast_path: bool) -> list[tuple[int, str | None, bool, bytes]]:
    out = []
    with serving(bundle, ServingLimits(), fast_path) as (url, _env), httpx.Client() as client:
        headers = _open(client, url)
        for _what, body, extra in EXCHANGES:
            sent = {**headers, "Content-Type": "application/json", **extra}
            r = client.post(url, content=body, headers=sent)
            echoed = r.headers.get("mcp-session-id") == headers["Mcp-Session-Id"]
            out.append((r.status_code, r.headers.get("content-type"), echoed, r.content))
        gone = client.post(url, content=_call("get_note", {"note_id": 1}), headers={**headers, "Mcp-Session-Id": "x"})
        out.append((gone.status_code, gone.headers.get("content-type"), False, gone.content))
    return out


def test_the_fast_path_answers_byte_for_byte_what_the_sdk_answers(bundle: Path, fast_replies: list[str]) -> None:
    reference = _exchange(bundle, fast_path=False)
    assert fast_replies == []
    fast = _exchange(bundle, fast_path=True)
    for (what, _, _), sdk, ours in zip([*EXCHANGES, ("unknown session", b"", {})], reference, fast, strict=True):
        assert ours == sdk, (what, ours, sdk)
    assert fast_replies == ["tools/call"] * 7 + ["ping", "tools/call"]  # the rest went to the SDK, as always
    by_name = dict(zip([e[0] for e in EXCHANGES], fast, strict=False))
    assert json.loads(by_name["ok"][3])["result"]["structuredContent"] == {
        "id": 1,
        "owner": "ada",
        "text": "buy milk — ünïcode",
    }
    assert json.loads(by_name["tool error"][3])["result"]["isError"] is True
    assert by_name["malformed JSON"][0] == 400 and b"Parse error" in by_name["malformed JSON"][3]
    assert by_name["foreign host"][0] == 421 and by_name["foreign origin"][0] == 403


def test_a_result_nested_past_what_a_json_writer_takes_gets_the_sdks_answer(bundle: Path) -> None:
    """Around pydantic-core's depth limit the SDK answers a result, or a JSON-RPC error, never an HTTP 500."""
    depths = [100, 252, 253, 254, 255, 256, 300]
    replies: dict[bool, list[tuple[int, bytes]]] = {}
    for fast_path in (False, True):
        with (
            serving_http(bundle, ServingLimits(), fast_path, kept=["nest"]) as (url, _env),
            httpx.Client() as client,
        ):
            headers = {**_open(client, url), "Content-Type": "application/json"}
            replies[fast_path] = []
            for depth in depths:
                r = client.post(url, content=_call("nest", {"depth": depth}), headers=headers)
                replies[fast_path].append((r.status_code, r.content))
    assert replies[True] == replies[False]
    assert all(status == 200 for status, _ in replies[True])
    answered = [json.loads(body) for _, body in replies[True]]
    assert "result" in answered[0] and "error" in answered[-1]  # both kinds of answer are covered


@pytest.mark.filterwarnings("ignore:ping is removed")
def test_the_official_client_is_served_by_the_fast_path(bundle: Path, fast_replies: list[str]) -> None:
    with serving(bundle, ServingLimits()) as (url, env):

        async def main() -> None:
            async with Client(url, mode="legacy") as client:
                assert {t.name for t in (await client.list_tools()).tools} == {"add_note", "get_note"}
                added = await client.call_tool("add_note", {"owner": "grace", "text": "hi"})
                assert not added.is_error and added.structured_content == {"id": 2, "owner": "grace", "text": "hi"}
                again = await client.call_tool("get_note", {"note_id": 2})
                assert again.structured_content == added.structured_content  # the same environment session
                missing = await client.call_tool("get_note", {"note_id": 99})
                assert missing.is_error and json.loads(missing.content[0].text)["error"]["code"] == "not_found"
                await client.send_ping()
                assert len(env._sessions) == 1

        anyio.run(main)
        deadline = time.monotonic() + 5
        while env._sessions and time.monotonic() < deadline:
            time.sleep(0.05)
        assert env._sessions == {}  # the client's DELETE closed the session the fast path opened
    assert fast_replies == ["tools/call", "tools/call", "tools/call", "ping"]


def test_a_session_used_only_through_the_fast_path_idles_out_only_when_idle(
    bundle: Path, fast_replies: list[str]
) -> None:
    with serving(bundle, ServingLimits(idle_timeout_s=0.5)) as (url, env), httpx.Client() as client:
        headers = {**_open(client, url), "Content-Type": "application/json"}
        for i in range(15):  # 1.5 s of calls, each gap well under the timeout
            r = client.post(url, content=_call("get_note", {"note_id": 1}, i), headers=headers)
            assert r.status_code == 200 and not r.json()["result"]["isError"], r.text
            time.sleep(0.1)
        assert len(env._sessions) == 1 and fast_replies == ["tools/call"] * 15
        deadline = time.monotonic() + 10
        while env._sessions and time.monotonic() < deadline:
            time.sleep(0.05)
        assert env._sessions == {}, "the idle session's runtime state was not closed"
        late = client.post(url, content=_call("get_note", {"note_id": 1}), headers=headers)
        assert late.status_code == 404 and len(fast_replies) == 15
