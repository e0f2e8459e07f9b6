"""Serve one environment bundle over MCP with the official `mcp` SDK (stdio and streamable HTTP).

One MCP session is one environment session: over HTTP its state is opened at initialize (over stdio and
in memory, at the first tool call; a failed opening is retried and reported by the first call) and
closed when the MCP session ends (the stdio process exits; an HTTP client deletes its session or it
idles out), so concurrent clients never see each other's writes. tools/list is the bundle's env.json
(only the tools the gate kept, when a report exists).

Environment state is stateful by nature, and the 2026-07-28 protocol era is stateless (no session, a
fresh connection per request). Over HTTP the server therefore advertises only the handshake-era
versions in `server/discover`, which makes `mode="auto"` clients fall back to the initialize handshake
and its `Mcp-Session-Id`; a tool call that still arrives without a session is refused with a clear
error rather than run against state that would vanish. Over stdio the process is the session, so
both eras are served.

At RL scale rollouts abandon sessions, so HTTP serving bounds them: a session with no request in flight
for `idle_timeout_s` is ended (its environment session closed), and past `max_sessions` open sessions a
new one is refused with HTTP 503 and a JSON-RPC error naming the limit. Replies are plain JSON rather
than a one-event SSE stream (the SDK's SSE path about doubles the server CPU per call), and the SDK's
session manager is served without a Starlette router around it. A plain `tools/call` or `ping` on an
open session takes a fast path beside the SDK (`_FastCalls`) that gives the SDK's answer for a fraction
of its CPU; the SDK still opens, lists, ends and reaps sessions, and answers anything unusual.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import json
import math
import queue
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import anyio
import mcp_types as types
import pydantic_core
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp_types import JSONRPCError, JSONRPCResponse, methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from factory.envs.bundle import Bundle
from factory.envs.interface import interface_schema
from factory.envs.runtime import Environment, EnvironmentLoadError, Exchange, Session
from factory.models import EnvSpec, ToolError, ToolResult, ToolSpec

# A call is sent and its reply read by the event loop (_EnvSession.call); what blocks (opening a session, rebuilding
# its process, a timeout's cleanup) runs in these threads. Measured with calls in threads: 8 beat 64.
CALL_THREADS = 8
# An abandoned rollout's state is freed after this long without a request (the SDK's default is 30 min).
DEFAULT_IDLE_TIMEOUT_S = 300.0
# Open sessions one server holds at most (the SDK's default, 10 000, is more state than a 2-worker pool serves).
DEFAULT_MAX_SESSIONS = 2000
# A rollout's connection idles while its model thinks; uvicorn's 5 s default would reconnect it between most calls.
KEEP_ALIVE_S = 60
T = TypeVar("T")
_SESSION_KEY = "factory.env_session"
_LOCK_KEY = "factory.env_session_lock"
_SESSION_HEADER = b"mcp-session-id"


def mcp_tools(spec: EnvSpec, kept: list[str] | None = None) -> list[types.Tool]:
    """The bundle's tools as MCP tools: inputSchema = parameters; annotations as declared, else from mutates."""
    out = []
    for t in spec.tools:
        if kept is not None and t.name not in kept:
            continue
        output = t.output if t.output and t.output.get("type") == "object" else None
        out.append(
            types.Tool(
                name=t.name,
                description=t.description,
                input_schema=_object_schema(t),
                output_schema=output,
                annotations=_annotations(t),
            )
        )
    return out


def _annotations(tool: ToolSpec) -> types.ToolAnnotations:
    """The hints the source server declared, when it declared them; else derived from `mutates`."""
    if tool.annotations is not None:
        return types.ToolAnnotations.model_validate(tool.annotations)
    return types.ToolAnnotations(
        read_only_hint=not tool.mutates,
        destructive_hint=tool.mutates and _destructive(tool),
        idempotent_hint=not tool.mutates,
        open_world_hint=False,
    )


def _object_schema(tool: ToolSpec) -> dict[str, Any]:
    schema = dict(interface_schema(tool))
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


def _destructive(tool: ToolSpec) -> bool:
    if tool.operation is not None:
        return tool.operation.kind == "delete"
    return tool.name.split("_")[0] in ("delete", "remove", "cancel", "clear", "purge", "drop")


def call_result(result: ToolResult) -> types.CallToolResult:
    """A runtime result as MCP: success -> its JSON as text (+ structuredContent for an object);
    failure -> isError with `{"error": {code, message}, "env_error": bool}` as text."""
    return types.CallToolResult.model_validate(call_payload(result))


def call_payload(result: ToolResult) -> dict[str, Any]:
    """`call_result(result)` as the SDK dumps it for the wire (camelCase, no None fields), built without the
    model: the fast path hands it straight to the protocol version's result surface."""
    if result.ok:
        text = json.dumps(result.value, ensure_ascii=False)
        payload: dict[str, Any] = {"content": [{"text": text, "type": "text"}]}  # in the order the SDK dumps
        if isinstance(result.value, dict):
            payload["structuredContent"] = result.value
        payload["isError"] = False
    else:
        error = result.error.model_dump() if result.error else {"code": "error", "message": ""}
        text = json.dumps({"error": error, "env_error": result.env_error}, ensure_ascii=False)
        payload = {"content": [{"text": text, "type": "text"}], "isError": True}
    payload["resultType"] = "complete"
    return payload


class SessionBinding:
    """Maps an MCP request to the environment session it belongs to.

    `process`: the whole process is one MCP session (stdio). Otherwise each handshake-era connection
    (an HTTP `Mcp-Session-Id`) gets its own session, closed by the connection's exit stack.
    """

    def __init__(self, env: Environment, process: bool):
        self.env = env
        self.process = process
        self.threads = CallThreads(CALL_THREADS)
        self._process_session: _EnvSession | None = None
        self.connections: dict[str, Connection] = {}
        self._lock = anyio.Lock()

    async def session_for(self, ctx: ServerRequestContext[Any, Any]) -> _EnvSession:
        if self.process:
            async with self._lock:
                if self._process_session is None:
                    self._process_session = await _EnvSession.open(self.env, self.threads)
            return self._process_session
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            raise MCPError(
                code=types.INVALID_REQUEST,
                message="this environment server is stateful: connect with the initialize handshake "
                f"(protocol {HANDSHAKE_PROTOCOL_VERSIONS[-1]}) so tool calls share one session",
            )
        return await self.session_of(_connection(ctx))

    async def session_of(self, connection: Connection) -> _EnvSession:
        """The connection's environment session, opened by its first caller (initialize over HTTP, else its first
        tool call), closed with the connection."""
        state = connection.state
        if _SESSION_KEY in state:
            return state[_SESSION_KEY]
        async with state.setdefault(_LOCK_KEY, anyio.Lock()):
            if _SESSION_KEY not in state:
                session = await _EnvSession.open(self.env, self.threads)
                state[_SESSION_KEY] = session
                connection.exit_stack.push_async_callback(session.close)
        return state[_SESSION_KEY]

    def track(self, connection: Connection) -> None:
        """Remember an initialized HTTP connection by its `Mcp-Session-Id` until it closes (for the fast path)."""
        if connection.session_id is not None:
            self.connections[connection.session_id] = connection
            connection.exit_stack.callback(self.connections.pop, connection.session_id, None)

    async def close(self) -> None:
        if self._process_session is not None:
            await self._process_session.close()
            self._process_session = None
        self.threads.close()


def _connection(ctx: ServerRequestContext[Any, Any]) -> Connection:
    """The per-connection state of the request's MCP session.

    The SDK keeps `Connection.state`/`exit_stack` for exactly this (per-connection state, teardown when
    the connection closes) but the low-level context reaches it only through its session.
    """
    connection = getattr(ctx.session, "_connection", None)
    if not isinstance(connection, Connection):
        raise MCPError(code=types.INTERNAL_ERROR, message="the MCP SDK exposes no connection for this request")
    return connection


_Job = tuple[asyncio.AbstractEventLoop | None, asyncio.Future[Any] | None, Callable[..., Any], tuple[Any, ...]]


class CallThreads:
    """A few dedicated threads that run the runtime's blocking calls for the event loop.

    Lighter than `run_in_executor` (no concurrent Future, no chained callbacks, no cancel scope): a call
    goes on a queue with an asyncio future, and the thread that ran it settles the future on the loop. A
    caller cancelled meanwhile stops waiting but the call runs to its end; the runtime's session lock
    keeps that session's next call (or its close) behind it.
    """

    def __init__(self, count: int):
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._work, name=f"env-call-{i}", daemon=True) for i in range(count)]
        for thread in self._threads:
            thread.start()

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue.put((loop, future, fn, args))
        return await future

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run `fn` in a call thread, with nobody waiting for it."""
        self._queue.put((None, None, fn, args))

    def _work(self) -> None:
        while (job := self._queue.get()) is not None:
            loop, future, fn, args = job
            try:
                outcome, failed = fn(*args), False
            except BaseException as e:  # handed to the awaiting caller, as run_in_executor does
                outcome, failed = e, True
            if loop is None or future is None:
                continue
            with contextlib.suppress(RuntimeError):  # the loop closed while the call ran: nobody waits
                loop.call_soon_threadsafe(_settle, future, outcome, failed)

    def close(self) -> None:
        """Let the threads finish the calls queued so far, then end."""
        for _ in self._threads:
            self._queue.put(None)


def _settle(future: asyncio.Future[Any], outcome: Any, failed: bool) -> None:
    if future.done():  # its caller was cancelled
        return
    if failed:
        future.set_exception(outcome)
    else:
        future.set_result(outcome)


async def _await_reply(session: Session, ex: Exchange) -> ToolResult | None:
    """The exchange's result once its reply arrives; None when it failed or ran past its time."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[ToolResult | None] = loop.create_future()

    def readable() -> None:
        if done.done():  # ran past its time in this same loop turn: `abandon` ends it, its reply is not read here
            return  # (reading it would end the exchange, and `abandon` would then release its lock twice)
        result = session.receive(ex)
        if result is not None or ex.failed is not None:
            done.set_result(result)

    def late() -> None:
        if not done.done():
            done.set_result(None)

    loop.add_reader(ex.fd, readable)
    timer = loop.call_later(ex.timeout_s, late)
    try:
        return await done
    finally:
        loop.remove_reader(ex.fd)
        timer.cancel()


class _EnvSession:
    """An environment session driven from async code: calls are serialized, sent and answered on the loop."""

    def __init__(self, stack: contextlib.ExitStack, session: Session, threads: CallThreads):
        self._stack = stack
        self._session = session
        self._threads = threads
        self._lock = asyncio.Lock()  # no checkpoint when free, unlike anyio.Lock (~15 us per call)
        self.closed = False

    @classmethod
    async def open(cls, env: Environment, threads: CallThreads) -> _EnvSession:
        def enter() -> tuple[contextlib.ExitStack, Session]:
            stack = contextlib.ExitStack()
            return stack, stack.enter_context(env.session())

        stack, session = await threads.run(enter)
        return cls(stack, session, threads)

    async def call(self, tool: str, args: dict[str, Any]) -> ToolResult:
        """The call sent to the session's process from the loop, which then waits for the socket to be
        readable: no thread per call (two wakeups fewer). What needs a blocking step (a process to rebuild,
        a timeout or a broken reply to clean up) runs in a call thread."""
        async with self._lock:
            session = self._session
            call = session.prepare_declared(tool, args)
            if isinstance(call, ToolResult):
                return call
            ex = session.send(call)
            if ex is None:
                return await self._threads.run(session.run, call)
            try:
                result = await _await_reply(session, ex)
            except BaseException:  # cancelled: nobody waits for the reply, so the exchange is ended in a thread
                if not ex.ended:  # (unless its reply came just before)
                    self._threads.submit(session.abandon, ex)
                raise
            return result if result is not None else await self._threads.run(session.abandon, ex)

    async def close(self) -> None:
        async with self._lock:
            if not self.closed:
                self.closed = True
                await self._threads.run(self._stack.close)


async def answer_call(
    served: set[str], tool: str, args: dict[str, Any], session: Callable[[], Awaitable[_EnvSession]]
) -> ToolResult:
    """One tools/call, as the SDK handler and the HTTP fast path both answer it."""
    if tool not in served:
        return ToolResult(ok=False, error=ToolError(code="unknown_tool", message=f"no tool named {tool!r}"))
    return await (await session()).call(tool, args)


def build_server(
    env: Environment, spec: EnvSpec, binding: SessionBinding, kept: list[str] | None = None
) -> Server[Any]:
    """The low-level MCP server of one environment: tools/list from the spec, tools/call into a session."""
    tools = mcp_tools(spec, kept)
    served = {t.name for t in tools}

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        result = await answer_call(served, params.name, dict(params.arguments or {}), lambda: binding.session_for(ctx))
        return call_result(result)

    server: Server[Any] = Server(
        spec.id,
        version=str(spec.version),
        title=spec.title,
        description=spec.description,
        instructions=spec.description,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    if not binding.process:
        server.add_request_handler("server/discover", types.RequestParams, _handshake_only_discover(server))
    return server


def _handshake_only_discover(
    server: Server[Any],
) -> Callable[[ServerRequestContext[Any, Any], types.RequestParams], Awaitable[types.DiscoverResult]]:
    async def discover(ctx: ServerRequestContext[Any, Any], params: types.RequestParams) -> types.DiscoverResult:
        return types.DiscoverResult(
            supported_versions=list(HANDSHAKE_PROTOCOL_VERSIONS),
            capabilities=server.get_capabilities(),
            instructions=server.instructions,
        )

    return discover


def _kept_tools(bundle: Bundle, spec: EnvSpec) -> list[str] | None:
    report = bundle.report()
    if report is None:
        return None
    dropped = [t.name for t in spec.tools if t.name not in report.kept_tools]
    if dropped:
        print(f"not serving tools the gate dropped: {', '.join(dropped)}", file=sys.stderr)
    return list(report.kept_tools)


def parse_host_port(http: str) -> tuple[str, int]:
    host, sep, port = http.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"--http wants HOST:PORT, not {http!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


async def serve_stdio(env: Environment, spec: EnvSpec, kept: list[str] | None) -> None:
    from mcp.server.stdio import stdio_server

    binding = SessionBinding(env, process=True)
    server = build_server(env, spec, binding, kept)
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        await binding.close()


class ServingLimits(BaseModel):
    """How many HTTP sessions a server holds and how long an idle one lives (`factory serve` options)."""

    idle_timeout_s: float = Field(default=DEFAULT_IDLE_TIMEOUT_S, gt=0, allow_inf_nan=False)
    max_sessions: int = Field(default=DEFAULT_MAX_SESSIONS, gt=0)


def http_app(
    env: Environment,
    spec: EnvSpec,
    kept: list[str] | None,
    host: str,
    limits: ServingLimits | None = None,
    fast_path: bool = True,
) -> ASGIApp:
    """The streamable HTTP app of one environment (at /mcp), with its session limits applied.

    `fast_path=False` serves every request through the SDK (the reference the fast path is checked against).
    """
    limits = limits or ServingLimits()
    binding = SessionBinding(env, process=False)
    server = build_server(env, spec, binding, kept)
    # Not the SDK's OpenTelemetry span per message (no exporter here, ~0.2 ms of CPU per call): only the
    # bookkeeping the fast path needs, which sees initialize alone in practice.
    server.middleware = [_tracking(binding)]
    security = _local_only(host)
    manager = StreamableHTTPSessionManager(
        app=server,
        json_response=True,
        security_settings=security,
        session_idle_timeout=limits.idle_timeout_s,
        max_sessions=limits.max_sessions,
    )
    fast = _FastCalls(manager, binding, {t.name for t in mcp_tools(spec, kept)}, security) if fast_path else None
    return _McpApp(manager, limits, fast)


def _tracking(binding: SessionBinding) -> ServerMiddleware[Any]:
    """Server middleware that hands each initialized connection to the binding, keyed by its session id, and
    opens its environment session before the initialize reply goes out: a rollout's first tool call then
    finds its state ready instead of waiting behind every other session opening at the same moment."""

    async def track(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method == "initialize":
            connection = _connection(ctx)
            binding.track(connection)
            with contextlib.suppress(EnvironmentLoadError):  # the first tools/call tries again and reports it
                await binding.session_of(connection)
        return result

    return track


def _local_only(host: str) -> TransportSecuritySettings | None:
    """DNS-rebinding protection on a loopback address, as the SDK's `streamable_http_app` sets it up."""
    if host not in ("127.0.0.1", "localhost", "::1"):
        return None
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )


class _McpApp:
    """The SDK's session manager at /mcp, without a Starlette router and middleware stack around it (~0.2 ms per call).

    Requests that open a session (no `Mcp-Session-Id`) are watched for the SDK's bare "Too many open sessions"
    (503), which is rewritten so the refused client learns the limit and the way out. A POST on an open
    session goes to the fast path first, which answers it or hands it (body replayed) to the SDK.
    """

    def __init__(self, manager: StreamableHTTPSessionManager, limits: ServingLimits, fast: _FastCalls | None):
        self.manager = manager
        self.fast = fast
        self.refusal = JSONRPCError(
            jsonrpc="2.0",
            id=None,
            error=types.ErrorData(
                code=types.INTERNAL_ERROR,
                message=f"too many open sessions: this server holds at most {limits.max_sessions} "
                "(factory serve --max-sessions); end a session (HTTP DELETE) or wait for idle ones to expire "
                f"after {limits.idle_timeout_s:g} s (--idle-timeout)",
            ),
        ).model_dump_json(by_alias=True, exclude_unset=True)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] != "http" or scope["path"] not in ("/mcp", "/mcp/"):
            await send({"type": "http.response.start", "status": 404, "headers": [(b"content-length", b"9")]})
            await send({"type": "http.response.body", "body": b"Not Found"})
        elif any(k == _SESSION_HEADER for k, _ in scope["headers"]):
            if self.fast is not None and scope["method"] == "POST":
                receive = await self.fast.serve(scope, receive, send)
                if receive is None:
                    return
            await self.manager.handle_request(scope, receive, send)
        else:
            await self.manager.handle_request(scope, receive, self._explain_refusal(send))

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        await receive()  # lifespan.startup
        try:
            async with self.manager.run():
                await send({"type": "lifespan.startup.complete"})
                await receive()  # lifespan.shutdown
        except Exception as e:
            await send({"type": "lifespan.startup.failed", "message": str(e)})
            raise
        await send({"type": "lifespan.shutdown.complete"})

    def _explain_refusal(self, send: Send) -> Send:
        refused = False

        async def explain(message: Message) -> None:
            nonlocal refused
            if message["type"] == "http.response.start" and message["status"] == 503:
                refused = True
                body = self.refusal.encode()
                headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
                await send({"type": "http.response.start", "status": 503, "headers": headers})
                await send({"type": "http.response.body", "body": body})
            elif not refused:
                await send(message)

        return explain


@dataclass(frozen=True, slots=True)
class _Call:
    """A POST the fast path answers: one `tools/call` (or `ping`) on an established session."""

    id: int | str
    method: str
    tool: str = ""
    args: dict[str, Any] = field(default_factory=dict)


class _FastCalls:
    """`tools/call` and `ping` on an open HTTP session, answered without the SDK's per-request machinery.

    The SDK's streamable HTTP transport costs ~1.25 ms of CPU per call (tasks and memory streams per
    request, the dispatcher, validation); RL rollouts make almost nothing but tool calls. A POST qualifies
    only when it is plainly one such request on a session the SDK opened and initialized, with headers the
    SDK would accept as they are; anything else (another method, a batch, unusual headers or params, an
    unknown, closing or idle-expired session) goes to the SDK untouched, so its protocol behaviour and
    errors stay the reference. The answer is the one the SDK's handler gives (same `answer_call`, same
    environment session, same JSON-RPC envelope), and the call counts as a request in flight for the
    transport's idle timeout exactly as the SDK counts its own.
    """

    def __init__(
        self,
        manager: StreamableHTTPSessionManager,
        binding: SessionBinding,
        served: set[str],
        security: TransportSecuritySettings | None,
    ):
        self.manager = manager
        self.binding = binding
        self.served = served
        self.security = TransportSecurityMiddleware(security) if security is not None else None
        self.accepted: dict[tuple[tuple[bytes, bytes], ...], bool] = {}  # the SDK's verdict per checked header set

    async def serve(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """Answer the POST and return None, or return the `receive` that replays it to the SDK."""
        headers = dict(scope["headers"])
        session_id = headers[_SESSION_HEADER].decode("latin-1")
        transport = self.manager._server_instances.get(session_id)
        connection = self.binding.connections.get(session_id)
        if transport is None or connection is None or not await self._plain(scope, headers, transport, connection):
            return receive
        with _in_flight(transport):
            body, more = await _read_body(receive, self.manager.max_request_body_size)
            call = None if more else _parse_call(body)
            if call is not None:
                await self._answer(call, connection, session_id, send)
                return None
        return _replay(body, more, receive)

    async def _plain(
        self,
        scope: Scope,
        headers: dict[bytes, bytes],
        transport: StreamableHTTPServerTransport,
        connection: Connection,
    ) -> bool:
        """Whether the SDK would take this POST's headers and session as they are, with nothing to say first."""
        version = headers.get(_VERSION_HEADER)
        if version is not None and version.decode("latin-1") not in HANDSHAKE_PROTOCOL_VERSIONS:
            return False  # the SDK routes it to the modern era, which rejects or serves it its own way
        if scope.get("user") is not None or self.manager._session_owners:
            return False  # authenticated sessions: the SDK checks the credential
        content_type = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
        if content_type != b"application/json" or b"application/json" not in headers.get(b"accept", b""):
            return False
        if self.security is not None and not await self._secure(scope):
            return False
        idle = transport.idle_scope
        return (
            not transport.is_terminated
            and idle is not None
            and not idle.cancel_called
            and connection.initialize_accepted
            and not getattr(connection.state.get(_SESSION_KEY), "closed", False)
        )

    async def _secure(self, scope: Scope) -> bool:
        """The SDK's DNS-rebinding and content-type check, asked once per distinct set of the headers it reads
        (a client sends the same ones on every call; building a Request per call cost more than the check)."""
        assert self.security is not None
        key = tuple((k, v) for k, v in scope["headers"] if k in _SECURITY_HEADERS)
        verdict = self.accepted.get(key)
        if verdict is None:
            verdict = await self.security.validate_request(Request(scope), is_post=True) is None
            if len(self.accepted) >= _ACCEPTED_MAX:
                self.accepted.clear()
            self.accepted[key] = verdict
        return verdict

    async def _answer(self, call: _Call, connection: Connection, session_id: str, send: Send) -> None:
        body = await self._reply(call, connection)
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (_SESSION_HEADER, session_id.encode()),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _reply(self, call: _Call, connection: Connection) -> bytes:
        """The JSON-RPC answer, shaped for the wire as the SDK's runner shapes its handlers' results."""
        if call.method == "ping":
            return pydantic_core.to_json({"jsonrpc": "2.0", "id": call.id, "result": {}})
        version = connection.protocol_version
        try:
            result = await answer_call(self.served, call.tool, call.args, lambda: self.binding.session_of(connection))
            payload = call_payload(result)
            envelope = {"jsonrpc": "2.0", "id": call.id, "result": _wire_result(version, payload)}
            try:
                return pydantic_core.to_json(envelope)
            except ValueError:  # nested past what pydantic-core writes here: the SDK runner's own steps decide
                dumped = call_result(result).model_dump(by_alias=True, mode="json", exclude_none=True)
                dumped = methods.serialize_server_result(call.method, version, dumped)
                reply = JSONRPCResponse(jsonrpc="2.0", id=call.id, result=dumped)
                return reply.model_dump_json(by_alias=True, exclude_unset=True).encode()
        except Exception as e:
            error = handler_exception_to_error_data(e) or types.ErrorData(code=0, message=str(e))
            failed = JSONRPCError(jsonrpc="2.0", id=call.id, error=error)
            return failed.model_dump_json(by_alias=True, exclude_unset=True).encode()  # as the SDK writes it


def _wire_result(version: str, payload: dict[str, Any]) -> dict[str, Any]:
    """`payload` as the SDK's `serialize_server_result` shapes a tools/call result for `version`."""
    keys = _surface_keys(version)
    if keys is None:
        return methods.serialize_server_result("tools/call", version, payload)
    return {k: payload[k] for k in keys if k in payload}


@functools.cache
def _surface_keys(version: str) -> tuple[str, ...] | None:
    """The top-level keys, in order, that `version`'s result surface keeps of `call_payload`'s results, learned
    from the SDK once; None when the SDK does more to them than drop keys (then it shapes every result).
    Validating and dumping each result through the surface model was ~5% of the server's CPU per call."""
    probes = [
        call_payload(ToolResult(ok=True, value={"id": 1, "price": 2.5, "note": None, "tags": ["é", {"k": [True]}]})),
        call_payload(ToolResult(ok=True, value=[{"id": 1}])),
        call_payload(ToolResult(ok=False, error=ToolError(code="not_found", message="no row"), env_error=False)),
    ]
    dumped = [methods.serialize_server_result("tools/call", version, probe) for probe in probes]
    keys = tuple(dict.fromkeys(k for d in dumped for k in d))
    for probe, d in zip(probes, dumped, strict=True):  # key order included: the wire bytes must be the SDK's
        if json.dumps(d) != json.dumps({k: probe[k] for k in keys if k in probe}):
            return None
    return keys


_VERSION_HEADER = MCP_PROTOCOL_VERSION_HEADER.encode("ascii")
_SECURITY_HEADERS = (b"content-type", b"host", b"origin")  # what TransportSecurityMiddleware.validate_request reads
_ACCEPTED_MAX = 1024
SERVING_GC_THRESHOLDS = (20_000, 20, 20)  # gen0 allocations, then gen1 and gen2 collections (default 700, 10, 10)


@contextlib.contextmanager
def _in_flight(transport: StreamableHTTPServerTransport) -> Iterator[None]:
    """Hold the session as a request in flight, with the transport's own idle bookkeeping (as its
    `handle_request` does): the idle countdown stops, and restarts when the last request completes."""
    idle = transport.idle_scope
    timeout = transport._idle_timeout
    assert idle is not None and timeout is not None  # an idle scope exists only with a timeout (checked by _plain)
    transport._requests_in_flight += 1
    idle.deadline = math.inf
    try:
        yield
    finally:
        transport._requests_in_flight -= 1
        if not transport._requests_in_flight:
            idle.deadline = asyncio.get_running_loop().time() + timeout  # anyio.current_time(), minus its lookups


async def _read_body(receive: Receive, limit: int) -> tuple[bytes, bool]:
    """The request body, or what was read of it and True once it passes `limit` (the SDK answers that 413)."""
    body = b""
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return body, True
        body += message.get("body", b"")
        if len(body) > limit:
            return body, True
        if not message.get("more_body", False):
            return body, False


def _replay(body: bytes, more: bool, receive: Receive) -> Receive:
    """A `receive` that hands the SDK the body already read, then the rest of the request."""
    pending: list[Message] = [{"type": "http.request", "body": body, "more_body": more}]

    async def replayed() -> Message:
        return pending.pop() if pending else await receive()

    return replayed


def _parse_call(body: bytes) -> _Call | None:
    """The body as one plain `tools/call` or `ping`, or None for anything the SDK should see."""
    try:
        message = pydantic_core.from_json(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    request_id, method, params = message.get("id"), message.get("method"), message.get("params")
    if type(request_id) not in (int, str) or not message.keys() <= {"jsonrpc", "id", "method", "params"}:
        return None
    if method == "ping" and ("params" not in message or params == {}):
        return _Call(id=request_id, method=method)
    if method != "tools/call" or not isinstance(params, dict) or not params.keys() <= {"name", "arguments"}:
        return None
    tool, args = params.get("name"), params.get("arguments", {})
    if not isinstance(tool, str) or not isinstance(args, dict):
        return None
    return _Call(id=request_id, method=method, tool=tool, args=args)


def _settle_heap() -> None:
    """Move what startup built (the SDK, pydantic's schemas, the runtime) out of the collector's reach and
    collect young objects less often: per-call garbage is acyclic, and the cyclic collector was ~7% of the
    server's CPU under load (perf); measured side by side, 0.39-0.55 ms of server CPU per call, was 0.42-0.59."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*SERVING_GC_THRESHOLDS)


def serve_http(
    env: Environment, spec: EnvSpec, kept: list[str] | None, host: str, port: int, limits: ServingLimits
) -> None:
    import uvicorn

    app = http_app(env, spec, kept, host, limits)
    print(
        f"serving {spec.id} on http://{host}:{port}/mcp (idle timeout {limits.idle_timeout_s:g} s, "
        f"at most {limits.max_sessions} sessions)",
        file=sys.stderr,
    )
    _settle_heap()
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_keep_alive=KEEP_ALIVE_S,
        proxy_headers=False,  # nothing here reads the client's address; the middleware cost ~1.5% per call
    )
    uvicorn.Server(config).run()


def serve(bundle: str | Path, http: str | None = None, limits: ServingLimits | None = None) -> None:
    """`factory serve BUNDLE [--http HOST:PORT]`: serve one bundle until the client (or a signal) ends it."""
    b = Bundle.open(bundle)
    spec = b.spec
    kept = _kept_tools(b, spec)
    address = parse_host_port(http) if http else None
    with Environment.open(b.path) as env:
        if address is None:
            anyio.run(serve_stdio, env, spec, kept)
        else:
            serve_http(env, spec, kept, *address, limits or ServingLimits())
