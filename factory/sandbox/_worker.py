"""The sandbox worker: a process that runs untrusted tool, verifier and program code.

Started as a script (`python -I _worker.py CONFIG`), never imported by the orchestrator, and uses the
standard library only, so it starts in milliseconds and drags nothing of the factory into the sandbox.
It confines itself before it reads any untrusted code (namespaces, read-only filesystem, rlimits, an
unprivileged uid), then answers length-prefixed requests: marshal from the parent (trusted), JSON back
(the parent never unpickles what untrusted code could have written).

A function worker forks a child per one-off function. A session host runs no untrusted code: per
environment it forks a template (own uid, tools.py imported once, then frozen for copy-on-write), and
per session the template forks a process (own user, mount and pid namespaces where allowed) that
answers the parent directly on a socket the host passed over; only that process holds the session.
"""

from __future__ import annotations

import builtins
import contextlib
import csv
import ctypes
import functools
import gc
import importlib
import json
import marshal
import os
import resource
import select
import shutil
import signal
import socket
import sqlite3
import struct
import sys
import traceback

CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
PR_SET_DUMPABLE = 4
CLONE_NEWUSER = 0x10000000
CLONE_NEWIPC = 0x08000000
SESSION_NAMESPACES = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC  # each session's own
SYS_CLONE = {"x86_64": 56, "aarch64": 220}  # clone(2)'s number; with no stack it returns twice, as fork() does
SESSIONS_PER_TEMPLATE = 4096  # processes a template's uid may hold beyond one session's own limit
HEADER = struct.Struct(">I")
# The standard-library modules code verifiers import (answer matching, state checks): loaded once per worker,
# so the children forked for each verdict do not load them again.
PRELOADED = ("datetime", "decimal", "fnmatch", "unicodedata")
MAX_RESULT_BYTES = 64 << 20
SCRATCH_TMPFS = ("/tmp", "/var/tmp", "/dev/shm")
DIRTY = "factory_written"  # temp table: the tables a session's calls wrote since its reset
EPOCH = "factory_epoch"  # temp table: a marker row inside the session's own transaction
UNTOUCHED_MOUNTS = ("/proc", "/sys", "/dev")


class CallTimeout(BaseException):
    """Raised by SIGALRM inside a call; a BaseException so `except Exception` in tool code cannot eat it."""


class CpuLimit(BaseException):
    """Raised by SIGXCPU when a call spends its CPU-time budget."""


def _on_alarm(signum, frame):
    if IN_CALL:  # the per-call timer stays armed after a call; a late expiry between calls is ignored
        raise CallTimeout()


def _on_xcpu(signum, frame):  # SIGXCPU: RLIMIT_CPU of a forked function
    raise CpuLimit()


def _on_prof(signum, frame):  # SIGPROF: the per-call CPU-time timer
    if IN_CALL:
        raise CpuLimit()


# --- confinement ---------------------------------------------------------------------------


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _unshare(libc, flag: int) -> bool:
    return libc.unshare(flag) == 0


def _mount(libc, source, target, fstype, flags, data=None) -> bool:
    enc = [None if v is None else v.encode() for v in (source, target, fstype, data)]
    return libc.mount(enc[0], enc[1], enc[2], ctypes.c_ulong(flags), enc[3]) == 0


def _mount_points() -> list[str]:
    points = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            points.append(line.split()[4].replace("\\040", " "))
    return points


def _read_only_root(libc) -> tuple[int, int]:
    """Remount every mount read-only in this mount namespace, except scratch tmpfs and kernel trees."""
    done = failed = 0
    for mp in _mount_points():
        if mp in SCRATCH_TMPFS or any(mp == u or mp.startswith(u + "/") for u in UNTOUCHED_MOUNTS):
            continue
        if _mount(libc, None, mp, None, MS_REMOUNT | MS_BIND | MS_RDONLY):
            done += 1
        else:
            failed += 1
    return done, failed


def _hidden_ancestor(path: str) -> tuple[str, str] | None:
    """The first ancestor of `path` that others cannot traverse, and its child on the way to `path`."""
    parts = os.path.abspath(path).split(os.sep)[1:]
    current = "/"
    for name in parts:
        try:
            if not os.stat(current).st_mode & 0o001:
                return current, name
        except OSError:
            return None
        current = os.path.join(current, name)
    return None


def _expose_interpreter(libc) -> list[str]:
    """Make the interpreter's own files reachable for an unprivileged uid.

    A Python under a private home (e.g. /root/.pyenv, /root is 0700) would stop importing stdlib
    modules after the uid drop. In our mount namespace the private ancestor is covered by an empty
    tmpfs (hiding whatever else it holds) and only the interpreter's directory is bound back in.
    """
    needed = {sys.base_prefix, sys.prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    needed.update(p for p in sys.path if p and os.path.isdir(p))
    groups: dict[str, set[str]] = {}
    for path in needed:
        hit = _hidden_ancestor(os.path.realpath(path))
        if hit is not None:
            groups.setdefault(hit[0], set()).add(hit[1])
    exposed = []
    for i, (ancestor, children) in enumerate(sorted(groups.items())):
        holds = []
        for j, child in enumerate(sorted(children)):
            hold = f"/tmp/.hold-{i}-{j}"
            os.makedirs(hold)
            if _mount(libc, os.path.join(ancestor, child), hold, None, MS_BIND | MS_REC):
                holds.append((hold, child))
        if not _mount(libc, "tmpfs", ancestor, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755"):
            continue
        for hold, child in holds:
            target = os.path.join(ancestor, child)
            os.makedirs(target, exist_ok=True)
            if _mount(libc, hold, target, None, MS_BIND | MS_REC):
                exposed.append(target)
    return exposed


def _become_pid_one(rfd: int, wfd: int) -> None:
    """Fork into the new pid namespace; the outer process only waits and passes on the exit status."""
    pid = os.fork()
    if pid == 0:
        return
    for fd in {rfd, wfd}:
        os.close(fd)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
        except InterruptedError:
            continue
        code = os.waitstatus_to_exitcode(status)
        os._exit(code if code >= 0 else 128 - code)


def confine(cfg: dict, rfd: int, wfd: int) -> dict:
    """Apply every limit this kernel allows; report what was enforced and what was not."""
    report = {
        "network_namespace": False,
        "mount_isolation": False,
        "pid_namespace": False,
        "process_limit": False,
        "unprivileged_uid": False,
        "private_proc": False,
        "rlimits": [],
        "notes": [],
    }
    limits = cfg["limits"]
    root = os.geteuid() == 0
    private = cfg["private_dir"]
    libc = _libc() if cfg.get("isolate", True) else None
    if libc is not None:
        report["network_namespace"] = _unshare(libc, CLONE_NEWNET)
        if not report["network_namespace"]:
            report["notes"].append(f"network namespace refused (errno {ctypes.get_errno()})")
        mount_ns = _unshare(libc, CLONE_NEWNS)
        if mount_ns and _unshare(libc, CLONE_NEWPID):
            _become_pid_one(rfd, wfd)
            report["pid_namespace"] = True
        if mount_ns and _mount(libc, None, "/", None, MS_REC | MS_PRIVATE):
            scratch = [d for d in SCRATCH_TMPFS if os.path.isdir(d)]
            ok = all(_mount(libc, "tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV, "size=256m,mode=1777") for d in scratch)
            if root and cfg.get("uid") is not None:
                _expose_interpreter(libc)
            if report["pid_namespace"]:
                report["private_proc"] = _mount(libc, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
                if not report["private_proc"]:
                    report["notes"].append("could not mount a private /proc")
            done, failed = _read_only_root(libc)
            report["mount_isolation"] = ok and failed == 0 and done > 0
            if failed:
                report["notes"].append(f"{failed} mounts could not be made read-only")
            private = "/tmp/sandbox"
            os.makedirs(private, exist_ok=True)
        else:
            report["notes"].append("mount namespace refused: writes outside the private dir rely on file permissions")
    uid = cfg.get("uid")
    host = bool(cfg.get("host"))
    if root and uid is not None:
        os.chown(private, uid, uid)
    os.chdir(private)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an over-size write fails with EFBIG instead of killing us
    signal.signal(signal.SIGXCPU, _on_xcpu)
    signal.signal(signal.SIGPROF, _on_prof)
    signal.signal(signal.SIGALRM, _on_alarm)
    for name, value in (
        ("RLIMIT_AS", limits["memory_bytes"]),
        ("RLIMIT_NOFILE", limits["nofile"]),
        ("RLIMIT_FSIZE", limits["fsize_bytes"]),
        ("RLIMIT_CORE", 0),
    ):
        try:
            resource.setrlimit(getattr(resource, name), (value, value))
            report["rlimits"].append(name)
        except (ValueError, OSError) as e:
            report["notes"].append(f"{name}: {e}")
    if root and uid is not None and host:
        # A session host stays root (it never runs untrusted code) to give each environment's template its own uid.
        report["unprivileged_uid"] = report["process_limit"] = True
        report["rlimits"].append("RLIMIT_NPROC")
    elif root and uid is not None:
        try:
            _drop_to(uid, limits["nproc"])
            report["unprivileged_uid"] = True
            report["process_limit"] = True
            report["rlimits"].append("RLIMIT_NPROC")
        except OSError as e:
            report["notes"].append(f"could not drop to uid {uid}: {e}")
    elif not root:
        report["notes"].append("not root: RLIMIT_NPROC would count every process of this user, so it is not set")
    if libc is not None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    report["private_dir"] = private
    if host:
        report["isolation"] = "process per session"
        report["session_namespaces"] = libc is not None and _probe_session_namespaces(uid if root else None, limits)
        if not report["session_namespaces"]:
            report["notes"].append(
                "no user namespace per session: sessions of one environment share a uid, so a session's "
                "scratch and files-backend state rely on a private directory, not a private mount"
            )
    return report


def _drop_to(uid: int, nproc: int) -> None:
    """Become `uid` with at most `nproc` processes of it; for good (the real, effective and saved ids)."""
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


def _probe_session_namespaces(uid, limits: dict) -> bool:
    """Whether a session process (an unprivileged copy of a template) can get its own namespaces and scratch
    mounts here: each host asks once, so the report says what sessions get."""
    pid = os.fork()
    if pid == 0:
        try:
            if uid is not None:
                _drop_to(uid, limits["nproc"] + SESSIONS_PER_TEMPLATE)
            libc = _libc()
            os._exit(0 if _session_namespaces(libc) and _private_scratch(libc, limits["scratch_bytes"]) else 1)
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def _session_namespaces(libc) -> bool:
    """Enter a new user, mount, pid and IPC namespace (the next child is its pid 1), mapping only our own ids."""
    uid, gid = os.getuid(), os.getgid()
    return _unshare(libc, SESSION_NAMESPACES) and _map_own_ids(libc, uid, gid)


def _map_own_ids(libc, uid: int, gid: int) -> bool:
    """Map our uid and gid (as the parent namespace knows them) to themselves in our new user namespace."""
    libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # a uid drop left us undumpable: /proc/self would refuse the maps
    try:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
    except OSError:
        return False
    finally:
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    return True


def _clone_into_namespaces() -> int:
    """fork(), with the child already in its session's namespaces (pid 1 of a new pid namespace): one copy
    instead of two. -1 where clone(2) refuses (a template that tool code made multi-threaded) or is unknown."""
    number = SYS_CLONE.get(os.uname().machine)
    if number is None or PYLIBC is None:
        return -1
    api = ctypes.pythonapi
    api.PyOS_BeforeFork()  # what os.fork() does around the system call: locks, at-fork hooks, thread state
    flags = ctypes.c_ulong(SESSION_NAMESPACES | signal.SIGCHLD)
    none = ctypes.c_long(0)  # no new stack (the child goes on on a copy of ours), no tid or tls pointers
    pid = PYLIBC.syscall(ctypes.c_long(number), flags, none, none, none, none)
    if pid == 0:
        api.PyOS_AfterFork_Child()
    else:
        api.PyOS_AfterFork_Parent()
    return pid


# --- framing -------------------------------------------------------------------------------


class Channel:
    """Length-prefixed frames over two file descriptors, with a read buffer (one read per message)."""

    def __init__(self, rfd: int, wfd: int):
        self.rfd = rfd
        self.wfd = wfd
        self.buf = bytearray()
        self.sock: socket.socket | None = None  # a session host's channel as a socket: it hands over descriptors

    def _fill(self, n: int) -> None:
        while len(self.buf) < n:
            chunk = os.read(self.rfd, max(n - len(self.buf), 1 << 16))
            if not chunk:
                raise EOFError
            self.buf += chunk

    def recv_raw(self) -> bytes:
        if not self.buf:  # the usual case: one read brings exactly one whole frame
            chunk = os.read(self.rfd, 1 << 16)
            if not chunk:
                raise EOFError
            if len(chunk) >= 4 and HEADER.unpack_from(chunk)[0] == len(chunk) - 4:
                return chunk[4:]
            self.buf += chunk
        self._fill(4)
        (n,) = HEADER.unpack_from(self.buf)
        self._fill(4 + n)
        data = bytes(self.buf[4 : 4 + n])
        del self.buf[: 4 + n]
        return data

    def recv(self):
        return marshal.loads(self.recv_raw())

    def send_raw(self, payload: bytes) -> None:
        frame = HEADER.pack(len(payload)) + payload
        written = os.write(self.wfd, frame)
        if written < len(frame):
            view = memoryview(frame)[written:]
            while view:
                view = view[os.write(self.wfd, view) :]

    def send(self, value) -> None:
        self.send_raw(_dumps(value))


def _json_default(o):
    if isinstance(o, bytes | bytearray | memoryview):
        return bytes(o).hex()
    if isinstance(o, set | frozenset | tuple):
        return list(o)
    return str(o)


def _encoders(strict: bool):
    """A JSON encoder and its C function (None without the C accelerator), bound before untrusted code runs.
    `strict`: non-finite numbers raise, and text goes out as UTF-8 rather than escaped, so that encoding it
    refuses a lone surrogate (text that is not Unicode, which no JSON client can decode)."""
    encoder = json.JSONEncoder(
        default=_json_default, separators=(",", ":"), allow_nan=not strict, ensure_ascii=not strict
    )
    make = json.encoder.c_make_encoder
    text = json.encoder.encode_basestring if strict else json.encoder.encode_basestring_ascii
    args = (_MARKERS, _json_default, text, None, ":", ",", False, False, not strict)
    return encoder, (make(*args) if make is not None else None)


_MARKERS: dict = {}  # the C encoders' cycle check; left dirty by an encoding that raised
_ENCODER, _C_ENCODE = _encoders(strict=False)
# A tool's result goes to JSON clients as it is: Infinity, NaN and lone surrogates are not JSON, so such a result
# is refused.
_STRICT_ENCODER, _C_STRICT = _encoders(strict=True)


def _dumps(value, strict: bool = False) -> bytes:
    """What `JSONEncoder.encode` writes, without building a C encoder per call (JSONEncoder.encode does).
    `strict`: a non-finite number or a lone surrogate raises ValueError."""
    encode = _C_STRICT if strict else _C_ENCODE
    try:
        text = (_STRICT_ENCODER if strict else _ENCODER).encode(value) if encode is None else "".join(encode(value, 0))
    except BaseException:
        _MARKERS.clear()
        raise
    try:
        return text.encode()
    except UnicodeEncodeError:
        raise ValueError(
            "the result holds text that is not Unicode (a lone surrogate), which JSON cannot carry"
        ) from None


# --- sessions ------------------------------------------------------------------------------


class Env:
    """One loaded tools.py and its seed state."""

    def __init__(self, source: str, backend: str, seed, files, read_only=()):
        self.backend = backend
        self.seed = seed
        self.files = files or {}
        self.read_only = frozenset(read_only)  # tools the spec declares non-mutating: no savepoint around them
        self.namespace = {"__name__": "tools", "__builtins__": builtins}
        self._seed_tables = None
        self._seed_conn = None
        exec(compile(source, "tools.py", "exec"), self.namespace)

    def seed_tables(self) -> dict:
        """The seed's tables as read by `_table_rows` (sqlite), read once: a snapshot leaves out the tables
        still equal to them, so an API-sized database costs what a session wrote, not every table."""
        if self._seed_tables is None:
            conn = sqlite3.connect(":memory:")
            try:
                conn.deserialize(self.seed)
                self._seed_tables = {name: _table_rows(conn, name) for name in _table_names(conn)}
            finally:
                conn.close()
        return self._seed_tables

    def seed_connection(self):
        """The seed in a connection that tracks the tables written (made once, in the template, so a forked
        session starts from a copy-on-write image instead of deserializing its own)."""
        if self._seed_conn is None:
            conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            _load_seed(conn, self.seed)
            self._seed_conn = conn
        return self._seed_conn


def _load_seed(conn, seed: bytes) -> None:
    """Put the seed image in `conn` and mark its tables for tracking: a temp trigger per table and change
    kind records the table in temp.{DIRTY}, which is part of the session's open transaction, so a rollback
    (of a failed call, or the reset) forgets the marks with the writes.

    Temp triggers on main's tables (ours, and any tool code made) are dropped before main is replaced: sqlite
    (3.40) leaves them pointing at the freed tables after a deserialize, so they stop firing (a snapshot then
    misses what the session wrote) and dropping one afterwards crashes the process. What else tool code made
    in temp (tables, views, their rows) goes too: it committed them, so no rollback would undo them."""
    made = conn.execute("SELECT type, name FROM sqlite_temp_master WHERE type IN ('trigger', 'view', 'table')")
    for kind, name in sorted(made.fetchall(), key=lambda row: ("trigger", "view", "table").index(row[0])):
        if kind != "table" or name not in (DIRTY, EPOCH):
            conn.execute('DROP {} IF EXISTS temp."{}"'.format(kind.upper(), name.replace('"', '""')))
    conn.deserialize(seed)
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS {DIRTY} (name TEXT PRIMARY KEY) WITHOUT ROWID")
    conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS {EPOCH} (n INTEGER)")
    conn.execute(f"DELETE FROM temp.{DIRTY}")
    conn.execute(f"DELETE FROM temp.{EPOCH}")
    for i, name in enumerate(_table_names(conn)):
        table, literal = name.replace('"', '""'), name.replace("'", "''")
        for event in ("INSERT", "UPDATE", "DELETE"):
            conn.execute(
                f'CREATE TEMP TRIGGER IF NOT EXISTS {DIRTY}_{event}_{i} AFTER {event} ON main."{table}" '
                f"BEGIN INSERT OR IGNORE INTO {DIRTY} VALUES ('{literal}'); END"  # temp is searched first
            )
    _begin(conn)


def _begin(conn) -> None:
    """Open the session's own transaction, with a marker row: a reset rolls it back, and a marker still
    there after the rollback means tool code committed it (then the reset restores the seed image)."""
    conn.execute("BEGIN")
    conn.execute(f"INSERT INTO temp.{EPOCH} VALUES (1)")


class Session:
    """The one session a session process holds; `root` is its private scratch (its state dir lies under it).

    A sqlite session runs inside one transaction of its own that its calls nest savepoints in: a reset is a
    rollback (its cost is what the session wrote, not the database's size), and the tables its calls wrote
    are known without reading the others.
    """

    def __init__(self, env: Env, root: str):
        self.env = env
        self.dir = os.path.join(root, "state") if env.backend == "files" else None
        self.conn = env.seed_connection() if env.backend == "sqlite" else None
        self.state = self.conn if self.conn is not None else self.dir
        self.own_transaction = True  # the open transaction is the one that began at the seed
        if self.conn is not None:
            self.schema_version = self.seed_schema = _schema_version(self.conn)
            self.seed_temp_schema = _schema_version(self.conn, "temp")
        else:
            self.reset()

    def reset(self) -> None:
        if self.conn is not None:
            conn = self.conn
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            _restore_settings(conn)
            if not (self.own_transaction and conn.execute(f"SELECT 1 FROM temp.{EPOCH} LIMIT 1").fetchone() is None):
                _load_seed(conn, self.env.seed)  # tool code ended the session's transaction: the whole image
            else:
                _begin(conn)
            self.own_transaction = True
            self.schema_version = _schema_version(conn)
            self.seed_temp_schema = _schema_version(conn, "temp")  # (the seed reload rebuilt our triggers)
            return
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        for rel, data in self.env.files.items():
            path = os.path.join(self.dir, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)

    def settle(self) -> None:
        """After a sqlite call: if tool code ended the session's transaction, open another (the next reset
        then restores the whole image, since what it committed no rollback undoes)."""
        if not self.conn.in_transaction:
            self.own_transaction = False
            _begin(self.conn)

    def written_tables(self) -> set | None:
        """Tables written since the reset (a superset); None when the schema changed (a dropped table takes
        its trigger with it, so then every table counts)."""
        conn = self.conn
        if _schema_version(conn) != self.seed_schema or _schema_version(conn, "temp") != self.seed_temp_schema:
            return None  # (tool code that dropped our triggers changed the temp schema: its writes went unmarked)
        return {r[0] for r in conn.execute(f"SELECT name FROM temp.{DIRTY}")}


def _error(code: str, message: str, env_error: bool = False) -> list:
    """A failed call's reply; its text capped (as the parent keeps it) and made Unicode (tool code may raise with
    a lone surrogate in the message)."""
    return ["error", _unicode(code[:100]), _unicode(message[:2000]), env_error]


def _unicode(text: str) -> str:
    return text if text.isascii() else text.encode("utf-8", "replace").decode()


def _exception_result(e: BaseException) -> list:
    if isinstance(e, CallTimeout):
        return _error("timeout", "the call ran past its wall-clock limit", True)
    if isinstance(e, CpuLimit):
        return _error("resource_limit", "the call ran past its CPU-time limit", True)
    if isinstance(e, MemoryError):
        return _error("resource_limit", "the call ran out of its memory limit", True)
    if isinstance(e, RecursionError):
        return _error("tool_exception", "RecursionError: maximum recursion depth exceeded")
    try:
        msg = str(e)
    except Exception:  # tool code's exception whose __str__ raises (or returns no str)
        msg = "(its message could not be read)"
    if isinstance(e, OSError) and e.errno == 27:  # EFBIG from RLIMIT_FSIZE
        return _error("resource_limit", f"file size limit: {msg}", True)
    if isinstance(e, OSError) and e.errno == 11:  # EAGAIN from fork under RLIMIT_NPROC
        return _error("resource_limit", f"process limit: {msg}", True)
    return _error("tool_exception", f"{type(e).__name__}: {msg}")


def _schema_version(conn, schema: str = "main") -> int:
    return conn.execute(f"PRAGMA {schema}.schema_version").fetchone()[0]


# Connection settings tool code can change that outlive a rollback; a reset puts back the seed's (sqlite defaults).
_SETTINGS = tuple(
    f"PRAGMA {name} = OFF"
    for name in (
        "query_only",  # left on, it would refuse the reset's own writes (and every later call's)
        "case_sensitive_like",
        "recursive_triggers",
        "ignore_check_constraints",
        "reverse_unordered_selects",
        "writable_schema",
        "legacy_alter_table",
        "defer_foreign_keys",
    )
)


def _restore_settings(conn) -> None:
    """The connection as a new session gets it (no transaction is open)."""
    conn.row_factory = None
    conn.text_factory = str
    conn.isolation_level = None
    for statement in _SETTINGS:
        conn.execute(statement)


def _arm(timeout_s: float, cpu_s: float) -> None:
    """Start a call's clocks. They are re-armed by the next call, never disarmed: two syscalls, not four.

    A timer that runs out between calls finds IN_CALL false and is ignored.
    """
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    signal.setitimer(signal.ITIMER_PROF, cpu_s)  # CPU time of this call only: SIGPROF -> CpuLimit


def _is_error(value) -> bool:
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get("error"), dict)


def _run_tool(session: Session, fn, args: dict, timeout_s: float, cpu_s: float, guarded: bool = True) -> list:
    """Run one tool inside a savepoint (sqlite) or after a backup (files); undo it unless it succeeded.

    A success is `["ok", <JSON bytes of the value>, changed]`: the value is serialised once, here.
    Unguarded (a sqlite tool the spec declares non-mutating) runs without the savepoint: the row-change
    count and the schema version show whether it wrote, and a failed call that did answers "state_lost",
    so the parent rebuilds the session (reset + journal replay) and a failed call still changes nothing.
    """
    global IN_CALL
    conn = session.conn
    backup = None
    before = 0
    if conn is not None:
        before = conn.total_changes
        if guarded:
            conn.execute("SAVEPOINT tool_call")
    else:
        backup = session.dir + ".bak"
        shutil.rmtree(backup, ignore_errors=True)
        shutil.copytree(session.dir, backup)
    try:
        _arm(timeout_s, cpu_s)
        IN_CALL = True
        try:
            value = fn(session.state, **args)
            if _is_error(value):
                err = value["error"]
                result = _error(str(err.get("code") or "error"), str(err.get("message") or ""))
            else:
                payload = _dumps(value, strict=True)
                if len(payload) > MAX_RESULT_BYTES:
                    result = _error("tool_exception", f"result of {len(payload)} bytes is over the limit")
                else:
                    result = ["ok", payload, False]
        finally:
            IN_CALL = False
    except BaseException as e:
        result = _exception_result(e)
    finally:
        if _processes_started():
            _reap()
    if conn is not None:
        (_end_savepoint if guarded else _check_unguarded)(session, result, before)
    elif result[0] != "ok":
        shutil.rmtree(session.dir, ignore_errors=True)
        os.replace(backup, session.dir)
    else:
        shutil.rmtree(backup, ignore_errors=True)
    return result


def _end_savepoint(session: Session, result: list, before: int) -> None:
    """Keep a successful call's writes, undo a failed one's; "state_lost" when tool code ended the
    transaction the savepoint was in and a failed call wrote (then only a replay undoes it)."""
    conn = session.conn
    ok = result[0] == "ok"
    try:
        if not ok:
            conn.execute("ROLLBACK TO tool_call")
        conn.execute("RELEASE tool_call")
        lost = False
    except sqlite3.Error:
        lost = True
    wrote = conn.total_changes != before
    if ok:
        result[2] = wrote
        session.schema_version = _schema_version(conn)  # a write call may have changed the schema
    elif lost and wrote:
        result.append("state_lost")
    session.settle()


def _check_unguarded(session: Session, result: list, before: int) -> None:
    """After a non-mutating tool ran bare: flag a failed call that wrote (the parent replays)."""
    conn = session.conn
    wrote = conn.total_changes != before
    if result[0] == "ok":
        result[2] = wrote
        session.schema_version = _schema_version(conn)
    elif wrote or _schema_version(conn) != session.schema_version:
        result.append("state_lost")
    session.settle()


def _send_result(chan: Channel, seq: int, result: list) -> None:
    """A reply echoes its request's sequence number, so the parent can tell it from anything tool code wrote."""
    if len(result) == 3 and type(result[1]) is bytes:  # a call's success: its value is JSON already
        chan.send_raw(b'[%d,"ok",' % seq + result[1] + (b",true]" if result[2] else b",false]"))
    else:
        chan.send([seq, *result])


def _rows_sorted(rows: list, pk) -> list:
    if pk and rows and all(isinstance(r, dict) and pk in r for r in rows):
        return sorted(rows, key=lambda r: (str(type(r[pk])), r[pk]))
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=_json_default))


KEY_FIELD = "__key__"  # the column a keyed object's records carry their key in (factory.envs.importers names it too)


def _json_rows(data, name: str) -> list:
    """A JSON collection as rows, each a record a state check can name by its key: a list's items; an object
    keyed by identifier (every value an object) as one row per record, its key under KEY_FIELD, so a write to
    one record changes that row alone; a single state object as one row keyed by the collection's name; an
    empty object as none."""
    if not isinstance(data, dict):
        return data if isinstance(data, list) else [data]
    if data and all(isinstance(v, dict) for v in data.values()):
        return [{KEY_FIELD: k, **v} for k, v in data.items()]
    return [{KEY_FIELD: name, **data}] if data else []


def _table_names(conn) -> list:
    query = "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
    return [r[0] for r in conn.execute(query)]


def _table_rows(conn, name: str) -> tuple:
    """(column names, rows as tuples) of one table, ordered by its primary key (rowid without one)."""
    info = conn.execute(f'PRAGMA table_info("{name}")').fetchall()
    pk_cols = [r[1] for r in sorted(info, key=lambda r: r[5]) if r[5] > 0]
    order = ", ".join(f'"{c}"' for c in pk_cols) if pk_cols else "rowid"
    cur = conn.execute(f'SELECT * FROM "{name}" ORDER BY {order}')
    return tuple(d[0] for d in cur.description), cur.fetchall()


def _decoded(row: dict, lists: tuple) -> dict:
    """A row with its list columns read back from their JSON text, as the tools see them."""
    for name in lists:
        if isinstance(row.get(name), str):
            row[name] = json.loads(row[name])
    return row


def _snapshot(session: Session, pks: dict, changed_only: bool = False) -> tuple:
    """(tables, names of the tables left out because they equal the seed's: only when `changed_only`)."""
    tables = {}
    conn = session.conn
    lists = session.env.namespace.get("_LIST_FIELDS") or {}  # list columns, kept as JSON text (tools.py)
    if conn is not None:
        seed = session.env.seed_tables() if changed_only else {}
        written = session.written_tables() if changed_only else None
        same = []
        for name in _table_names(conn):
            if written is not None and name not in written and name in seed:
                same.append(name)
                continue
            cols, rows = read = _table_rows(conn, name)
            if seed.get(name) == read:
                same.append(name)
            else:
                tables[name] = [_decoded(dict(zip(cols, row, strict=True)), lists.get(name, ())) for row in rows]
        return tables, same
    for dirpath, _, filenames in os.walk(session.dir):
        for fn in sorted(filenames):
            path = os.path.join(dirpath, fn)
            stem, ext = os.path.splitext(os.path.relpath(path, session.dir))
            if ext == ".json":
                with open(path) as f:
                    data = json.load(f)
                rows = _json_rows(data, stem)
            elif ext == ".csv":
                with open(path, newline="") as f:
                    rows = list(csv.DictReader(f))
            else:
                continue
            keyed = bool(rows) and all(isinstance(r, dict) and KEY_FIELD in r for r in rows)
            tables[stem] = _rows_sorted(rows, pks.get(stem, KEY_FIELD if keyed else "id"))
    return tables, []


# --- one-off functions and programs (forked children) -----------------------------------------


class _LoadFailed(Exception):
    """The source did not compile (the message says why)."""


class _ToolProxy:
    """`tools.<name>(**args)` inside a task program: forwarded to the parent session, answer returned."""

    def __init__(self, chan: Channel):
        self._chan = chan

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)

        def call(**args):
            self._chan.send(["call", name, args])
            return self._chan.recv()[1]

        return call


@functools.lru_cache(maxsize=64)
def _compiled(source: str):
    """The code object of a function's source, compiled once per worker: the audit runs one task's verifier
    (answer matching and state checks, some 30 KB) dozens of times, and compiling it is most of a call's cost.
    Compiling runs no code; the children forked from this worker execute it."""
    return compile(source, "<untrusted>", "exec")


def _child_run(chan: Channel, code, entry: str, kwargs: dict, program: bool, cpu_s: int) -> None:
    os.setpgid(0, 0)
    resource.setrlimit(resource.RLIMIT_CPU, (max(1, cpu_s), max(1, cpu_s) + 1))
    try:
        namespace = {"__name__": "__sandbox__", "__builtins__": builtins}
        if program:
            namespace["tools"] = _ToolProxy(chan)
        try:
            if isinstance(code, str):
                raise _LoadFailed(code)
            exec(code, namespace)
        except _LoadFailed as e:
            chan.send(["fn_error", "load_error", str(e)[:2000]])
            return
        except BaseException as e:
            chan.send(["fn_error", "load_error", f"{type(e).__name__}: {e}"[:2000]])
            return
        fn = namespace.get(entry)
        if not callable(fn):
            chan.send(["fn_error", "not_found", f"no function named {entry!r}"])
            return
        if program and not kwargs and fn.__code__.co_argcount >= 1:
            kwargs = {fn.__code__.co_varnames[0]: namespace["tools"]}
        value = fn(**kwargs)
        payload = _dumps(["fn_result", value])
        if len(payload) > MAX_RESULT_BYTES:
            chan.send(["fn_error", "exception", "result over the size limit"])
        else:
            chan.send_raw(payload)
    except BaseException as e:
        code = _exception_result(e)
        kind = "exception" if code[1] == "tool_exception" else code[1]
        with contextlib.suppress(BaseException):
            chan.send(["fn_error", kind, code[2] if kind != "exception" else f"{type(e).__name__}: {e}"[:2000]])
            if kind == "exception":
                sys.stderr.write(traceback.format_exc())


def _run_forked(parent: Channel, req: tuple) -> None:
    """Fork a child for one function; relay its frames to the parent and the parent's to it; then report its exit."""
    global IN_CALL
    _, source, entry, kwargs, program, timeout_s, cpu_s = req
    try:
        code = _compiled(source)
    except BaseException as e:  # reported by the child, as any load error
        code = f"{type(e).__name__}: {e}"
    c_in_r, c_in_w = os.pipe()
    c_out_r, c_out_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(c_in_w)
        os.close(c_out_r)
        for fd in {parent.rfd, parent.wfd}:
            os.close(fd)
        try:
            IN_CALL = True
            signal.setitimer(signal.ITIMER_REAL, timeout_s)
            _child_run(Channel(c_in_r, c_out_w), code, entry, kwargs, program, cpu_s)
        finally:
            os._exit(0)
    os.close(c_in_r)
    os.close(c_out_w)
    child_out = Channel(c_out_r, c_in_w)
    pidfd = os.pidfd_open(pid)
    status = None
    poller = select.poll()
    poller.register(c_out_r, select.POLLIN)
    poller.register(parent.rfd, select.POLLIN)
    poller.register(pidfd, select.POLLIN)
    try:
        while status is None:
            for fd, _ in poller.poll():
                if fd == c_out_r:
                    try:
                        parent.send_raw(child_out.recv_raw())
                    except EOFError:
                        poller.unregister(c_out_r)
                elif fd == parent.rfd:
                    msg = parent.recv_raw()
                    if marshal.loads(msg) == ("kill",):
                        os.kill(pid, signal.SIGKILL)
                    else:
                        with contextlib.suppress(OSError):
                            child_out.send_raw(msg)
                elif fd == pidfd:
                    _, st = os.waitpid(pid, 0)
                    status = os.waitstatus_to_exitcode(st)
                    _drain(child_out, parent)
    finally:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
        for fd in (c_out_r, c_in_w, pidfd):
            os.close(fd)
        _processes_started()
        _reap()
    parent.send(["fn_exit", status])


def _drain(child_out: Channel, parent: Channel) -> None:
    """Forward the complete frames the child wrote before it exited; a torn last frame is dropped."""
    os.set_blocking(child_out.rfd, False)
    with contextlib.suppress(OSError):
        while chunk := os.read(child_out.rfd, 1 << 16):
            child_out.buf += chunk
    while len(child_out.buf) >= 4:
        (n,) = HEADER.unpack_from(child_out.buf)
        if len(child_out.buf) < 4 + n:
            return
        parent.send_raw(bytes(child_out.buf[4 : 4 + n]))
        del child_out.buf[: 4 + n]


def _processes_started() -> bool:
    """Whether any process was started since the last look; a copy of this worker (tool code forked) exits here.

    With a private pid namespace one pread of its last pid says "none" and nothing else is checked.
    """
    global LAST_PID
    if LAST_PID_FD is not None:
        current = os.pread(LAST_PID_FD, 32, 0)
        if current == LAST_PID:
            return False
        LAST_PID = current
    if os.getpid() != MYPID:  # tool code forked: the copy must never answer the parent
        os._exit(0)
    return True


def _reap() -> None:
    """Kill whatever untrusted code left running (a fork bomb churns on forever) and collect zombies.

    Only with a private uid: kill(-1) then reaches exactly this worker's own processes.
    """
    if KILL_STRAYS:
        with contextlib.suppress(OSError):
            os.kill(-1, signal.SIGKILL)
    flags = 0 if KILL_STRAYS else os.WNOHANG
    while True:
        try:
            pid, _ = os.waitpid(-1, flags)
        except ChildProcessError:
            return
        if pid == 0:
            return


# --- the request loop ----------------------------------------------------------------------


def serve(chan: Channel, report: dict, cfg: dict) -> None:
    """Answer the parent: one-off functions, and (a session host) templates and the sessions forked from them."""
    templates: dict[str, Template] = {}
    chan.send(["hello", report])
    while True:
        try:
            req = chan.recv()
        except EOFError:
            return
        try:
            _dispatch(chan, req, templates, report, cfg)
        except Exception as e:
            chan.send(["protocol_error", f"{type(e).__name__}: {e}"[:2000]])
        _reap_zombies()


def _load(source: str, backend: str, seed, files, read_only) -> Env:
    """Import a tools.py under the call clocks (30 s): its top-level code is untrusted too."""
    global IN_CALL
    try:
        _arm(30.0, 30)
        IN_CALL = True
        try:
            return Env(source, backend, seed, files, read_only)
        finally:
            IN_CALL = False
    finally:
        if _processes_started():
            _reap()


class Template:
    """The host's handle on one environment's template: a process that imported tools.py once and forks a
    process per session. Whatever it sends is untrusted (its import ran tool code), so it is checked."""

    def __init__(self, pid: int, sock: socket.socket, uid):
        self.pid = pid
        self.sock = sock
        self.uid = uid

    def exchange(self, payload: bytes, fds: list, timeout_s: float):
        """Send a request (with descriptors) and read one JSON answer; None when it broke the protocol."""
        try:
            self.sock.setblocking(False)
            try:
                self.sock.recv(1, socket.MSG_PEEK)
                return None  # it wrote something nobody asked for, or hung up
            except BlockingIOError:
                pass
            self.sock.settimeout(timeout_s)
            socket.send_fds(self.sock, [HEADER.pack(len(payload)) + payload], fds)
            head = _recv_exact(self.sock, 4)
            (n,) = HEADER.unpack(head)
            if n > 1 << 24:
                return None
            return json.loads(_recv_exact(self.sock, n))
        except (OSError, ValueError, RecursionError):
            return None

    def owns(self, pid) -> bool:
        """Whether `pid` is one of this template's sessions (each environment has its own uid when we are root)."""
        return pid != self.pid and _runs_as(pid, self.uid)

    def end(self) -> None:
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        self.sock.close()


def _runs_as(pid, uid) -> bool:
    """Whether `pid` names a process (not us, not init) running as `uid` (any, where uids are not ours to give)."""
    if type(pid) is not int or pid <= 1 or pid == os.getpid():
        return False
    if uid is None or os.geteuid() != 0:
        return True
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Uid:"):
                    return all(int(u) == uid for u in line.split()[1:])
    except OSError:
        return False
    return False


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return bytes(buf)


def _dispatch(chan: Channel, req, templates: dict, report: dict, cfg: dict) -> None:
    op = req[0]
    if op == "open":
        key = req[1]
        template = templates.get(key)
        if chan.sock is None:
            chan.send(["protocol_error", report["isolation"]])
            return
        if template is None:
            chan.send(["template_lost", f"environment {key} is not loaded here"])
            return
        ours, theirs = socket.socketpair()
        try:
            reply = template.exchange(marshal.dumps(("open",)), [theirs.fileno()], 30.0)
            theirs.close()
            if not (type(reply) is list and len(reply) == 2 and reply[0] == "ok" and template.owns(reply[1])):
                templates.pop(key).end()
                chan.send(["template_lost", "the environment's template broke the protocol; it was replaced"])
                return
            frame = _dumps(["ok", reply[1]])
            socket.send_fds(chan.sock, [HEADER.pack(len(frame)) + frame], [ours.fileno()])
        finally:
            ours.close()
    elif op == "kill":  # a session's process, by the uid its environment's template was given (it may be gone)
        _, uid, pid = req
        if _runs_as(pid, uid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        chan.send(["ok"])
    elif op == "load":
        _, key, source, backend, seed, files, read_only, uid = req
        if key in templates:
            templates.pop(key).end()
        chan.send(_start_template(chan, templates, key, (source, backend, seed, files, read_only), uid, report, cfg))
    elif op == "unload":
        template = templates.pop(req[1], None)
        if template is not None:
            template.end()
        chan.send(["ok"])
    elif op == "fn":
        _run_forked(chan, req)
    else:
        chan.send(["protocol_error", f"unknown op {op!r}"])


def _start_template(chan: Channel, templates: dict, key: str, load: tuple, uid, report: dict, cfg: dict) -> list:
    """Fork a template for one environment: it drops to the environment's own uid, then imports tools.py."""
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        try:
            _keep_fds(theirs.fileno())
            _template_main(Channel(theirs.fileno(), theirs.fileno()), load, uid, report, cfg)
        finally:
            os._exit(0)
    theirs.close()
    template = Template(pid, ours, uid if os.geteuid() == 0 else None)
    try:
        ours.settimeout(60.0)
        (n,) = HEADER.unpack(_recv_exact(ours, 4))
        reply = json.loads(_recv_exact(ours, n)) if n <= 1 << 24 else None
    except (OSError, EOFError, ValueError, RecursionError):
        reply = None
    if type(reply) is list and len(reply) == 2 and reply[0] == "ok" and type(reply[1]) is list:
        templates[key] = template
        return ["ok", [str(name) for name in reply[1]]]
    template.end()
    if type(reply) is list and len(reply) == 2 and reply[0] == "load_error":
        return ["load_error", str(reply[1])[:2000]]
    return ["load_error", "tools.py ended its process while it was imported"]


def _keep_fds(*keep: int) -> None:
    """Close every descriptor but stdio and `keep`: a child holds no other session's or the parent's channel."""
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 20)


def _template_main(chan: Channel, load: tuple, uid, report: dict, cfg: dict) -> None:
    global MYPID, KILL_STRAYS, LAST_PID_FD, LAST_PID
    MYPID, LAST_PID_FD, LAST_PID = os.getpid(), None, b""
    limits = cfg["limits"]
    home = os.path.join(report["private_dir"], f"t{os.getpid()}")
    os.makedirs(home)
    os.chdir(home)  # before the uid drop: the host's directory may be closed to others
    if os.geteuid() == 0 and uid is not None:
        os.chown(home, uid, uid)
        _drop_to(uid, limits["nproc"] + SESSIONS_PER_TEMPLATE)
        KILL_STRAYS = True
    LIBC.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # without a uid of its own, the next best: no ptrace, no /proc/pid/mem
    try:
        env = _load(*load)
        if env.backend == "sqlite":
            env.seed_tables()  # read once here, shared by every session's snapshots
            env.seed_connection()  # and the seed loaded once: each session forks a copy-on-write image
    except BaseException as e:
        chan.send(["load_error", f"{type(e).__name__}: {e}"[:2000]])
        return
    chan.send(["ok", sorted(k for k, v in env.namespace.items() if callable(v))])
    KILL_STRAYS = False  # from now on this uid's processes are sessions
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # session processes are reaped by the kernel
    sock = socket.socket(fileno=chan.rfd)
    gc.collect()
    gc.freeze()  # what the template holds stays shared with every session forked from it
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, 1 << 16, 1)
        except OSError:
            return
        if not data:
            return
        try:
            op = marshal.loads(data[4:])
        except (ValueError, EOFError, TypeError):
            op = None
        if op != ("open",) or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            chan.send(["error", "bad request"])
            continue
        pid = _fork_session(env, fds[0], limits, report)
        os.close(fds[0])
        chan.send(["ok", pid])


def _fork_session(env: Env, fd: int, limits: dict, report: dict) -> int:
    """Start one session's process; it answers the parent directly over `fd`. Returns its pid (ours)."""
    if report.get("session_namespaces"):
        uid, gid = os.getuid(), os.getgid()
        pid = _clone_into_namespaces()
        if pid == 0:
            try:
                _keep_fds(fd)
                if _map_own_ids(LIBC, uid, gid):
                    _session_main(env, fd, limits, LIBC, True)
            finally:
                os._exit(0)
        if pid > 0:
            return pid
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            _keep_fds(fd, w)
            namespaced = bool(report.get("session_namespaces")) and _session_namespaces(LIBC)
            child = os.fork() if namespaced else 0
            if child:
                os.write(w, str(child).encode())
                os._exit(0)
            if not namespaced:
                os.write(w, str(os.getpid()).encode())
            os.close(w)
            _session_main(env, fd, limits, LIBC, namespaced)
        finally:
            os._exit(0)
    os.close(w)
    try:
        return int(os.read(r, 32) or b"0")
    finally:
        os.close(r)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _private_scratch(libc, size: int) -> bool:
    """Cover /tmp, /var/tmp and /dev/shm with tmpfs of our own (in our own mount namespace)."""
    data = f"size={size},mode=0700"
    return all(_mount(libc, "tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV, data) for d in SCRATCH_TMPFS if os.path.isdir(d))


def _drop_capabilities(libc) -> bool:
    """Give up the capabilities a new user namespace grants, so tool code cannot unmount its private scratch."""
    return libc.capset(ctypes.byref(_CapHeader(0x20080522, 0)), (_CapData * 2)()) == 0


def _session_main(env: Env, fd: int, limits: dict, libc, namespaced: bool) -> None:
    """One session's process: private scratch (its own tmpfs /tmp, /var/tmp and /dev/shm and /proc in its own
    namespaces where the kernel allows, else a private directory), its own process limit, then its requests."""
    global MYPID, KILL_STRAYS, LAST_PID_FD, LAST_PID
    if namespaced:
        if not _private_scratch(libc, limits["scratch_bytes"]):
            os._exit(1)  # never a session on the host's shared scratch
        if _mount(libc, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC):
            LAST_PID_FD, LAST_PID = os.open("/proc/sys/kernel/ns_last_pid", os.O_RDONLY), b""
        root = "/tmp/session"
        os.makedirs(root, mode=0o700)
        os.chdir(root)
        KILL_STRAYS = True  # kill(-1) from pid 1 reaches this session's namespace only
    else:
        LAST_PID_FD = None
        os.mkdir(f"s{os.getpid()}", 0o700)  # relative: the host's directory may be closed to this uid
        os.chdir(f"s{os.getpid()}")
        root = os.getcwd()
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)
    MYPID = os.getpid()
    if namespaced:  # counted in this session's own user namespace: its processes, not its siblings'
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NPROC, (limits["nproc"], limits["nproc"]))
        if not _drop_capabilities(libc):
            os._exit(1)  # tool code would hold the capabilities to unmount its private scratch
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # no sibling reads this process's memory through /proc or ptrace
    os.environ["TMPDIR"] = root
    if "tempfile" in sys.modules:
        sys.modules["tempfile"].tempdir = None
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    _serve_session(Channel(fd, fd), Session(env, root), None if namespaced else root)


def _serve_session(chan: Channel, session: Session, leftover: str | None) -> None:
    """Answer the parent until it hangs up; then go, with `leftover` (a private directory on a shared disk)."""
    env = session.env
    while True:
        try:
            req = chan.recv()
        except (EOFError, OSError):
            if leftover is not None:
                shutil.rmtree(leftover, ignore_errors=True)
            os._exit(0)
        seq, op = req[0], req[1]
        try:
            if op == "call":
                _, _, tool, args, timeout_s, cpu_s = req
                fn = env.namespace.get(tool)
                if not callable(fn) or tool.startswith("_"):
                    result = _error("not_implemented", f"tool {tool!r} has no implementation in tools.py")
                else:
                    result = _run_tool(session, fn, args, timeout_s, cpu_s, tool not in env.read_only)
            elif op == "snapshot":
                result = ["ok", *_snapshot(session, req[2], req[3])]
            elif op == "reset":
                session.reset()
                result = ["ok"]
            elif op == "replay":
                _, _, calls, timeout_s, cpu_s = req
                session.reset()
                failed = 0
                for tool, args in calls:
                    fn = env.namespace.get(tool)
                    guarded = tool not in env.read_only  # as the call ran the first time
                    if not callable(fn) or _run_tool(session, fn, args, timeout_s, cpu_s, guarded)[0] != "ok":
                        failed += 1
                result = ["ok", failed]
            else:
                result = ["protocol_error", f"unknown op {op!r}"]
        except Exception as e:
            result = ["protocol_error", f"{type(e).__name__}: {e}"[:2000]]
        _send_result(chan, seq, result)


def _reap_zombies() -> None:
    """Collect the session processes that ended (a pid namespace's orphans come to us, its init)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main() -> None:
    global MYPID, KILL_STRAYS, LAST_PID_FD, LIBC, PYLIBC
    cfg = json.loads(sys.argv[1])
    rfd, wfd = os.dup(cfg["rfd"]), os.dup(cfg["wfd"])
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in {cfg["rfd"], cfg["wfd"], 0, 1}:
        os.dup2(devnull, fd)  # tool code printing must never write into the protocol
    for name in PRELOADED:  # before confinement: the interpreter's library may be unreadable after it
        importlib.import_module(name)
    report = confine(cfg, rfd, wfd)
    MYPID = os.getpid()
    KILL_STRAYS = report["unprivileged_uid"] and not cfg.get("host")
    if report["pid_namespace"] and report["private_proc"]:
        LAST_PID_FD = os.open("/proc/sys/kernel/ns_last_pid", os.O_RDONLY)
    sys.setrecursionlimit(2000)
    LIBC = _libc()
    PYLIBC = ctypes.PyDLL(None, use_errno=True)
    PYLIBC.syscall.restype = ctypes.c_long
    chan = Channel(rfd, wfd)
    if cfg.get("host"):  # the parent's end is a socket (rfd is wfd's twin): session sockets travel over it
        LIBC.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # a template of our uid (not root) cannot ptrace its way in
        try:
            chan.sock = socket.socket(fileno=os.dup(rfd))
        except OSError:
            report["isolation"] = "none: this runner's channel cannot hand a session its own socket"
    serve(chan, report, cfg)


MYPID = os.getpid()
KILL_STRAYS = False
LAST_PID_FD: int | None = None
LAST_PID = b""
LIBC = None  # libc through ctypes, loaded once by the worker and inherited by every forked process
PYLIBC = None  # the same, holding the GIL through a call (clone(2) must not let go of it)
IN_CALL = False  # untrusted code is running under the call clocks: their signals raise only then

if __name__ == "__main__":
    main()
