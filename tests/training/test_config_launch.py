"""The composed GRPO config passes verl's own validation, a wrong override fails with verl's message, and without a
GPU nothing is launched, quickly and saying so."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from training.cli import train_cmd
from training.config import ConfigError, RunPaths, TrainSettings, grpo_overrides, validate
from training.dataset import DatasetReport
from training.launch import latest_checkpoint, launch_local, launch_ray, register_checkpoint, visible_gpus
from training.run import PreparedRun

pytestmark = pytest.mark.skipif(visible_gpus() > 0, reason="these check the refusals of a machine without GPUs")


def _paths(root: Path) -> RunPaths:
    return RunPaths(
        train_files=root / "train.parquet",
        val_files=root / "train.parquet",
        tool_config=root / "tool_config.yaml",
        agent_loop_config=root / "agent_loop.yaml",
        checkpoint_dir=root / "checkpoints",
    )


def test_the_paper_defaults_pass_verl_and_wrong_overrides_fail_with_its_message(tmp_path):
    settings = TrainSettings()
    config = validate(grpo_overrides(settings, _paths(tmp_path)))
    assert config.data.train_batch_size == 32 and config.actor_rollout_ref.rollout.n == 8
    assert config.algorithm.adv_estimator == "grpo" and config.actor_rollout_ref.actor.use_kl_loss
    assert config.actor_rollout_ref.rollout.multi_turn.max_tool_response_length > settings.result_chars > 256
    assert config.actor_rollout_ref.rollout.agent.default_agent_loop == "factory_agent"
    with pytest.raises(ConfigError, match=r"Could not override 'trainer.nonsense'"):
        validate(grpo_overrides(settings.model_copy(update={"overrides": ["trainer.nonsense=1"]}), _paths(tmp_path)))
    uneven = settings.model_copy(update={"tasks_per_step": 3, "rollouts_per_task": 3})
    with pytest.raises(ConfigError, match=r"real_train_batch_size \(9\) must be divisible by minimal possible batch"):
        validate(grpo_overrides(uneven, _paths(tmp_path)))


def _run(tmp_path: Path) -> PreparedRun:
    paths = _paths(tmp_path)
    dataset = DatasetReport(path=paths.train_files, hash="0" * 64, rows=1, environments=["e"], tools=["t"])
    return PreparedRun(run_dir=tmp_path, paths=paths, dataset=dataset, settings=TrainSettings(), overrides=["a=1"])


def test_the_launcher_refuses_without_a_gpu_and_says_what_it_prepared(tmp_path):
    started = time.monotonic()
    result = launch_local(_run(tmp_path), log=lambda line: pytest.fail(f"nothing may run: {line}"))
    assert time.monotonic() - started < 15
    assert not result.launched and not result.succeeded and result.reason == "not launched: no GPU"
    assert result.dataset == tmp_path / "train.parquet" and result.overrides == ["a=1"]


def test_factory_train_exits_non_zero_within_seconds_without_gpu_or_cluster(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    app = typer.Typer()
    app.command("train")(train_cmd)
    app.command("noop")(lambda: None)
    started = time.monotonic()
    out = CliRunner().invoke(app, ["train"])
    assert time.monotonic() - started < 15
    assert out.exit_code == 1 and "not launched: no GPU and no Ray cluster" in out.output


def test_checkpoints_are_found_by_step_and_a_run_without_one_is_never_registered(tmp_path):
    run = _run(tmp_path)
    with pytest.raises(FileNotFoundError, match="nothing was trained"):
        register_checkpoint(run, "p")
    for step in (2, 10, 9):
        (tmp_path / "checkpoints" / f"global_step_{step}" / "actor").mkdir(parents=True)
    (tmp_path / "checkpoints" / "global_step_11").mkdir()  # a save still being written: no actor yet
    assert latest_checkpoint(tmp_path / "checkpoints") == (10, tmp_path / "checkpoints" / "global_step_10")


def test_a_dry_run_on_an_empty_home_says_what_is_missing():
    app = typer.Typer()
    app.command("train")(train_cmd)
    app.command("noop")(lambda: None)
    out = CliRunner().invoke(app, ["train", "--dry-run"])
    assert out.exit_code == 2 and "cannot build the training inputs: no taxonomy under" in out.output


class FakeJobs:
    """Ray's job client as far as the launcher uses it: a job that runs for two polls and succeeds."""

    submitted: list[dict] = []

    def __init__(self, address: str):
        self.address = address
        self.polls = 0

    def submit_job(self, entrypoint: str, runtime_env: dict) -> str:
        FakeJobs.submitted.append({"address": self.address, "entrypoint": entrypoint, "runtime_env": runtime_env})
        return "job-1"

    def get_job_status(self, job_id: str):
        from ray.job_submission import JobStatus

        self.polls += 1
        return JobStatus.SUCCEEDED if self.polls > 2 else JobStatus.RUNNING

    def get_job_logs(self, job_id: str) -> str:
        return "".join(f"line {n}\n" for n in range(self.polls))


def test_a_ray_launch_submits_main_ppo_polls_and_tails_each_log_line_once(tmp_path, monkeypatch):
    import ray.job_submission

    monkeypatch.setattr(ray.job_submission, "JobSubmissionClient", FakeJobs)
    run = _run(tmp_path).model_copy(update={"overrides": ["trainer.logger=['console']"]})
    lines: list[str] = []
    result = launch_ray(run, "http://head:8265", log=lines.append, poll_s=0)
    [job] = FakeJobs.submitted
    assert job["address"] == "http://head:8265" and job["runtime_env"]["working_dir"]
    assert (
        "verl.trainer.main_ppo --config-name _generated_ppo_trainer 'trainer.logger=['\"'\"'console'\"'\"']'"
        in (job["entrypoint"])
    )
    assert result.launched and result.succeeded and result.mode == "ray" and result.job_id == "job-1"
    assert lines == ["line 0", "line 1", "line 2"], "every line once, the last ones after the job ended included"
