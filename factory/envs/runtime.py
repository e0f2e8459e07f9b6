"""The environment runtime: open a bundle, start sessions, call tools, snapshot and reset state.

Tool code never runs here: each session is a process of its own, forked in a pooled sandbox host
(factory.sandbox) from its environment's template, and its state lives there (an in-memory SQLite
database, a copy-on-write image of the seed that a reset rolls back to, or a private copy of `state/`).
Arguments are checked against the tool's JSON schema in this process first. The parent keeps a journal
of every session's successful state-changing calls, so a session whose process dies, hangs or breaks
the protocol is rebuilt in a new one, and a host that dies is replaced without any session losing its state.
"""

from __future__ import annotations

import marshal
import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, Field

from factory.envs.bundle import Bundle, BundleError
from factory.envs.interface import contract_args, interface_schema
from factory.models import EnvSpec, Snapshot, ToolCall, ToolError, ToolResult, ToolSpec
from factory.sandbox import Limits, SandboxPool, Slot, WorkerCrashed, WorkerTimeout, compile_schema, default_pool
from factory.sandbox.worker import INCOMPLETE, SessionProcess, SessionStale, worker_uid

__all__ = ["Environment", "EnvironmentLoadError", "ProgramRun", "Session"]


class EnvironmentLoadError(RuntimeError):
    """The bundle cannot be served: unreadable files, or tools.py that does not compile or import."""


class ProgramRun(BaseModel):
    """What a task program did: its return value, the tool calls it made (in order), or why it failed."""

    answer: Any = None
    calls: list[ToolCall] = Field(default_factory=list)
    error: str | None = None


def _error(code: str, message: str, env_error: bool = False, started: float | None = None) -> ToolResult:
    wall = (time.perf_counter() - started) * 1000 if started is not None else 0.0
    return ToolResult(ok=False, error=ToolError(code=code, message=message), env_error=env_error, wall_ms=wall)


class Environment:
    """A bundle opened for serving. Thread-safe; close it (or use `with`) to free its worker state."""

    def __init__(self, bundle: Bundle, spec: EnvSpec, source: str, pool: SandboxPool, limits: Limits):
        self.bundle = bundle
        self.spec = spec
        self.pool = pool
        self.limits = limits
        self.key = f"{spec.id}-{uuid.uuid4().hex[:12]}"
        self._tools = {t.name: t for t in spec.tools}
        self._mutates = frozenset(t.name for t in spec.tools if t.mutates)
        shallow = spec.argument_check == "top_level"
        self._validators: dict[str, Callable[[Any], str | None]] = {
            t.name: compile_schema(t.parameters, limits.max_string_chars, shallow) for t in spec.tools
        }
        self._interfaces: dict[str, Callable[[Any], str | None]] = {  # the declared names, where they differ
            t.name: compile_schema(interface_schema(t), limits.max_string_chars, shallow)
            for t in spec.tools
            if t.declared_names
        }
        self._pks = spec.primary_keys()
        seed = bundle.seed_bytes() if spec.backend == "sqlite" else None
        files = _read_state_files(bundle.state_dir) if spec.backend == "files" else None
        read_only = sorted(t.name for t in spec.tools if not t.mutates)  # run without a savepoint in the worker
        self._load_message = ("load", self.key, source, spec.backend, seed, files, read_only)
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()
        self._seed: Snapshot | None = None  # the seed state, read once by the first session that snapshots it
        self.closed = False

    @classmethod
    def open(cls, path: str | Path, pool: SandboxPool | None = None, limits: Limits | None = None) -> Environment:
        """Read the bundle, check its state files and import its tools.py in the sandbox; EnvironmentLoadError
        says what is wrong."""
        try:
            bundle = Bundle.open(path)
            spec = bundle.spec
            source = bundle.tools_source
            bundle.check_state()
        except BundleError as e:
            raise EnvironmentLoadError(str(e)) from e
        try:
            compile(source, "tools.py", "exec")
        except SyntaxError as e:
            raise EnvironmentLoadError(f"tools.py does not compile: {e}") from e
        pool = pool or default_pool()
        try:
            env = cls(bundle, spec, source, pool, limits or pool.limits)
        except BundleError as e:
            raise EnvironmentLoadError(str(e)) from e
        slot = pool.pick_slot()
        with slot.lock:
            try:
                env.ensure_loaded(slot)
            except (WorkerCrashed, WorkerTimeout) as e:
                slot.recover()
                raise EnvironmentLoadError(f"tools.py crashed its worker on import: {e}") from e
        return env

    @property
    def tool_names(self) -> list[str]:
        return list(self._tools)

    def tool_spec(self, name: str) -> ToolSpec | None:
        return self._tools.get(name)

    def ensure_loaded(self, slot: Slot) -> None:
        """Import tools.py in the slot's worker once (caller holds the slot lock)."""
        if self.key in slot.loaded and slot.worker is not None and not slot.worker.dead:
            return
        uid = worker_uid() if os.geteuid() == 0 else None  # this environment's own, in this slot
        reply = slot.request((*self._load_message, uid), 60.0)
        if reply[0] != "ok":
            raise EnvironmentLoadError(f"tools.py does not import: {reply[1] if len(reply) > 1 else reply}")
        slot.loaded[self.key] = uid

    def session(self) -> Session:
        """A new session whose state starts as the seed."""
        if self.closed:
            raise RuntimeError(f"environment {self.spec.id} is closed")
        s = Session(self, self.pool.pick_slot())
        with self._lock:
            self._sessions[s.id] = s
        return s

    def seed_snapshot(self, read: Callable[[], dict[str, list[dict[str, Any]]]]) -> Snapshot:
        """The seed state, read through `read` (a fresh session's snapshot) once per environment."""
        with self._lock:
            if self._seed is None:
                self._seed = Snapshot.model_construct(tables=read())
            return self._seed

    def seed_state(self) -> Snapshot:
        """The seed snapshot, read from a fresh session the first time it is needed."""
        if self._seed is None:
            with self.session() as fresh:
                return fresh.snapshot()
        return self._seed

    def forget(self, session: Session) -> None:
        with self._lock:
            self._sessions.pop(session.id, None)

    def close(self) -> None:
        """Close every session and drop the loaded tools from the workers."""
        if self.closed:
            return
        self.closed = True
        with self._lock:
            sessions = list(self._sessions.values())
        for s in sessions:
            s.close()
        for slot in self.pool.slots:
            with slot.lock:
                if self.key in slot.loaded and slot.worker is not None and not slot.worker.dead:
                    try:
                        slot.request(("unload", self.key), 10.0)
                    except (WorkerCrashed, WorkerTimeout):
                        slot.recover()
                slot.loaded.pop(self.key, None)

    def __enter__(self) -> Environment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read_state_files(state_dir: Path) -> dict[str, bytes]:
    if not state_dir.is_dir():
        raise BundleError(f"{state_dir}: missing state directory for the files backend")
    return {p.relative_to(state_dir).as_posix(): p.read_bytes() for p in sorted(state_dir.rglob("*")) if p.is_file()}


class PreparedCall(NamedTuple):
    """A tool call checked against its schema: what goes to the session's process."""

    tool: str
    args: dict[str, Any]
    message: tuple[Any, ...]
    started: float


@dataclass
class Exchange:
    """A call sent to a session's process whose reply an event loop waits for (Session.send)."""

    call: PreparedCall
    proc: SessionProcess
    seq: int
    state: tuple[bool, tuple[Any, Snapshot] | None]  # (pristine, last) to restore if the call changed nothing
    timeout_s: float  # the most the loop waits before `abandon`
    failed: WorkerCrashed | None = None
    result: ToolResult | None = None  # the result to give once `abandon` has replaced the process
    ended: bool = False  # the lock is released: nothing more to do

    @property
    def fd(self) -> int:
        return self.proc.end.fd


class Session:
    """One agent's private copy of the environment state: a sandboxed process of its own, in one slot's host."""

    def __init__(self, env: Environment, slot: Slot):
        self.env = env
        self.id = uuid.uuid4().hex
        self.slot = slot
        self.journal: list[tuple[str, dict[str, Any]]] = []
        self.pristine = True  # no call has changed the state since the session opened or was reset: the seed
        self._last: tuple[Any, Snapshot] | None = None  # (process, snapshot) while no call has changed the state
        self.closed = False
        self.lock = threading.Lock()  # one exchange at a time with this session's process
        self.proc: SessionProcess | None = None
        with slot.lock:
            self.proc = self._open_in(slot)
            slot.residents[self.id] = self

    def _open_in(self, slot: Slot) -> SessionProcess:
        """A new process for this session, at the seed state (caller holds the slot lock)."""
        reply: list[Any] = []
        for _ in range(2):
            try:
                self.env.ensure_loaded(slot)
                reply, proc = slot.open_session(self.env.key)
            except (WorkerCrashed, WorkerTimeout) as e:
                reply = [str(e)]
                slot.recover()
                continue
            if proc is not None:
                return proc
        raise EnvironmentLoadError(f"could not open a session: {reply}")

    def host_lost(self, slot: Slot) -> None:
        """The slot's host was replaced or closed, and this session's process went with it: the next use
        starts a new process and replays the journal there. An exchange in flight (it holds `lock`) reads the
        end of the stream and replaces the process itself: its socket is not closed under it, where an event
        loop may be watching the descriptor (`send`)."""
        proc = self.proc
        if proc is None:
            return
        if not self.lock.acquire(blocking=False):
            proc.dead = True
            return
        try:
            proc.close()
        finally:
            self.lock.release()

    def _process(self) -> SessionProcess:
        """This session's live process, started (seed state, then the journal replayed) if it has none;
        caller holds `lock`. Raises WorkerCrashed or WorkerTimeout when that fails too."""
        proc = self.proc
        if proc is not None and not proc.dead:
            return proc
        slot = self.slot
        with slot.lock:
            if proc is not None:
                slot.end_session(proc)
            self.proc = None
            self._last = None
            try:
                proc = self._open_in(slot)
            except EnvironmentLoadError as e:
                raise WorkerCrashed(str(e)) from e
        if self.journal:
            limits = self.env.limits
            timeout = limits.timeout_s * (len(self.journal) + 1) + limits.grace_s
            try:
                proc.request(("replay", self.journal, limits.timeout_s, limits.cpu_s), timeout)
            except (WorkerCrashed, WorkerTimeout):
                with slot.lock:
                    slot.end_session(proc)
                raise
        if self.closed:  # closed (after waiting its while for the lock) during this rebuild: the process goes too
            with slot.lock:
                slot.end_session(proc)
            raise WorkerCrashed(f"session {self.id} is closed")
        self.proc = proc
        return proc

    def _discard(self) -> None:
        """Kill this session's process (it ran away, died or broke the protocol) and start a new one now, so
        the next call finds the state rebuilt; if that fails too, the next use tries again."""
        proc = self.proc
        if proc is not None:
            proc.dead = True
        try:
            self._process()
        except (WorkerCrashed, WorkerTimeout):
            self.proc = None

    def call(self, tool: str, args: dict[str, Any] | None = None) -> ToolResult:
        """Validate and run one tool call. Never raises for anything the tool or the arguments do."""
        return self.run(self.prepare(tool, args))

    def call_declared(self, tool: str, args: dict[str, Any] | None = None) -> ToolResult:
        """`call` with the parameters named as the tool's source declared them (what clients are shown:
        factory.envs.interface); the call and its journal entry are the contract's."""
        return self.run(self.prepare_declared(tool, args))

    def run(self, call: PreparedCall | ToolResult) -> ToolResult:
        """Run a prepared call (an error result from `prepare` is the answer already)."""
        if isinstance(call, ToolResult):
            return call
        with self.lock:
            if self.closed:
                return _error("session_closed", f"session {self.id} is closed", started=call.started)
            state = self._dirty()
            timeout = self.env.limits.timeout_s + self.env.limits.grace_s
            try:
                try:
                    reply = self._process().request(call.message, timeout)
                except SessionStale:  # gone or dirty before this call was sent: rebuild, then send it
                    self._discard()
                    reply = self._process().request(call.message, timeout)
            except (WorkerTimeout, WorkerCrashed) as e:
                self._discard()
                return self._lost(call, e)
            except ValueError as e:  # marshal: a value that is not plain data
                self.pristine, self._last = state
                return _error("invalid_arguments", f"arguments are not JSON values: {e}", started=call.started)
            result, rebuild = self._settle(call, reply, state)
            if rebuild:
                self._discard()
            return result

    def prepare(self, tool: str, args: dict[str, Any] | None = None) -> PreparedCall | ToolResult:
        """A call checked against the tool's schema, ready to send, or the error result that ends it."""
        started = time.perf_counter()
        args = {} if args is None else args
        env = self.env
        validate = env._validators.get(tool)
        if validate is None:
            return _error("unknown_tool", f"no tool named {tool!r}; tools: {', '.join(env._tools)}", started=started)
        problem = validate(args)
        if problem is not None:
            return _error("invalid_arguments", problem, started=started)
        limits = env.limits
        return PreparedCall(tool, args, ("call", tool, args, limits.timeout_s, limits.cpu_s), started)

    def prepare_declared(self, tool: str, args: dict[str, Any] | None = None) -> PreparedCall | ToolResult:
        """`prepare` for arguments named as the tool's interface declares them (factory.envs.interface)."""
        spec = self.env.tool_spec(tool)
        validate = self.env._interfaces.get(tool)
        if spec is None or validate is None:
            return self.prepare(tool, args)
        args = {} if args is None else args
        problem = validate(args)  # the interface's schema: a name the client was never shown is refused here
        if problem is not None:
            return _error("invalid_arguments", problem)
        contract = contract_args(spec, args)
        return self.prepare(tool, contract) if isinstance(contract, dict) else _error("invalid_arguments", contract)

    def _dirty(self) -> tuple[bool, tuple[Any, Snapshot] | None]:
        """Mark the state as possibly changed by the call about to run; returns what to restore if it did not."""
        state = self.pristine, self._last
        self.pristine, self._last = False, None
        return state

    def _lost(self, call: PreparedCall, e: WorkerTimeout | WorkerCrashed) -> ToolResult:
        if isinstance(e, WorkerTimeout):
            return _error("timeout", f"{call.tool} ran past {self.env.limits.timeout_s:g}s", True, call.started)
        return _error("worker_crashed", f"{call.tool} crashed its sandbox process: {e}", True, call.started)

    def _settle(
        self, call: PreparedCall, reply: list[Any], state: tuple[bool, tuple[Any, Snapshot] | None]
    ) -> tuple[ToolResult, bool]:
        """The result of a reply, with the journal and pristine state updated, and whether the session's
        process must be replaced (a protocol error, or a failed call that wrote)."""
        started = call.started
        if reply[0] == "ok" and len(reply) == 3:
            if not reply[2] and self.env.spec.backend == "sqlite":  # sqlite counts every row the call changed
                self.pristine, self._last = state
            if reply[2] or call.tool in self.env._mutates:
                self.journal.append((call.tool, marshal.loads(marshal.dumps(call.args))))
            return ToolResult(ok=True, value=reply[1], wall_ms=(time.perf_counter() - started) * 1000), False
        if reply[0] != "error" or len(reply) < 4:
            return _error("worker_crashed", f"sandbox protocol error: {str(reply)[:200]}", True, started), True
        lost = len(reply) > 4 and reply[4] == "state_lost"  # the failed call wrote: rebuild from seed + journal
        return _error(str(reply[1])[:100], str(reply[2])[:2000], bool(reply[3]), started), lost

    # --- the same exchange driven by an event loop (factory serve): no thread waits on the reply ----------

    def send(self, call: PreparedCall) -> Exchange | None:
        """Send `call` to the live process without waiting for its reply, holding `lock` until `receive` or
        `abandon` ends the exchange; None when that cannot be done at once (another exchange holds the lock,
        the process must be rebuilt first, the arguments are no plain data): then `call` does it all."""
        if not self.lock.acquire(blocking=False):
            return None
        proc = self.proc
        if self.closed or proc is None or proc.dead:
            self.lock.release()
            return None
        state = self._dirty()
        try:
            seq = proc.send(call.message, waiting=False)
        except (WorkerCrashed, WorkerTimeout, ValueError):  # (a stale process, one not reading, a large request)
            self.pristine, self._last = state
            self.lock.release()
            return None
        return Exchange(call, proc, seq, state, self.env.limits.timeout_s + self.env.limits.grace_s)

    def receive(self, ex: Exchange) -> ToolResult | None:
        """The exchange's result once its reply has arrived (None: not yet; call again when the process's
        socket `ex.fd` is readable), or None with `ex.failed` set: then `abandon` must end it."""
        try:
            frame = ex.proc.arrived()
            if frame is INCOMPLETE:
                return None
            reply = ex.proc.answer(ex.seq, frame)
        except WorkerCrashed as e:
            ex.failed = e
            return None
        result, rebuild = self._settle(ex.call, reply, ex.state)
        if rebuild:
            ex.failed, ex.result = WorkerCrashed("rebuild"), result
            return None
        ex.ended = True
        self.lock.release()
        return result

    def abandon(self, ex: Exchange) -> ToolResult:
        """End an exchange that failed, ran past its timeout (`ex.failed` unset) or lost its waiter: the
        process is replaced (blocking: run it in a thread), and the call's result says why."""
        try:
            self._discard()
            if ex.result is not None:
                return ex.result
            return self._lost(ex.call, ex.failed or WorkerTimeout("no answer before the deadline"))
        finally:
            ex.ended = True
            self.lock.release()

    def _simple(self, message: tuple[Any, ...], what: str) -> list[Any]:
        """One exchange that runs no tool code (caller holds `lock`); a dead process is rebuilt and asked again."""
        if self.closed:
            raise RuntimeError(f"session {self.id} is closed")
        for attempt in range(2):
            try:
                reply = self._process().request(message, 60.0)
                break
            except (WorkerCrashed, WorkerTimeout) as e:
                self._discard()
                if attempt:
                    raise RuntimeError(f"{what} failed: the session's sandbox process died ({e})") from e
        if reply[0] != "ok":
            raise RuntimeError(f"{what} failed: {reply[1] if len(reply) > 1 else reply}")
        return reply

    def snapshot(self) -> Snapshot:
        """The whole state, read-only (shared with other snapshots; never edit it): table -> rows (dicts) sorted
        by primary key. A session still at the seed gets the environment's seed snapshot, and one whose calls
        since its last snapshot changed no row (sqlite) gets that snapshot again, without a worker call.
        RuntimeError when the session's process cannot be rebuilt."""
        if self.pristine:
            return self.env.seed_snapshot(self._read_tables)
        last = self._last
        if last is not None and last[0] is self.proc:  # no write since, and no new process rebuilt it by replay
            return last[1]
        snap = Snapshot.model_construct(tables=self._read_tables(changed_only=self.env.spec.backend == "sqlite"))
        self._last = (self.proc, snap)
        return snap

    def _read_tables(self, changed_only: bool = False) -> dict[str, list[dict[str, Any]]]:
        """The session's tables. `changed_only` (sqlite): the worker sends the tables that differ from the seed
        and names the others, which are then the seed snapshot's own lists. Verifiers memoize a table by its
        list (factory.verify.state), so a state of an API-sized database costs the tables the session wrote."""
        seed = self.env.seed_state() if changed_only else None
        with self.lock:
            reply = self._simple(("snapshot", self.env._pks, changed_only), "snapshot")
        if not (len(reply) == 3 and isinstance(reply[1], dict) and isinstance(reply[2], list)):
            raise RuntimeError(f"snapshot failed: the sandbox sent {str(reply)[:200]}")
        tables = reply[1]
        if seed is not None:
            tables.update((name, seed.tables[name]) for name in reply[2] if name in seed.tables)
        return dict(sorted(tables.items()))

    def reset(self) -> None:
        """Back to the seed state (an in-memory restore, no file copies for sqlite). When tool code left the
        process unable to restore it (it closed or broke its connection), a new process starts from the seed."""
        with self.lock:
            self.journal.clear()  # (so a process rebuilt on the way starts from the seed, with nothing to replay)
            try:
                self._simple(("reset",), "reset")
            except RuntimeError:
                if self.closed:
                    raise
                self._discard()
                if self.proc is None:
                    raise
            self.pristine = True
            self._last = None

    def run_program(self, source: str, entry: str = "solve", timeout_s: float = 10.0) -> ProgramRun:
        """Run an untrusted task program in its own sandboxed process; its tool calls go through `call`."""
        calls: list[ToolCall] = []

        def on_call(tool: str, args: dict[str, Any]) -> Any:
            calls.append(ToolCall(tool=tool, args=args))
            r = self.call(tool, args)
            return r.value if r.ok else {"error": r.error.model_dump() if r.error else {}}

        limits = self.env.limits.model_copy(update={"timeout_s": timeout_s, "cpu_s": max(1, int(timeout_s + 1))})
        result = self.env.pool.run_function(source, entry, {}, limits, on_call=on_call)
        if result.ok:
            return ProgramRun(answer=result.value, calls=calls)
        err = result.error
        return ProgramRun(calls=calls, error=f"{err.code}: {err.message}" if err else "failed")

    def close(self) -> None:
        """End the session: its process reads end-of-file and exits, and its state goes with it. An exchange
        whose event loop went away without ending it (`send`) holds the lock for good: it is waited for only
        as long as a call may take."""
        limits = self.env.limits
        held = self.lock.acquire(timeout=limits.timeout_s + limits.grace_s + 1)
        try:
            if self.closed:
                return
            self.closed = True
            with self.slot.lock:
                self.slot.residents.pop(self.id, None)
            if self.proc is not None:
                self.proc.close()
                self.proc = None
        finally:
            if held:
                self.lock.release()
        self.env.forget(self)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
