"""`factory run` holds FACTORY_HOME alone: a second run waits or refuses, a signal stops it and its children,
and a killed run's leftovers (runs left in progress, sandbox directories) are dealt with at the next start."""

import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import dagster as dg
import pytest

from assets.run import PID_TAG, WRITER_TAG, prepare_dagster_home, run_factory
from factory.home_lock import home_lock, read_holder
from factory.store import Store

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]
CATEGORY = "messaging"  # the smallest real run: one topic, one category, few tasks
HOLD_HOME = (
    "import sys, time\n"
    "from factory.home_lock import home_lock\n"
    "with home_lock(sys.argv[1], command='factory run --category messaging'):\n"
    "    print('held', flush=True)\n"
    "    time.sleep(120)\n"
)


def _env(home: Path) -> dict[str, str]:
    return dict(
        os.environ,
        FACTORY_HOME=str(home),
        DAGSTER_HOME=str(home / "dagster"),
        FACTORY_TOPICS="team-chat",
        FACTORY_TASKS_PER_ENV="4",
    )


def _hangup_by_default() -> None:
    """A run started under nohup inherits an ignored SIGHUP, which `factory run` keeps ignored on purpose."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _start(home: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [str(BIN / "factory"), "run", "--category", CATEGORY, *args],
        env=_env(home),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=_hangup_by_default,
    )


def _add_run(instance: dg.DagsterInstance, status: dg.DagsterRunStatus, tags: dict[str, str]) -> str:
    run = dg.DagsterRun(job_name="build_job", run_id=str(uuid.uuid4()), status=status, tags=tags)
    instance.add_run(run)
    return run.run_id


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(proc.name))
    found, todo = set(), [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        found.update(kids)
        todo.extend(kids)
    return found


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def test_the_next_start_fails_runs_a_killed_factory_run_left_and_removes_its_sandbox_dirs(
    factory_home: Path, monkeypatch
):
    monkeypatch.setenv("FACTORY_TOPICS", "team-chat")
    store = Store(factory_home)
    with dg.DagsterInstance.from_config(str(prepare_dagster_home(store))) as instance:
        killed = _add_run(instance, dg.DagsterRunStatus.STARTED, {WRITER_TAG: "run", PID_TAG: "4242"})
        never_started = _add_run(instance, dg.DagsterRunStatus.NOT_STARTED, {WRITER_TAG: "run", PID_TAG: "4242"})
        from_the_ui = _add_run(instance, dg.DagsterRunStatus.STARTED, {})
    leftover = factory_home / "sandbox" / "worker-left"
    leftover.mkdir(parents=True)
    os.utime(leftover, (time.time() - 3600,) * 2)

    heard: list[str] = []
    with pytest.raises(KeyError, match="no-such-category"):
        run_factory(store, categories=["no-such-category"], echo=heard.append)

    with dg.DagsterInstance.from_config(str(store.dagster_home)) as instance:
        status = {run_id: instance.get_run_by_id(run_id).status for run_id in (killed, never_started, from_the_ui)}
        failure = instance.all_logs(killed, of_type=dg.DagsterEventType.RUN_FAILURE)
    assert status == {
        killed: dg.DagsterRunStatus.FAILURE,
        never_started: dg.DagsterRunStatus.FAILURE,
        from_the_ui: dg.DagsterRunStatus.STARTED,  # not ours to judge: the UI's runs have their own process
    }
    assert "pid 4242" in failure[0].message
    assert f"marked run {killed} failed: the `factory run` that started it was killed" in heard
    assert "removed 1 sandbox directories left by a killed run" in heard and not leftover.exists()


@pytest.mark.slow
def test_two_factory_runs_a_second_apart_both_end_sanely_and_the_home_still_works(tmp_path: Path):
    home = tmp_path / "home"
    first = _start(home)
    time.sleep(1)
    second = _start(home)
    deadline = time.monotonic() + 60
    while (read_holder(home) is None or read_holder(home).pid != first.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    refused = subprocess.run(
        [str(BIN / "factory"), "run", "--category", CATEGORY, "--no-wait"],
        env=_env(home),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out_first, _ = first.communicate(timeout=600)
    out_second, _ = second.communicate(timeout=600)

    assert first.returncode == 0, out_first[-3000:]
    assert second.returncode == 0, out_second[-3000:]
    holder = f"is in use by pid {first.pid} (factory run --category {CATEGORY}), since "
    assert holder in out_second and "waiting up to 600 s" in out_second
    assert refused.returncode == 1, refused.stdout[-2000:] + refused.stderr[-2000:]
    assert holder in refused.stderr and "gave up" in refused.stderr and "[discovery]" not in refused.stdout

    for db in (home / "dagster").rglob("*.db"):
        with sqlite3.connect(db) as conn:
            tables = {row[0] for row in conn.execute("select name from sqlite_master where type = 'table'")}
            if "alembic_version" in tables:
                assert conn.execute("select count(*) from alembic_version").fetchone()[0] == 1, db
    with dg.DagsterInstance.from_config(str(home / "dagster")) as instance:
        runs = instance.get_runs()
    assert len(runs) == 6 and {r.status for r in runs} == {dg.DagsterRunStatus.SUCCESS}
    assert {r.tags[PID_TAG] for r in runs} == {str(first.pid), str(second.pid)}


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_stops_factory_run_and_its_sandbox_workers_and_records_the_run_failed(tmp_path: Path, signum: int):
    home = tmp_path / "home"
    run = _start(home)
    deadline = time.monotonic() + 120
    children: set[int] = set()
    while time.monotonic() < deadline and run.poll() is None:
        children = _descendants(run.pid)
        if any("_worker.py" in _cmdline(pid) for pid in children):
            break
        time.sleep(0.02)
    assert any("_worker.py" in _cmdline(pid) for pid in children), "no sandbox worker started"

    stopped_at = time.monotonic()
    run.send_signal(signum)
    out, _ = run.communicate(timeout=60)
    assert run.returncode == 130, out[-3000:]
    assert "interrupted" in out and "FACTORY_HOME is free again" in out
    assert time.monotonic() - stopped_at < 15
    exited = time.monotonic()  # a worker caught while starting ends when it reads its closed pipe
    while [pid for pid in children if _running(pid)] and time.monotonic() - exited < 2:
        time.sleep(0.01)
    left = {pid: _cmdline(pid)[:120] for pid in children if _running(pid)}
    assert not left, f"children of the stopped run still running: {left}"

    with dg.DagsterInstance.from_config(str(home / "dagster")) as instance:
        statuses = {r.job_name: r.status for r in instance.get_runs()}
    assert dg.DagsterRunStatus.FAILURE in statuses.values()
    assert not {dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.NOT_STARTED} & set(statuses.values())
    with home_lock(home, wait_s=0):
        pass


@pytest.mark.slow
def test_a_dagster_run_waits_for_the_home_writer_and_fails_naming_it(tmp_path: Path):
    from assets.definitions import defs
    from resources import SandboxResource, StoreResource

    home = tmp_path / "home"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_HOME, str(home)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        config = {"ops": {"topics": {"config": {"sources": [], "include": ["team-chat"]}}}}

        def materialize(wait_s: float) -> dg.ExecuteInProcessResult:
            (tmp_path / "instance").mkdir(exist_ok=True)
            with dg.instance_for_test(temp_dir=str(tmp_path / "instance")) as instance:
                return dg.materialize(
                    list(defs.assets or []),
                    instance=instance,
                    resources={"store": StoreResource(home=str(home), wait_s=wait_s), "sandbox": SandboxResource()},
                    selection=[dg.AssetKey("topics")],
                    run_config=config,
                    raise_on_error=False,
                )

        refused = materialize(0.5)
        assert not refused.success
        [failure] = refused.get_step_failure_events()
        message = failure.step_failure_data.error.to_string()
        assert f"pid {holder.pid} (factory run --category messaging)" in message and "gave up" in message
        assert not (home / "artifacts").exists(), "nothing written while another writer holds the home"
    finally:
        holder.kill()
        holder.wait()
    assert materialize(0.5).success, "a dead holder's lock is free"
    assert read_holder(home) is None
