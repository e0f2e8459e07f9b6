"""The solvability filter (Agent-World, task synthesis): keep a task only if it can be done as asked.

Checks, each with a reason code that `synthesize_tasks` counts:
- `gold_fails`: the gold executes without an error (a chain call that fails, a program that raises);
- `ungrounded_write`: every value a gold write uses appears in the question, in an earlier call's output
  or in the parameter's schema default (τ²-bench's gold writes used ids no read returned);
  a program may compute numbers and dates (the question states the rule), so only its other text values are
  held to this, and text that fills a template the question states ("ops+<ID>@example.com") is grounded;
- `no_state_change` / `unexpected_write`: a mutation task's gold changes the state, a read-only one's does not;
- `already_satisfied`: the verifier fails on a no-op (AWM shipped initial states that passed already);
- `unstable`: validation runs — `runs` attempts by a `Solver` in fresh sessions, of which at least
  `min_successes` pass and reach the same end state. Offline the solver re-executes the gold, which catches
  clock- and uuid-derived chains (half of the Agent-World release); an LLM ReAct solver plugs in
  through the same protocol.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol

from factory.envs.bundle import Bundle
from factory.graphs import GENERIC_PARAMS
from factory.models import EnvSpec, Task, ToolCall, ToolResult, Trajectory, Verdict
from factory.naming import singular
from factory.verify.answers import answer_contains, normalize_text, parse_date
from factory.verify.code import Runner
from factory.verify.rubric import RubricReward
from factory.verify.scoring import (
    GoldRun,
    SessionFactory,
    VerdictCache,
    gold_trajectory,
    judge,
    replay_calls,
    replay_writes,
    run_gold,
)
from factory.verify.state import canonical_state_hash, json_leaves, state_diff

VALIDATION_RUNS = 5
MIN_SUCCESSES = 2


class Solver(Protocol):
    """Attempts a task with tools; what it did is replayed and scored, never trusted."""

    name: str

    def solve(self, task: Task, session_factory: SessionFactory, rng: random.Random) -> Trajectory: ...


class GoldSolver:
    """The offline solver: the gold plan (a program runs again in a fresh session and re-reads its ids)."""

    name = "gold"

    def solve(self, task: Task, session_factory: SessionFactory, rng: random.Random) -> Trajectory:
        return gold_trajectory(task, session_factory)[0]


@dataclass
class FilterResult:
    kept: bool
    reasons: list[str] = field(default_factory=list)
    successes: int = 0
    runs: int = 0
    gold: GoldRun | None = None


def value_key(value: Any) -> tuple[str, Any] | None:
    """A comparable form of a scalar: numbers by value (5 == 5.0), text case-folded."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return ("n", Decimal(repr(value)).normalize()) if math.isfinite(value) else None
    if isinstance(value, str):
        return ("s", normalize_text(value))
    return None


def value_keys(value: Any) -> set[tuple[str, Any]]:
    """The comparable forms of every scalar inside a JSON value."""
    return {k for leaf in json_leaves(value) if (k := value_key(leaf)) is not None}


def _defaults(spec: EnvSpec, tool: str) -> dict[str, Any]:
    try:
        props = spec.tool(tool).parameters.get("properties", {})
    except KeyError:
        return {}
    return {k: p["default"] for k, p in props.items() if isinstance(p, dict) and "default" in p}


def _mutates(spec: EnvSpec, tool: str) -> bool:
    try:
        return spec.tool(tool).mutates
    except KeyError:
        return False


_PLACEHOLDER = re.compile(r"<[^<>\s]{1,40}>")  # a template's slot in a question: "ops+<ID>@example.com"


def _templates(question: str) -> list[re.Pattern[str]]:
    """The templates a question states (words around `<slot>` placeholders), as patterns a value may fill."""
    out = []
    for word in question.replace('"', " ").split():
        if _PLACEHOLDER.search(word):
            parts = _PLACEHOLDER.split(word.strip(".,;:()'"))
            if sum(len(p) for p in parts) < 3:
                continue  # a bare "<ID>" names the slot; it is no template of its own
            out.append(re.compile(r"\S+".join(re.escape(p) for p in parts), re.IGNORECASE))
    return out


def _computed(leaf: Any, numbers_free: bool, templates: list[re.Pattern[str]]) -> bool:
    """A value the task lets the solver compute: a number or a date a program works out (the question states the
    rule), or text filling a template the question states."""
    if numbers_free and isinstance(leaf, str) and parse_date(leaf) is not None:
        return True
    return isinstance(leaf, str) and any(t.fullmatch(leaf) for t in templates)


def is_prose(leaf: Any) -> bool:
    """Text of three words or more: a sentence someone worded, not an id, a name or a code."""
    return isinstance(leaf, str) and len(leaf.split()) >= 3


def _stated(question: str, leaf: Any) -> bool:
    """The question states the value, or names it in the singular (the "articles" collection of "an article")."""
    if answer_contains(question, leaf):
        return True
    one = singular(leaf) if isinstance(leaf, str) and leaf.isalpha() else leaf
    return one != leaf and answer_contains(question, one)


def checked_values(task: Task) -> set[tuple[str, Any]]:
    """Every value a rubric task's checks hold a run to (fields, rows, answers, the end state's changes and the
    keys of the rows it changes)."""
    leaves = [leaf for c in task.rubric for leaf in json_leaves([c.value, c.where])]
    leaves += [k for c in task.rubric if c.kind == "end_state" for k in _changed_keys(c.value)]
    return value_keys(leaves)


def _changed_keys(value: Any) -> list[str]:
    tables = value.get("tables", {}) if isinstance(value, dict) else {}
    return [k for t in tables.values() if isinstance(t, dict) for k in t.get("changed", {})]


@dataclass(frozen=True)
class Ungrounded:
    """A value a gold write passes that neither the question, an earlier output nor a schema default supplies."""

    call: int  # 1-based
    tool: str
    param: str
    value: Any

    def __str__(self) -> str:
        return f"call {self.call} {self.tool}: {self.param}={self.value!r} is in neither the question nor an output"


def ungrounded_values(
    spec: EnvSpec,
    question: str,
    calls: list[ToolCall],
    results: list[ToolResult],
    numbers_free: bool = False,
    checked: set[tuple[str, Any]] | None = None,
    writes: list[bool] | None = None,
) -> list[Ungrounded]:
    """Values of write calls that neither the question, an earlier output nor a schema default supplies; with
    `numbers_free` (program tasks) numbers and dates are the program's to compute. Given the `checked` values
    of the rubric, a value no check holds the run to (a cancel reason in the solver's own words, a timeout it
    picks) is the solver's to choose. `writes` says which calls changed the state (by default: those of tools
    that mutate)."""
    seen: set[tuple[str, Any]] = set()
    problems: list[Ungrounded] = []
    templates = _templates(question)
    for i, (call, result) in enumerate(zip(calls, results, strict=False)):
        if writes[i] if writes is not None else _mutates(spec, call.tool):
            defaults = _defaults(spec, call.tool)
            for name, value in call.args.items():
                if name in GENERIC_PARAMS:
                    continue
                for leaf in json_leaves(value):
                    k = value_key(leaf)
                    if k is None or (numbers_free and k[0] == "n") or k in seen:
                        continue
                    if _stated(question, leaf) or (name in defaults and value_key(defaults[name]) == k):
                        continue
                    if _computed(leaf, numbers_free, templates) or (checked is not None and k not in checked):
                        continue
                    problems.append(Ungrounded(call=i + 1, tool=call.tool, param=name, value=leaf))
        if result.ok:
            seen |= value_keys(result.value)
    return problems


def validation_runs(
    task: Task,
    session_factory: SessionFactory,
    solver: Solver,
    *,
    bookkeeping: list[str],
    keys: dict[str, str] | None = None,
    runs: int = VALIDATION_RUNS,
    seed: int = 0,
    rubric_reward: RubricReward = "all",
    runner: Runner | None = None,
    cache: VerdictCache | None = None,
) -> tuple[int, list[Verdict]]:
    """Score `runs` solver attempts; returns (passing runs that share the most common end state, verdicts)."""
    verdicts: list[Verdict] = []
    end_states: Counter[str] = Counter()
    for i in range(runs):
        rng = random.Random(f"{seed}:{task.id}:{i}")
        trajectory = solver.solve(task, session_factory, rng)
        replay = replay_calls(session_factory, trajectory.tool_calls)
        verdict = judge(task, replay.initial, replay.final, trajectory.final_answer, rubric_reward, runner, cache)
        verdicts.append(verdict)
        if verdict.passed:
            end_states[canonical_state_hash(replay.final, bookkeeping, since=replay.initial, keys=keys)] += 1
    consistent = end_states.most_common(1)[0][1] if end_states else 0
    return consistent, verdicts


def filter_task(
    bundle: Bundle,
    task: Task,
    session_factory: SessionFactory,
    *,
    solver: Solver | None = None,
    runs: int = VALIDATION_RUNS,
    min_successes: int = MIN_SUCCESSES,
    seed: int = 0,
    rubric_reward: RubricReward = "all",
    runner: Runner | None = None,
    cache: VerdictCache | None = None,
) -> FilterResult:
    """Run the solvability checks; a task that fails one is dropped with every reason found so far."""
    spec = bundle.spec
    gold = run_gold(task, session_factory)
    if gold.error:
        return FilterResult(kept=False, reasons=[f"gold_fails: {gold.error}"], gold=gold)
    calls = gold.trajectory.tool_calls
    writes = None
    if any(_mutates(spec, c.tool) for c in calls):
        _, writes = replay_writes(session_factory, calls, spec.bookkeeping, spec.primary_keys())
    reasons = [
        f"ungrounded_write: {p}"
        for p in ungrounded_values(
            spec,
            task.question,
            calls,
            gold.replay.results,
            numbers_free=task.kind == "program",
            checked=checked_values(task) if task.verifier is None else None,
            writes=writes,
        )
    ]
    initial, final = gold.replay.initial, gold.replay.final
    changed = not state_diff(initial, final, spec.bookkeeping, keys=spec.primary_keys()).empty
    if task.mutates and not changed:
        reasons.append("no_state_change: the gold of a mutation task leaves the state as it was")
    if not task.mutates and changed:
        reasons.append("unexpected_write: the gold of a read-only task changes the state")
    noop_answer = gold.trajectory.final_answer if task.mutates else None
    if judge(task, initial, initial, noop_answer, rubric_reward, runner, cache).passed:
        reasons.append("already_satisfied: the verifier passes on the initial state with no action")
    if reasons:
        return FilterResult(kept=False, reasons=reasons, gold=gold)
    consistent, verdicts = validation_runs(
        task,
        session_factory,
        solver or GoldSolver(),
        bookkeeping=spec.bookkeeping,
        keys=spec.primary_keys(),
        runs=runs,
        seed=seed,
        rubric_reward=rubric_reward,
        runner=runner,
        cache=cache,
    )
    if consistent < min_successes:
        passed = sum(v.passed for v in verdicts)
        reasons.append(
            f"unstable: {passed}/{runs} validation runs passed, {consistent} reached the same end state "
            f"(need {min_successes})"
        )
    return FilterResult(kept=not reasons, reasons=reasons, successes=consistent, runs=runs, gold=gold)
