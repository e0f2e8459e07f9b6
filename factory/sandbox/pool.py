"""Pooled sandbox workers: session hosts pinned by slot, and fork servers for one-off untrusted functions.

A slot is one long-lived session host: a confined worker that never runs untrusted code itself. For each
environment it forks a template that imports tools.py once (under the environment's own uid), and the
template forks one process per session, whose socket the host hands to this process: a call is one
round trip on that socket, and what tool code does in it reaches no other session. When a session's
process misbehaves only it is replaced (its journal replayed); when the host dies, the slot starts a
replacement and every resident restores itself there.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from pydantic import BaseModel

from factory.models import ToolError, ToolResult
from factory.sandbox.worker import (
    Limits,
    LocalTransport,
    SessionProcess,
    Transport,
    Worker,
    WorkerCrashed,
    WorkerTimeout,
    unicode_text,
)

log = logging.getLogger(__name__)


class Runner(Protocol):
    """Starts confined worker processes: locally (namespaces + rlimits) or in containers."""

    name: str

    def spawn(self, limits: Limits, host: bool = False) -> Transport: ...


class LocalRunner:
    name = "local"

    def __init__(self, isolate: bool = True):
        self.isolate = isolate

    def spawn(self, limits: Limits, host: bool = False) -> Transport:
        return LocalTransport(limits, isolate=self.isolate, host=host)


class Resident(Protocol):
    """Something that keeps state in a slot's host and rebuilds it when the host is gone."""

    def host_lost(self, slot: Slot) -> None: ...


class Slot:
    """A session host's position in the pool. Hold `lock` for any exchange with `worker`.

    `generation` counts the processes replaced here: the host, or one session's process.
    """

    def __init__(self, pool: SandboxPool, index: int):
        self.pool = pool
        self.index = index
        self.lock = threading.RLock()
        self.worker: Worker | None = None
        self.residents: dict[str, Resident] = {}
        self.loaded: dict[str, int | None] = {}  # environment key -> the uid its template runs under here
        self.generation = 0

    def ensure_worker(self) -> Worker:
        if self.worker is None or self.worker.dead:
            if self.worker is not None:
                self.worker.kill()
            self.worker = self.pool.spawn_worker(host=True)
            self.loaded = {}
            self.generation += 1
        return self.worker

    def request(self, message: Any, timeout_s: float) -> list[Any]:
        """One exchange with this slot's worker (caller holds `lock`); a dead worker raises WorkerCrashed."""
        return self.ensure_worker().request(message, timeout_s)

    def open_session(self, key: str) -> tuple[list[Any], SessionProcess | None]:
        """Have environment `key`'s template fork a process for a new session (caller holds `lock`)."""
        reply, fd = self.ensure_worker().request_fd(("open", key), 30.0)
        if reply[0] != "ok" or fd is None:
            if fd is not None:
                os.close(fd)
            if reply[0] == "template_lost":
                self.loaded.pop(key, None)
            return reply, None
        return reply, SessionProcess(fd, int(reply[1]), self.pool.limits, self.worker, self.loaded.get(key))

    def end_session(self, proc: SessionProcess) -> None:
        """Kill a session's process for good (caller holds `lock`): it may be running away with its call.
        One of a host that is gone went with it (and its pid may name a process of the new host)."""
        proc.close()
        self.generation += 1
        if proc.host is self.worker and self.worker is not None and not self.worker.dead:
            try:
                self.request(("kill", proc.uid, proc.pid), 10.0)
            except (WorkerCrashed, WorkerTimeout):
                self.recover()

    def recover(self) -> None:
        """Replace a dead or hung host (caller holds `lock`); each resident rebuilds itself on its next use."""
        if self.worker is not None:
            self.worker.kill()
        self.worker = None
        for resident in list(self.residents.values()):
            resident.host_lost(self)
        self.ensure_worker()


class SandboxPool:
    """Session-hosting slots (size = CPU count by default) and a free list of fork-server workers."""

    def __init__(self, size: int | None = None, limits: Limits | None = None, runner: Runner | None = None):
        self.size = max(1, size or os.cpu_count() or 1)
        self.limits = limits or Limits()
        self.runner: Runner = runner or LocalRunner()
        self.slots = [Slot(self, i) for i in range(self.size)]
        self._fn_free: list[Worker] = []
        self._fn_lock = threading.Lock()
        self._assign_lock = threading.Lock()
        self.report: dict[str, Any] | None = None
        self.closed = False

    def spawn_worker(self, host: bool = False) -> Worker:
        worker = Worker(self.runner.spawn(self.limits, host), self.limits)
        if self.report is None or (host and "isolation" not in self.report):  # a host's report says more
            self.report = worker.report
            _warn_once(worker.report, self.runner.name)
        return worker

    def warm(self) -> SandboxPool:
        """Start every slot's worker now (in parallel), so the first session does not pay for it."""
        with ThreadPoolExecutor(self.size) as ex:
            list(ex.map(lambda s: _locked(s, s.ensure_worker), self.slots))
        return self

    def pick_slot(self) -> Slot:
        """The slot with the fewest residents: sessions spread over the workers."""
        with self._assign_lock:
            return min(self.slots, key=lambda s: (len(s.residents), s.index))

    # --- one-off functions -----------------------------------------------------------------

    def _acquire_fn(self) -> Worker:
        with self._fn_lock:
            while self._fn_free:
                w = self._fn_free.pop()
                if not w.dead:
                    return w
        return self.spawn_worker()

    def _release_fn(self, worker: Worker) -> None:
        with self._fn_lock:
            if not worker.dead and not self.closed and len(self._fn_free) < self.size:
                self._fn_free.append(worker)
                return
        worker.kill()

    def run_function(
        self,
        source: str,
        entry: str,
        kwargs: dict[str, Any] | None = None,
        limits: Limits | None = None,
        on_call: Callable[[str, dict[str, Any]], Any] | None = None,
    ) -> ToolResult:
        """Run `entry(**kwargs)` from untrusted `source` in a fresh forked process; never raises for its faults.

        With `on_call`, the code sees a global `tools` whose `tools.<name>(**args)` is answered by
        `on_call(name, args)` in this process (task programs).
        """
        limits = limits or self.limits
        started = time.perf_counter()
        worker = self._acquire_fn()
        try:
            result = _exchange_fn(worker, source, entry, _plain(kwargs or {}), limits, on_call)
        finally:
            self._release_fn(worker)
        result.wall_ms = (time.perf_counter() - started) * 1000
        return result

    def close(self) -> None:
        self.closed = True
        for slot in self.slots:
            with slot.lock:
                if slot.worker is not None:
                    slot.worker.kill()
                for resident in slot.residents.values():
                    resident.host_lost(slot)
                slot.residents.clear()
        with self._fn_lock:
            for w in self._fn_free:
                w.kill()
            self._fn_free.clear()


def _locked(slot: Slot, fn: Callable[[], Any]) -> Any:
    with slot.lock:
        return fn()


def _plain(value: Any) -> Any:
    """Make kwargs marshal-able: pydantic models become their JSON form."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _fail(code: str, message: str, env_error: bool) -> ToolResult:
    return ToolResult(ok=False, error=ToolError(code=code, message=message), env_error=env_error)


def _exchange_fn(
    worker: Worker,
    source: str,
    entry: str,
    kwargs: dict[str, Any],
    limits: Limits,
    on_call: Callable[[str, dict[str, Any]], Any] | None,
) -> ToolResult:
    try:
        worker.send(("fn", source, entry, kwargs, on_call is not None, limits.timeout_s, limits.cpu_s))
    except (WorkerCrashed, ValueError) as e:
        worker.kill()
        return _fail("worker_crashed" if isinstance(e, WorkerCrashed) else "invalid_arguments", str(e), True)
    deadline = time.monotonic() + limits.timeout_s + limits.grace_s
    outcome: ToolResult | None = None
    killed = False
    while True:
        try:
            msg = worker.recv(deadline)
        except WorkerTimeout:
            if killed:
                worker.kill()
                return _fail("timeout", f"ran past {limits.timeout_s:g}s", True)
            killed = True
            with contextlib.suppress(WorkerCrashed):
                worker.send(("kill",))
            outcome = _fail("timeout", f"ran past {limits.timeout_s:g}s", True)
            deadline = time.monotonic() + 2.0
            continue
        except WorkerCrashed as e:
            worker.kill()
            return _fail("worker_crashed", str(e), True)
        kind = msg[0] if isinstance(msg, list) and msg else None
        if kind == "call" and on_call is not None and outcome is None and len(msg) == 3:
            answer = on_call(str(msg[1]), msg[2] if isinstance(msg[2], dict) else {})
            with contextlib.suppress(WorkerCrashed):
                worker.send(["reply", answer])
        elif kind == "fn_result" and outcome is None:
            outcome = _function_result(msg[1] if len(msg) > 1 else None)
        elif kind == "fn_error" and outcome is None and len(msg) == 3:
            code = unicode_text(str(msg[1]))[:100]
            outcome = _fail(code, unicode_text(str(msg[2]))[:2000], code in ("timeout", "resource_limit"))
        elif kind == "fn_exit":
            if outcome is None:
                outcome = _fail("worker_crashed", f"the function's process ended with status {msg[1]}", True)
            return outcome
        elif outcome is None:
            outcome = _fail("exception", f"unexpected message from the function: {str(msg)[:200]}", False)


def _function_result(value: Any) -> ToolResult:
    """A function's value, unless it holds text that is not Unicode (a lone surrogate): no JSON holds that."""
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=True).encode()
    except UnicodeEncodeError:
        return _fail("exception", "the function's result holds text that is not Unicode (a lone surrogate)", False)
    except (RecursionError, ValueError):  # nested deeper than the check reaches: the value as it came
        pass
    return ToolResult(ok=True, value=value)


def _warn_once(report: dict[str, Any], runner: str) -> None:
    missing = not_enforced(report)
    if missing:
        log.warning("sandbox (%s runner) cannot enforce: %s", runner, "; ".join(missing))


def not_enforced(report: dict[str, Any]) -> list[str]:
    what = {
        "network_namespace": "network isolation (no network namespace)",
        "mount_isolation": "read-only filesystem view (no mount namespace)",
        "pid_namespace": "private process tree (no pid namespace)",
        "process_limit": "process-count limit (RLIMIT_NPROC needs root to drop to a private uid)",
    }
    return [text for key, text in what.items() if not report.get(key)]


def open_pool(size: int | None = None, limits: Limits | None = None) -> SandboxPool:
    """A new pool of this size and these limits; a Docker runner when an engine answers. Close it after."""
    from factory.sandbox.docker_runner import DockerRunner

    return SandboxPool(size=size, limits=limits, runner=DockerRunner.detect())


_default: SandboxPool | None = None
_default_lock = threading.Lock()


def default_pool() -> SandboxPool:
    """The process-wide pool of one-shot commands (the CLI), started on first use and closed at exit."""
    global _default
    with _default_lock:
        if _default is None or _default.closed:
            _default = open_pool()
            atexit.register(_default.close)
        return _default


def run_function(
    source: str, entry: str, kwargs: dict[str, Any] | None = None, limits: Limits | None = None
) -> ToolResult:
    """Run untrusted `entry(**kwargs)` (e.g. a verifier's `verify(initial, final, answer)`) in the sandbox."""
    return default_pool().run_function(source, entry, kwargs, limits)
