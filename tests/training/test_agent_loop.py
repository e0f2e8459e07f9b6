"""verl's own agent-loop worker drives our tool adapter and agent loop against a scripted LLM server: the reward is
the task verifier's verdict on the final state, and environment faults are recorded apart from agent errors."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from transformers import AutoTokenizer
from verl.protocol import DataProto
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn
from verl.workers.rollout.replica import TokenOutput

from factory.models import Task
from tests.builders import copy_bundle
from training import episodes
from training.agent_loop import compute_score, parse_response
from training.config import TRUNCATION_MARK, TrainSettings
from training.dataset import TrainingItem
from training.run import prepare_run

RESULT_CHARS = 600


def _call(name: str, args: dict) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': args})}\n</tool_call>"


class ScriptedServer:
    """An LLM server client that answers each trajectory from a script chosen by the question in its prompt: one
    response per generation, as token ids of the tiny tokenizer."""

    def __init__(self, tokenizer, scripts: dict[str, list[str]]):
        self.tokenizer = tokenizer
        self.scripts = scripts
        self.turns: dict[str, int] = {}

    async def generate(self, request_id: str, prompt_ids: list[int], sampling_params: dict, **kwargs) -> TokenOutput:
        prompt = self.tokenizer.decode(prompt_ids)
        script = next(s for q, s in self.scripts.items() if q in prompt)
        turn = self.turns.get(request_id, 0)
        self.turns[request_id] = turn + 1
        text = script[min(turn, len(script) - 1)] + "<|im_end|>"
        return TokenOutput(token_ids=self.tokenizer.encode(text, add_special_tokens=False), stop_reason="completed")


def _worker(config, scripts: dict[str, list[str]]):
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker

    worker = AgentLoopWorker(config, llm_client=None)
    worker.llm_client = ScriptedServer(worker.tokenizer, scripts)
    return worker


def _batch(config, worker) -> DataProto:
    dataset = RLHFDataset(data_files=[str(config.data.train_files)], tokenizer=worker.tokenizer, config=config.data)
    rows = collate_fn([dataset[i] for i in range(len(dataset))])
    non_tensor = {k: v for k, v in rows.items() if isinstance(v, np.ndarray) and v.dtype == object}
    return DataProto.from_dict(non_tensors=non_tensor, meta_info={"validate": False, "global_steps": 1})


def _settings(model: Path) -> TrainSettings:
    return TrainSettings(
        model_path=str(model),
        tasks_per_step=2,
        rollouts_per_task=2,
        mini_batch_size=2,
        gpus_per_node=1,
        max_prompt_length=4096,
        max_response_length=4096,
        result_chars=RESULT_CHARS,
    )


def _run(items: list[TrainingItem], scripts, model: Path, out: Path):
    run = prepare_run(items, _settings(model), out)
    worker = _worker(run.config, scripts)
    try:
        output = asyncio.run(worker.generate_sequences(_batch(run.config, worker)))
    finally:
        episodes.close_environments()
    return output


def _by_task(output) -> dict[str, dict]:
    records = output.non_tensor_batch["factory_episode"]
    scores = output.batch["rm_scores"].sum(dim=-1).tolist()
    return {r["task_id"]: {**r, "rm": s} for r, s in zip(records, scores, strict=True)}


def test_right_writes_pay_one_and_a_wrong_trajectory_zero(shop_items, write_task: Task, tiny_model, tmp_path):
    other = next(i.task for i in shop_items if i.task.kind == "graph" and i.task.id != write_task.id)
    right = [_call(c.tool, c.args) for c in write_task.gold] + ["Done."]
    wrong = [_call(other.gold[0].tool, other.gold[0].args), "Nothing to change."]  # reads, writes nothing
    items = [
        TrainingItem(task=write_task, bundle=shop_items[0].bundle),
        TrainingItem(task=other, bundle=shop_items[0].bundle),
    ]
    scripts = {write_task.question: right, other.question: wrong}
    output = _run(items, scripts, tiny_model, tmp_path)
    got = _by_task(output)
    assert got[write_task.id]["passed"] and got[write_task.id]["rm"] == 1.0, got[write_task.id]
    assert got[write_task.id]["tool_calls"] == len(write_task.gold)
    assert not got[other.id]["passed"] and got[other.id]["rm"] == 0.0, got[other.id]
    assert all(not r["env_errors"] for r in got.values())
    assert got[other.id]["final_answer"] == "Nothing to change.", "the answer without the end-of-turn token"
    assert list(output.non_tensor_batch["passed"]) == [
        1.0 if r["task_id"] == write_task.id else 0.0 for r in output.non_tensor_batch["factory_episode"]
    ]
    assert episodes.open_count() == 0, "every trajectory's session is closed"
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    responses = [tokenizer.decode(r, skip_special_tokens=False) for r in output.batch["responses"]]
    results = [m for r in responses for m in re.findall(r"<tool_response>\n(.*?)\n</tool_response>", r, re.DOTALL)]
    cut = [m for m in results if m.endswith(TRUNCATION_MARK)]
    assert cut and all(len(m) == RESULT_CHARS + len(TRUNCATION_MARK) for m in cut), "results cut at ours, not 256"


def test_an_environment_crash_is_recorded_apart_from_agent_errors(shop_items, write_task, tiny_model, tmp_path):
    bundle = copy_bundle(shop_items[0].bundle, tmp_path / "crashing")
    tools = bundle / "tools.py"
    source = tools.read_text()
    head = "def get_customer(state, customer_id=None):\n"
    assert head in source
    tools.write_text(source.replace(head, head + "    import os\n    os._exit(3)\n", 1))
    shutil.rmtree(bundle / "__pycache__", ignore_errors=True)
    (bundle / ".hash").unlink(missing_ok=True)
    script = [
        _call("get_customer", {"customer_id": "cus_0001"}),
        _call("get_product", {"product_id": "pro_9999"}),
        "none",
    ]
    items = [TrainingItem(task=write_task, bundle=bundle)]
    output = _run(items, {write_task.question: script}, tiny_model, tmp_path / "run")
    [record] = output.non_tensor_batch["factory_episode"]
    assert len(record["env_errors"]) == 1 and record["env_errors"][0].startswith("get_customer: worker_crashed")
    assert len(record["agent_errors"]) == 1 and record["agent_errors"][0].startswith("get_product: not_found")
    assert output.non_tensor_batch["env_error"][0] == 1.0 and output.non_tensor_batch["agent_errors"][0] == 1.0


def test_the_custom_reward_path_replays_the_response(shop_items, write_task):
    bundle = str(shop_items[0].bundle)
    calls = "".join(
        f"{_call(c.tool, c.args)}\nuser\n<tool_response>\n{{}}\n</tool_response>\n" for c in write_task.gold
    )
    ground_truth = write_task.model_dump_json()
    parsed = parse_response(calls + "assistant\nDone.")
    assert [c.tool for c in parsed.tool_calls] == [c.tool for c in write_task.gold] and parsed.final_answer == "Done."
    right = compute_score("agent-world-factory/shop", calls + "assistant\nDone.", ground_truth, {"bundle": bundle})
    none = compute_score("agent-world-factory/shop", "Done.", ground_truth, {"bundle": bundle})
    episodes.close_environments()
    assert right["score"] == 1.0 and none["score"] == 0.0
    with pytest.raises(ValueError, match="names no bundle"):
        compute_score("agent-world-factory/shop", "Done.", ground_truth, {})
