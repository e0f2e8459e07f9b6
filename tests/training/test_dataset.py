"""The exported parquet: verl's own dataset class loads it, rows of environments with different tools share one
schema and see only their own tools, and the selection drops tasks without a group-relative signal."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from omegaconf import OmegaConf
from transformers import AutoTokenizer
from verl.utils.dataset.rl_dataset import RLHFDataset

from factory.agents.policies import SYSTEM_PROMPT
from factory.agents.rollouts import RolloutRow
from factory.envs.bundle import Bundle
from factory.models import Verdict
from factory.tasks.difficulty import knobs_for
from factory.tasks.synthesize import synthesize_tasks
from training.dataset import AGENT_NAME, TrainingItem, replay_share, select_items, tool_registry, write_dataset


@pytest.fixture(scope="module")
def two_envs(catalog_bundles, shop_items) -> list[TrainingItem]:
    other = catalog_bundles.kept("procurement")
    tasks = synthesize_tasks(other, n=3, seed=0, knobs=knobs_for("easy")).tasks
    return shop_items[:3] + [TrainingItem(task=t, bundle=other) for t in tasks]


def test_verl_loads_rows_of_two_environments_with_one_schema(two_envs, tiny_model, tmp_path):
    report = write_dataset(two_envs, tmp_path / "train.parquet")
    assert report.rows == len(two_envs) and len(report.environments) == 2
    table = pq.read_table(report.path)
    assert [f.name for f in table.schema] == [
        "data_source",
        "agent_name",
        "prompt",
        "ability",
        "reward_model",
        "extra_info",
    ]
    config = OmegaConf.create({"prompt_key": "prompt", "max_prompt_length": 8192, "return_raw_chat": True})
    dataset = RLHFDataset(
        data_files=[str(report.path)], tokenizer=AutoTokenizer.from_pretrained(tiny_model), config=config
    )
    assert len(dataset) == len(two_envs)
    specs = {i.task.env_id: Bundle.open(i.bundle).spec for i in two_envs}
    by_env = {}
    for n in range(len(dataset)):
        row = dataset[n]
        info = row["extra_info"]
        assert row["agent_name"] == AGENT_NAME and row["index"] == n
        assert row["raw_prompt"][0] == {"role": "system", "content": SYSTEM_PROMPT}
        own = [t.name for t in specs[info["env_id"]].tools]
        assert [n.removeprefix(f"{info['env_id']}__") for n in info["tool_selection"]] == own
        assert [s["function"]["name"] for s in json.loads(info["tool_schemas"])] == info["tool_selection"]
        assert (
            json.loads(info["task"])["id"] == info["task_id"]
            and json.loads(info["environment"])["id"] == info["env_id"]
        )
        by_env.setdefault(info["env_id"], set(info["tool_selection"]))
    first, second = by_env.values()
    assert first != second, "the two environments have different tools"
    registry, _ = tool_registry(specs)
    assert set(report.tools) == first | second == set(registry)


def _rows(task_id: str, passed: list[bool]) -> list[RolloutRow]:
    return [
        RolloutRow(id=f"{task_id}-{k}", task_id=task_id, env_id="e", policy_id="p", sample=k,
                   verdict=Verdict(passed=p, score=float(p)), reward=float(p))
        for k, p in enumerate(passed)
    ]  # fmt: skip


def test_selection_drops_tasks_all_or_no_rollouts_solve_and_replays_a_seeded_share(shop_items):
    easy, hard, mixed, *rest = shop_items
    rollouts = (
        _rows(easy.task.id, [True, True]) + _rows(hard.task.id, [False, False]) + _rows(mixed.task.id, [True, False])
    )
    chosen, selection = select_items([easy, hard, mixed, *rest], rollouts=rollouts)
    assert [i.task.id for i in chosen] == [mixed.task.id] + [i.task.id for i in rest], "unprofiled tasks stay"
    assert selection["too_easy"] == [easy.task.id] and selection["too_hard"] == [hard.task.id]
    earlier = [
        i.model_copy(update={"task": i.task.model_copy(update={"id": f"old-{n}"})}) for n, i in enumerate(shop_items)
    ]
    again, sel = select_items([mixed], earlier=[*earlier, mixed], replay=1.0, seed=3)
    assert len(again) == 2 and sel["replayed"] == [again[1].task.id] and again[1].task.id.startswith("old-")
    assert replay_share(earlier, 0.5, 4, seed=3) == replay_share(earlier, 0.5, 4, seed=3)
    assert len(replay_share(earlier, 0.5, 4, seed=3)) == 2
    assert {i.task.id for s in range(6) for i in replay_share(earlier, 0.5, 4, seed=s)} != {earlier[0].task.id}
    with pytest.raises(ValueError, match="replay share"):
        replay_share(earlier, 1.5, 4, seed=0)


def test_a_tool_name_with_two_schemas_is_qualified_by_its_environments(shop_items):
    spec = Bundle.open(shop_items[0].bundle).spec
    tool = spec.tools[0]
    same = spec.model_copy(update={"id": "same", "tools": [tool]})
    changed = spec.model_copy(update={"id": "other", "tools": [tool.model_copy(update={"description": "else"})]})
    registry, selection = tool_registry({spec.id: spec, "same": same})
    assert selection["same"] == [tool.name] and registry[tool.name].tool == tool.name, "one schema: one name"
    registry, selection = tool_registry({spec.id: spec, "other": changed})
    assert selection["other"] == [f"other__{tool.name}"] and selection[spec.id][0] == f"{spec.id}__{tool.name}"
    qualified = registry[f"other__{tool.name}"]
    assert qualified.tool == tool.name and qualified.schema_["function"]["name"] == f"other__{tool.name}"
    assert qualified.schema_["function"]["description"] == "else"
