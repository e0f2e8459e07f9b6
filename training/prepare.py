"""A FACTORY_HOME's GRPO run prepared from what it holds: the train split, the latest targeted tasks filtered by pass
rate, a share of earlier rounds' tasks, verl's validated config. `factory train` and the `training_dataset` asset
both call `prepare_from_store`; the `policy_checkpoint` asset reads the prepared run back."""

from __future__ import annotations

from pathlib import Path

from factory.pipeline.registry import TRAINING_DATASET
from factory.store import Store, read_json, write_json_atomic
from training.config import TrainSettings
from training.dataset import select_items
from training.inputs import earlier_items, store_items, store_rollouts
from training.run import PreparedRun, prepare_run

PREPARED_JSON = "prepared.json"


def run_dir(store: Store) -> Path:
    return TRAINING_DATASET.dir(store)


def prepare_from_store(store: Store, settings: TrainSettings, *, replay: float = 0.2, seed: int = 0) -> PreparedRun:
    """Export and validate the run (ConfigError: verl's message; ValueError: nothing to train on)."""
    chosen, selection = select_items(
        store_items(store), rollouts=store_rollouts(store), earlier=earlier_items(store), replay=replay, seed=seed
    )
    run = prepare_run(chosen, settings, run_dir(store), selection)
    write_json_atomic(run.run_dir / PREPARED_JSON, run.model_dump(mode="json"))
    return run


def load_prepared(store: Store) -> PreparedRun:
    """The run `prepare_from_store` wrote last, or a clear error saying what to materialize first."""
    path = run_dir(store) / PREPARED_JSON
    if not path.is_file():
        raise FileNotFoundError(f"no prepared training run under {run_dir(store)}: materialize training_dataset first")
    return PreparedRun.model_validate(read_json(path))
