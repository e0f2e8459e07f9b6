"""The parent's handle on one sandbox worker process: spawn it confined, talk to it in frames, kill it.

Frames are a 4-byte big-endian length and a payload: marshal towards the worker (the parent is
trusted), JSON back (whatever untrusted code managed to write is only ever parsed as JSON, by
pydantic-core's parser, or the standard one for what that refuses). A call costs one write and one
read on each side (a poll only when the answer is not there yet), no thread and no process spawn.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import marshal
import os
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict
from pydantic_core import from_json

from factory.store import factory_home

WORKER_SCRIPT = Path(__file__).with_name("_worker.py")
HEADER = struct.Struct(">I")
_uid_counter = itertools.count()


class Limits(BaseModel):
    """What one sandboxed call or function may use. Wall time is enforced twice: in the worker and by the parent."""

    model_config = ConfigDict(frozen=True)

    timeout_s: float = 10.0
    cpu_s: int = 10
    memory_bytes: int = 2 << 30
    nofile: int = 256
    fsize_bytes: int = 64 << 20
    nproc: int = 64
    max_string_chars: int = 1 << 20
    max_frame_bytes: int = 256 << 20
    grace_s: float = 1.0  # the parent waits this long past timeout_s before it kills the worker


class WorkerCrashed(RuntimeError):
    """The worker died or wrote something that is not a frame; it must be replaced."""


class WorkerTimeout(RuntimeError):
    """The worker did not answer before the deadline; it must be killed and replaced."""


class Transport(Protocol):
    """A byte pipe to a worker and the means to end it."""

    def write_all(self, data: bytes) -> None: ...

    def read_some(self, deadline: float) -> bytes: ...

    def kill(self) -> None: ...

    def exit_status(self) -> int | None: ...


def scrubbed_env(home: str) -> dict[str, str]:
    """The only environment a worker sees: nothing of the orchestrator's (keys, tokens, paths)."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": home,
        "TMPDIR": home,
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def worker_uid() -> int:
    """A uid no one else uses, so RLIMIT_NPROC counts this worker's processes only."""
    return 200_000 + (os.getpid() % 20_000) * 256 + next(_uid_counter) % 256


class LocalTransport:
    """A worker as a child process of this one, over two pipes."""

    def __init__(self, limits: Limits, isolate: bool = True):
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        base = factory_home() / "sandbox"
        base.mkdir(parents=True, exist_ok=True)
        self.private = tempfile.mkdtemp(prefix="worker-", dir=base)
        uid = worker_uid() if os.geteuid() == 0 else None
        cfg = {
            "rfd": to_child_r,
            "wfd": from_child_w,
            "limits": limits.model_dump(),
            "uid": uid,
            "isolate": isolate,
            "private_dir": self.private,
        }
        debug = os.environ.get("FACTORY_SANDBOX_DEBUG") == "1"
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-s", "-P", "-B", str(WORKER_SCRIPT), json.dumps(cfg)],
                pass_fds=(to_child_r, from_child_w),
                env=scrubbed_env(self.private),
                cwd=self.private,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=None if debug else subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
        self.rfd = from_child_r
        self.wfd = to_child_w
        os.set_blocking(self.rfd, False)  # read first, poll only when nothing is there yet
        self.poller = select.poll()
        self.poller.register(self.rfd, select.POLLIN)
        self.closed = False

    def write_all(self, data: bytes) -> None:
        try:
            written = os.write(self.wfd, data)
            if written < len(data):
                view = memoryview(data)[written:]
                while view:
                    view = view[os.write(self.wfd, view) :]
        except OSError as e:
            raise WorkerCrashed(f"worker pipe closed: {e}") from e

    def read_some(self, deadline: float) -> bytes:
        while True:
            try:
                return os.read(self.rfd, 1 << 16)
            except BlockingIOError:
                pass
            wait = deadline - time.monotonic()
            if wait <= 0:
                raise WorkerTimeout("no answer before the deadline")
            self.poller.poll(wait * 1000)

    def kill(self) -> None:
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        for fd in (self.rfd, self.wfd):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self.private, ignore_errors=True)

    def exit_status(self) -> int | None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            return self.proc.wait(timeout=1)
        return None


class Worker:
    """One confined worker process. `lock` serialises its request/answer exchanges across threads."""

    def __init__(self, transport: Transport, limits: Limits, hello_timeout_s: float = 30.0):
        self.transport = transport
        self.limits = limits
        self.lock = threading.Lock()
        self.buf = bytearray()
        self.dead = False
        try:
            hello = self.recv(time.monotonic() + hello_timeout_s)
        except (WorkerCrashed, WorkerTimeout):
            self.kill()
            raise
        if not hello or hello[0] != "hello":
            self.kill()
            raise WorkerCrashed(f"worker did not say hello: {hello!r}")
        self.report: dict[str, Any] = hello[1]

    def send(self, message: Any) -> None:
        payload = marshal.dumps(message)
        self.transport.write_all(HEADER.pack(len(payload)) + payload)

    def recv(self, deadline: float) -> list[Any]:
        buf = self.buf
        if not buf:  # the usual case: one read brings exactly one whole frame
            chunk = self.transport.read_some(deadline)
            if len(chunk) >= 4 and HEADER.unpack_from(chunk)[0] == len(chunk) - 4:
                return self._parse(chunk[4:])
            buf += chunk
            if not chunk:
                self.dead = True
                raise WorkerCrashed(self.death_note())
        while True:
            if len(buf) >= 4:
                (n,) = HEADER.unpack_from(buf)
                if n > self.limits.max_frame_bytes:
                    self.dead = True
                    raise WorkerCrashed(f"worker sent a frame of {n} bytes")
                if len(buf) >= 4 + n:
                    payload = bytes(buf[4 : 4 + n])
                    del buf[: 4 + n]
                    return self._parse(payload)
            chunk = self.transport.read_some(deadline)
            if not chunk:
                self.dead = True
                raise WorkerCrashed(self.death_note())
            buf += chunk

    def _parse(self, payload: bytes) -> list[Any]:
        """Parse a frame with pydantic-core (fast); the standard parser takes what it refuses (deep nesting)."""
        try:
            return from_json(payload)
        except ValueError:
            pass
        try:
            return json.loads(payload)
        except (ValueError, RecursionError) as e:
            self.dead = True
            raise WorkerCrashed("worker sent a garbled frame") from e

    def request(self, message: Any, timeout_s: float) -> list[Any]:
        """One exchange; the caller holds `lock`."""
        if self.dead:
            raise WorkerCrashed("worker is dead")
        try:
            self.send(message)
            return self.recv(time.monotonic() + timeout_s)
        except (WorkerCrashed, WorkerTimeout):
            self.dead = True
            raise

    def death_note(self) -> str:
        status = self.transport.exit_status()
        if status is None:
            return "worker closed its pipe"
        if status < 0 or status > 128:
            sig = -status if status < 0 else status - 128
            return f"worker killed by signal {signal.Signals(sig).name}"
        return f"worker exited with status {status}"

    def kill(self) -> None:
        self.dead = True
        self.transport.kill()
