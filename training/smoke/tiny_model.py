"""A tiny randomly initialised Qwen2 model and a tokenizer trained here, so the GRPO smoke run downloads nothing.

The chat template is Qwen2.5's tool-calling layout (tools in the system turn, calls as `<tool_call>` JSON, results
as `<tool_response>` in a user turn), which verl's Qwen continuous-token builder and hermes tool parser read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel

from factory.agents.policies import SYSTEM_PROMPT

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
ADDED_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]

CHAT_TEMPLATE = (
    "{%- if tools %}{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] }}{%- endif %}"
    "{{- '\\n\\n# Tools\\n\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}"
    "{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags.<|im_end|>\\n' }}"
    "{%- elif messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'user' or (message.role == 'assistant' and not message.tool_calls) %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}"
    "{%- elif message.role == 'assistant' %}{{- '<|im_start|>' + message.role }}"
    "{%- if message.content %}{{- '\\n' + message.content }}{%- endif %}"
    "{%- for tool_call in message.tool_calls %}{%- if tool_call.function is defined %}"
    "{%- set tool_call = tool_call.function %}{%- endif %}"
    '{{- \'\\n<tool_call>\\n{"name": "\' }}{{- tool_call.name }}{{- \'", "arguments": \' }}'
    "{%- if tool_call.arguments is string %}{{- tool_call.arguments }}{%- else %}{{- tool_call.arguments | tojson }}"
    "{%- endif %}{{- '}\\n</tool_call>' }}{%- endfor %}{{- '<|im_end|>\\n' }}"
    "{%- elif message.role == 'tool' %}"
    "{%- if loop.index0 == 0 or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' }}{{- message.content }}{{- '\\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


class TinyModelSpec(BaseModel):
    """The tiny model's size: small enough to build in seconds on a CPU and to train on any GPU."""

    vocab_size: int = 2048
    hidden_size: int = 128
    intermediate_size: int = 256
    num_hidden_layers: int = 2
    num_attention_heads: int = 2  # a head size of 64, which every attention backend of vLLM takes
    num_key_value_heads: int = 1
    max_position_embeddings: int = 8192
    seed: int = 0


def corpus(texts: Iterable[str]) -> list[str]:
    """What the tokenizer is trained on: the texts given (task questions, tool schemas) and the prompt's own."""
    return [SYSTEM_PROMPT, CHAT_TEMPLATE, json.dumps({"name": "tool", "arguments": {"id": 1}}), *texts]


def build_tokenizer(texts: Iterable[str], out: Path, vocab_size: int = 2048):
    """A byte-level BPE tokenizer trained on `texts`, with Qwen's chat special tokens and template, saved to `out`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(texts), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token=None, unk_token=None
    )
    fast.add_special_tokens({"additional_special_tokens": ["<|im_start|>"]})
    fast.add_tokens(ADDED_TOKENS)
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)
    return fast


def build_tiny_model(texts: Iterable[str], out: str | Path, spec: TinyModelSpec | None = None) -> Path:
    """A randomly initialised Qwen2 causal LM with a locally trained tokenizer, saved as a Hugging Face directory
    that verl (and vLLM) load by path."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    spec = spec or TinyModelSpec()
    out = Path(out)
    tokenizer = build_tokenizer(texts, out, spec.vocab_size)
    torch.manual_seed(spec.seed)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_hidden_layers,
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads,
        max_position_embeddings=spec.max_position_embeddings,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,
        torch_dtype="float32",
    )
    Qwen2ForCausalLM(config).save_pretrained(out)
    return out
