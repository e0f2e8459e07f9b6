"""Recovery in graph goals: at hard, some records' write is refused by the environment; the gold meets the refusal,
leaves the record as it is and reports its ID, and the verifier tells a run that checked from one that did not."""

from __future__ import annotations

import json
import random

import pytest

from factory.envs.bundle import Bundle
from factory.envs.runtime import Environment
from factory.graphs import build_tool_graph
from factory.models import Task, ToolCall
from factory.tasks.difficulty import knobs_for
from factory.tasks.walks import synthesize_graph_tasks
from factory.verify.answers import answer_contains
from factory.verify.audit import audit_task
from factory.verify.rubric import rubric_verdict
from factory.verify.scoring import replay_calls, run_gold

TOPICS = ("online-shop", "retail-banking", "procurement")
N = 6


@pytest.fixture(scope="module")
def worlds(catalog_bundles):
    out = {}
    envs = []
    for topic in TOPICS:
        path = catalog_bundles.kept(topic)
        env = Environment.open(path)
        envs.append(env)
        graph = build_tool_graph(env.spec)
        bundle = Bundle.open(path)
        hard = synthesize_graph_tasks(bundle, env.session, graph, random.Random(0), N, knobs_for("hard"))
        out[topic] = (bundle, env, hard)
    yield out
    for env in envs:
        env.close()


def _refused_key(task: Task) -> str | None:
    return next((k for k in task.answer if k.endswith(" ids refused")), None) if isinstance(task.answer, dict) else None


def _refused_ids(env: Environment, task: Task) -> list[str]:
    """The ids the refused gold calls were made for."""
    out = []
    for r in task.refusals:
        call = task.gold[r.call]
        entity = env.spec.tool(call.tool).operation.entity
        pk = next(e.primary_key for e in env.spec.entities if e.name == entity)
        out.append(next(v for p, v in call.args.items() if p in (f"{entity}_id", pk)))
    return out


def _without_ids(task: Task) -> str:
    """The gold's answer with the refused ids left out."""
    key = _refused_key(task)
    if key is not None:
        return json.dumps({k: v for k, v in task.answer.items() if k != key})
    return "Done: every one of them is handled."


def _verdict(env: Environment, task: Task, calls: list[ToolCall], answer: str):
    replay = replay_calls(env.session, calls)
    return rubric_verdict(task.rubric, replay.initial, replay.final, answer), replay


def test_most_hard_goals_meet_refusals_that_replay(worlds):
    for topic, (_, env, tasks) in worlds.items():
        assert len(tasks) >= N - 1, topic
        recovering = [t for t in tasks if t.difficulty.recovery >= 1]
        assert len(recovering) > len(tasks) / 2, topic
        for t in recovering:
            assert t.difficulty.recovery == len(t.refusals) and "recovery" in t.capabilities, t.question
            assert all(
                code in ("invalid_state", "invalid_transition") or code.startswith("insufficient_")
                for code in (r.code for r in t.refusals)
            ), t.refusals
            gold = run_gold(t, env.session)
            assert gold.error is None, (t.question, gold.error)
            for r in t.refusals:
                result = gold.replay.results[r.call]
                assert not result.ok and result.error.code == r.code
            # The question states the fallback, never which records will be refused.
            assert "refuse" in t.question.lower(), t.question
            ids = _refused_ids(env, t)
            assert not any(answer_contains(t.question, i) for i in ids), t.question
            assert all(answer_contains(json.dumps(t.answer), i) for i in ids), t.answer


def test_easy_and_medium_goals_meet_no_refusal(worlds):
    bundle, env, _ = worlds["online-shop"]
    graph = build_tool_graph(env.spec)
    for level in ("easy", "medium"):
        for t in synthesize_graph_tasks(bundle, env.session, graph, random.Random(1), 4, knobs_for(level)):
            assert not t.refusals and t.difficulty.recovery == 0 and "recovery" not in t.capabilities
            assert run_gold(t, env.session).error is None


def test_skipping_the_refused_call_passes_only_with_the_refused_ids(worlds):
    checked = 0
    for _, env, tasks in worlds.values():
        for t in tasks:
            if not t.refusals:
                continue
            checked += 1
            skipped = {r.call for r in t.refusals}
            calls = [c for i, c in enumerate(t.gold) if i not in skipped]
            gold_answer = json.dumps(t.answer)
            # Same end state as the gold: a run that read the statuses and left those records alone is fine ...
            verdict, _ = _verdict(env, t, calls, gold_answer)
            assert verdict.passed, (t.question, [c for c in verdict.checks if not c.passed])
            # ... but not one that does not say which were refused,
            assert not _verdict(env, t, calls, _without_ids(t))[0].passed, t.question
            assert not _verdict(env, t, list(t.gold), _without_ids(t))[0].passed, t.question
            # nor one that guesses: every record it went through named as refused, or one refused id missing.
            ids = _refused_ids(env, t)
            acted = [
                v
                for i, c in enumerate(t.gold)
                if env.spec.tool(c.tool).mutates and i not in skipped
                for p, v in c.args.items()
                if p.endswith("_id") or p == "id"
            ]
            key = _refused_key(t)
            guess = sorted({*ids, *acted})
            hedge = {**t.answer, key: guess} if key else guess
            assert not _verdict(env, t, calls, json.dumps(hedge))[0].passed, t.question
            if len(ids) > 1:
                short = {**t.answer, key: ids[1:]} if key else ids[1:]
                assert not _verdict(env, t, calls, json.dumps(short))[0].passed, t.question
    assert checked >= 4


def test_recovery_goals_pass_the_audit(worlds):
    for topic, (bundle, env, tasks) in worlds.items():
        recovering = [t for t in tasks if t.refusals][:2]
        for t in recovering:
            result = audit_task(bundle, t, env.session)
            assert result.kept, (topic, t.question, result.reasons)
