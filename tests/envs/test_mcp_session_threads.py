"""The MCP server's serving path: over HTTP the environment session opens at initialize and is the one the calls
use, calls run on a few dedicated threads (`CallThreads`), and the fast path's reply dict is the SDK's own."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import mcp_types as types
import pytest
from mcp import Client

from factory.envs.mcp_server import CallThreads, ServingLimits, call_payload, call_result
from factory.envs.runtime import Environment
from factory.models import EnvSpec, ToolError, ToolResult, ToolSpec
from factory.store import write_json_atomic
from tests.builders import serving_http

T = TypeVar("T")

TOOLS_PY = """
def add_note(state, text):
    cur = state.execute("INSERT INTO notes (text) VALUES (?)", (text,))
    return {"id": cur.lastrowid, "text": text}


def count_notes(state):
    return state.execute("SELECT COUNT(*) FROM notes").fetchone()[0]
"""

SPEC = EnvSpec(
    id="notes",
    title="Notes",
    topic_id="notes",
    description="Notes.",
    backend="sqlite",
    tools=[
        ToolSpec(
            name="add_note",
            description="Add a note.",
            parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            mutates=True,
        ),
        ToolSpec(name="count_notes", description="How many notes there are.", parameters={"type": "object"}),
    ],
)


@pytest.fixture(scope="module")
def notes_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A two-tool sqlite bundle whose seed holds one note."""
    d = tmp_path_factory.mktemp("notes") / "bundle"
    d.mkdir()
    schema = "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL);\n"
    (d / "schema.sql").write_text(schema)
    conn = sqlite3.connect(d / "seed.sqlite")
    conn.executescript(schema)
    conn.execute("INSERT INTO notes (text) VALUES ('seed')")
    conn.commit()
    conn.close()
    (d / "tools.py").write_text(TOOLS_PY)
    write_json_atomic(d / "env.json", SPEC)
    return d


def serving(bundle: Path, fast_path: bool) -> AbstractContextManager[tuple[str, Environment]]:
    """The bundle's HTTP app under uvicorn in a thread of this process, so the test can see the runtime."""
    return serving_http(bundle, ServingLimits(), fast_path)


def _value(result: types.CallToolResult) -> Any:
    assert not result.is_error and isinstance(result.content[0], types.TextContent), result
    return json.loads(result.content[0].text)


@pytest.mark.parametrize("fast_path", [True, False], ids=["fast-path", "sdk-only"])
def test_http_initialize_opens_the_environment_session_the_calls_then_use(notes_bundle: Path, fast_path: bool) -> None:
    with serving(notes_bundle, fast_path) as (url, env):

        async def main() -> None:
            async with Client(url, mode="legacy") as first:
                opened = set(env._sessions)
                assert len(opened) == 1, "initialize did not open the environment session"
                assert _value(await first.call_tool("add_note", {"text": "mine"}))["text"] == "mine"
                assert _value(await first.call_tool("count_notes", {})) == 2  # call 1's write, seen by call 2
                assert set(env._sessions) == opened, "the calls did not run in the session initialize opened"
                async with Client(url, mode="legacy") as second:
                    assert _value(await second.call_tool("count_notes", {})) == 1  # the seed, not the first's write
                    assert len(env._sessions) == 2 and opened < set(env._sessions)
                assert _value(await first.call_tool("count_notes", {})) == 2

        anyio.run(main)
        deadline = time.monotonic() + 5
        while env._sessions and time.monotonic() < deadline:  # each client's DELETE closes its session
            time.sleep(0.05)
        assert env._sessions == {}


def _within(call: Awaitable[T]) -> Awaitable[T]:
    """A pool run that must settle: a lost or never-settled future fails the test instead of hanging it."""
    return asyncio.wait_for(call, 5)


def _run(main: Callable[[CallThreads], Awaitable[None]], count: int) -> None:
    threads = CallThreads(count)
    try:
        asyncio.run(main(threads))
    finally:
        threads.close()


def test_call_threads_return_the_result_computed_off_the_loop() -> None:
    async def main(threads: CallThreads) -> None:
        assert await _within(threads.run(divmod, 17, 5)) == (3, 2)
        assert await _within(threads.run(threading.current_thread)) is not threading.current_thread()

    _run(main, 2)


def test_call_threads_raise_the_exception_of_the_call_in_the_awaiting_coroutine() -> None:
    boom = ValueError("boom")

    def fail() -> None:
        raise boom

    async def main(threads: CallThreads) -> None:
        with pytest.raises(ValueError) as raised:
            await _within(threads.run(fail))
        assert raised.value is boom
        assert await _within(threads.run(len, "abc")) == 3  # the pool's only thread survived it

    _run(main, 1)


def test_a_caller_cancelled_while_waiting_leaves_the_pool_working() -> None:
    started, release = threading.Event(), threading.Event()
    finished: list[str] = []

    def slow() -> str:
        started.set()
        release.wait(5)
        finished.append("slow")
        return "late"

    async def main(threads: CallThreads) -> None:
        loop_errors: list[dict[str, Any]] = []
        asyncio.get_running_loop().set_exception_handler(lambda _loop, context: loop_errors.append(context))
        waiting = asyncio.create_task(threads.run(slow))
        while not started.is_set():
            await asyncio.sleep(0.01)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        release.set()
        # Queued behind the cancelled call on the one thread, so that call's settling has run by the time this returns.
        assert await _within(threads.run(str.upper, "next")) == "NEXT"
        assert finished == ["slow"]  # the cancelled caller stopped waiting, the call ran to its end
        assert loop_errors == []  # settling the cancelled future raised nothing (no InvalidStateError)

    _run(main, 1)


def test_more_calls_than_threads_queue_and_all_complete() -> None:
    lock = threading.Lock()
    active, peak = 0, 0
    pairs = threading.Barrier(2, timeout=5)  # each call needs a second one running beside it: two threads serve

    def square(i: int) -> int:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        pairs.wait()
        with lock:
            active -= 1
        return i * i

    async def main(threads: CallThreads) -> None:
        assert await _within(asyncio.gather(*(threads.run(square, i) for i in range(10)))) == [i * i for i in range(10)]

    _run(main, 2)
    assert peak == 2


def test_close_ends_the_threads_after_the_calls_queued_so_far() -> None:
    threads = CallThreads(3)
    meet = threading.Barrier(3, timeout=5)

    def worker() -> threading.Thread:
        meet.wait()  # all three at once: each call is on a thread of its own
        return threading.current_thread()

    async def main() -> tuple[list[threading.Thread], list[int]]:
        workers = await _within(asyncio.gather(*(threads.run(worker) for _ in range(3))))
        queued = [asyncio.create_task(threads.run(pow, i, 2)) for i in range(6)]
        await asyncio.sleep(0)  # the tasks put their calls on the queue
        threads.close()
        return workers, await _within(asyncio.gather(*queued))

    workers, squares = asyncio.run(main())
    assert squares == [0, 1, 4, 9, 16, 25]
    assert len(set(workers)) == 3
    for thread in workers:
        thread.join(2)
        assert not thread.is_alive(), f"{thread.name} still runs after close()"


def _sdk_dump(result: types.CallToolResult) -> dict[str, Any]:
    """A handler's result as the SDK's runner dumps it (mcp.server.runner._dump_result)."""
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


def _reference(result: ToolResult) -> types.CallToolResult:
    """The MCP result built as the model (as call_result was before the fast path): the documented shape."""
    if result.ok:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(result.value, ensure_ascii=False))],
            structured_content=result.value if isinstance(result.value, dict) else None,
            is_error=False,
        )
    error = result.error.model_dump() if result.error else {"code": "error", "message": ""}
    text = json.dumps({"error": error, "env_error": result.env_error}, ensure_ascii=False)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


@pytest.mark.parametrize(
    "result",
    [
        ToolResult(ok=True, value={"id": 3, "text": "buy milk", "done": False, "tags": None}),
        ToolResult(ok=True, value=[{"id": 1}, {"id": 2}]),
        ToolResult(ok=True, value="plain text"),
        ToolResult(ok=False, error=ToolError(code="not_found", message="note 9 does not exist")),
        ToolResult(ok=False, env_error=True),
        ToolResult(ok=True, value={"name": "Zoë ✓ 東京", "nested": {"list": [1, 2.5, {"deep": ["ü", None]}]}}),
    ],
    ids=["dict", "list", "string", "error", "env-error-without-detail", "unicode-nested"],
)
def test_call_payload_is_the_sdks_dump_of_the_call_result(result: ToolResult) -> None:
    payload = call_payload(result)
    assert payload == _sdk_dump(call_result(result))
    assert payload == _sdk_dump(_reference(result))
    assert json.loads(json.dumps(payload)) == payload  # plain JSON, as the fast path writes it
