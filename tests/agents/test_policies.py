"""Policies on catalog environments: the scripted skill profiles fail where their skill is needed and only there,
and the LLM policy runs end to end through litellm against a local fake OpenAI-compatible server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from factory.agents.policies import (
    POLICIES,
    Episode,
    LLMConfig,
    LLMPolicy,
    LLMSettings,
    history_view,
    later_page,
    make_policy,
)
from factory.agents.rollouts import RolloutRow, run_rollouts
from factory.envs.build import build_env
from factory.envs.runtime import Environment
from factory.models import Task, ToolCall, Trajectory
from factory.tasks.difficulty import knobs_for
from factory.tasks.synthesize import synthesize_tasks
from factory.verify.scoring import gold_trajectory


@pytest.fixture(scope="module")
def shop_tasks(shop_bundle) -> list[Task]:
    """Shop tasks, both kinds, with pages to read and refusals to recover from."""
    return synthesize_tasks(shop_bundle, n=4, seed=0, knobs=knobs_for("easy", recovery=1, pages=2)).tasks


@pytest.fixture(scope="module")
def golds(shop_bundle, shop_tasks) -> dict[str, Trajectory]:
    with Environment.open(shop_bundle) as env:
        return {t.id: gold_trajectory(t, env.session)[0] for t in shop_tasks}


@pytest.fixture(scope="module")
def rollouts(shop_bundle, shop_tasks) -> dict[str, dict[str, RolloutRow]]:
    """Every scripted profile on every shop task, by policy name, then task id."""
    out = {}
    for name in sorted(set(POLICIES) - {"llm"}):
        rows = run_rollouts(shop_bundle, shop_tasks, make_policy(name), seed=0, workers=4)
        out[name] = {r.task_id: r for r in rows}
    return out


def test_oracle_scores_one_on_every_kept_task(shop_tasks, rollouts):
    assert len(shop_tasks) >= 3
    for t in shop_tasks:
        r = rollouts["oracle"][t.id]
        assert r.reward == 1.0 and r.verdict and r.verdict.passed, (t.id, r.verdict)
        assert r.error is None and not r.env_errors


def test_noop_and_random_score_zero_on_every_mutation_task(shop_tasks, rollouts):
    mutation = [t for t in shop_tasks if t.mutates]
    assert mutation, "the fixture has tasks whose gold writes"
    for name in ("noop", "random"):
        for t in mutation:
            assert rollouts[name][t.id].reward == 0.0, (name, t.id)
    assert all(not r.tool_calls and r.final_answer is None for r in rollouts["noop"].values())
    assert any(r.tool_calls for r in rollouts["random"].values())


def test_first_page_never_pages_and_fails_tasks_that_need_it(shop_tasks, golds, rollouts):
    paged = [
        t
        for t in shop_tasks
        if t.needs_pagination
        and any(later_page(c, golds[t.id].tool_calls[:i]) for i, c in enumerate(golds[t.id].tool_calls))
    ]
    assert paged, "the fixture has tasks whose gold must read a later page"
    for t in shop_tasks:
        calls = rollouts["first-page"][t.id].tool_calls
        assert not any(later_page(c, calls[:i]) for i, c in enumerate(calls)), t.id
    for t in paged:
        assert rollouts["first-page"][t.id].reward == 0.0, t.id
        assert rollouts["oracle"][t.id].reward == 1.0


def test_no_recovery_stops_at_the_first_refusal_and_fails(shop_tasks, rollouts):
    refused = [t for t in shop_tasks if t.refusals]
    assert refused, "the fixture has tasks whose gold meets a refusal and recovers"
    for t in refused:
        r = rollouts["no-recovery"][t.id]
        first = min(x.call for x in t.refusals)
        assert len(r.tool_calls) == first + 1 and r.agent_errors, t.id
        assert r.reward == 0.0 and r.final_answer is None, t.id


def test_short_horizon_gives_up_after_two_calls(shop_tasks, rollouts):
    long = [t for t in shop_tasks if t.gold_calls > 2]
    assert long
    for t in shop_tasks:
        assert len(rollouts["short-horizon"][t.id].tool_calls) <= 2
    for t in long:
        r = rollouts["short-horizon"][t.id]
        assert r.reward == 0.0 and r.final_answer is None, t.id


def test_greedy_restock_over_orders_and_fails_a_restock_task(catalog_bundles):
    bundle = catalog_bundles.kept("procurement")
    tasks = [
        t
        for t in synthesize_tasks(bundle, n=1, seed=0, kind="program", knobs=knobs_for("easy")).tasks
        if "constraint" in t.capabilities and t.mutates
    ]
    assert tasks, "procurement makes a constrained purchasing (restock) task"
    oracle = run_rollouts(bundle, tasks, make_policy("oracle"), seed=0)
    greedy = run_rollouts(bundle, tasks, make_policy("greedy-restock"), seed=0)
    for o, g in zip(oracle, greedy, strict=True):
        assert o.reward == 1.0 and g.reward == 0.0, o.task_id
        ordered = [(a, b) for a, b in zip(o.tool_calls, g.tool_calls, strict=False) if a != b]
        assert ordered and all(b.args.get("quantity") == 2 * a.args.get("quantity") for a, b in ordered)


def test_scripted_policies_are_deterministic_for_a_seed(shop_bundle, shop_tasks, rollouts):
    again = {r.task_id: r for r in run_rollouts(shop_bundle, shop_tasks, make_policy("random"), seed=0, workers=2)}
    for task_id, r in rollouts["random"].items():
        assert (again[task_id].tool_calls, again[task_id].messages) == (r.tool_calls, r.messages)
    other = run_rollouts(shop_bundle, shop_tasks, make_policy("random"), seed=1)
    assert [r.tool_calls for r in other] != [r.tool_calls for r in rollouts["random"].values()]


def test_make_policy_names_the_known_policies_and_checks_config():
    with pytest.raises(ValueError, match=r"unknown policy 'smart'.*first-page.*oracle"):
        make_policy("smart")
    assert make_policy("short-horizon", horizon=3).config.horizon == 3  # type: ignore[attr-defined]
    with pytest.raises(ValidationError):
        make_policy("oracle", horizon=3)
    assert make_policy("oracle").policy_id != make_policy("oracle", max_turns=5).policy_id


def test_later_page_reads_offsets_cursors_and_page_numbers():
    first = ToolCall(tool="list", args={"limit": 20, "page": 1})
    assert not later_page(ToolCall(tool="list", args={"limit": 20, "offset": 0}), [])
    assert later_page(ToolCall(tool="list", args={"limit": 20, "offset": 20}), [])
    assert later_page(ToolCall(tool="list", args={"cursor": "b2Zmc2V0OjIw"}), [])
    assert not later_page(first, [])
    assert later_page(ToolCall(tool="list", args={"limit": 20, "page": 2}), [first])
    assert not later_page(ToolCall(tool="list", args={"limit": 20, "page": 2, "status": "x"}), [first])


def test_llm_settings_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("FACTORY_POLICY_MODEL", "hosted_vllm/checkpoint-3")
    monkeypatch.setenv("FACTORY_POLICY_API_BASE", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("FACTORY_POLICY_API_KEY", "sk-secret")
    policy = make_policy("llm", history="window", window=2)
    settings = policy.config.settings  # type: ignore[attr-defined]
    assert (settings.model, settings.api_base) == ("hosted_vllm/checkpoint-3", "http://127.0.0.1:8000/v1")
    assert "sk-secret" not in json.dumps(policy.identity()) and "sk-secret" not in policy.policy_id
    monkeypatch.setenv("FACTORY_POLICY_MODEL", "hosted_vllm/checkpoint-4")
    assert make_policy("llm", history="window", window=2).policy_id != policy.policy_id


def test_history_window_keeps_the_system_prompt_the_question_and_the_last_turns():
    head = [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}]
    turns = []
    for i in range(4):
        turns += [{"role": "assistant", "content": f"a{i}"}, {"role": "tool", "content": f"t{i}"}]
    messages = head + turns
    assert history_view(messages, "full", 1) == messages
    assert history_view(messages, "window", 2) == head + turns[4:]
    assert history_view(head + turns[:2], "window", 2) == head + turns[:2]


# --- the LLM policy against a fake OpenAI-compatible server ------------------------------------------------


class FakeOpenAI:
    """A chat-completions endpoint on localhost answering with recorded responses, in order; it keeps the
    requests it got."""

    def __init__(self, replies: list[dict[str, Any]]):
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(body)
                reply = fake.replies.pop(0) if fake.replies else {"content": "out of replies"}
                data = json.dumps(completion(reply, len(fake.requests))).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"


def completion(reply: dict[str, Any], n: int) -> dict[str, Any]:
    """A chat.completion body: tool calls (`calls`, ToolCall list; `raw`, a tool name and its arguments' text as
    the model wrote them) or a final `content`."""
    asked = [(c.tool, json.dumps(c.args)) for c in reply.get("calls") or []] + (
        [reply["raw"]] if "raw" in reply else []
    )
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
    if asked:
        message["tool_calls"] = [
            {"id": f"call_{n}_{i}", "type": "function", "function": {"name": name, "arguments": args}}
            for i, (name, args) in enumerate(asked)
        ]
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 0,
        "model": "fake-policy",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if asked else "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


@pytest.fixture
def fake_openai(monkeypatch) -> Iterator[Any]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    started: list[FakeOpenAI] = []

    def start(replies: list[dict[str, Any]]) -> FakeOpenAI:
        fake = FakeOpenAI(replies)
        fake.thread.start()
        started.append(fake)
        return fake

    yield start
    for fake in started:
        fake.server.shutdown()
        fake.server.server_close()


def _llm(fake: FakeOpenAI, **config: Any) -> LLMPolicy:
    settings = LLMSettings(model="openai/fake-policy", api_base=fake.api_base, api_key="sk-test")
    return LLMPolicy(LLMConfig(settings=settings, **config))


def test_llm_policy_end_to_end_through_litellm(shop_bundle, shop_tasks, golds, fake_openai):
    task = next(t for t in shop_tasks if t.kind == "graph" and t.mutates)
    gold = golds[task.id]
    fake = fake_openai([*({"calls": [c]} for c in gold.tool_calls), {"content": gold.final_answer}])
    [row] = run_rollouts(shop_bundle, [task], _llm(fake, result_chars=200), seed=0)
    assert row.error is None, row.error
    assert row.tool_calls == gold.tool_calls and row.final_answer == gold.final_answer
    assert row.reward == 1.0 and row.turns == len(gold.tool_calls) + 1
    assert len(fake.requests) == len(gold.tool_calls) + 1
    first, second = fake.requests[0], fake.requests[1]
    assert {t["function"]["name"] for t in first["tools"]} >= {c.tool for c in gold.tool_calls}
    assert first["messages"][1] == {"role": "user", "content": task.question}
    result = second["messages"][-1]
    assert result["role"] == "tool" and result["tool_call_id"] == "call_1_0"
    assert len(result["content"]) <= 200 + len(" ...(truncated)")
    assert row.messages[-1] == {"role": "assistant", "content": gold.final_answer}


def test_llm_policy_window_and_turn_limit(shop_bundle, fake_openai):
    call = ToolCall(tool="list_products", args={"limit": 2})
    fake = fake_openai([{"calls": [call]}] * 5)
    policy = _llm(fake, history="window", window=1, max_turns=4)
    with Environment.open(shop_bundle) as env, env.session() as session:
        episode = Episode(question="What is there?", tools=env.spec.tools)
        out = policy_run(policy, episode, session)
    assert out.final_answer is None and out.turns == 4 and out.tool_calls == [call] * 4
    assert len(fake.requests) == 4
    for request in fake.requests[1:]:
        roles = [m["role"] for m in request["messages"]]
        assert roles == ["system", "user", "assistant", "tool"], roles
    assert len(out.messages) == 2 + 4 * 2, "the transcript keeps every turn; only the request is windowed"


def test_llm_policy_tells_the_model_about_arguments_that_are_not_json(shop_bundle, fake_openai):
    fake = fake_openai([{"raw": ("list_products", "{not json")}, {"content": "done"}])
    with Environment.open(shop_bundle) as env, env.session() as session:
        episode = Episode(question="What is there?", tools=env.spec.tools)
        out = policy_run(_llm(fake), episode, session)
    assert out.tool_calls == [] and out.final_answer == "done" and out.turns == 2
    told = fake.requests[1]["messages"][-1]
    assert told["role"] == "tool" and "not JSON" in json.loads(told["content"])["error"]


def policy_run(policy: LLMPolicy, episode: Episode, session: Any) -> Any:
    return policy.run(episode, lambda c: session.call(c.tool, c.args))


PETSTORE = Path(__file__).resolve().parents[3] / "shared" / "real" / "openapi" / "oai-v3.0-petstore-expanded.yaml"


@pytest.mark.skipif(not PETSTORE.is_file(), reason="../shared/real is not here")
def test_llm_policy_sees_and_calls_the_declared_names(tmp_path, fake_openai):
    """The document names the pet `id`; the model is shown `id`, calls with it, and the rollout records the
    contract's call; a call in the contract's name, which the model was never shown, is refused to it."""
    report = build_env(str(PETSTORE), tmp_path / "env")
    assert "find_pet_by_id" in report.kept_tools, report.reasons
    with Environment.open(tmp_path / "env") as env, env.session() as session:
        pet = session.snapshot().tables["pets"][0]
        calls = [ToolCall(tool="find_pet_by_id", args={"id": pet["id"]})]
        hidden = [ToolCall(tool="find_pet_by_id", args={"pet_id": pet["id"]})]
        fake = fake_openai([{"calls": calls}, {"calls": hidden}, {"content": pet["name"]}])
        episode = Episode(question="What is the pet called?", tools=env.spec.tools)
        out = policy_run(_llm(fake), episode, session)
    shown = next(t for t in fake.requests[0]["tools"] if t["function"]["name"] == "find_pet_by_id")
    assert set(shown["function"]["parameters"]["properties"]) == {"id"}
    assert out.tool_calls == [ToolCall(tool="find_pet_by_id", args={"pet_id": pet["id"]})]
    assert json.loads(fake.requests[1]["messages"][-1]["content"])["name"] == pet["name"]
    told = json.loads(fake.requests[2]["messages"][-1]["content"])
    assert "unknown parameter 'pet_id'" in told["error"]
