"""Policies: what acts in an episode. An LLM over litellm, and scripted skill profiles that fail the way agents fail.

A policy sees the task's question, the environment's tools and one callable that runs a tool call in the
episode's session; it returns its final answer and its transcript (OpenAI chat messages, so every policy's
trajectory reads the same). Scripted profiles follow the gold (`Episode.gold`, the chain a program task's
gold makes included) and break it in one named way, so a diagnosis has a known gap to find:

- `oracle`: the gold, and its answer.
- `short-horizon`: gives up after `horizon` calls (2).
- `first-page`: never asks a listing for a later page.
- `greedy-restock`: orders double the quantity (the units it wants, whatever the supply or the budget allows).
- `no-recovery`: stops at the first tool error.
- `random`: seeded random calls with arguments from the tool schemas and values seen in results.
- `noop`: no call, no answer.

A profile that departed from the gold only states what it saw: a later call or an answer naming a value that
appears neither in the question nor in a result it received is dropped (it could not have known it).
"""

from __future__ import annotations

import json
import os
import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar, Literal

from pydantic import Field, SecretStr

from factory.envs.interface import contract_args, interface_schema
from factory.lexicon import QUANTITY_FIELDS
from factory.models import Model, ToolCall, ToolResult, ToolSpec, Trajectory
from factory.store import hash_value

CallTool = Callable[[ToolCall], ToolResult]
Message = dict[str, Any]

SYSTEM_PROMPT = (
    "You are an agent operating a service through its tools. Call tools to find what you need and to make the "
    "changes the user asks for; when you are done, reply with the final answer in plain text and no tool call."
)
OFFSET_PARAMS = frozenset({"offset", "skip", "start"})
PAGE_PARAMS = frozenset({"page", "page_number", "page_no", "pagenumber"})
CURSOR_PARAMS = frozenset({"after", "starting_after", "page_token", "next_token", "marker"})


class Episode(Model):
    """What a policy is given for one episode. `gold` is the task's gold as a trajectory, for scripted
    profiles only (None for policies that do not read it)."""

    question: str
    tools: list[ToolSpec]
    seed: int = 0
    gold: Trajectory | None = None


class EpisodeResult(Model):
    """What a policy did: its final answer (None: it gave none), its transcript, its calls and its turns."""

    final_answer: str | None = None
    messages: list[Message] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    turns: int = 0


class PolicyConfig(Model):
    max_turns: int = Field(default=64, ge=1)  # policy steps (one call or the final answer each) before it stops
    result_chars: int = Field(default=4000, ge=64)  # a tool result's JSON is cut to this in the transcript


class Policy(ABC):
    """One way of acting. `name` is the registry key; `policy_id` tells configurations apart."""

    name: ClassVar[str]
    needs_gold: ClassVar[bool] = False
    config_model: ClassVar[type[PolicyConfig]] = PolicyConfig

    def __init__(self, config: PolicyConfig | None = None, **values: Any):
        self.config = config if config is not None else self.config_model.model_validate(values)

    @property
    def policy_id(self) -> str:
        return f"{self.name}:{hash_value(self.identity())[:12]}"

    def identity(self) -> dict[str, Any]:
        """What makes this policy's rollouts what they are: its name and its configuration."""
        return {"name": self.name, "config": self.config.model_dump(mode="json")}

    @abstractmethod
    def run(self, episode: Episode, call: CallTool) -> EpisodeResult: ...


# --- transcripts -----------------------------------------------------------------------------


def result_text(result: ToolResult, limit: int) -> str:
    """A tool result as the agent reads it: the value's JSON, or the error object, cut to `limit` characters."""
    payload = result.value if result.ok else {"error": result.error.model_dump() if result.error else {}}
    text = json.dumps(payload, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= limit else text[:limit] + " ...(truncated)"


def assistant_calls(calls: list[tuple[str, ToolCall]], content: str | None = None) -> Message:
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": c.tool, "arguments": json.dumps(c.args)}}
            for cid, c in calls
        ],
    }


def tool_message(call_id: str, result: ToolResult, limit: int) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": result_text(result, limit)}


def opening(question: str) -> list[Message]:
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": question}]


# --- scripted profiles -----------------------------------------------------------------------


def _scalars(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _scalars(v)
    elif isinstance(value, list):
        for v in value:
            yield from _scalars(v)
    elif value is not None and not isinstance(value, bool):
        yield value


def _token(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip().lower()


class Knowledge:
    """The values an agent has seen: the question's text and every scalar of the results it received."""

    def __init__(self, question: str):
        self.question = question.lower()
        self.seen: set[str] = set()

    def add(self, result: ToolResult) -> None:
        if result.ok:
            self.seen.update(_token(v) for v in _scalars(result.value))

    def knows(self, values: Iterable[Any]) -> bool:
        return all(_token(v) in self.seen or _token(v) in self.question for v in values)


def _names(args: dict[str, Any]) -> list[str]:
    """The text values of a call's arguments (ids, names, states): what the agent must have read somewhere."""
    return [v for v in _scalars(args) if isinstance(v, str)]


def could_state(answer: str, knowledge: Knowledge) -> bool:
    """Whether an agent that departed from the gold could still give the gold's answer: every text value in it
    was seen, and it holds no number (a count or a total it would have computed over less than the gold read)."""
    try:
        values = list(_scalars(json.loads(answer)))
    except json.JSONDecodeError:
        values = [answer]
    return not any(isinstance(v, int | float) for v in values) and knowledge.knows(values)


def later_page(call: ToolCall, earlier: list[ToolCall]) -> bool:
    """Whether `call` asks a listing for a page after the first: a non-zero offset, a cursor, or a page number
    on a listing already asked with the same other arguments."""
    paging = {k for k in call.args if k.lower() in OFFSET_PARAMS | PAGE_PARAMS | CURSOR_PARAMS or "cursor" in k}
    for key in paging:
        value, lowered = call.args[key], key.lower()
        if lowered in OFFSET_PARAMS and isinstance(value, int | float) and value > 0:
            return True
        if (lowered in CURSOR_PARAMS or "cursor" in lowered) and value not in (None, ""):
            return True
    pages = {k for k in paging if k.lower() in PAGE_PARAMS}
    if not pages:
        return False
    rest = {k: v for k, v in call.args.items() if k not in paging}
    return any(
        e.tool == call.tool
        and {k: v for k, v in e.args.items() if k not in paging} == rest
        and any(e.args.get(k) != call.args[k] for k in pages)
        for e in earlier
    )


class GoldFollower(Policy):
    """Replays the gold one call a turn; subclasses change or skip a call (`adapt`) or stop (`stop_after`)."""

    needs_gold = True

    def adapt(self, call: ToolCall, earlier: list[ToolCall], tools: dict[str, ToolSpec]) -> ToolCall | None:
        """The call to make instead of the gold's `call` (None: skip it). The oracle makes it as it is."""
        return call

    def stop_after(self, result: ToolResult, made: int, remaining: int) -> bool:
        """Whether the policy gives up after this result, its `made`-th call with `remaining` gold calls still
        to go (it then answers nothing)."""
        return False

    def run(self, episode: Episode, call: CallTool) -> EpisodeResult:
        gold = episode.gold or Trajectory()
        tools = {t.name: t for t in episode.tools}
        messages, made = opening(episode.question), []
        knowledge, departed, gave_up, planned = Knowledge(episode.question), False, False, []
        for i, step in enumerate(gold.tool_calls):
            if len(made) >= self.config.max_turns - 1:
                gave_up = True
                break
            chosen = self.adapt(step, planned, tools)
            planned.append(step)
            if chosen is not None and departed and not knowledge.knows(_names(chosen.args)):
                chosen = None  # it never saw the value this call needs
            departed = departed or chosen != step
            if chosen is None:
                continue
            cid = f"call_{len(made)}"
            result = call(chosen)
            made.append(chosen)
            knowledge.add(result)
            messages += [assistant_calls([(cid, chosen)]), tool_message(cid, result, self.config.result_chars)]
            if self.stop_after(result, len(made), len(gold.tool_calls) - i - 1):
                gave_up = True
                break
        answer = None if gave_up else gold.final_answer
        if answer is not None and departed and not could_state(answer, knowledge):
            answer = None
        messages.append({"role": "assistant", "content": answer or ""})
        return EpisodeResult(final_answer=answer, messages=messages, tool_calls=made, turns=len(made) + 1)


class Oracle(GoldFollower):
    name = "oracle"


class HorizonConfig(PolicyConfig):
    horizon: int = Field(default=2, ge=1)


class ShortHorizon(GoldFollower):
    name = "short-horizon"
    config_model = HorizonConfig

    def stop_after(self, result: ToolResult, made: int, remaining: int) -> bool:
        return remaining > 0 and made >= self.config.horizon  # type: ignore[attr-defined]  # a HorizonConfig


class FirstPage(GoldFollower):
    name = "first-page"

    def adapt(self, call: ToolCall, earlier: list[ToolCall], tools: dict[str, ToolSpec]) -> ToolCall | None:
        return None if later_page(call, earlier) else call


class GreedyRestock(GoldFollower):
    """Orders the units it wants: the gold's quantity on a create call, doubled (what the supply or the budget
    cut it to is ignored)."""

    name = "greedy-restock"

    def adapt(self, call: ToolCall, earlier: list[ToolCall], tools: dict[str, ToolSpec]) -> ToolCall | None:
        spec = tools.get(call.tool)
        if spec is None or not spec.mutates or (spec.operation and spec.operation.kind != "create"):
            return call
        key = next((k for k in QUANTITY_FIELDS if isinstance(call.args.get(k), int) and call.args[k] > 0), None)
        return call if key is None else call.model_copy(update={"args": {**call.args, key: call.args[key] * 2}})


class NoRecovery(GoldFollower):
    name = "no-recovery"

    def stop_after(self, result: ToolResult, made: int, remaining: int) -> bool:
        return not result.ok


class RandomConfig(PolicyConfig):
    max_calls: int = Field(default=6, ge=0)


class RandomPolicy(Policy):
    """Random calls, seeded by the episode: a tool, then each required argument (and some optional ones) from
    values seen in results under the same name, the schema's enum, or a value of the schema's type."""

    name = "random"
    config_model = RandomConfig

    def run(self, episode: Episode, call: CallTool) -> EpisodeResult:
        rng = random.Random(f"random:{episode.seed}")
        messages, made = opening(episode.question), []
        seen: dict[str, list[Any]] = {}
        calls = min(rng.randint(1, max(1, self.config.max_calls)), self.config.max_turns - 1)  # type: ignore[attr-defined]
        for i in range(calls if episode.tools else 0):
            tool = rng.choice(episode.tools)
            chosen = ToolCall(tool=tool.name, args=_random_args(tool, seen, rng))
            result = call(chosen)
            made.append(chosen)
            if result.ok:
                _collect(result.value, seen)
            cid = f"call_{i}"
            messages += [assistant_calls([(cid, chosen)]), tool_message(cid, result, self.config.result_chars)]
        values = [v for vs in seen.values() for v in vs]
        answer = _token(rng.choice(values)) if values and rng.random() < 0.5 else None
        messages.append({"role": "assistant", "content": answer or ""})
        return EpisodeResult(final_answer=answer, messages=messages, tool_calls=made, turns=len(made) + 1)


def _collect(value: Any, seen: dict[str, list[Any]]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, dict | list):
                _collect(v, seen)
            elif v is not None and v not in seen.setdefault(k, []):
                seen[k].append(v)
    elif isinstance(value, list):
        for v in value:
            _collect(v, seen)


def _random_value(name: str, schema: dict[str, Any], seen: dict[str, list[Any]], rng: random.Random) -> Any:
    if seen.get(name) and rng.random() < 0.8:
        return rng.choice(seen[name])
    if schema.get("enum"):
        return rng.choice(schema["enum"])
    kind = schema.get("type")
    kind = rng.choice(kind) if isinstance(kind, list) else kind
    low = schema.get("minimum", 0)
    high = schema.get("maximum", low + 20)
    if kind == "integer":
        return rng.randint(int(low), max(int(low), int(high)))
    if kind == "number":
        return round(rng.uniform(float(low), max(float(low), float(high))), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        return [_random_value(name, schema.get("items") or {}, seen, rng)]
    if kind == "object":
        return {}
    return rng.choice(["a", "test", "1", name])


def _random_args(tool: ToolSpec, seen: dict[str, list[Any]], rng: random.Random) -> dict[str, Any]:
    props = tool.parameters.get("properties") or {}
    required = set(tool.parameters.get("required") or [])
    return {
        name: _random_value(name, schema if isinstance(schema, dict) else {}, seen, rng)
        for name, schema in props.items()
        if name in required or rng.random() < 0.3
    }


class Noop(Policy):
    name = "noop"

    def run(self, episode: Episode, call: CallTool) -> EpisodeResult:
        return EpisodeResult(messages=[*opening(episode.question), {"role": "assistant", "content": ""}], turns=1)


# --- the LLM policy --------------------------------------------------------------------------


SETTINGS_ENV = {
    "model": "FACTORY_POLICY_MODEL",
    "api_base": "FACTORY_POLICY_API_BASE",
    "api_key": "FACTORY_POLICY_API_KEY",
}


class LLMSettings(Model):
    """Where the model is: any OpenAI-compatible endpoint litellm reaches (a vLLM server holding a checkpoint
    works). `from_env` reads FACTORY_POLICY_MODEL, FACTORY_POLICY_API_BASE and FACTORY_POLICY_API_KEY."""

    model: str = "openai/policy"
    api_base: str | None = None
    api_key: SecretStr | None = None

    @classmethod
    def from_env(cls) -> LLMSettings:
        return cls.model_validate({k: os.environ[v] for k, v in SETTINGS_ENV.items() if os.environ.get(v)})


class LLMConfig(PolicyConfig):
    settings: LLMSettings = Field(default_factory=LLMSettings.from_env)
    history: Literal["full", "window"] = "full"
    window: int = Field(default=4, ge=1)  # turns kept besides the system prompt and the question (`window`)
    temperature: float = 0.0
    timeout_s: float = Field(default=120.0, gt=0)


def tool_schema(tool: ToolSpec) -> dict[str, Any]:
    """A tool in OpenAI function-calling format (what chat templates render and verl's tool config declares)."""
    function = {"name": tool.name, "description": tool.description, "parameters": interface_schema(tool)}
    return {"type": "function", "function": function}


def tool_schemas(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """The tools in OpenAI function-calling format."""
    return [tool_schema(t) for t in tools]


def history_view(messages: list[Message], history: Literal["full", "window"], window: int) -> list[Message]:
    """What the model is shown: everything (`full`), or the system prompt, the question and the last `window`
    turns (`window`; a turn is an assistant message and the tool results that answer it)."""
    if history == "full":
        return messages
    head, rest = messages[:2], messages[2:]
    starts = [i for i, m in enumerate(rest) if m.get("role") == "assistant"]
    return head + (rest[starts[-window] :] if len(starts) > window else rest)


def _parse_args(text: str | None) -> dict[str, Any] | str:
    """Arguments as the model wrote them, or why they are not a JSON object."""
    try:
        args = json.loads(text or "{}")
    except json.JSONDecodeError as e:
        return f"arguments are not JSON: {e}"
    return args if isinstance(args, dict) else "arguments must be a JSON object"


class LLMPolicy(Policy):
    """ReAct with native tool calling through `litellm.completion`: every tool call the model asks for runs, its
    result goes back as a `tool` message, until the model answers without a call or the turn limit ends it."""

    name = "llm"
    config_model = LLMConfig

    def identity(self) -> dict[str, Any]:
        return {"name": self.name, "config": self.config.model_dump(mode="json", exclude={"settings": {"api_key"}})}

    def run(self, episode: Episode, call: CallTool) -> EpisodeResult:
        import litellm  # slow import: only when a model is really asked

        config: LLMConfig = self.config  # type: ignore[assignment]  # config_model
        key = config.settings.api_key.get_secret_value() if config.settings.api_key else None
        messages, made, turns = opening(episode.question), [], 0
        tools = {t.name: t for t in episode.tools}  # calls come in the declared names: made holds the contract's
        for _ in range(config.max_turns):
            turns += 1
            response = litellm.completion(
                model=config.settings.model,
                api_base=config.settings.api_base,
                api_key=key,
                messages=history_view(messages, config.history, config.window),
                tools=tool_schemas(episode.tools) or None,
                temperature=config.temperature,
                seed=episode.seed,
                timeout=config.timeout_s,
            )
            reply = response.choices[0].message
            requested = list(reply.tool_calls or [])
            if not requested:
                messages.append({"role": "assistant", "content": reply.content or ""})
                return EpisodeResult(final_answer=reply.content, messages=messages, tool_calls=made, turns=turns)
            asked = [(tc.id, tc.function.name, _parse_args(tc.function.arguments)) for tc in requested]
            shown = [(cid, ToolCall(tool=n, args=a if isinstance(a, dict) else {})) for cid, n, a in asked]
            messages.append(assistant_calls(shown, reply.content))
            for cid, tool, args in asked:
                if isinstance(args, str):
                    messages.append({"role": "tool", "tool_call_id": cid, "content": json.dumps({"error": args})})
                    continue
                contract = contract_args(spec, args) if (spec := tools.get(tool)) else args
                if isinstance(contract, str):
                    messages.append({"role": "tool", "tool_call_id": cid, "content": json.dumps({"error": contract})})
                    continue
                chosen = ToolCall(tool=tool, args=contract)
                result = call(chosen)
                made.append(chosen)
                messages.append(tool_message(cid, result, config.result_chars))
        return EpisodeResult(messages=messages, tool_calls=made, turns=turns)


POLICIES: dict[str, type[Policy]] = {
    p.name: p for p in (Oracle, ShortHorizon, FirstPage, GreedyRestock, NoRecovery, RandomPolicy, Noop, LLMPolicy)
}


def make_policy(name: str, **config: Any) -> Policy:
    """The policy registered as `name`, configured with `config` (its config model's fields)."""
    if name not in POLICIES:
        raise ValueError(f"unknown policy {name!r}; known policies: {', '.join(sorted(POLICIES))}")
    return POLICIES[name](**config)
