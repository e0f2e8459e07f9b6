"""The command-line forms users and CI run: `factory run`, `dagster asset materialize`, and a killed run."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from factory.pipeline.registry import TOOL_TESTS, VERIFIERS
from factory.pipeline.runner import load_manifest
from factory.store import Store, dir_content_hash, hash_dir

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]


def _env(home: Path, topics: str) -> dict[str, str]:
    """The environment README's CI form sets up: DAGSTER_HOME under FACTORY_HOME with the project's dagster.yaml."""
    (home / "dagster").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ROOT / "dagster.yaml", home / "dagster" / "dagster.yaml")
    return dict(
        os.environ,
        FACTORY_HOME=str(home),
        DAGSTER_HOME=str(home / "dagster"),
        FACTORY_TOPICS=topics,
        FACTORY_TASKS_PER_ENV="4",
    )


def _dagster(env: dict[str, str], select: str, partition: str | None = None, **kw) -> subprocess.CompletedProcess:
    cmd = [str(BIN / "dagster"), "asset", "materialize", "-m", "assets.definitions", "--select", select]
    if partition:
        cmd += ["--partition", partition]
    return subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False, **kw)


def _factory_run(env: dict[str, str], category: str) -> subprocess.CompletedProcess:
    cmd = [str(BIN / "factory"), "run", "--category", category]
    return subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)


@pytest.mark.slow
def test_factory_run_then_the_ci_form(tmp_path: Path):
    home = tmp_path / "home"
    env = _env(home, "team-chat")
    run = _factory_run(env, "messaging")
    assert run.returncode == 0, run.stdout + run.stderr
    assert str(home / "artifacts") in run.stdout and "make ui" in run.stdout
    assert (home / "dagster" / "dagster.yaml").is_file()
    verifiers = load_manifest(Store(home), VERIFIERS, "messaging")
    assert verifiers is not None and verifiers.kept == ["team-chat"]

    ci = _dagster(env, "tasks,verifiers", "messaging")
    assert ci.returncode == 0, ci.stdout[-2000:] + ci.stderr[-2000:]
    unknown = _factory_run(env, "no-such-category")
    assert unknown.returncode == 2 and "unknown categories: no-such-category" in unknown.stderr


@pytest.mark.slow
def test_killed_run_leaves_no_half_written_artifact_and_the_next_run_completes(tmp_path: Path):
    home = tmp_path / "home"
    env = _env(home, "online-shop,marketplace")
    assert _dagster(env, "topics,taxonomy").returncode == 0
    assert _dagster(env, "mined_datasets,databases,tool_code", "commerce").returncode == 0
    stage = Store(home).artifact_dir("tool_tests", "commerce")
    proc = subprocess.Popen(
        [
            str(BIN / "dagster"),
            "asset",
            "materialize",
            "-m",
            "assets.definitions",
            "--select",
            "tool_tests",
            "--partition",
            "commerce",
        ],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while not stage.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.001)
    assert proc.poll() is None, "tool_tests finished before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)

    assert not (stage / "manifest.json").exists(), "the stage did not finish, so it has no manifest"
    for env_dir in stage.iterdir():
        if not env_dir.name.startswith("."):
            assert dir_content_hash(env_dir) == hash_dir(env_dir), f"{env_dir.name} is half-written"

    again = _dagster(env, "tool_tests", "commerce")
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    manifest = load_manifest(Store(home), TOOL_TESTS, "commerce")
    assert manifest is not None and manifest.kept == ["marketplace", "online-shop"]
    assert not [p for p in stage.iterdir() if p.name.startswith(".")], "temporary leftovers are cleaned up"
