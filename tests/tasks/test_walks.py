"""Graph-walk tasks on real catalog bundles: yield, chain length, replay stability, solvability, knobs, determinism,
and rewards that writes beyond the gold's, echoes and near misses do not get."""

from __future__ import annotations

import json
import random
import statistics
from pathlib import Path

import pytest

from factory.envs.bundle import Bundle
from factory.envs.runtime import Environment
from factory.graphs import build_tool_graph
from factory.models import Snapshot, Task, ToolCall
from factory.tasks.difficulty import Knobs, knobs_for
from factory.tasks.walks import synthesize_graph_tasks
from factory.verify.answers import answer_contains
from factory.verify.rubric import rubric_verdict
from factory.verify.state import canonical_state_hash

TOPICS = ("online-shop", "retail-banking", "flight-booking")
N = 12


class Env:
    """A built bundle opened for serving, its tool graph, its seed state and the default tasks (seed 0)."""

    def __init__(self, path: Path):
        self.bundle = Bundle.open(path)
        self.env = Environment.open(path)
        self.graph = build_tool_graph(self.env.spec)
        with self.env.session() as s:
            self.seed: Snapshot = s.snapshot()
        self.tasks = self.synthesize(0)

    def synthesize(self, seed: int, n: int = N, knobs: Knobs | None = None) -> list[Task]:
        return synthesize_graph_tasks(self.bundle, self.env.session, self.graph, random.Random(seed), n, knobs)

    def run(self, gold: list[ToolCall]) -> tuple[list[object], Snapshot]:
        with self.env.session() as s:
            results = []
            for c in gold:
                r = s.call(c.tool, c.args)
                assert r.ok, (c, r.error)
                results.append(r.value)
            return results, s.snapshot()


@pytest.fixture(scope="module")
def envs(catalog_bundles) -> dict[str, Env]:
    out = {topic: Env(catalog_bundles.kept(topic)) for topic in TOPICS}
    yield out
    for e in out.values():
        e.env.close()


def all_tasks(envs: dict[str, Env]) -> list[tuple[Env, Task]]:
    return [(e, t) for e in envs.values() for t in e.tasks]


def test_yield_and_mean_chain_length(envs):
    for topic, e in envs.items():
        assert len(e.env.spec.tools) >= 5
        assert len(e.tasks) >= 10, topic
        assert statistics.mean(len(t.gold) for t in e.tasks) >= 4, topic
        assert len({t.id for t in e.tasks}) == len(e.tasks)
        assert all(t.kind == "graph" and t.env_id == e.env.spec.id and t.verifier is None for t in e.tasks)


def test_gold_replay_reproduces_answer_and_state(envs):
    """Re-executing the gold in a fresh session passes the rubric with the recorded answer; a no-op run fails."""
    for e, t in all_tasks(envs):
        assert isinstance(t.gold, list) and t.rubric
        _, final = e.run(t.gold)
        answer = json.dumps(t.answer) if t.answer is not None else ""
        verdict = rubric_verdict(t.rubric, e.seed, final, answer)
        assert verdict.passed, (t.question, [c for c in verdict.checks if not c.passed])
        noop = rubric_verdict(t.rubric, e.seed, e.seed, "")
        assert not noop.passed, t.question
        if t.mutates:
            answer_only = rubric_verdict(t.rubric, e.seed, e.seed, answer)
            assert not answer_only.passed, t.question


def test_answer_values_come_from_the_chain(envs):
    for e, t in all_tasks(envs):
        values = list(t.answer.values()) if isinstance(t.answer, dict) else [t.answer]
        if t.answer is None:
            assert t.mutates  # a pure read chain always asks for something
            continue
        results, _ = e.run(t.gold)
        flat = json.dumps(results)
        for v in values:
            assert json.dumps(v) in flat or isinstance(v, float), (t.question, v)
            assert not answer_contains(t.question, v) or isinstance(v, int | float), (t.question, v)


def test_question_names_no_tool_and_writes_are_solvable(envs):
    for e, t in all_tasks(envs):
        low = t.question.lower()
        for name in e.env.tool_names:
            assert name.lower() not in low and name.replace("_", " ") not in low, (name, t.question)
        results, _ = e.run(t.gold)
        for i, c in enumerate(t.gold):
            if not e.env.spec.tool(c.tool).mutates:
                continue
            earlier = json.dumps(results[:i])
            for param, value in c.args.items():
                stated = answer_contains(t.question, value)
                assert stated or json.dumps(value) in earlier, (t.question, c, param)


def test_knobs_and_capabilities_recorded(envs):
    for e, t in all_tasks(envs):
        d = t.difficulty
        assert d.chain_length == len(t.gold) == t.gold_calls
        assert 0.0 <= d.weak_edge_share <= 1.0
        paged = any("offset" in c.args for c in t.gold)
        assert (d.pages > 1) == paged
        assert ("pagination" in t.capabilities) == paged
        assert not t.needs_pagination or paged
        writes = any(e.env.spec.tool(c.tool).mutates for c in t.gold)
        assert t.mutates == writes and ("mutation" in t.capabilities) == writes
        assert ("constraint" in t.capabilities) == bool(d.constraints)
        assert ("multi-hop" in t.capabilities) or len({c.tool for c in t.gold}) == 1
    seen = {cap for _, t in all_tasks(envs) for cap in t.capabilities}
    assert {"multi-hop", "mutation", "aggregation", "pagination"} <= seen


def test_deterministic_for_a_seed(envs):
    e = envs["online-shop"]
    again = e.synthesize(0)
    assert [t.model_dump() for t in again] == [t.model_dump() for t in e.tasks]
    other = e.synthesize(1)
    assert [t.id for t in other] != [t.id for t in e.tasks]


def test_pagination_knob_reads_several_pages(envs):
    e = envs["retail-banking"]
    tasks = e.synthesize(3, n=4, knobs=Knobs(chain_length=5, pages=2))
    assert len(tasks) >= 3
    for t in tasks:
        assert t.difficulty.pages >= 2 and "pagination" in t.capabilities and t.needs_pagination
        assert any(c.args.get("offset") for c in t.gold)
        assert t.gold_calls >= 4


def test_knobs_make_tasks_longer_never_shorter(envs):
    """Setting chain_length/pages raises the mean gold calls and pages over the easy preset."""
    for topic in ("online-shop", "retail-banking"):
        e = envs[topic]
        easy = e.synthesize(11, n=8, knobs=knobs_for("easy"))
        medium = e.synthesize(11, n=8, knobs=knobs_for("medium"))
        hard = e.synthesize(11, n=8, knobs=knobs_for("hard"))
        calls = [statistics.mean(t.gold_calls for t in ts) for ts in (easy, medium, hard)]
        pages = [statistics.mean(t.difficulty.pages for t in ts) for ts in (easy, medium, hard)]
        assert calls[0] < calls[1] < calls[2], (topic, calls)
        assert pages[0] <= pages[1] <= pages[2] and pages[0] < pages[2], (topic, pages)
        assert calls[1] >= 6 and calls[2] >= 12, (topic, calls)
        assert sum(t.gold_calls > 20 for t in hard) >= len(hard) / 4, topic


def test_constraint_knob_is_recorded(envs):
    e = envs["online-shop"]
    tasks = e.synthesize(5, n=3, knobs=Knobs(chain_length=4, constraints=2))
    assert tasks
    for t in tasks:
        assert len(t.difficulty.constraints) >= 2 and "constraint" in t.capabilities


def test_obscured_knob_never_names_a_record(envs):
    e = envs["online-shop"]
    tasks = e.synthesize(7, n=4, knobs=Knobs(chain_length=4, obscured=True))
    assert tasks
    for t in tasks:
        assert t.difficulty.obscured
        assert '"' not in t.question or all(
            not any(r.get("name") and f'"{r["name"]}"' in t.question for r in rows) for rows in e.seed.tables.values()
        ), t.question


def sprays(e: Env, t: Task) -> tuple[list[ToolCall], list[ToolCall]]:
    """(the gold plus each write made to every other row of its table, each write made to every row without
    the reads); a create is made once more."""
    plus: list[ToolCall] = list(t.gold)
    sprayed: list[ToolCall] = []
    for c in t.gold:
        tool = e.env.spec.tool(c.tool)
        if not tool.mutates or tool.operation is None:
            continue
        entity = next(x for x in e.env.spec.entities if x.name == tool.operation.entity)
        param = next((p for p in (f"{entity.name}_id", entity.primary_key) if p in c.args), None)
        if param is None:
            plus.append(c)
            sprayed += [c, c]
            continue
        ids = [r[entity.primary_key] for r in e.seed.tables[entity.table]]
        plus += [ToolCall(tool=c.tool, args={**c.args, param: i}) for i in ids if i != c.args[param]]
        sprayed += [ToolCall(tool=c.tool, args={**c.args, param: i}) for i in ids]
    return plus, sprayed


def replayed(e: Env, calls: list[ToolCall]) -> Snapshot:
    """The end state of `calls`, failed calls included (they change nothing)."""
    with e.env.session() as s:
        for c in calls:
            s.call(c.tool, c.args)
        return s.snapshot()


def test_every_task_checks_the_whole_end_state(envs):
    for _, t in all_tasks(envs):
        end_states = [c for c in t.rubric if c.kind == "end_state"]
        assert len(end_states) == 1, t.question
        assert bool(end_states[0].value["tables"]) == t.mutates, t.question


def test_writes_beyond_the_gold_fail(envs):
    attacks = 0
    for e, t in all_tasks(envs):
        if not t.mutates:
            continue
        answer = json.dumps(t.answer) if t.answer is not None else ""
        _, gold_final = e.run(t.gold)
        gold_hash = canonical_state_hash(gold_final, e.env.spec.bookkeeping)
        for calls in sprays(e, t):
            final = replayed(e, calls)
            if canonical_state_hash(final, e.env.spec.bookkeeping) == gold_hash:
                continue  # every extra write failed (a unique email, no stock left): nothing to catch
            attacks += 1
            assert not rubric_verdict(t.rubric, e.seed, final, answer).passed, (t.question, len(calls))
    assert attacks >= 20


def test_a_read_only_task_fails_when_the_state_changed(envs):
    read_only = [(e, t) for e, t in all_tasks(envs) if not t.mutates]
    assert read_only
    for e, t in read_only:
        _, final = e.run(t.gold)
        table = next(name for name, rows in sorted(final.tables.items()) if rows)
        changed = {**final.tables, table: final.tables[table][1:]}
        answer = json.dumps(t.answer)
        assert rubric_verdict(t.rubric, e.seed, final, answer).passed
        assert not rubric_verdict(t.rubric, e.seed, Snapshot(tables=changed), answer).passed, t.question


def test_echoing_the_question_fails(envs):
    for e, t in all_tasks(envs):
        assert not rubric_verdict(t.rubric, e.seed, e.seed, t.question).passed, t.question


def test_answer_checks_name_the_near_misses(envs):
    ids = counts = 0
    for e, t in all_tasks(envs):
        answer = json.dumps(t.answer)
        for c in t.rubric:
            if c.kind != "answer_contains":
                continue
            assert c.value not in c.competitors, (t.question, c.value)
            assert not any(answer_contains(t.question, x) or answer_contains(answer, x) for x in c.competitors)
            if c.description.endswith(" id"):  # a created row's id: the table's other ids compete
                ids += 1
                table = next(x.table for x in e.env.spec.entities if c.description == f"answer states the {x.name} id")
                _, final = e.run(t.gold)
                others = {r["id"] for r in final.tables[table]} - {c.value}
                assert set(c.competitors) == {x for x in others if not answer_contains(t.question, x)}
            if c.description == "answer states the count":
                counts += 1
                neighbours = {c.value - 1, c.value + 1}
                assert {x for x in neighbours if not answer_contains(t.question, x)} <= set(c.competitors)
    assert counts  # goal tasks make no rows, so a created id is seldom asked (ids may be 0)
