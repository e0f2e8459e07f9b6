"""A lean MCP load generator: many concurrent MCP sessions over streamable HTTP, one tool called in a loop.

Each session is what one RL rollout holds: its own keep-alive connection, the initialize handshake
(`Mcp-Session-Id`), `notifications/initialized`, then `tools/call` after `tools/call`. The client speaks
the protocol on raw asyncio streams (HTTP/1.1, JSON or SSE answers, chunked or sized bodies) rather
than through the SDK client, so the generator costs the shared cores little and the server is what
gets measured. Both servers of the side-by-side benchmark face the same generator.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import BaseModel

PROTOCOL = HANDSHAKE_PROTOCOL_VERSIONS[-1]
T = TypeVar("T")


class LoadError(RuntimeError):
    """The server answered something that is not the MCP reply the generator expected."""


class LoadResult(BaseModel):
    """One load run: its sessions, calls, failures and latencies of the timed `tools/call` phase, and how long
    each session took to open (initialize + initialized: a server may set up the session's state there)."""

    sessions: int
    calls: int
    failed_calls: int
    wall_s: float
    calls_per_s: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    server_cpu_s: float
    workers_cpu_s: float
    open_p50_ms: float = float("nan")
    open_p99_ms: float = float("nan")
    first_error: str | None = None


class HttpConnection:
    """One keep-alive HTTP/1.1 connection that sends a request and reads its whole answer."""

    def __init__(self, url: str):
        parts = urlsplit(url)
        if parts.hostname is None or parts.port is None:
            raise ValueError(f"load URL wants http://HOST:PORT/PATH, not {url!r}")
        self._address = (parts.hostname, parts.port)
        self._host = f"{parts.hostname}:{parts.port}"
        self._path = parts.path or "/"
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    @classmethod
    async def open(cls, url: str) -> HttpConnection:
        conn = cls(url)
        await conn._connect()
        return conn

    async def _connect(self) -> None:
        self._reader, self._writer = await asyncio.open_connection(*self._address)

    async def request(self, method: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        """Send one request; a keep-alive connection the server closed while idle is reopened once, as httpx does."""
        head = [f"{method} {self._path} HTTP/1.1", f"Host: {self._host}", f"Content-Length: {len(body)}"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        request = ("\r\n".join(head) + "\r\n\r\n").encode() + body
        if self._reader is None or self._reader.at_eof():
            await self._reconnect()
        status_line = await self._send(request)
        if not status_line:
            await self._reconnect()
            status_line = await self._send(request)
        if not status_line:
            raise LoadError("the server closed the connection")
        assert self._reader is not None
        status = int(status_line.split(b" ", 2)[1])
        answer: dict[str, str] = {}
        while (line := await self._reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            answer[name.strip().lower()] = value.strip()
        if "content-length" in answer:
            return status, answer, await self._reader.readexactly(int(answer["content-length"]))
        if answer.get("transfer-encoding") == "chunked":
            return status, answer, await self._read_chunked()
        return status, answer, b""

    async def _send(self, request: bytes) -> bytes:
        """The answer's status line, or b"" when the connection turned out closed."""
        assert self._reader is not None and self._writer is not None
        try:
            self._writer.write(request)
            return await self._reader.readline()
        except ConnectionError:
            return b""

    async def _reconnect(self) -> None:
        await self.close()
        await self._connect()

    async def _read_chunked(self) -> bytes:
        assert self._reader is not None
        out = bytearray()
        while True:
            size = int((await self._reader.readline()).split(b";")[0], 16)
            if size == 0:
                await self._reader.readline()
                return bytes(out)
            out += await self._reader.readexactly(size)
            await self._reader.readexactly(2)

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(OSError):
                await self._writer.wait_closed()
            self._reader = self._writer = None


def _reply(status: int, headers: dict[str, str], body: bytes, want_id: int) -> dict[str, Any]:
    """The JSON-RPC reply to request `want_id` from a JSON body or an SSE stream."""
    if status >= 400:
        raise LoadError(f"HTTP {status}: {body[:300]!r}")
    if headers.get("content-type", "").startswith("text/event-stream"):
        for line in body.splitlines():
            if line.startswith(b"data:"):
                message = json.loads(line[5:])
                if message.get("id") == want_id:
                    return message
        raise LoadError(f"no reply to request {want_id} in the SSE stream: {body[:300]!r}")
    return json.loads(body)


class McpSession:
    """One MCP session (initialize handshake) on its own connection."""

    def __init__(self, conn: HttpConnection):
        self._conn = conn
        self._next_id = 0
        self.session_id = ""

    @classmethod
    async def open(cls, url: str) -> McpSession:
        session = cls(await HttpConnection.open(url))
        params = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "mcp-load", "version": "1"}}
        await session.rpc("initialize", params)
        await session._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return session

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
            headers["Mcp-Protocol-Version"] = PROTOCOL
        return headers

    async def _post(self, message: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        return await self._conn.request("POST", json.dumps(message).encode(), self._headers())

    async def rpc(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next_id += 1
        status, headers, body = await self._post(
            {"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params}
        )
        self.session_id = self.session_id or headers.get("mcp-session-id", "")
        reply = _reply(status, headers, body, self._next_id)
        if "error" in reply:
            raise LoadError(f"{method}: {reply['error']}")
        return reply["result"]

    async def call_tool(self, tool: str, args: dict[str, Any]) -> Any:
        """The tool's JSON answer (its text content), or LoadError for an error result."""
        result = await self.rpc("tools/call", {"name": tool, "arguments": args})
        if result.get("isError"):
            raise LoadError(f"{tool} failed: {result.get('content')}")
        return json.loads(result["content"][0]["text"])

    async def close(self, delete: bool = True) -> None:
        if delete and self.session_id:
            with contextlib.suppress(OSError, LoadError, asyncio.IncompleteReadError):
                await self._conn.request("DELETE", b"", self._headers())
        await self._conn.close()


def cpu_seconds(pids: list[int]) -> float:
    """CPU time of the processes `pids` so far, those gone counting 0.

    Summed over each process's threads from /proc/PID/task/TID/schedstat (nanoseconds): /proc/PID/stat
    counts 10 ms clock ticks, too coarse for a sandbox worker's few milliseconds in a short run.
    Where schedstat is missing, the ticks of /proc/PID/stat stand in.
    """
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError):
            total += _schedstat_seconds(pid)
    return total


def _schedstat_seconds(pid: int) -> float:
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
        return sum(int((t / "schedstat").read_text().split()[0]) for t in tasks) / 1e9
    except (OSError, ValueError, IndexError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _percentile(sorted_ms: list[float], q: float) -> float:
    if not sorted_ms:
        return float("nan")
    return sorted_ms[min(len(sorted_ms) - 1, int(q * len(sorted_ms)))]


async def run_load(
    url: str,
    tool: str,
    args: dict[str, Any],
    sessions: int,
    calls_per_session: int,
    expect: Any = None,
    server_pids: list[int] | None = None,
    worker_pids: Callable[[], list[int]] | None = None,
    open_concurrency: int = 50,
) -> LoadResult:
    """Open `sessions` sessions, then have every one call `tool` `calls_per_session` times at once.

    Only the call phase is timed (and the CPU of `server_pids`, and apart of the processes `worker_pids()`
    names once the sessions are open, counted: a server may start a process per session as it opens);
    a call whose answer differs from `expect` (when given) counts as failed.
    """
    gate = asyncio.Semaphore(open_concurrency)

    open_ms: list[float] = []

    async def opened() -> McpSession:
        async with gate:
            started = time.perf_counter()
            session = await McpSession.open(url)
            open_ms.append((time.perf_counter() - started) * 1000)
            return session

    opened_sessions = await asyncio.gather(*(opened() for _ in range(sessions)))
    open_ms.sort()
    latencies: list[float] = []
    errors: list[str] = []

    async def drive(session: McpSession) -> None:
        for _ in range(calls_per_session):
            started = time.perf_counter()
            try:
                answer = await session.call_tool(tool, args)
            except LoadError as e:
                errors.append(str(e))
                continue
            latencies.append((time.perf_counter() - started) * 1000)
            if expect is not None and answer != expect:
                errors.append(f"unexpected answer {answer!r}")

    server_pids = server_pids or []
    workers = worker_pids() if worker_pids is not None else []
    cpu_before, workers_before = cpu_seconds(server_pids), cpu_seconds(workers)
    started = time.perf_counter()
    try:
        await asyncio.gather(*(drive(s) for s in opened_sessions))
        wall = time.perf_counter() - started
        cpu, workers_cpu = cpu_seconds(server_pids) - cpu_before, cpu_seconds(workers) - workers_before
    finally:
        await asyncio.gather(*(s.close() for s in opened_sessions))
    latencies.sort()
    calls = sessions * calls_per_session
    return LoadResult(
        sessions=sessions,
        calls=calls,
        failed_calls=len(errors),
        wall_s=round(wall, 3),
        calls_per_s=round(calls / wall, 1),
        p50_ms=round(_percentile(latencies, 0.50), 2),
        p99_ms=round(_percentile(latencies, 0.99), 2),
        max_ms=round(latencies[-1] if latencies else float("nan"), 2),
        server_cpu_s=round(cpu, 4),
        workers_cpu_s=round(workers_cpu, 4),
        open_p50_ms=round(_percentile(open_ms, 0.50), 2),
        open_p99_ms=round(_percentile(open_ms, 0.99), 2),
        first_error=errors[0][:500] if errors else None,
    )


async def open_idle_sessions(
    url: str, count: int, tool: str, args: dict[str, Any], open_concurrency: int = 50
) -> list[McpSession]:
    """`count` sessions that made one call (so their state exists) and then sit idle: abandoned rollouts."""
    gate = asyncio.Semaphore(open_concurrency)

    async def opened() -> McpSession:
        async with gate:
            session = await McpSession.open(url)
            await session.call_tool(tool, args)
            return session

    return list(await asyncio.gather(*(opened() for _ in range(count))))


def run_async(main: Coroutine[Any, Any, T]) -> T:
    """Run the generator's coroutine on uvloop when it is installed (it is with uvicorn[standard]): a leaner client."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)
