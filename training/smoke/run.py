"""Two GRPO steps end to end through verl, on a handful of online-shop tasks, with a tiny random Qwen2 model and a
tokenizer trained here: checks the whole path (dataset, tools, agent loop, verifier reward, checkpoint, merge) on
any GPU machine without downloading anything. `python -m training.smoke.run [OUT]`; needs a GPU and vLLM.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from factory.envs.build import build_env
from factory.tasks.difficulty import knobs_for
from factory.tasks.synthesize import synthesize_tasks
from training.config import TrainSettings
from training.dataset import TrainingItem
from training.launch import LaunchResult, PolicyCheckpoint, launch_local, register_checkpoint, visible_gpus
from training.run import prepare_run
from training.smoke.tiny_model import build_tiny_model

TOPIC = "online-shop"
STEPS = 2


def smoke_settings(model: Path, gpus: int) -> TrainSettings:
    return TrainSettings(
        model_path=str(model),
        tasks_per_step=2,
        rollouts_per_task=2,
        mini_batch_size=2,
        gpus_per_node=gpus,
        total_steps=STEPS,
        save_freq=STEPS,
        max_prompt_length=2048,
        max_response_length=1024,
        max_assistant_turns=4,
        result_chars=600,
        gpu_memory_utilization=0.3,
        experiment="smoke",
        overrides=[  # no flash-attn needed: the tiny model trains with torch's SDPA attention
            "actor_rollout_ref.rollout.enforce_eager=True",
            "actor_rollout_ref.rollout.max_model_len=3072",
            "actor_rollout_ref.model.use_remove_padding=False",
            "+actor_rollout_ref.model.override_config.attn_implementation=sdpa",
        ],
    )


def run_smoke(out: Path, timeout_s: float = 1500) -> tuple[LaunchResult, PolicyCheckpoint | None]:
    """Build the environment, tasks and model under `out`, train two steps, merge and register the checkpoint."""
    gpus = visible_gpus()
    bundle = out / "bundle"
    if not bundle.is_dir():
        build_env(TOPIC, bundle)
    tasks = synthesize_tasks(bundle, n=4, seed=0, knobs=knobs_for("easy")).tasks
    model = build_tiny_model([t.question for t in tasks], out / "tiny-model")
    run = prepare_run(
        [TrainingItem(task=t, bundle=bundle) for t in tasks], smoke_settings(model, max(gpus, 1)), out / "run"
    )
    result = launch_local(run, log=print, timeout_s=timeout_s, gpus=gpus)
    checkpoint = register_checkpoint(run, "factory-smoke") if result.succeeded else None
    return result, checkpoint


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="factory-smoke-"))
    result, checkpoint = run_smoke(out)
    print(result.model_dump_json(indent=2, exclude={"overrides"}))
    if checkpoint is not None:
        print(checkpoint.model_dump_json(indent=2))
    sys.exit(0 if result.succeeded and checkpoint is not None else 1)


if __name__ == "__main__":
    main()
