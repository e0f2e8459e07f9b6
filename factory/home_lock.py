"""One writer per FACTORY_HOME: an exclusive `flock` on `FACTORY_HOME/writer.lock`.

Two writers on one home corrupt the Dagster instance (both create its SQLite schemas at once) and race on
the artifacts. The kernel drops a `flock` when its holder dies, however it dies, so a stale lock never
needs breaking by hand; the file keeps the holder's pid, command and start time only for the message a
waiting writer prints.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shlex
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ValidationError

LOCK_FILE = "writer.lock"
SANDBOX_DIR = "sandbox"
POLL_S = 0.2
_HELD: dict[Path, Holder] = {}  # homes this process holds: a nested hold (a run inside `factory run`) reuses it
DEFAULT_WAIT_S = 600.0  # how long `factory run` waits for another writer before it refuses
LEFTOVER_AGE_S = 10.0  # a younger worker directory may be a starting worker's, before it enters it


class Holder(BaseModel):
    """Who holds a home's lock: enough for a waiting writer to name it."""

    pid: int
    command: str
    since: datetime

    def describe(self) -> str:
        return f"pid {self.pid} ({self.command}), since {self.since.astimezone().strftime('%Y-%m-%d %H:%M:%S %Z')}"


class HomeLocked(RuntimeError):
    """Another writer held the home for longer than this one would wait."""

    def __init__(self, home: Path, holder: Holder | None, waited_s: float):
        self.home = home
        self.holder = holder
        self.waited_s = waited_s
        who = holder.describe() if holder else "another process"
        after = f" after waiting {waited_s:.0f} s" if waited_s > 0 else ""
        super().__init__(
            f"FACTORY_HOME {home} is in use by {who}; gave up{after}. "
            "Let that run finish (or stop it), or use another FACTORY_HOME."
        )


def lock_path(home: Path) -> Path:
    return Path(home) / LOCK_FILE


def read_holder(home: Path) -> Holder | None:
    """The recorded holder of `home`'s lock, or None when nobody recorded one (or it is being written)."""
    try:
        text = lock_path(home).read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    try:
        return Holder.model_validate_json(text) if text.strip() else None
    except ValidationError:
        return None


def current_command() -> str:
    """This process's command line, with the program's name only (`factory run --category x`)."""
    return shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv and sys.argv[0] else "python"


@contextlib.contextmanager
def home_lock(
    home: Path,
    *,
    command: str | None = None,
    wait_s: float = 0.0,
    on_wait: Callable[[str], None] | None = None,
    reentrant: bool = False,
) -> Iterator[Holder]:
    """Hold `home` exclusively for the block; wait up to `wait_s` for another holder, then raise `HomeLocked`.

    `on_wait` hears once who holds the home and for how long this one waits. `reentrant`: when this process
    holds `home` already (a Dagster run executed inside `factory run`), the hold is shared, not refused.
    """
    home = Path(home)
    home.mkdir(parents=True, exist_ok=True)
    key = home.resolve()
    if reentrant and key in _HELD:
        yield _HELD[key]
        return
    fd = os.open(lock_path(home), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        _acquire(fd, home, wait_s, on_wait)
        holder = Holder(pid=os.getpid(), command=command or current_command(), since=datetime.now(UTC))
        os.ftruncate(fd, 0)
        os.pwrite(fd, holder.model_dump_json().encode(), 0)
        os.fsync(fd)
        _HELD[key] = holder
        try:
            yield holder
        finally:
            del _HELD[key]
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # closing the only descriptor releases the lock


def _acquire(fd: int, home: Path, wait_s: float, on_wait: Callable[[str], None] | None) -> None:
    start = time.monotonic()
    told = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        waited = time.monotonic() - start
        if waited >= wait_s:
            raise HomeLocked(home, read_holder(home), waited)
        if not told and on_wait is not None:
            holder = read_holder(home)
            who = holder.describe() if holder else "another process"
            on_wait(f"FACTORY_HOME {home} is in use by {who}; waiting up to {wait_s:.0f} s for it to finish")
            told = True
        time.sleep(min(POLL_S, max(wait_s - waited, 0.0)))


def clean_sandbox_leftovers(home: Path) -> int:
    """Remove sandbox worker directories under `home` that no live process works in; returns how many.

    A killed orchestrator never removes its workers' private directories. A directory some process still
    has as its working directory belongs to a live worker (of any command, e.g. `factory serve` on the same
    home) and stays, and so does one created in the last few seconds.
    """
    base = Path(home) / SANDBOX_DIR
    if not base.is_dir():
        return 0
    in_use = _working_dirs()
    cutoff = time.time() - LEFTOVER_AGE_S
    removed = 0
    for d in base.glob("worker-*"):
        with contextlib.suppress(OSError):
            if d.is_dir() and not d.is_symlink() and d.stat().st_mtime < cutoff and d.resolve() not in in_use:
                shutil.rmtree(d)
                removed += 1
    return removed


def _working_dirs() -> set[Path]:
    dirs: set[Path] = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                dirs.add(Path(os.readlink(proc / "cwd")))
    return dirs
