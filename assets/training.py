"""Training: the GRPO dataset and config for verl, and the policy checkpoint a launch produces. Needs the `train`
extra (verl); without a GPU or a Ray cluster the checkpoint asset records that nothing was launched."""

import os

import dagster as dg

from assets.evolve import rollouts, targeted_tasks
from assets.tasks import verifiers
from factory.pipeline.registry import POLICY_CHECKPOINT, TRAINING_DATASET
from factory.store import hash_value
from resources import StoreResource

TRAIN_GROUP = {"group_name": TRAINING_DATASET.group}
NEEDS_EXTRA = "training needs the train extra (verl): make install-train, or pip install -e '.[train]'"


class TrainingConfig(dg.Config):
    """The GRPO run: base model (empty: the settings' default), tasks per step and rollouts per task (the paper:
    32 x 8), the share of earlier rounds' tasks mixed back in, its seed, and extra verl overrides (key=value)."""

    model: str | None = None
    tasks_per_step: int = 32
    rollouts_per_task: int = 8
    replay: float = 0.2
    seed: int = 0
    overrides: list[str] = []


@dg.asset(
    deps=[verifiers, targeted_tasks, rollouts],
    code_version=TRAINING_DATASET.code_version,
    kinds={"parquet"},
    **TRAIN_GROUP,
)
def training_dataset(config: TrainingConfig, store: StoreResource) -> dg.MaterializeResult:
    """Training dataset: the train split plus the latest targeted tasks (tasks every rollout solves, or none does,
    left out) and a share of earlier rounds' tasks, in verl's parquet format, with the GRPO config verl validated."""
    try:
        from training.config import ConfigError, TrainSettings
        from training.prepare import prepare_from_store
    except ImportError as e:
        raise dg.Failure(f"{NEEDS_EXTRA} ({e})") from e
    settings = TrainSettings(
        tasks_per_step=config.tasks_per_step, rollouts_per_task=config.rollouts_per_task, overrides=config.overrides
    )
    if config.model:
        settings = settings.model_copy(update={"model_path": config.model})
    try:
        run = prepare_from_store(store.get(), settings, replay=config.replay, seed=config.seed)
    except ConfigError as e:
        raise dg.Failure(f"verl refused the GRPO config: {e}") from e
    except (ValueError, FileNotFoundError, KeyError) as e:
        raise dg.Failure(f"training_dataset: {e}") from e
    d = run.dataset
    return dg.MaterializeResult(
        metadata={
            "dataset": dg.MetadataValue.path(str(d.path)),
            "tasks": dg.MetadataValue.int(d.rows),
            "environments": dg.MetadataValue.int(len(d.environments)),
            "dropped_too_easy": dg.MetadataValue.int(len(d.dropped_too_easy)),
            "dropped_too_hard": dg.MetadataValue.int(len(d.dropped_too_hard)),
            "replayed_from_earlier_rounds": dg.MetadataValue.int(len(d.replayed)),
            "tool_config": dg.MetadataValue.path(str(run.paths.tool_config)),
            "overrides": dg.MetadataValue.json(run.overrides),
            "dagster/row_count": dg.MetadataValue.int(d.rows),
        },
        data_version=dg.DataVersion(hash_value([d.hash, run.overrides])),
    )


class LaunchConfig(dg.Config):
    """Where the run goes: a Ray cluster (empty: RAY_ADDRESS; neither: this machine's GPUs), and how long it may
    take."""

    ray_address: str | None = None
    timeout_s: float = 24 * 3600


@dg.asset(deps=[training_dataset], code_version=POLICY_CHECKPOINT.code_version, kinds={"json"}, **TRAIN_GROUP)
def policy_checkpoint(
    context: dg.AssetExecutionContext, config: LaunchConfig, store: StoreResource
) -> dg.MaterializeResult:
    """Policy checkpoint: the GRPO job launched on local GPUs or a Ray cluster, its last `global_step_N` merged to
    Hugging Face weights and registered for the next round's LLM policy. With neither GPU nor cluster it records
    "not launched" and the validated inputs: it never reports training that did not happen."""
    try:
        from training.launch import launch, register_checkpoint
        from training.prepare import load_prepared
    except ImportError as e:
        raise dg.Failure(f"{NEEDS_EXTRA} ({e})") from e
    try:
        run = load_prepared(store.get())
    except FileNotFoundError as e:
        raise dg.Failure(str(e)) from e
    address = config.ray_address or os.environ.get("RAY_ADDRESS")
    result = launch(run, address, log=context.log.info, timeout_s=config.timeout_s)
    base = {
        "status": dg.MetadataValue.text("trained" if result.succeeded else result.reason or "failed"),
        "launched": dg.MetadataValue.bool(result.launched),
        "mode": dg.MetadataValue.text(result.mode),
        "dataset": dg.MetadataValue.path(str(result.dataset)),
        "overrides": dg.MetadataValue.json(result.overrides),
    }
    if not result.launched:
        context.log.warning(f"{result.reason}: the validated config and dataset are in {run.run_dir}")
        return dg.MaterializeResult(metadata=base, data_version=dg.DataVersion(hash_value(["not launched", result])))
    if not result.succeeded:
        raise dg.Failure(f"training failed: {result.reason or f'exit {result.returncode}'}", metadata=base)
    if result.mode != "local":
        return dg.MaterializeResult(metadata=base | {"job_id": dg.MetadataValue.text(result.job_id or "")})
    checkpoint = register_checkpoint(run, name=f"factory-policy-{run.dataset.hash[:8]}", log=context.log.info)
    return dg.MaterializeResult(
        metadata=base
        | {
            "step": dg.MetadataValue.int(checkpoint.step),
            "checkpoint": dg.MetadataValue.path(str(checkpoint.checkpoint)),
            "hf_weights": dg.MetadataValue.path(str(checkpoint.hf_dir)),
            "serve": dg.MetadataValue.text(checkpoint.serve),
        },
        data_version=dg.DataVersion(hash_value(checkpoint.model_dump(mode="json"))),
    )
