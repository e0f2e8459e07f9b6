"""Rubric verifiers: a list of declarative checks over the final state and the answer.

Trusted code (no generated source runs here), so it may run in the caller's process.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, Literal

from factory.models import CheckResult, RubricCheck, Snapshot, Verdict
from factory.verify.answers import answers_match, judge_answer
from factory.verify.program_verifier import state_checks
from factory.verify.state import Tables

RubricReward = Literal["all", "mean"]


def value_matches(expected: Any, actual: Any) -> bool:
    """A state value equals a rubric value: lenient like answers, and SQLite's 0/1 stand for booleans."""
    if isinstance(expected, list | dict) or isinstance(actual, list | dict):
        return answers_match(expected, actual)
    return _scalar_matches(expected, actual)


@lru_cache(maxsize=1 << 16, typed=True)
def _scalar_matches(expected: Any, actual: Any) -> bool:
    """value_matches for two scalars, remembered: a rubric's `where` is matched against every row of every
    state the audit judges, mostly the same values again (the lenient match parses numbers and dates)."""
    if isinstance(expected, bool) and isinstance(actual, int) and not isinstance(actual, bool) and actual in (0, 1):
        return bool(actual) is expected
    return answers_match(expected, actual)


def row_matches(row: Mapping[str, Any], where: Mapping[str, Any]) -> bool:
    return all(k in row and value_matches(v, row[k]) for k, v in where.items())


def _rows(state: Snapshot | Tables, table: str) -> Sequence[Mapping[str, Any]] | None:
    tables = state.tables if isinstance(state, Snapshot) else state
    return tables.get(table)


def _label(check: RubricCheck) -> str:
    if check.description:
        return check.description
    if check.kind == "end_state":
        return "the end state is the gold's, and nothing else changed"
    if check.kind == "answer_contains":
        return f"answer contains {json.dumps(check.value, default=str)}"
    where = json.dumps(check.where or {}, sort_keys=True, default=str)
    if check.kind == "field_equals":
        return f"{check.table} {where}: {check.field} == {json.dumps(check.value, default=str)}"
    return f"{check.kind} {check.table} {where}"


def run_check(
    check: RubricCheck, initial: Snapshot | Tables, final: Snapshot | Tables, answer: str | None
) -> CheckResult:
    """One check; a malformed check fails with a reason instead of raising (a rubric is generated data)."""
    name = _label(check)
    if check.kind == "answer_contains":
        if check.value is None:
            return CheckResult(name=name, passed=False, detail="check has no value")
        ok, why = judge_answer(check.value, answer, competitors=check.competitors)
        return CheckResult(name=name, passed=ok, detail=why)
    if check.kind == "end_state":
        return end_state_result(check, initial, final, name)
    if not check.table:
        return CheckResult(name=name, passed=False, detail=f"{check.kind} check names no table")
    rows = _rows(final, check.table)
    if rows is None:
        # A misspelled table must not make row_absent pass vacuously.
        return CheckResult(name=name, passed=False, detail=f"no table {check.table!r} in the final state")
    where = check.where or {}
    matching = [r for r in rows if row_matches(r, where)]
    before = [r for r in (_rows(initial, check.table) or []) if row_matches(r, where)]
    note = " (also in the initial state)" if before else ""
    if check.kind == "row_exists":
        ok = bool(matching)
        return CheckResult(name=name, passed=ok, detail=f"{len(matching)} matching rows{note}")
    if check.kind == "row_absent":
        ok = not matching
        return CheckResult(name=name, passed=ok, detail=f"{len(matching)} matching rows; {len(before)} initially")
    if not check.field:
        return CheckResult(name=name, passed=False, detail="field_equals check names no field")
    if not matching:
        return CheckResult(name=name, passed=False, detail="no row matches")
    wrong = [r.get(check.field) for r in matching if not value_matches(check.value, r.get(check.field))]
    ok = not wrong
    detail = f"{len(matching)} matching rows" if ok else f"{check.field} is {json.dumps(wrong[:3], default=str)}"
    return CheckResult(name=name, passed=ok, detail=detail)


def end_state_result(
    check: RubricCheck, initial: Snapshot | Tables, final: Snapshot | Tables, name: str
) -> CheckResult:
    """The diff from `initial` to `final` must be the gold's diff on every table (`check.value`: the program
    verifier's `tables`, `keys` and `ignore`), so extra writes fail as surely as missing ones. One comparison
    serves both task kinds: the program verifier's, run here in-process."""
    want = check.value
    shape = {"tables": dict, "keys": dict, "ignore": list}
    if not isinstance(want, dict) or not all(isinstance(want.get(k), t) for k, t in shape.items()):
        return CheckResult(name=name, passed=False, detail="end_state check holds no gold diff")
    before, after = _changed_or_wanted(_plain(initial), _plain(final), want["tables"])
    failed = [f"{c['name']}: {c['detail']}" for c in state_checks(want, before, after) if not c["passed"]]
    return CheckResult(name=name, passed=not failed, detail="; ".join(failed)[:400])


def _changed_or_wanted(
    initial: dict[str, list[dict[str, Any]]], final: dict[str, list[dict[str, Any]]], wanted: dict[str, Any]
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]]]:
    """Both states without the tables the gold leaves alone and that are the same rows object on both sides
    (factory.envs.runtime shares unchanged tables): they pass trivially, and comparing them costs the database."""
    keep = {t for t in set(initial) | set(final) if t in wanted or initial.get(t) is not final.get(t)}
    return {t: r for t, r in initial.items() if t in keep}, {t: r for t, r in final.items() if t in keep}


def _plain(state: Snapshot | Tables) -> dict[str, list[dict[str, Any]]]:
    if isinstance(state, Snapshot):
        return state.tables
    return {t: [dict(r) for r in rows] for t, rows in state.items()}


def rubric_verdict(
    checks: list[RubricCheck],
    initial: Snapshot | Tables,
    final: Snapshot | Tables,
    answer: str | None,
    reward: RubricReward = "all",
) -> Verdict:
    """Run every check. `passed` means all checks passed; `score` is 1/0 with reward="all" (the default)
    or the fraction passed with "mean". All-or-nothing is the default because a mean pays partial credit
    for tasks the agent did not do (a no-op still satisfies row_absent and "unchanged" checks), which RL
    learns to exploit. An empty rubric verifies nothing and fails."""
    if reward not in ("all", "mean"):
        raise ValueError(f"reward must be 'all' or 'mean', not {reward!r}")
    if not checks:
        return Verdict(passed=False, score=0.0, checks=[CheckResult(name="rubric", passed=False, detail="no checks")])
    results = [run_check(c, initial, final, answer) for c in checks]
    n_passed = sum(r.passed for r in results)
    passed = n_passed == len(results)
    score = (1.0 if passed else 0.0) if reward == "all" else n_passed / len(results)
    return Verdict(passed=passed, score=score, checks=results)
