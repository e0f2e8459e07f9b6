"""The GRPO job's settings: a typed model composed into verl overrides and checked by verl's own config loader.

Defaults follow the paper's recipe: 32 tasks a step, 8 rollouts each (GRPO's group), a KL loss to the reference
policy (coefficient 0.001, low-variance estimator) rather than a KL penalty in the reward, and PPO's clip range
of 0.2. Validation composes the wheel's trainer config (`CONFIG_NAME`) with Hydra and runs
`verl.utils.config.validate_config`, what `verl.trainer.main_ppo` does before it starts anything (measured: about
6 s on CPU, most of it importing verl; `main_ppo --cfg job` prints the composition but skips validation).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from factory.models import Model
from training.dataset import AGENT_NAME
from training.tools import DEFAULT_RESULT_CHARS

# verl's trainer config flattened into one file (the wheel's own, kept in sync with `ppo_trainer.yaml` by its CI):
# it has no defaults list, so it composes under hydra 1.4 too, which refuses the `../optim` group paths of
# `ppo_trainer.yaml`. `main_ppo` is started with the same `--config-name`.
CONFIG_NAME = "_generated_ppo_trainer"
TRUNCATION_MARK = " ...(truncated)"  # what factory.agents.policies.result_text appends to a cut result


class ConfigError(ValueError):
    """verl refused the composed config; the message is verl's own."""


class TrainSettings(Model):
    """One GRPO run. `overrides` are extra verl overrides (`key=value`), applied last."""

    model_path: str = "Qwen/Qwen3-4B-Instruct-2507"
    tasks_per_step: int = Field(default=32, ge=1)  # data.train_batch_size
    rollouts_per_task: int = Field(default=8, ge=2)  # actor_rollout_ref.rollout.n: the GRPO group
    mini_batch_size: int = Field(default=32, ge=1)
    micro_batch_size_per_gpu: int = Field(default=1, ge=1)
    learning_rate: float = Field(default=1e-6, gt=0)
    kl_loss_coef: float = Field(default=0.001, ge=0)
    kl_loss_type: str = "low_var_kl"
    clip_ratio: float = Field(default=0.2, gt=0)
    entropy_coeff: float = Field(default=0.0, ge=0)
    epochs: int = Field(default=1, ge=1)
    total_steps: int | None = Field(default=None, ge=1)
    max_prompt_length: int = Field(default=4096, ge=64)
    max_response_length: int = Field(default=8192, ge=64)
    max_assistant_turns: int = Field(default=32, ge=1)
    result_chars: int = Field(default=DEFAULT_RESULT_CHARS, ge=64)
    rollout_engine: Literal["vllm", "sglang"] = "vllm"
    gpu_memory_utilization: float = Field(default=0.6, gt=0, le=1)
    tensor_parallel_size: int = Field(default=1, ge=1)
    gpus_per_node: int = Field(default=8, ge=1)
    nodes: int = Field(default=1, ge=1)
    save_freq: int = Field(default=10, ge=-1)
    project: str = "agent-world-factory"
    experiment: str = "grpo"
    logger: list[str] = Field(default_factory=lambda: ["console"])
    overrides: list[str] = Field(default_factory=list)


class RunPaths(Model):
    """The files a run reads and where it writes its checkpoints."""

    train_files: Path
    val_files: Path
    tool_config: Path
    agent_loop_config: Path
    checkpoint_dir: Path


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, list):
        return "[" + ",".join(f"'{v}'" for v in value) + "]"
    if value is None:
        return "null"
    return str(value)


def grpo_overrides(settings: TrainSettings, paths: RunPaths) -> list[str]:
    """The verl overrides of a GRPO run with our agent loop, tools and reward (the verifier, inside the loop)."""
    s = settings
    values: dict[str, Any] = {
        "algorithm.adv_estimator": "grpo",
        "algorithm.use_kl_in_reward": False,
        "data.train_files": str(paths.train_files),
        "data.val_files": str(paths.val_files),
        "data.train_batch_size": s.tasks_per_step,
        "data.max_prompt_length": s.max_prompt_length,
        "data.max_response_length": s.max_response_length,
        "data.return_raw_chat": True,
        "data.filter_overlong_prompts": True,
        "data.truncation": "error",
        "data.tool_config_path": str(paths.tool_config),
        "actor_rollout_ref.model.path": s.model_path,
        "actor_rollout_ref.actor.optim.lr": s.learning_rate,
        "actor_rollout_ref.actor.ppo_mini_batch_size": s.mini_batch_size,
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": s.micro_batch_size_per_gpu,
        "actor_rollout_ref.actor.use_kl_loss": s.kl_loss_coef > 0,
        "actor_rollout_ref.actor.kl_loss_coef": s.kl_loss_coef,
        "actor_rollout_ref.actor.kl_loss_type": s.kl_loss_type,
        "actor_rollout_ref.actor.clip_ratio": s.clip_ratio,
        "actor_rollout_ref.actor.entropy_coeff": s.entropy_coeff,
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": s.micro_batch_size_per_gpu,
        "actor_rollout_ref.rollout.name": s.rollout_engine,
        "actor_rollout_ref.rollout.mode": "async",
        "actor_rollout_ref.rollout.n": s.rollouts_per_task,
        "actor_rollout_ref.rollout.tensor_model_parallel_size": s.tensor_parallel_size,
        "actor_rollout_ref.rollout.gpu_memory_utilization": s.gpu_memory_utilization,
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": s.micro_batch_size_per_gpu,
        "actor_rollout_ref.rollout.prompt_length": s.max_prompt_length,
        "actor_rollout_ref.rollout.response_length": s.max_response_length,
        "actor_rollout_ref.rollout.multi_turn.enable": True,
        "actor_rollout_ref.rollout.multi_turn.format": "hermes",
        "actor_rollout_ref.rollout.multi_turn.max_assistant_turns": s.max_assistant_turns,
        "actor_rollout_ref.rollout.multi_turn.tool_config_path": str(paths.tool_config),
        "actor_rollout_ref.rollout.multi_turn.max_tool_response_length": s.result_chars + len(TRUNCATION_MARK),
        "actor_rollout_ref.rollout.multi_turn.tool_response_truncate_side": "right",
        "actor_rollout_ref.rollout.agent.default_agent_loop": AGENT_NAME,
        "actor_rollout_ref.rollout.agent.agent_loop_config_path": str(paths.agent_loop_config),
        "trainer.project_name": s.project,
        "trainer.experiment_name": s.experiment,
        "trainer.logger": s.logger,
        "trainer.n_gpus_per_node": s.gpus_per_node,
        "trainer.nnodes": s.nodes,
        "trainer.total_epochs": s.epochs,
        "trainer.save_freq": s.save_freq,
        "trainer.test_freq": -1,
        "trainer.val_before_train": False,
        "trainer.default_local_dir": str(paths.checkpoint_dir),
    }
    if s.total_steps is not None:
        values["trainer.total_training_steps"] = s.total_steps
    return [f"{k}={_value(v)}" for k, v in values.items()] + list(s.overrides)


def agent_loop_config() -> list[dict[str, str]]:
    """verl's agent loop config: our loop under the name the dataset rows carry."""
    return [{"name": AGENT_NAME, "_target_": "training.agent_loop.FactoryAgentLoop"}]


def compose(overrides: list[str]) -> Any:
    """verl's trainer config with `overrides`, composed by Hydra from the installed wheel (a DictConfig)."""
    import verl
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    config_dir = Path(verl.__file__).parent / "trainer" / "config"
    try:
        with initialize_config_dir(config_dir=str(config_dir), version_base=None):
            return hydra_compose(CONFIG_NAME, overrides=overrides)
    except (HydraException, OmegaConfBaseException) as e:
        raise ConfigError(f"verl refused the overrides: {e}") from e


def validate(overrides: list[str]) -> Any:
    """Compose and run verl's own checks (`validate_config`, as `main_ppo` does); the config, or ConfigError with
    verl's message."""
    from omegaconf.errors import OmegaConfBaseException
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    config = compose(overrides)
    try:
        validate_config(config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    except (AssertionError, ValueError, TypeError, KeyError, OmegaConfBaseException) as e:
        raise ConfigError(f"verl's config check failed: {e}") from e
    return config
