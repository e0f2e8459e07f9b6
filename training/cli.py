"""`factory train [--dry-run]`: the GRPO run of FACTORY_HOME's training tasks (registered by assets/cli.py)."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from factory.console import fail, print_json
from factory.store import Store


def train_cmd(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Build and validate the run's inputs; start nothing.")
    ] = False,
    model: Annotated[str | None, typer.Option(help="Base model: a Hugging Face id or a local directory.")] = None,
    ray_address: Annotated[
        str | None, typer.Option(help="Submit to this Ray cluster (default: RAY_ADDRESS), else use local GPUs.")
    ] = None,
    tasks_per_step: Annotated[int, typer.Option(help="Tasks per GRPO step (data.train_batch_size).")] = 32,
    rollouts_per_task: Annotated[int, typer.Option(help="Rollouts per task (the GRPO group).")] = 8,
    replay: Annotated[float, typer.Option(help="Share of earlier rounds' tasks mixed back in.")] = 0.2,
    seed: Annotated[int, typer.Option(help="Seed of the replay sample.")] = 0,
    timeout_s: Annotated[float, typer.Option(help="Stop the job after this many seconds.")] = 24 * 3600,
    override: Annotated[list[str] | None, typer.Option(help="Extra verl override key=value (repeatable).")] = None,
) -> None:
    """Export the training tasks to verl's format, compose and validate the GRPO config, and launch it on this
    machine's GPUs or a Ray cluster. Without either it stops at once, saying so (use --dry-run to check inputs)."""
    from training.launch import launch, register_checkpoint, visible_gpus

    address = ray_address or os.environ.get("RAY_ADDRESS")
    if not dry_run and not address and visible_gpus() < 1:
        fail("not launched: no GPU and no Ray cluster (--ray-address or RAY_ADDRESS); --dry-run checks the inputs")
    from training.config import ConfigError, TrainSettings
    from training.prepare import prepare_from_store

    store = Store()
    try:
        settings = TrainSettings(
            tasks_per_step=tasks_per_step, rollouts_per_task=rollouts_per_task, overrides=list(override or [])
        )
        if model:
            settings = settings.model_copy(update={"model_path": model})
        run = prepare_from_store(store, settings, replay=replay, seed=seed)
    except ConfigError as e:
        fail(str(e), code=2)
    except (KeyError, ValueError, FileNotFoundError) as e:
        fail(f"cannot build the training inputs: {e}", code=2)
    typer.echo(f"dataset: {run.dataset.path} ({run.dataset.rows} tasks, {len(run.dataset.environments)} environments)")
    typer.echo(f"tool config: {run.paths.tool_config}")
    typer.echo(f"checkpoints: {run.paths.checkpoint_dir}")
    if dry_run:
        return
    result = launch(run, address, log=typer.echo, timeout_s=timeout_s)
    print_json(result)
    if not result.succeeded:
        fail(result.reason or f"training failed (exit {result.returncode})")
    if result.mode == "local":
        print_json(register_checkpoint(run, name=f"factory-policy-{run.dataset.hash[:8]}", log=typer.echo))
