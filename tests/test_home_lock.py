"""One writer per FACTORY_HOME: a second writer waits or refuses naming the holder; a dead holder's lock is free."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from factory.home_lock import HomeLocked, clean_sandbox_leftovers, home_lock, read_holder

HOLD = textwrap.dedent(
    """
    import sys, time
    from factory.home_lock import home_lock
    with home_lock(sys.argv[1], command="doomed writer"):
        print("held", flush=True)
        time.sleep(120)
    """
)


def test_a_second_writer_refuses_naming_the_holder(tmp_path: Path):
    with home_lock(tmp_path, command="factory run --category shop") as holder:
        assert read_holder(tmp_path) == holder
        start = time.monotonic()
        with pytest.raises(HomeLocked) as refused, home_lock(tmp_path, wait_s=0.5):
            pytest.fail("two writers held one home")
        assert time.monotonic() - start >= 0.5
    message = str(refused.value)
    assert f"pid {os.getpid()} (factory run --category shop), since " in message
    assert str(tmp_path) in message and "gave up after waiting" in message
    assert refused.value.holder == holder
    assert read_holder(tmp_path) is None, "a released lock names no holder"


def test_a_waiting_writer_is_told_who_holds_the_home_and_gets_it_when_released(tmp_path: Path):
    heard: list[str] = []
    held = threading.Event()

    def first() -> None:
        with home_lock(tmp_path, command="first"):
            held.set()
            time.sleep(0.5)

    thread = threading.Thread(target=first)
    thread.start()
    held.wait(5)
    with home_lock(tmp_path, command="second", wait_s=30, on_wait=heard.append) as holder:
        assert read_holder(tmp_path) == holder and holder.command == "second"
    thread.join()
    assert len(heard) == 1 and "(first)" in heard[0] and "waiting up to 30 s" in heard[0]


def test_the_lock_of_a_killed_holder_is_taken_over_at_once(tmp_path: Path):
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        with pytest.raises(HomeLocked, match=rf"pid {proc.pid} \(doomed writer\)"), home_lock(tmp_path):
            pass
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    assert read_holder(tmp_path).pid == proc.pid, "the dead holder's record is still there"
    with home_lock(tmp_path, wait_s=0) as holder:
        assert holder.pid == os.getpid() and read_holder(tmp_path) == holder


def test_leftover_sandbox_dirs_are_removed_and_live_ones_kept(tmp_path: Path):
    base = tmp_path / "sandbox"
    dead, live, young = (base / f"worker-{name}" for name in ("dead", "live", "young"))
    for d in (dead, live, young):
        d.mkdir(parents=True)
    (dead / "scratch.txt").write_text("left by a killed worker")
    old = time.time() - 3600
    for d in (dead, live):
        os.utime(d, (old, old))
    worker = subprocess.Popen(["sleep", "30"], cwd=live)
    try:
        assert clean_sandbox_leftovers(tmp_path) == 1
    finally:
        worker.kill()
        worker.wait()
    assert not dead.exists() and live.is_dir() and young.is_dir()


def test_a_reentrant_hold_in_the_holding_process_shares_the_lock_and_others_still_wait(tmp_path: Path):
    with home_lock(tmp_path, command="factory run") as outer:
        with home_lock(tmp_path, reentrant=True) as inner:
            assert inner == outer, "a run inside `factory run` shares its hold"
        assert read_holder(tmp_path) == outer, "the inner hold's end keeps the outer one"
        with pytest.raises(HomeLocked), home_lock(tmp_path, wait_s=0.2):
            pytest.fail("a non-reentrant second hold in the same process must wait and refuse")
    with home_lock(tmp_path, reentrant=True) as alone:
        assert alone.pid == os.getpid(), "with no outer hold, a reentrant hold takes the lock itself"
