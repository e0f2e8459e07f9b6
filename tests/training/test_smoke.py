"""The smoke path: its tiny model builds on a CPU; the two GRPO steps run only where a GPU is."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from training.launch import visible_gpus


def test_the_tiny_model_and_its_tokenizer_load_and_render_tool_calls(tiny_model):
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    assert model.config.model_type == "qwen2" and model.config.vocab_size == len(tokenizer)
    call = {"type": "function", "function": {"name": "cancel_order", "arguments": {"order_id": "ord_0001"}}}
    messages = [
        {"role": "user", "content": "Cancel order ord_0001."},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": '{"status": "cancelled"}'},
    ]
    tools = [{"type": "function", "function": {"name": "cancel_order", "parameters": {"type": "object"}}}]
    text = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False, add_generation_prompt=True)
    assert '<tool_call>\n{"name": "cancel_order", "arguments": {"order_id": "ord_0001"}}\n</tool_call>' in text
    assert "<tool_response>" in text and text.endswith("<|im_start|>assistant\n")
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert tokenizer.decode(ids) == text, "the trained tokenizer round-trips the prompt"
    with torch.no_grad():
        logits = model(torch.tensor([ids[:64]])).logits
    assert logits.shape == (1, min(64, len(ids)), len(tokenizer))


@pytest.mark.skipif(visible_gpus() < 1, reason="the GRPO smoke run needs a GPU (none visible here)")
def test_two_grpo_steps_leave_a_registered_checkpoint(tmp_path):
    from training.smoke.run import STEPS, run_smoke

    result, checkpoint = run_smoke(tmp_path)
    assert result.launched and result.succeeded, result
    assert checkpoint is not None and checkpoint.step == STEPS and (checkpoint.hf_dir / "config.json").is_file()


def test_the_smoke_settings_pass_verl_validation(tmp_path):
    from training.config import RunPaths, grpo_overrides, validate
    from training.smoke.run import STEPS, smoke_settings

    paths = RunPaths(
        train_files=tmp_path / "t.parquet",
        val_files=tmp_path / "t.parquet",
        tool_config=tmp_path / "tools.yaml",
        agent_loop_config=tmp_path / "loop.yaml",
        checkpoint_dir=tmp_path / "ck",
    )
    config = validate(grpo_overrides(smoke_settings(tmp_path / "model", gpus=1), paths))
    assert config.trainer.total_training_steps == STEPS and config.trainer.save_freq == STEPS
    assert config.actor_rollout_ref.model.override_config.attn_implementation == "sdpa"
