"""The agent loop verl runs for our rows: verl's tool agent loop, judged by the task's verifier on the final state.

Before the first generation it opens the trajectory's session (`training.episodes`), keyed by the request id verl
makes for the trajectory; after `ToolAgentLoop.run` it takes the final state, runs the task's verifier on it
(`factory.verify.scoring.judge`, the same call our rollout engine makes), sets `reward_score` (so verl skips its
separate reward step and needs no shared filesystem) and closes the session. Environment faults (a crashed or
timed-out tool process, a state that cannot be read) are recorded apart from the errors tools return to the agent
on purpose, in `extra_fields` and as `reward_extra_info` metrics.

`compute_score` is the custom-reward path (`reward.custom_reward_function`): it replays the calls of the decoded
response in a fresh session from the seed state and judges that, for runs that use verl's single-turn or reward
workers instead of this loop.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopOutput, register
from verl.experimental.agent_loop.tool_agent_loop import AgentData, AgentState, ToolAgentLoop

from factory.agents.rollouts import fault
from factory.models import Model, Task, ToolCall, Trajectory, Verdict
from factory.verify.scoring import judge, rubric_reward_setting, score_trajectory
from training import episodes
from training.dataset import AGENT_NAME


class EpisodeRecord(Model):
    """What the loop records of a trajectory besides its reward."""

    task_id: str
    passed: bool
    reward: float
    final_answer: str | None = None
    tool_calls: int = 0
    env_errors: list[str] = []
    agent_errors: list[str] = []


def final_answer(messages: list[dict[str, Any]], special_tokens: Sequence[str] = ()) -> str | None:
    """The policy's final answer: the last assistant message when it calls no tool (None otherwise), without the
    special tokens the decoded generation still carries (its end-of-turn token)."""
    if not messages or messages[-1].get("role") != "assistant" or messages[-1].get("tool_calls"):
        return None
    content = messages[-1].get("content")
    text = content if isinstance(content, str) else ""
    for token in special_tokens:
        text = text.replace(token, "")
    return text.strip() or None


@register(AGENT_NAME)
class FactoryAgentLoop(ToolAgentLoop):
    """verl's tool agent loop on one of our tasks, rewarded by the task's verifier."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._request_id: str | None = None
        self._agent_data: AgentData | None = None
        self._pending: tuple[str, Task] | None = None

    def _make_request_id(self, priority: int, full_determinism: bool) -> str:  # type: ignore[override]
        """verl's request id, made unique (deterministic ids repeat across a batch), with the episode opened
        under it."""
        request_id = f"{ToolAgentLoop._make_request_id(priority, full_determinism)}-{uuid4().hex[:12]}"
        bundle, task = self._pending  # type: ignore[misc]  # set by run() before verl asks for the id
        episodes.open_episode(request_id, bundle, task)
        self._request_id = request_id
        return request_id

    async def _handle_pending_state(self, agent_data: AgentData, sampling_params: dict[str, Any]) -> AgentState:
        self._agent_data = agent_data
        return await super()._handle_pending_state(agent_data, sampling_params)

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        extra_info = kwargs.get("extra_info") or {}
        task = Task.model_validate_json(extra_info["task"])
        self._pending = (extra_info["bundle"], task)
        try:
            output = await super().run(sampling_params, **kwargs)
            record = await asyncio.get_running_loop().run_in_executor(None, self._judge, task)
        finally:
            if self._request_id is not None:
                episodes.close_episode(self._request_id)
        output.reward_score = record.reward
        output.extra_fields["factory_episode"] = record.model_dump(mode="json")
        output.extra_fields["reward_extra_info"] = {
            "passed": float(record.passed),
            "env_error": float(bool(record.env_errors)),
            "agent_errors": float(len(record.agent_errors)),
        }
        return output

    def _judge(self, task: Task) -> EpisodeRecord:
        """The verifier's verdict on the trajectory's final state; a state that cannot be read is an environment
        fault and pays nothing."""
        ep = episodes.episode(self._request_id or "")
        special = getattr(self.tokenizer, "all_special_tokens", [])
        answer = final_answer(self._agent_data.messages if self._agent_data else [], special)
        env_errors = [fault(c, r) for c, r in ep.executed if not r.ok and r.env_error]
        agent_errors = [fault(c, r) for c, r in ep.executed if not r.ok and not r.env_error]
        try:
            verdict = judge(task, ep.initial, ep.session.snapshot(), answer, rubric_reward_setting())
        except Exception as e:  # the environment, not the policy: recorded as such
            env_errors.append(f"verifier: {type(e).__name__}: {e}")
            verdict = Verdict(passed=False, score=0.0)
        return EpisodeRecord(
            task_id=task.id,
            passed=verdict.passed,
            reward=verdict.score,
            final_answer=answer,
            tool_calls=len(ep.executed),
            env_errors=env_errors,
            agent_errors=agent_errors,
        )


TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
AFTER_LAST_TURN = re.compile(r"(?:</tool_call>|</tool_response>)(?!.*(?:</tool_call>|</tool_response>))", re.DOTALL)


def parse_response(solution_str: str) -> Trajectory:
    """The tool calls (hermes `<tool_call>` JSON) and the final answer (the text after the last call or result,
    without a leading role line) of a decoded response."""
    calls = []
    for raw in TOOL_CALL.findall(solution_str):
        try:
            data = json.loads(raw)
            calls.append(ToolCall(tool=data["name"], args=data.get("arguments") or {}))
        except (ValueError, KeyError, TypeError):
            continue
    tail = AFTER_LAST_TURN.split(solution_str)[-1] if calls else solution_str
    lines = [line for line in tail.strip().splitlines() if line.strip()]
    if lines and lines[0].strip() in ("assistant", "<|im_start|>assistant"):
        lines = lines[1:]
    answer = "\n".join(lines).replace("<|im_end|>", "").strip()
    return Trajectory(tool_calls=calls, final_answer=answer or None)


def compute_score(
    data_source: str, solution_str: str, ground_truth: str, extra_info: dict[str, Any] | None = None, **kwargs: Any
) -> dict[str, Any]:
    """verl's custom reward function: the response's calls replayed from the seed state of the row's bundle and
    judged by the task (`ground_truth` is the task's JSON; `extra_info.bundle` its environment)."""
    task = Task.model_validate_json(ground_truth)
    bundle = (extra_info or {}).get("bundle")
    if not bundle:
        raise ValueError(f"{data_source}: the row's extra_info names no bundle to replay the calls in")
    trajectory = parse_response(solution_str)
    verdict = score_trajectory(bundle, task, trajectory, session_factory=episodes.environment(bundle).session)
    return {"score": verdict.score, "passed": float(verdict.passed), "tool_calls": float(len(trajectory.tool_calls))}
