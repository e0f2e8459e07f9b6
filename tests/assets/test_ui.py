"""The Dagster UI, started with `make ui`, loads in headless Chromium and lists the factory's assets."""

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ASSETS = ["topics", "taxonomy", "mined_datasets", "databases", "tool_code", "tool_tests", "tool_graphs"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(url: str, timeout_s: float, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"make ui exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"{url} did not answer within {timeout_s:.0f} s")


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (make test installs it where apt is available)")
def test_asset_graph_page_lists_the_assets(factory_home: Path, tmp_path: Path):
    port = _free_port()
    env = dict(os.environ, FACTORY_HOME=str(factory_home), DAGSTER_HOME=str(factory_home / "dagster"))
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "ui", f"UI_PORT={port}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _wait_for(f"http://127.0.0.1:{port}/server_info", 180, proc)
        dom = subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={tmp_path / 'chromium'}",
                "--virtual-time-budget=20000",
                "--dump-dom",
                f"http://127.0.0.1:{port}/assets",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        ).stdout
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # dagster dev may ignore SIGTERM; stop its whole group
        proc.wait(timeout=30)
    missing = [a for a in ASSETS if a not in dom]
    assert not missing, f"the asset page does not list {missing}"
    assert (factory_home / "dagster" / "dagster.yaml").is_file(), "make ui puts the instance under FACTORY_HOME"
