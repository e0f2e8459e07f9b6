"""Launching a prepared GRPO run, locally or on a Ray cluster, and registering the checkpoint it leaves.

- Local: `python -m verl.trainer.main_ppo <overrides>` as a subprocess, only when a GPU is visible (verl on a CPU
  passes its config check, starts Ray and then hangs), with a timeout and every log line passed to a callback.
- Ray: `JobSubmissionClient(address).submit_job`, polled until it ends, its logs tailed to the callback.
- Neither (no GPU, no cluster address): a result that says so, with the validated config and dataset; it never
  reports training that did not happen.

Checkpoints: verl saves `trainer.default_local_dir/global_step_N/actor`; the latest is merged to Hugging Face
weights with verl's model merger and recorded in `policy.json`, from which the next round's LLM policy is served:

    vllm serve <hf_dir> --served-model-name <policy_name> --enable-auto-tool-choice --tool-call-parser hermes
    FACTORY_POLICY_MODEL=openai/<policy_name> FACTORY_POLICY_API_BASE=http://<host>:8000/v1 factory evolve ...
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from factory.models import Model
from factory.store import write_json_atomic
from training.config import CONFIG_NAME
from training.run import PreparedRun

Log = Callable[[str], None]
STEP_DIR = re.compile(r"global_step_(\d+)")
POLICY_JSON = "policy.json"


class LaunchResult(Model):
    """What a launch did. `launched` is False when nothing was started, `reason` says why."""

    launched: bool
    mode: Literal["local", "ray", "none"]
    reason: str = ""
    succeeded: bool = False
    returncode: int | None = None
    job_id: str | None = None
    wall_s: float = 0.0
    run_dir: Path
    dataset: Path
    overrides: list[str]


def visible_gpus() -> int:
    """The GPUs this machine shows: nvidia-smi's list, else torch's count (0 when neither answers)."""
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=10)
            if out.returncode == 0:
                return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))
        except (OSError, subprocess.TimeoutExpired):
            pass
    try:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except ImportError:
        return 0


def entrypoint(run: PreparedRun) -> list[str]:
    return [sys.executable, "-m", "verl.trainer.main_ppo", "--config-name", CONFIG_NAME, *run.overrides]


def _result(run: PreparedRun, **values) -> LaunchResult:
    return LaunchResult(run_dir=run.run_dir, dataset=run.dataset.path, overrides=run.overrides, **values)


def not_launched(run: PreparedRun, reason: str) -> LaunchResult:
    return _result(run, launched=False, mode="none", reason=f"not launched: {reason}")


def launch_local(
    run: PreparedRun, log: Log = print, timeout_s: float = 24 * 3600, gpus: int | None = None
) -> LaunchResult:
    """Run verl's trainer here as a subprocess (project root on PYTHONPATH, so it imports our agent loop and
    tools), streaming its output to `log`; killed after `timeout_s`."""
    gpus = visible_gpus() if gpus is None else gpus
    if gpus < 1:
        return not_launched(run, "no GPU")
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    started = time.monotonic()
    with subprocess.Popen(
        entrypoint(run), cwd=run.run_dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            log(line.rstrip("\n"))
            if time.monotonic() - started > timeout_s:
                proc.kill()
                log(f"killed: ran past {timeout_s:.0f} s")
                break
        code = proc.wait()
    wall = time.monotonic() - started
    return _result(run, launched=True, mode="local", succeeded=code == 0, returncode=code, wall_s=wall)


def launch_ray(
    run: PreparedRun, address: str, log: Log = print, timeout_s: float = 24 * 3600, poll_s: float = 10.0
) -> LaunchResult:
    """Submit the run to the Ray cluster at `address` (the project as working_dir), poll it, tail its logs."""
    from ray.job_submission import JobStatus, JobSubmissionClient

    root = Path(__file__).resolve().parent.parent
    client = JobSubmissionClient(address)
    command = shlex.join(["python3", *entrypoint(run)[1:]])
    job_id = client.submit_job(
        entrypoint=command,
        runtime_env={"working_dir": str(root), "excludes": [".venv", ".git", ".factory", "*.parquet"]},
    )
    started, seen = time.monotonic(), 0

    def tail() -> None:
        nonlocal seen
        logs = client.get_job_logs(job_id)
        for line in logs[seen:].splitlines():
            log(line)
        seen = len(logs)

    status = client.get_job_status(job_id)
    while status not in (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.STOPPED):
        if time.monotonic() - started > timeout_s:
            client.stop_job(job_id)
            log(f"stopped: ran past {timeout_s:.0f} s")
            break
        time.sleep(poll_s)
        tail()
        status = client.get_job_status(job_id)
    tail()  # what the job wrote between the last poll and its end
    wall = time.monotonic() - started
    return _result(run, launched=True, mode="ray", job_id=job_id, succeeded=status == JobStatus.SUCCEEDED, wall_s=wall)


def launch(run: PreparedRun, ray_address: str | None = None, log: Log = print, timeout_s: float = 24 * 3600):
    """The Ray cluster when an address is given (else RAY_ADDRESS), else this machine's GPUs, else nothing."""
    address = ray_address or os.environ.get("RAY_ADDRESS")
    if address:
        return launch_ray(run, address, log, timeout_s)
    return launch_local(run, log, timeout_s)


# --- checkpoints -----------------------------------------------------------------------------


class PolicyCheckpoint(Model):
    """A trained policy: the verl checkpoint it came from and the Hugging Face weights served for the next round."""

    name: str
    step: int
    checkpoint: Path
    hf_dir: Path
    base_model: str
    run_dir: Path
    created: str
    serve: str


def latest_checkpoint(checkpoint_dir: str | Path) -> tuple[int, Path] | None:
    """The highest `global_step_N` under `checkpoint_dir` that holds an actor (None: no checkpoint)."""
    root = Path(checkpoint_dir)
    steps = [
        (int(m.group(1)), d)
        for d in (root.iterdir() if root.is_dir() else [])
        if d.is_dir() and (m := STEP_DIR.fullmatch(d.name)) and (d / "actor").is_dir()
    ]
    return max(steps) if steps else None


def merge_command(actor_dir: Path, target: Path, backend: str = "fsdp") -> list[str]:
    return [
        sys.executable, "-m", "verl.model_merger", "merge",
        "--backend", backend, "--local_dir", str(actor_dir), "--target_dir", str(target),
    ]  # fmt: skip


def register_checkpoint(run: PreparedRun, name: str, log: Log = print, timeout_s: float = 3600) -> PolicyCheckpoint:
    """Merge the run's latest checkpoint to HF weights (verl's model merger, a subprocess) and record it in the
    run's `policy.json`. FileNotFoundError when the run left no checkpoint."""
    found = latest_checkpoint(run.paths.checkpoint_dir)
    if found is None:
        raise FileNotFoundError(f"no global_step_N/actor under {run.paths.checkpoint_dir}: nothing was trained")
    step, checkpoint = found
    hf_dir = run.run_dir / "hf" / f"global_step_{step}"
    out = subprocess.run(merge_command(checkpoint / "actor", hf_dir), capture_output=True, text=True, timeout=timeout_s)
    for line in (out.stdout + out.stderr).splitlines():
        log(line)
    if out.returncode != 0:
        raise RuntimeError(f"verl's model merger failed ({out.returncode}): {out.stderr.strip()[-2000:]}")
    record = PolicyCheckpoint(
        name=name,
        step=step,
        checkpoint=checkpoint,
        hf_dir=hf_dir,
        base_model=run.settings.model_path,
        run_dir=run.run_dir,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        serve=f"vllm serve {hf_dir} --served-model-name {name} --enable-auto-tool-choice --tool-call-parser hermes",
    )
    write_json_atomic(run.run_dir / POLICY_JSON, record.model_dump(mode="json"))
    return record
