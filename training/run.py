"""A prepared GRPO run: the dataset, the tool and agent-loop configs, the overrides, and verl's validated config.

Everything a launch needs is written under one run directory, so the local and the Ray launcher start the same
job, and a run that is not launched (no GPU, no cluster) still leaves the validated inputs to inspect.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field

from factory.models import Model
from factory.store import write_json_atomic, write_text_atomic
from training.config import RunPaths, TrainSettings, agent_loop_config, grpo_overrides, validate
from training.dataset import DatasetReport, TrainingItem, environment_specs, tool_registry, write_dataset
from training.tools import write_tool_config

DATASET_PARQUET = "train.parquet"
TOOL_CONFIG = "tool_config.yaml"
AGENT_LOOP_CONFIG = "agent_loop.yaml"
OVERRIDES_JSON = "overrides.json"
CHECKPOINTS = "checkpoints"


class PreparedRun(Model):
    """A run's directory, its inputs, the overrides verl is started with, and the config verl validated."""

    run_dir: Path
    paths: RunPaths
    dataset: DatasetReport
    settings: TrainSettings
    overrides: list[str]
    config: Any = Field(default=None, exclude=True)  # verl's composed DictConfig


def prepare_run(
    items: Sequence[TrainingItem],
    settings: TrainSettings,
    run_dir: str | Path,
    selection: Mapping[str, list[str]] | None = None,
) -> PreparedRun:
    """Write the run's inputs under `run_dir` and validate the composed config with verl (ConfigError: verl's
    message). An empty dataset is refused: verl would start and fail later on an empty dataloader."""
    if not items:
        raise ValueError("no training tasks: nothing to train on")
    run_dir = Path(run_dir).resolve()
    dataset = write_dataset(items, run_dir / DATASET_PARQUET, selection)
    paths = RunPaths(
        train_files=dataset.path,
        val_files=dataset.path,
        tool_config=write_tool_config(
            tool_registry(environment_specs(items))[0], run_dir / TOOL_CONFIG, settings.result_chars
        ),
        agent_loop_config=run_dir / AGENT_LOOP_CONFIG,
        checkpoint_dir=run_dir / CHECKPOINTS,
    )
    write_text_atomic(paths.agent_loop_config, yaml.safe_dump(agent_loop_config(), sort_keys=False))
    overrides = grpo_overrides(settings, paths)
    write_json_atomic(run_dir / OVERRIDES_JSON, overrides)
    config = validate(overrides)
    return PreparedRun(
        run_dir=run_dir, paths=paths, dataset=dataset, settings=settings, overrides=overrides, config=config
    )
