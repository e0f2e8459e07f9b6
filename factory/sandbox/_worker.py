"""The sandbox worker: a process that runs untrusted tool, verifier and program code.

Started as a script (`python -I _worker.py CONFIG`), never imported by the orchestrator, and uses the
standard library only, so it starts in milliseconds and drags nothing of the factory into the sandbox.
It confines itself before it reads any untrusted code (namespaces, read-only filesystem, rlimits, an
unprivileged uid), then answers length-prefixed requests: marshal from the parent (trusted), JSON back
(the parent never unpickles what untrusted code could have written).
"""

from __future__ import annotations

import builtins
import contextlib
import csv
import ctypes
import functools
import importlib
import json
import marshal
import os
import resource
import select
import shutil
import signal
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
HEADER = struct.Struct(">I")
# The standard-library modules code verifiers import (answer matching, state checks): loaded once per worker,
# so the children forked for each verdict do not load them again.
PRELOADED = ("datetime", "decimal", "fnmatch", "unicodedata")
MAX_RESULT_BYTES = 64 << 20
SCRATCH_TMPFS = ("/tmp", "/var/tmp", "/dev/shm")
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
    os.close(rfd)
    os.close(wfd)
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
    if root and uid is not None:
        try:
            resource.setrlimit(resource.RLIMIT_NPROC, (limits["nproc"], limits["nproc"]))
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
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
    return report


# --- framing -------------------------------------------------------------------------------


class Channel:
    """Length-prefixed frames over two file descriptors, with a read buffer (one read per message)."""

    def __init__(self, rfd: int, wfd: int):
        self.rfd = rfd
        self.wfd = wfd
        self.buf = bytearray()

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


_ENCODER = json.JSONEncoder(default=_json_default, separators=(",", ":"))  # bound before untrusted code runs
_MARKERS: dict = {}  # the C encoder's cycle check; left dirty by an encoding that raised
_C_ENCODE = (
    json.encoder.c_make_encoder(
        _MARKERS, _json_default, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, True
    )
    if json.encoder.c_make_encoder is not None
    else None
)


def _dumps(value) -> bytes:
    """What `_ENCODER.encode` writes, without building a C encoder per call (JSONEncoder.encode does)."""
    if _C_ENCODE is None:
        return _ENCODER.encode(value).encode()
    try:
        return "".join(_C_ENCODE(value, 0)).encode()
    except BaseException:
        _MARKERS.clear()
        raise


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


class Session:
    def __init__(self, env: Env, root: str, sid: str):
        self.env = env
        self.dir = os.path.join(root, "sessions", sid) if env.backend == "files" else None
        self.conn = None
        if env.backend == "sqlite":
            self.conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self.state = self.conn if self.conn is not None else self.dir
        self.schema_version = 0
        self.reset()

    def reset(self) -> None:
        if self.conn is not None:
            self.conn.deserialize(self.env.seed)
            self.conn.execute("PRAGMA foreign_keys=ON")
            self.schema_version = _schema_version(self.conn)
            return
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        for rel, data in self.env.files.items():
            path = os.path.join(self.dir, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


def _error(code: str, message: str, env_error: bool = False) -> list:
    return ["error", code, message, env_error]


def _exception_result(e: BaseException) -> list:
    if isinstance(e, CallTimeout):
        return _error("timeout", "the call ran past its wall-clock limit", True)
    if isinstance(e, CpuLimit):
        return _error("resource_limit", "the call ran past its CPU-time limit", True)
    if isinstance(e, MemoryError):
        return _error("resource_limit", "the call ran out of its memory limit", True)
    if isinstance(e, RecursionError):
        return _error("tool_exception", "RecursionError: maximum recursion depth exceeded")
    msg = str(e)
    if isinstance(e, OSError) and e.errno == 27:  # EFBIG from RLIMIT_FSIZE
        return _error("resource_limit", f"file size limit: {msg}", True)
    if isinstance(e, OSError) and e.errno == 11:  # EAGAIN from fork under RLIMIT_NPROC
        return _error("resource_limit", f"process limit: {msg}", True)
    return _error("tool_exception", f"{type(e).__name__}: {msg}"[:2000])


def _schema_version(conn) -> int:
    return conn.execute("PRAGMA schema_version").fetchone()[0]


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
                payload = _dumps(value)
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
    ok = result[0] == "ok"
    if conn is not None:
        if guarded:
            _end_savepoint(session, result, before)
        else:
            _check_unguarded(session, result, before)
        if ok:
            result[2] = conn.total_changes != before
    elif not ok:
        shutil.rmtree(session.dir, ignore_errors=True)
        os.replace(backup, session.dir)
    else:
        shutil.rmtree(backup, ignore_errors=True)
    return result


def _end_savepoint(session: Session, result: list, before: int) -> None:
    conn = session.conn
    if conn.in_transaction:
        if result[0] != "ok":
            conn.execute("ROLLBACK TO tool_call")
        conn.execute("RELEASE tool_call")
    elif result[0] != "ok" and conn.total_changes != before:
        result.append("state_lost")  # tool code committed our savepoint away: the parent replays
    if result[0] == "ok":
        session.schema_version = _schema_version(conn)  # a write call may have changed the schema


def _check_unguarded(session: Session, result: list, before: int) -> None:
    """After a non-mutating tool ran bare: settle a transaction it left open; flag a failed call that wrote."""
    conn = session.conn
    if conn.in_transaction:
        try:
            conn.execute("COMMIT" if result[0] == "ok" else "ROLLBACK")
        except sqlite3.Error as e:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            result[:] = _error("tool_exception", f"{type(e).__name__}: {e}"[:2000])
    if result[0] != "ok" and (conn.total_changes != before or _schema_version(conn) != session.schema_version):
        result.append("state_lost")


def _send_result(chan: Channel, result: list) -> None:
    if result[0] == "ok":
        chan.send_raw(b'["ok",' + result[1] + (b",true]" if result[2] else b",false]"))
    else:
        chan.send(result)


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


def _snapshot(session: Session, pks: dict, changed_only: bool = False) -> tuple:
    """(tables, names of the tables left out because they equal the seed's: only when `changed_only`)."""
    tables = {}
    conn = session.conn
    if conn is not None:
        seed = session.env.seed_tables() if changed_only else {}
        same = []
        for name in _table_names(conn):
            cols, rows = read = _table_rows(conn, name)
            if seed.get(name) == read:
                same.append(name)
            else:
                tables[name] = [dict(zip(cols, row, strict=True)) for row in rows]
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
        os.close(parent.rfd)
        os.close(parent.wfd)
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


def serve(chan: Channel, report: dict) -> None:
    envs: dict[str, Env] = {}
    sessions: dict[str, Session] = {}
    private = report["private_dir"]
    chan.send(["hello", report])
    while True:
        try:
            req = chan.recv()
        except EOFError:
            return
        try:
            _dispatch(chan, req, envs, sessions, private)
        except Exception as e:
            chan.send(["protocol_error", f"{type(e).__name__}: {e}"[:2000]])


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


def _dispatch(chan: Channel, req, envs: dict, sessions: dict, private: str) -> None:
    op = req[0]
    if op == "call":
        _, sid, tool, args, timeout_s, cpu_s = req
        session = sessions[sid]
        fn = session.env.namespace.get(tool)
        if not callable(fn) or tool.startswith("_"):
            chan.send(_error("not_implemented", f"tool {tool!r} has no implementation in tools.py"))
            return
        _send_result(chan, _run_tool(session, fn, args, timeout_s, cpu_s, tool not in session.env.read_only))
    elif op == "reset":
        sessions[req[1]].reset()
        chan.send(["ok"])
    elif op == "replay":
        _, sid, calls, timeout_s, cpu_s = req
        session = sessions[sid]
        session.reset()
        failed = 0
        for tool, args in calls:
            fn = session.env.namespace.get(tool)
            guarded = tool not in session.env.read_only  # as the call ran the first time
            if not callable(fn) or _run_tool(session, fn, args, timeout_s, cpu_s, guarded)[0] != "ok":
                failed += 1
        chan.send(["ok", failed])
    elif op == "snapshot":
        chan.send(["ok", *_snapshot(sessions[req[1]], req[2], req[3])])
    elif op == "open":
        _, sid, key = req
        sessions[sid] = Session(envs[key], private, sid)
        chan.send(["ok"])
    elif op == "close":
        session = sessions.pop(req[1], None)
        if session is not None:
            session.close()
        chan.send(["ok"])
    elif op == "load":
        _, key, source, backend, seed, files, read_only = req
        try:
            envs[key] = _load(source, backend, seed, files, read_only)
            chan.send(["ok", sorted(k for k, v in envs[key].namespace.items() if callable(v))])
        except BaseException as e:
            chan.send(["load_error", f"{type(e).__name__}: {e}"[:2000]])
    elif op == "unload":
        envs.pop(req[1], None)
        chan.send(["ok"])
    elif op == "fn":
        _run_forked(chan, req)
    else:
        chan.send(["protocol_error", f"unknown op {op!r}"])


def main() -> None:
    global MYPID, KILL_STRAYS, LAST_PID_FD
    cfg = json.loads(sys.argv[1])
    rfd, wfd = os.dup(cfg["rfd"]), os.dup(cfg["wfd"])
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in {cfg["rfd"], cfg["wfd"], 0, 1}:
        os.dup2(devnull, fd)  # tool code printing must never write into the protocol
    for name in PRELOADED:  # before confinement: the interpreter's library may be unreadable after it
        importlib.import_module(name)
    report = confine(cfg, rfd, wfd)
    MYPID = os.getpid()
    KILL_STRAYS = report["unprivileged_uid"]
    if report["pid_namespace"] and report["private_proc"]:
        LAST_PID_FD = os.open("/proc/sys/kernel/ns_last_pid", os.O_RDONLY)
    sys.setrecursionlimit(2000)
    serve(Channel(rfd, wfd), report)


MYPID = os.getpid()
KILL_STRAYS = False
LAST_PID_FD: int | None = None
LAST_PID = b""
IN_CALL = False  # untrusted code is running under the call clocks: their signals raise only then

if __name__ == "__main__":
    main()
