"""The parent's handles on sandbox processes: a worker (spawn it confined, talk to it in frames, kill it)
and a session's own process (its socket, every reply checked against the request it answers).

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
import socket
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
    scratch_bytes: int = 64 << 20  # the size of each of a session's own /tmp, /var/tmp and /dev/shm (tmpfs)
    grace_s: float = 1.0  # the parent waits this long past timeout_s before it kills the worker


class WorkerCrashed(RuntimeError):
    """The worker died or wrote something that is not a frame; it must be replaced."""


class WorkerTimeout(RuntimeError):
    """The worker did not answer before the deadline; it must be killed and replaced."""


class RequestTooLarge(ValueError):
    """A request larger than an event loop writes without waiting (SessionProcess.send, not waiting)."""


LOOP_REQUEST_BYTES = 1 << 16  # an empty socket buffer always takes this much at once


class SessionStale(WorkerCrashed):
    """A session process was found gone or holding bytes nobody asked for before a request was sent."""


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


def unicode_text(text: str) -> str:
    """`text` as valid Unicode: a lone surrogate (which sandboxed code can put in any string) becomes "?"."""
    return text if text.isascii() else text.encode("utf-8", "replace").decode()


def worker_uid() -> int:
    """A uid no one else uses (a worker's, or one environment's in one host), so RLIMIT_NPROC counts its processes
    only and no other's files or processes are its own."""
    return 200_000 + (os.getpid() % 100_000) * 4096 + next(_uid_counter) % 4096


def write_all(fd: int, data: bytes, timeout_s: float = 30.0) -> None:
    """Write all of `data` to a non-blocking descriptor, waiting for room while the peer reads a large message."""
    try:
        written = os.write(fd, data)
    except BlockingIOError:
        written = 0
    if written == len(data):
        return
    view = memoryview(data)[written:]
    deadline = time.monotonic() + timeout_s
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            wait = deadline - time.monotonic()
            if wait <= 0:
                raise WorkerTimeout("the process does not read its channel") from None
            poller = select.poll()  # (select.select refuses descriptors above 1023: a server with many sessions)
            poller.register(fd, select.POLLOUT)
            poller.poll(wait * 1000)


def read_some(fd: int, poller: select.poll, deadline: float) -> bytes:
    """What a non-blocking descriptor has (read first, poll only when nothing is there yet), by `deadline`."""
    while True:
        try:
            return os.read(fd, 1 << 16)
        except BlockingIOError:
            pass
        wait = deadline - time.monotonic()
        if wait <= 0:
            raise WorkerTimeout("no answer before the deadline")
        poller.poll(wait * 1000)


class LocalTransport:
    """A worker as a child process of this one, over a socket pair (a session host passes descriptors on it)."""

    def __init__(self, limits: Limits, isolate: bool = True, host: bool = False):
        ours, theirs = socket.socketpair()
        base = factory_home() / "sandbox"
        base.mkdir(parents=True, exist_ok=True)
        self.private = tempfile.mkdtemp(prefix="worker-", dir=base)
        uid = worker_uid() if os.geteuid() == 0 else None
        cfg = {
            "rfd": theirs.fileno(),
            "wfd": theirs.fileno(),
            "host": host,
            "limits": limits.model_dump(),
            "uid": uid,
            "isolate": isolate,
            "private_dir": self.private,
        }
        debug = os.environ.get("FACTORY_SANDBOX_DEBUG") == "1"
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-s", "-P", "-B", str(WORKER_SCRIPT), json.dumps(cfg)],
                pass_fds=(theirs.fileno(),),
                env=scrubbed_env(self.private),
                cwd=self.private,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=None if debug else subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            theirs.close()
        self.sock = ours
        self.rfd = self.wfd = ours.fileno()
        os.set_blocking(self.rfd, False)  # read first, poll only when nothing is there yet
        self.poller = select.poll()
        self.poller.register(self.rfd, select.POLLIN)
        self.closed = False

    def write_all(self, data: bytes) -> None:
        try:
            write_all(self.wfd, data)
        except OSError as e:
            raise WorkerCrashed(f"worker channel closed: {e}") from e

    def read_some(self, deadline: float) -> bytes:
        return read_some(self.rfd, self.poller, deadline)

    def recv_fds(self, deadline: float) -> tuple[bytes, list[int]]:
        """Bytes and the descriptors that came with them (a session host's answer to `open`)."""
        while True:
            try:
                data, fds, _, _ = socket.recv_fds(self.sock, 1 << 16, 1)
                return data, fds
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
        self.sock.close()
        shutil.rmtree(self.private, ignore_errors=True)

    def exit_status(self) -> int | None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            return self.proc.wait(timeout=1)
        return None


INCOMPLETE = object()  # no whole frame has arrived yet


class Frames:
    """Reads length-prefixed JSON frames off a transport: one read per frame in the usual case."""

    transport: Transport
    limits: Limits
    buf: bytearray
    dead: bool

    def recv(self, deadline: float) -> Any:
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
            frame = self._buffered_frame()
            if frame is not INCOMPLETE:
                return frame
            chunk = self.transport.read_some(deadline)
            if not chunk:
                self.dead = True
                raise WorkerCrashed(self.death_note())
            buf += chunk

    def _buffered_frame(self) -> Any:
        """The first whole frame in `buf`, taken off it, or INCOMPLETE."""
        buf = self.buf
        if len(buf) < 4:
            return INCOMPLETE
        (n,) = HEADER.unpack_from(buf)
        if n > self.limits.max_frame_bytes:
            self.dead = True
            raise WorkerCrashed(f"sent a frame of {n} bytes")
        if len(buf) < 4 + n:
            return INCOMPLETE
        payload = bytes(buf[4 : 4 + n])
        del buf[: 4 + n]
        return self._parse(payload)

    def _parse(self, payload: bytes) -> Any:
        """Parse a frame with pydantic-core (fast); the standard parser takes what it refuses (deep nesting)."""
        try:
            return from_json(payload)
        except ValueError:
            pass
        try:
            return json.loads(payload)
        except (ValueError, RecursionError) as e:
            self.dead = True
            raise WorkerCrashed("sent a garbled frame") from e

    def death_note(self) -> str:
        return "closed its channel"


class Worker(Frames):
    """One confined worker process. `lock` serialises its request/answer exchanges across threads."""

    def __init__(self, transport: Transport, limits: Limits, hello_timeout_s: float = 30.0):
        self.transport = transport
        self.limits = limits
        self.lock = threading.Lock()
        self.buf = bytearray()
        self.dead = False
        try:
            hello = self.recv(time.monotonic() + hello_timeout_s)
        except BaseException:  # a signal (Ctrl-C, SIGTERM) during the hello too: no worker left unregistered
            self.kill()
            raise
        if not isinstance(hello, list) or not hello or hello[0] != "hello":
            self.kill()
            raise WorkerCrashed(f"worker did not say hello: {hello!r}")
        self.report: dict[str, Any] = hello[1]

    def send(self, message: Any) -> None:
        payload = marshal.dumps(message)
        self.transport.write_all(HEADER.pack(len(payload)) + payload)

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

    def request_fd(self, message: Any, timeout_s: float) -> tuple[list[Any], int | None]:
        """An exchange whose answer may bring a descriptor (a session's socket); only a session host's do."""
        recv_fds = getattr(self.transport, "recv_fds", None)
        if recv_fds is None:
            raise WorkerCrashed(f"a {type(self.transport).__name__} cannot hand over session sockets")
        if self.dead:
            raise WorkerCrashed("worker is dead")
        deadline = time.monotonic() + timeout_s
        try:
            self.send(message)
            data, fds = recv_fds(deadline)
            if not data:
                self.dead = True
                raise WorkerCrashed(self.death_note())
            for extra in fds[1:]:
                os.close(extra)
            self.buf += data
            reply = self.recv(deadline)
        except (WorkerCrashed, WorkerTimeout):
            self.dead = True
            raise
        return reply, fds[0] if fds else None

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


class _SocketEnd:
    """The parent's end of a session process's socket, as a transport."""

    def __init__(self, fd: int):
        self.fd = fd
        os.set_blocking(fd, False)
        self.poller = select.poll()
        self.poller.register(fd, select.POLLIN)

    def write_all(self, data: bytes, timeout_s: float = 30.0) -> None:
        try:
            write_all(self.fd, data, timeout_s)
        except OSError as e:
            raise WorkerCrashed(f"session socket closed: {e}") from e

    def read_some(self, deadline: float) -> bytes:
        try:
            return read_some(self.fd, self.poller, deadline)
        except OSError:  # a reset socket reads as the end of the stream
            return b""


class SessionProcess(Frames):
    """The parent's handle on one session's own process: a socket of its own, one exchange at a time.

    Tool code runs in that process and can write to the socket, so every reply is checked: it must echo
    its request's sequence number and nothing may follow it or precede the next request. Any of that,
    a death or a timeout marks the process dead; its owner has the host kill it and starts a new one.
    """

    def __init__(self, fd: int, pid: int, limits: Limits, host: Worker | None = None, uid: int | None = None):
        self.transport = self.end = _SocketEnd(fd)
        self.pid = pid  # in the host's pid namespace: only `host` can act on it, and only on a process of `uid`
        self.host = host
        self.uid = uid
        self.limits = limits
        self.buf = bytearray()
        self.dead = False
        self.seq = 0

    def request(self, message: tuple[Any, ...], timeout_s: float) -> list[Any]:
        """Send `message` and return the reply (its sequence number taken off); marshal's ValueError for
        arguments that are not plain data is raised before anything is sent."""
        seq = self.send(message)
        try:
            return self.answer(seq, self.recv(time.monotonic() + timeout_s))
        except (WorkerCrashed, WorkerTimeout):
            self.dead = True
            raise

    def send(self, message: tuple[Any, ...], waiting: bool = True) -> int:
        """Send `message` (request's first half) and return its sequence number. Not `waiting` (an event loop's
        send), a request larger than LOOP_REQUEST_BYTES raises RequestTooLarge before anything is written, and
        one the socket does not take at once (a process that stopped reading) is WorkerTimeout, not a wait."""
        if self.dead:
            raise SessionStale("session process is gone")
        seq = self.seq + 1
        frame = marshal.dumps((seq, *message))
        frame = HEADER.pack(len(frame)) + frame
        if not waiting and len(frame) > LOOP_REQUEST_BYTES:
            raise RequestTooLarge(f"a request of {len(frame)} bytes is written by a thread")
        self.seq = seq
        if self.end.poller.poll(0):  # readable before we asked anything: stray bytes, or the process ended
            self.dead = True
            raise SessionStale("session process wrote between requests, or ended")
        try:
            if waiting:
                self.end.write_all(frame)
            else:
                self.end.write_all(frame, timeout_s=0.0)
        except (WorkerCrashed, WorkerTimeout):
            self.dead = True
            raise
        return seq

    def arrived(self) -> Any:
        """What the process has sent so far, read without waiting: its whole reply frame, or INCOMPLETE;
        WorkerCrashed when it hung up or sent a garbled frame (request's second half, for an event loop)."""
        try:
            chunk = self.end.read_some(0.0)
        except WorkerTimeout:  # nothing there yet
            return self._buffered_frame()
        if not chunk:
            self.dead = True
            raise WorkerCrashed(self.death_note())
        self.buf += chunk
        return self._buffered_frame()

    def answer(self, seq: int, reply: Any) -> list[Any]:
        """The reply to request `seq` (its sequence number taken off), once checked: it echoes `seq` and
        nothing follows it."""
        if type(reply) is not list or not reply or type(reply[0]) is not int or reply[0] != seq:
            self.dead = True
            raise WorkerCrashed("session process sent a reply to no request of ours (forged or reordered)")
        if self.buf:
            self.dead = True
            raise WorkerCrashed("session process sent bytes after its reply")
        return reply[1:]

    def death_note(self) -> str:
        return "session process ended"

    def close(self) -> None:
        """Hang up: the process reads end-of-file and exits."""
        self.dead = True
        if self.end.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.end.fd)
            self.end.fd = -1
