"""The verl tool adapter: one `BaseTool` per tool name, calling it in the trajectory's session of our runtime.

A dataset row's `extra_info.tool_selection` picks which of the registered tools its policy sees; the call goes to
the session the agent loop opened for the trajectory (`training.episodes`, keyed by `agent_data.request_id`),
whose tool code runs in a sandbox process. The result reaches the policy the way our own LLM policy reads it
(`factory.agents.policies.result_text`), cut to `result_chars` (verl's own cut, 256 characters by default, is set
above it in the config).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from factory.agents.policies import result_text
from factory.store import write_text_atomic
from training import episodes
from training.dataset import RegisteredTool

DEFAULT_RESULT_CHARS = 4000


class FactoryTool(BaseTool):
    """A tool of our environments. Its config: `tool`, the environment's name for it (the registered name may be
    qualified by the environment), and `result_chars`, the most characters of a result the policy reads."""

    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema):
        super().__init__(config, tool_schema)
        self.tool = str(config.get("tool") or self.name)
        self.result_chars = int(config.get("result_chars", DEFAULT_RESULT_CHARS))

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[ToolResponse, float, dict]:
        agent_data = kwargs["agent_data"]
        ep = episodes.episode(agent_data.request_id)
        result = await asyncio.get_running_loop().run_in_executor(None, ep.call, self.tool, dict(parameters))
        metrics = {"ok": result.ok, "env_error": result.env_error, "wall_ms": result.wall_ms}
        return ToolResponse(text=result_text(result, self.result_chars)), 0.0, metrics


def tool_config(registry: Mapping[str, RegisteredTool], result_chars: int = DEFAULT_RESULT_CHARS) -> dict[str, Any]:
    """verl's tool config: every registered name once, each a `FactoryTool` with its OpenAI schema."""
    return {
        "tools": [
            {
                "class_name": f"{FactoryTool.__module__}.{FactoryTool.__qualname__}",
                "config": {"type": "native", "tool": t.tool, "result_chars": result_chars},
                "tool_schema": t.schema_,
            }
            for _, t in sorted(registry.items())
        ]
    }


def write_tool_config(registry: Mapping[str, RegisteredTool], path: str | Path, result_chars: int) -> Path:
    path = Path(path)
    write_text_atomic(path, yaml.safe_dump(tool_config(registry, result_chars), sort_keys=False))
    return path
