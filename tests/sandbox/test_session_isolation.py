"""Hostile tools against their neighbours: a call sees only its own session.

Each tool.py here is written by hand to do what tool code must not manage: reach another session's sqlite
connection through `gc`, or its files through the file system, in the same or another environment; forge
reply frames on every descriptor; share /tmp; run away with signals blocked next to an innocent call. On a
design where the sessions of a worker share one process, each of these tests fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from factory.envs.mcp_server import CallThreads, _EnvSession
from factory.envs.runtime import Environment
from factory.models import ToolResult
from factory.sandbox import Limits, SandboxPool, capabilities
from factory.sandbox.worker import WorkerTimeout, write_all

LIMITS = Limits(timeout_s=1.0, cpu_s=2, memory_bytes=1 << 30, grace_s=0.5)
SCHEMA = """CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
INSERT INTO customers VALUES (1, 'ada');
"""

HONEST = """
def rename(state, name):
    state.execute("UPDATE customers SET name = ? WHERE id = 1", [name])
    return {"name": name}

def whoami(state):
    return {"name": state.execute("SELECT name FROM customers WHERE id = 1").fetchone()[0], "n": divmod(7, 3)[0]}
"""

SPY = """
import gc, sqlite3

def spy(state):
    seen = []
    for obj in gc.get_objects():
        if isinstance(obj, sqlite3.Connection) and obj is not state:
            try:
                seen.append(obj.execute("SELECT name FROM customers WHERE id = 1").fetchone()[0])
                obj.execute("UPDATE customers SET name = 'PWNED by another session' WHERE id = 1")
            except Exception:
                pass
    return {"seen": seen}
"""

POISON = """
import builtins, gc

builtins.divmod = lambda a, b: (-1, -1)  # import-time code patches what every tools.py shares

def tamper(state):
    hit = 0
    for obj in gc.get_objects():
        if isinstance(obj, dict) and obj.get("__name__") == "tools" and "whoami" in obj:
            obj["whoami"] = lambda state: {"name": "hijacked", "n": 0}
            hit += 1
    return {"hit": hit}
"""

FORGER = """
import json, os

def forge(state):
    for seq in range(1, 64):
        for frame in ([seq, "ok", {"forged": True}, False], ["ok", {"forged": True}, False]):
            data = json.dumps(frame).encode()
            for fd in range(3, 256):
                try:
                    os.write(fd, len(data).to_bytes(4, "big") + data)
                except OSError:
                    pass
    return {"forged": False}

def forge_later(state):
    import threading, time
    def later():
        time.sleep(0.2)
        forge(state)
    threading.Thread(target=later, daemon=True).start()
    return {"forged": False}

def garble(state):
    for fd in range(3, 256):
        try:
            os.write(fd, bytes([0, 0, 0, 5]) + b'[1,"o' + bytes(range(256)))
        except OSError:
            pass
    return {"garbled": False}

def die_later(state):
    import threading
    threading.Timer(0.1, os._exit, [0]).start()
    return {"dying": True}
"""

RUNAWAY = """
import signal, time

def spin_masked(state):
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGPROF, signal.SIGXCPU})
    end = time.monotonic() + 30
    while time.monotonic() < end:
        pass
    return {"spun": True}

def sleep_masked(state):
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGPROF, signal.SIGXCPU})
    time.sleep(30)
    return {"slept": True}
"""

SCRATCH = """
import os, tempfile

PLACES = ("/tmp", "/var/tmp", "/dev/shm")

def leave(state, mark):
    wrote = []
    for d in (*PLACES, tempfile.gettempdir()):
        try:
            with open(os.path.join(d, "left-by-a-session"), "w") as f:
                f.write(mark)
            wrote.append(d)
        except OSError:
            pass
    return {"wrote": wrote, "tmpdir": tempfile.gettempdir()}

def find(state):
    found = []
    for d in (*PLACES, tempfile.gettempdir()):
        try:
            with open(os.path.join(d, "left-by-a-session")) as f:
                found.append(f.read())
        except OSError:
            pass
    return {"found": found, "tmpdir": tempfile.gettempdir()}
"""

NOTES = """
import json, os

def add_note(state, title):
    path = os.path.join(state, "notes.json")
    with open(path) as f:
        notes = json.load(f)
    notes.append({"note_id": len(notes) + 1, "title": title})
    with open(path, "w") as f:
        json.dump(notes, f)
    return notes[-1]

def rummage(state):
    mine = os.path.realpath(os.path.join(state, "notes.json"))
    found = []
    roots = {os.path.dirname(state), os.path.dirname(os.path.dirname(state)), os.getcwd(), "/tmp", "/var/tmp"}
    for root in roots:
        for dirpath, _, files in os.walk(root):
            for name in files:
                path = os.path.realpath(os.path.join(dirpath, name))
                if name == "notes.json" and path != mine and not path.startswith(state + ".bak"):
                    try:
                        with open(path) as f:
                            found.append(f.read())
                        with open(path, "w") as f:
                            f.write("[]")
                    except OSError:
                        pass
    return {"found": found}
"""


def _tool(name: str, props: dict[str, Any] | None = None, mutates: bool = False) -> dict[str, Any]:
    params = {"type": "object", "properties": props or {}, "required": sorted(props or {})}
    return {"name": name, "description": name, "parameters": params, "mutates": mutates}


def bundle(dest: Path, name: str, source: str, tools: list[dict[str, Any]], backend: str = "sqlite") -> Path:
    """A bundle written by hand: env.json, tools.py, and a one-row sqlite seed (or a notes.json state)."""
    out = dest / name
    out.mkdir(parents=True)
    spec = {"id": name, "title": name, "topic_id": name, "description": name, "backend": backend, "tools": tools}
    (out / "env.json").write_text(json.dumps(spec))
    (out / "tools.py").write_text(source)
    if backend == "sqlite":
        (out / "schema.sql").write_text(SCHEMA)
        con = sqlite3.connect(out / "seed.sqlite")
        con.executescript(SCHEMA)
        con.commit()
        con.close()
    else:
        (out / "state").mkdir()
        (out / "state" / "notes.json").write_text(json.dumps([{"note_id": 1, "title": "first"}]))
    return out


HONEST_TOOLS = [_tool("rename", {"name": {"type": "string"}}, mutates=True), _tool("whoami")]


@pytest.fixture(scope="module")
def pool():
    p = SandboxPool(size=1, limits=LIMITS)  # one host: every session below shares it, as in the measured attack
    yield p
    p.close()


@pytest.fixture(scope="module")
def namespaced(pool) -> bool:
    return capabilities(pool).session_namespaces


def test_capabilities_name_the_isolation_unit(pool):
    assert capabilities(pool).isolation == "process per session"


def test_gc_does_not_reach_another_sessions_connection(pool, tmp_path):
    path = bundle(tmp_path, "spyshop", HONEST + SPY, [*HONEST_TOOLS, _tool("spy")])
    with Environment.open(path, pool=pool) as env, env.session() as a, env.session() as b:
        assert a.call("rename", {"name": "mine"}).ok
        r = b.call("spy")
        assert r.ok and r.value == {"seen": []}
        assert a.call("whoami").value["name"] == "mine"
        assert b.call("whoami").value["name"] == "ada"


def test_another_environment_cannot_reach_or_poison_this_one(pool, tmp_path):
    honest_path = bundle(tmp_path, "honest", HONEST, HONEST_TOOLS)
    hostile_path = bundle(tmp_path, "hostile", HONEST + SPY + POISON, [*HONEST_TOOLS, _tool("spy"), _tool("tamper")])
    with Environment.open(honest_path, pool=pool) as honest, honest.session() as victim:
        assert victim.call("rename", {"name": "honest-row"}).ok
        with Environment.open(hostile_path, pool=pool) as hostile, hostile.session() as attacker:
            assert attacker.call("spy").value == {"seen": []}
            assert attacker.call("tamper").ok  # whatever it finds is its own process's
            assert victim.call("whoami").value == {"name": "honest-row", "n": 2}
            with honest.session() as later:  # opened after the hostile import patched its builtins
                assert later.call("whoami").value == {"name": "ada", "n": 2}


def test_files_backend_sessions_cannot_see_each_other(pool, namespaced, tmp_path):
    if not namespaced:
        pytest.skip("no user namespace per session here: siblings share a uid (capabilities says so)")
    tools = [_tool("add_note", {"title": {"type": "string"}}, mutates=True), _tool("rummage")]
    with (
        Environment.open(bundle(tmp_path, "notes", NOTES, tools, "files"), pool=pool) as env,
        env.session() as a,
        env.session() as b,
    ):
        assert a.call("add_note", {"title": "secret-of-a"}).ok
        r = b.call("rummage")
        assert r.ok and r.value == {"found": []}
        assert [n["title"] for n in a.snapshot().tables["notes"]] == ["first", "secret-of-a"]


def test_scratch_space_is_per_session(pool, namespaced, tmp_path):
    tools = [_tool("leave", {"mark": {"type": "string"}}), _tool("find")]
    with (
        Environment.open(bundle(tmp_path, "scratch", SCRATCH, tools), pool=pool) as env,
        env.session() as a,
        env.session() as b,
    ):
        left = a.call("leave", {"mark": "from-a"}).value
        found = b.call("find").value
        if namespaced:  # /tmp, /var/tmp and /dev/shm are each session's own tmpfs, and TMPDIR lies in it
            assert "/tmp" in left["wrote"] and left["tmpdir"].startswith("/tmp/")
            assert found["found"] == []
        else:  # at least TMPDIR is each session's own directory
            assert left["tmpdir"] != found["tmpdir"]
            assert "from-a" not in found["found"][-1:]
        assert a.call("find").value["found"]  # a's own files are still there for a


def test_forged_frames_fail_only_the_forging_call(pool, tmp_path):
    tools = [*HONEST_TOOLS, *(_tool(n) for n in ("forge", "garble", "forge_later", "die_later"))]
    with (
        Environment.open(bundle(tmp_path, "forger", HONEST + FORGER, tools), pool=pool) as env,
        env.session() as victim,
        env.session() as forger,
    ):
        assert victim.call("rename", {"name": "victim"}).ok
        assert forger.call("rename", {"name": "forger"}).ok
        for tool in ("forge", "garble"):
            r = forger.call(tool)
            assert not r.ok and r.env_error and r.error.code == "worker_crashed"
            assert forger.call("whoami").value["name"] == "forger"  # rebuilt from its journal
        for _ in range(5):
            assert victim.call("whoami").value == {"name": "victim", "n": 2}
        assert forger.call("forge_later").value == {"forged": False}
        time.sleep(0.5)  # the stray frames arrive between calls: found before the next request is sent
        assert forger.call("whoami").value["name"] == "forger"
        assert victim.snapshot().tables["customers"] == [{"id": 1, "name": "victim"}]


def test_a_process_killed_between_calls_is_rebuilt(pool, tmp_path):
    tools = [*HONEST_TOOLS, *(_tool(n) for n in ("forge", "garble", "forge_later", "die_later"))]
    with Environment.open(bundle(tmp_path, "dier", HONEST + FORGER, tools), pool=pool) as env, env.session() as s:
        assert s.call("rename", {"name": "kept"}).ok
        assert s.call("die_later").ok
        time.sleep(0.4)
        assert s.snapshot().tables["customers"] == [{"id": 1, "name": "kept"}]
        assert s.call("whoami").value["name"] == "kept"


@pytest.mark.parametrize("tool", ["spin_masked", "sleep_masked"])
def test_a_runaway_call_does_not_delay_a_neighbour(pool, tmp_path, tool):
    tools = [*HONEST_TOOLS, _tool("spin_masked"), _tool("sleep_masked")]
    with (
        Environment.open(bundle(tmp_path, f"runaway-{tool}", HONEST + RUNAWAY, tools), pool=pool) as env,
        env.session() as runaway,
        env.session() as innocent,
    ):
        assert runaway.call("rename", {"name": "runaway"}).ok
        assert innocent.call("whoami").ok
        outcome: list[Any] = []
        worker = threading.Thread(target=lambda: outcome.append(runaway.call(tool)))
        started = time.monotonic()
        worker.start()
        time.sleep(0.1)
        slowest = 0.0
        while worker.is_alive() and time.monotonic() - started < 10:
            t = time.monotonic()
            assert innocent.call("whoami").ok
            slowest = max(slowest, time.monotonic() - t)
        worker.join()
        assert slowest < 0.5, f"the innocent call waited {slowest:.2f}s"
        r = outcome[0]
        assert not r.ok and r.error.code == "timeout" and r.env_error
        assert time.monotonic() - started < LIMITS.timeout_s + LIMITS.grace_s + 3
        assert runaway.call("whoami").value["name"] == "runaway"


def test_a_template_that_tool_code_made_multithreaded_still_keeps_sessions_apart(pool, namespaced, tmp_path):
    source = "import threading, time\nthreading.Thread(target=time.sleep, args=(3600,), daemon=True).start()\n"
    tools = [_tool("leave", {"mark": {"type": "string"}}), _tool("find")]
    with (
        Environment.open(bundle(tmp_path, "threaded", source + SCRATCH, tools), pool=pool) as env,
        env.session() as a,
        env.session() as b,
    ):
        assert a.call("leave", {"mark": "from-a"}).ok
        found = b.call("find").value
        assert found["found"] == [] if namespaced else "from-a" not in found["found"][-1:]


# --- the same attacks on the exchange `factory serve` drives from its event loop (no thread per call) ------------


def _on_loop(env: Environment, main: Callable[[Callable[[Any, str, dict[str, Any]], Awaitable[ToolResult]]], Any]):
    """Run `main(call)` on an event loop, `call(session, tool, args)` being the MCP server's call of a session."""

    async def run() -> Any:
        threads = CallThreads(2)
        opened: dict[int, _EnvSession] = {}

        async def call(session: Any, tool: str, args: dict[str, Any]) -> ToolResult:
            if id(session) not in opened:
                opened[id(session)] = _EnvSession(contextlib.ExitStack(), session, threads)
            return await opened[id(session)].call(tool, args)

        try:
            return await main(call)
        finally:
            threads.close()

    return asyncio.run(run())


def test_the_loop_exchange_runs_plain_calls_without_a_thread(pool, tmp_path, monkeypatch):
    hopped: list[Any] = []
    real = CallThreads.run

    async def counted(self: CallThreads, fn: Any, *args: Any) -> Any:
        hopped.append(fn)
        return await real(self, fn, *args)

    monkeypatch.setattr(CallThreads, "run", counted)
    big = "def big(state, n):\n    return {'text': 'x' * n}\n"  # a reply that arrives in several reads
    tools = [*HONEST_TOOLS, _tool("big", {"n": {"type": "integer"}})]
    with Environment.open(bundle(tmp_path, "plain", HONEST + big, tools), pool=pool) as env, env.session() as s:

        async def main(call: Any) -> None:
            assert (await call(s, "rename", {"name": "loop"})).ok
            assert (await call(s, "whoami", {})).value == {"name": "loop", "n": 2}
            assert (await call(s, "big", {"n": 3_000_000})).value == {"text": "x" * 3_000_000}
            assert not (await call(s, "whoami", {"extra": 1})).ok

        _on_loop(env, main)
        assert hopped == []
        assert s.journal == [("rename", {"name": "loop"})]


def test_forged_frames_through_the_loop_fail_only_the_forging_call(pool, tmp_path):
    tools = [*HONEST_TOOLS, *(_tool(n) for n in ("forge", "garble", "forge_later", "die_later"))]
    with (
        Environment.open(bundle(tmp_path, "loop-forger", HONEST + FORGER, tools), pool=pool) as env,
        env.session() as victim,
        env.session() as forger,
    ):

        async def main(call: Any) -> None:
            assert (await call(victim, "rename", {"name": "victim"})).ok
            assert (await call(forger, "rename", {"name": "forger"})).ok
            for tool in ("forge", "garble"):
                r = await call(forger, tool, {})
                assert not r.ok and r.env_error and r.error.code == "worker_crashed", r
                assert (await call(forger, "whoami", {})).value["name"] == "forger"  # rebuilt from its journal
                assert (await call(victim, "whoami", {})).value == {"name": "victim", "n": 2}
            assert (await call(forger, "forge_later", {})).value == {"forged": False}
            await asyncio.sleep(0.5)  # stray frames between calls: found before the next request is sent
            assert (await call(forger, "whoami", {})).value["name"] == "forger"
            assert (await call(forger, "die_later", {})).ok
            await asyncio.sleep(0.4)
            assert (await call(forger, "whoami", {})).value["name"] == "forger"

        _on_loop(env, main)
        assert victim.snapshot().tables["customers"] == [{"id": 1, "name": "victim"}]


def test_a_runaway_call_on_the_loop_times_out_and_leaves_the_loop_serving(pool, tmp_path):
    tools = [*HONEST_TOOLS, _tool("spin_masked"), _tool("sleep_masked")]
    with (
        Environment.open(bundle(tmp_path, "loop-runaway", HONEST + RUNAWAY, tools), pool=pool) as env,
        env.session() as runaway,
        env.session() as innocent,
        env.session() as cancelled,
    ):

        async def main(call: Any) -> None:
            assert (await call(runaway, "rename", {"name": "runaway"})).ok
            assert (await call(cancelled, "rename", {"name": "cancelled"})).ok
            started = time.monotonic()
            running = asyncio.ensure_future(call(runaway, "sleep_masked", {}))
            slowest = 0.0
            while not running.done():
                t = time.monotonic()
                assert (await call(innocent, "whoami", {})).ok
                slowest = max(slowest, time.monotonic() - t)
            r = running.result()
            assert not r.ok and r.error.code == "timeout" and r.env_error
            assert time.monotonic() - started < LIMITS.timeout_s + LIMITS.grace_s + 3
            assert slowest < 0.5, f"the innocent call waited {slowest:.2f}s"
            assert (await call(runaway, "whoami", {})).value["name"] == "runaway"
            gone = asyncio.ensure_future(call(cancelled, "spin_masked", {}))  # its client goes away mid-call
            await asyncio.sleep(0.2)
            gone.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await gone
            assert (await call(cancelled, "whoami", {})).value["name"] == "cancelled"

        _on_loop(env, main)


STALL = """
import ctypes, threading, time

def stall_later(state):
    def hold():
        time.sleep(0.1)
        ctypes.PyDLL(None).sleep(3600)  # holds the GIL: the process never reads its socket again
    threading.Thread(target=hold, daemon=True).start()
    return {"stalled": True}

def slow_rename(state, name):
    time.sleep(0.3)
    state.execute("UPDATE customers SET name = ? WHERE id = 1", [name])
    return {}
"""
STALL_TOOLS = [*HONEST_TOOLS, _tool("stall_later"), _tool("slow_rename", {"name": {"type": "string"}}, mutates=True)]


def test_a_process_that_stops_reading_never_blocks_the_loop(pool, tmp_path):
    """The loop writes a request only when the socket takes it whole at once; a bigger one goes to a thread."""
    with Environment.open(bundle(tmp_path, "stall", HONEST + STALL, STALL_TOOLS), pool=pool) as env, env.session() as s:

        async def main(call: Any) -> None:
            assert (await call(s, "stall_later", {})).ok
            await asyncio.sleep(0.3)
            gaps: list[float] = []
            running = asyncio.ensure_future(call(s, "rename", {"name": "x" * 1_000_000}))  # over the socket buffer
            started = time.monotonic()
            while time.monotonic() - started < 1.0:
                t = time.monotonic()
                await asyncio.sleep(0.01)
                gaps.append(time.monotonic() - t)
            running.cancel()
            assert max(gaps) < 0.5, f"the event loop froze for {max(gaps):.2f}s"

        _on_loop(env, main)


def test_writes_wait_on_descriptors_above_1023(tmp_path):
    """A server with a thousand sessions has sockets numbered past what select() takes."""
    ours, theirs = socket.socketpair()
    high = os.dup2(ours.fileno(), 1500)
    os.set_blocking(high, False)
    try:
        started = time.monotonic()
        with pytest.raises(WorkerTimeout):
            write_all(high, b"x" * 8_000_000, timeout_s=0.3)  # nobody reads: it waits for room, then gives up
        assert time.monotonic() - started < 3
    finally:
        os.close(high)
        ours.close()
        theirs.close()


def test_a_session_closed_while_its_abandoned_call_rebuilds_keeps_no_process(pool, tmp_path):
    with Environment.open(bundle(tmp_path, "slow", HONEST + STALL, STALL_TOOLS), pool=pool) as env:

        async def run() -> None:
            threads = CallThreads(2)
            e = await _EnvSession.open(env, threads)
            for k in range(12):  # its replay takes ~3.6 s, longer than close waits for the lock (2.5 s)
                assert (await e.call("slow_rename", {"name": f"n{k}"})).ok
            waiting = asyncio.ensure_future(e.call("whoami", {}))
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            waiting.cancel()  # its client went away: the abandoned call's process is rebuilt in a thread
            with contextlib.suppress(asyncio.CancelledError):
                await waiting
            await e.close()
            await asyncio.sleep(3)
            assert e._session.closed and e._session.proc is None
            threads.close()

        asyncio.run(run())
