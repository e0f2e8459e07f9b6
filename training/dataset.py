"""The training dataset: tasks exported to verl's parquet format, one flat row structure for every environment.

verl's loader merges the Arrow schemas of rows with different nested keys and fills the gaps with None, after
which per-row tool routing fails silently; so every row here has the same keys, the environment and task specs
travel as JSON strings, and `extra_info.tool_selection` names the row's environment tools (verl registers the
tools of all environments once and selects per row). The prompt is the one our own LLM policy sees
(`factory.agents.policies.opening`): the same system prompt, the question, and the environment's tool schemas.

Which tasks go in: the train split and the latest targeted tasks, minus those whose pass-rate profile shows no
group-relative signal (every rollout solved it, or none did: DAPO's dynamic sampling, done offline), plus a
seeded share of earlier rounds' tasks so a round does not forget what the last one learnt.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
from pydantic import Field

from factory.agents.policies import opening, tool_schema
from factory.agents.rollouts import RolloutRow, pass_rates, pool_tasks
from factory.envs.bundle import Bundle
from factory.models import EnvSpec, Model, Task
from factory.store import write_parquet

AGENT_NAME = "factory_agent"
DATA_SOURCE = "agent-world-factory"
ABILITY = "tool-use"

SCHEMA = pa.schema(
    [
        ("data_source", pa.string()),
        ("agent_name", pa.string()),
        ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
        ("ability", pa.string()),
        ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
        (
            "extra_info",
            pa.struct(
                [
                    ("index", pa.int64()),
                    ("split", pa.string()),
                    ("task_id", pa.string()),
                    ("env_id", pa.string()),
                    ("bundle", pa.string()),
                    ("task", pa.string()),
                    ("environment", pa.string()),
                    ("tool_schemas", pa.string()),
                    ("tool_selection", pa.list_(pa.string())),
                ]
            ),
        ),
    ]
)


class TrainingItem(Model):
    """One task and the environment bundle it runs on."""

    task: Task
    bundle: Path


class DatasetReport(Model):
    """What `write_dataset` wrote: the file, its hash, and what the selection kept and dropped."""

    path: Path
    hash: str
    rows: int
    environments: list[str]
    tools: list[str]
    dropped_too_easy: list[str] = Field(default_factory=list)
    dropped_too_hard: list[str] = Field(default_factory=list)
    replayed: list[str] = Field(default_factory=list)  # earlier rounds' tasks mixed back in


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def dataset_row(item: TrainingItem, spec: EnvSpec, tools: list[RegisteredTool], index: int) -> dict[str, Any]:
    """One task as a verl row. `reward_model.ground_truth` carries the task for the custom-reward path."""
    task = item.task
    task_json = _dumps(task.model_dump(mode="json"))
    return {
        "data_source": f"{DATA_SOURCE}/{task.env_id}",
        "agent_name": AGENT_NAME,
        "prompt": opening(task.question),
        "ability": ABILITY,
        "reward_model": {"style": "rule", "ground_truth": task_json},
        "extra_info": {
            "index": index,
            "split": task.split,
            "task_id": task.id,
            "env_id": task.env_id,
            "bundle": str(Path(item.bundle).resolve()),
            "task": task_json,
            "environment": _dumps(spec.model_dump(mode="json")),
            "tool_schemas": _dumps([t.schema_ for t in tools]),
            "tool_selection": [t.name for t in tools],
        },
    }


def learnable(
    items: Sequence[TrainingItem], rollouts: Sequence[RolloutRow]
) -> tuple[list[TrainingItem], dict[str, list[str]]]:
    """The items whose task carries a group-relative signal: tasks every counted rollout solved, or none did, are
    dropped; tasks without a profile are kept. Returns (kept, {"too_easy": [...], "too_hard": [...]})."""
    pools = pool_tasks(pass_rates(rollouts))
    kept = [i for i in items if pools.get(i.task.id, "learnable") == "learnable"]
    dropped = {
        pool: sorted(i.task.id for i in items if pools.get(i.task.id) == pool) for pool in ("too_easy", "too_hard")
    }
    return kept, dropped


def replay_share(earlier: Sequence[TrainingItem], share: float, current: int, seed: int) -> list[TrainingItem]:
    """A seeded sample of earlier rounds' items, `share` of the current set's size (at most all of them)."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"replay share must be within [0, 1] (got {share})")
    n = min(len(earlier), round(current * share))
    ordered = sorted(earlier, key=lambda i: i.task.id)
    return random.Random(f"replay:{seed}").sample(ordered, n)


def select_items(
    items: Sequence[TrainingItem],
    *,
    rollouts: Sequence[RolloutRow] = (),
    earlier: Sequence[TrainingItem] = (),
    replay: float = 0.0,
    seed: int = 0,
) -> tuple[list[TrainingItem], dict[str, list[str]]]:
    """The round's training items: the learnable current ones plus a replayed share of earlier ones (tasks already
    in the current set are not replayed twice)."""
    kept, dropped = learnable(items, rollouts)
    current = {i.task.id for i in items}
    replayed = replay_share([e for e in earlier if e.task.id not in current], replay, len(kept), seed)
    return kept + replayed, {**dropped, "replayed": [i.task.id for i in replayed]}


class RegisteredTool(Model):
    """A tool as verl registers it: `name` is what the policy calls (the environment's own tool name, or
    `<env>__<tool>` when environments declare that name with different schemas), `tool` what the session runs."""

    name: str
    tool: str
    schema_: dict[str, Any] = Field(alias="schema")


def tool_registry(specs: Mapping[str, EnvSpec]) -> tuple[dict[str, RegisteredTool], dict[str, list[str]]]:
    """Every environment's tools under one registry (verl keeps one schema per name): a name whose schema differs
    between environments is qualified by the environment. Returns (registry by name, each environment's names)."""
    schemas: dict[str, list[dict[str, Any]]] = {}
    for spec in specs.values():
        for tool in spec.tools:
            variants = schemas.setdefault(tool.name, [])
            if tool_schema(tool) not in variants:
                variants.append(tool_schema(tool))
    registry: dict[str, RegisteredTool] = {}
    selection: dict[str, list[str]] = {}
    for env_id, spec in sorted(specs.items()):
        names = []
        for tool in spec.tools:
            name = tool.name if len(schemas[tool.name]) == 1 else f"{env_id}__{tool.name}"
            schema = tool_schema(tool)
            schema["function"]["name"] = name
            registry[name] = RegisteredTool(name=name, tool=tool.name, schema=schema)
            names.append(name)
        selection[env_id] = names
    return registry, selection


def write_dataset(
    items: Sequence[TrainingItem], path: str | Path, selection: Mapping[str, list[str]] | None = None
) -> DatasetReport:
    """Write the rows of `items` (in task-id order) as verl's parquet; returns a DatasetReport."""
    specs = environment_specs(items)
    registry, selection_by_env = tool_registry(specs)
    ordered = sorted(items, key=lambda i: (i.task.env_id, i.task.id))
    rows = [
        dataset_row(item, specs[item.task.env_id], [registry[n] for n in selection_by_env[item.task.env_id]], index)
        for index, item in enumerate(ordered)
    ]
    digest = write_parquet(rows, SCHEMA, path)
    selection = selection or {}
    return DatasetReport(
        path=Path(path),
        hash=digest,
        rows=len(rows),
        environments=sorted(specs),
        tools=sorted(registry),
        dropped_too_easy=selection.get("too_easy", []),
        dropped_too_hard=selection.get("too_hard", []),
        replayed=selection.get("replayed", []),
    )


def environment_specs(items: Sequence[TrainingItem]) -> dict[str, EnvSpec]:
    """The environment spec of every item's bundle, by environment id."""
    specs: dict[str, EnvSpec] = {}
    for item in items:
        specs.setdefault(item.task.env_id, Bundle.open(item.bundle).spec)
    return specs
