"""The code-verifier contract: results validated, garbage and faults become failed verdicts."""

from __future__ import annotations

import math
import os
from typing import Any

import pytest

from factory.models import Snapshot, ToolError, ToolResult
from factory.sandbox import Limits, run_function
from factory.verify.code import (
    BATCH_SIZE,
    check_verifier_source,
    plain_state,
    run_code_verifier,
    run_code_verifier_each,
    verdict_from_result,
)

COUNT_ORDERS = """
def verify(initial, final, answer):
    added = len(final.get("orders", [])) - len(initial.get("orders", []))
    said = answer is not None and "2" in answer
    checks = [
        {"name": "one order added", "passed": added == 1, "detail": f"{added} added"},
        {"name": "answer names the order", "passed": said},
    ]
    ok = all(c["passed"] for c in checks)
    return {"passed": ok, "score": 1.0 if ok else 0.0, "checks": checks}
"""
INITIAL = Snapshot(tables={"orders": [{"id": 1, "total": 70}]})
FINAL = Snapshot(tables={"orders": [{"id": 1, "total": 70}, {"id": 2, "total": 30}]})


def in_process(source: str, entry: str, kwargs: dict[str, Any]) -> Any:
    """A trusted-code runner for tests of the contract (generated code goes through the sandbox)."""
    namespace: dict[str, Any] = {}
    exec(compile(source, "<verifier>", "exec"), namespace)
    return namespace[entry](**kwargs)


def sandboxed(source: str, entry: str, kwargs: dict[str, Any]) -> ToolResult:
    return run_function(source, entry, kwargs, Limits(timeout_s=1.0, cpu_s=2))


GARBAGE = [
    None,
    "passed",
    1,
    [True],
    {},
    {"passed": "yes"},
    {"passed": 1},
    {"passed": True, "score": 1.5},
    {"passed": True, "score": math.nan},
    {"passed": True, "score": True},
    {"passed": True, "score": "1"},
    {"passed": False, "score": -0.1},
    {"passed": True, "checks": "all good"},
    {"passed": True, "checks": [{"name": "x"}]},
    {"passed": True, "checks": [{"name": 3, "passed": True}]},
    {"passed": True, "checks": [{"name": "x", "passed": True, "detail": {"a": 1}}]},
    {"passed": True, "checks": [{"name": "x", "passed": True}] * 101},
    {"passed": True, "score": 0.5},  # inconsistent
    {"passed": True, "checks": [{"name": "x", "passed": False}]},  # inconsistent
    {"passed": False, "score": 1.0},  # inconsistent
]


@pytest.mark.parametrize("value", GARBAGE)
def test_garbage_becomes_a_failed_verdict(value):
    v = verdict_from_result(value)
    assert not v.passed and v.score == 0.0
    assert len(v.checks) == 1 and v.checks[0].name == "verifier_result" and v.checks[0].detail


def test_well_formed_results():
    v = verdict_from_result({"passed": True})
    assert v.passed and v.score == 1.0 and v.checks == []
    v = verdict_from_result({"passed": False, "score": 0.5, "checks": [{"name": "a", "passed": False, "detail": "d"}]})
    assert not v.passed and v.score == 0.5 and v.checks[0].detail == "d"
    v = verdict_from_result({"passed": True, "score": 1, "checks": [{"passed": True}], "extra": "ignored"})
    assert v.passed and v.checks[0].name == "check 0"
    long = verdict_from_result({"passed": False, "checks": [{"name": "n", "passed": False, "detail": "x" * 10_000}]})
    assert len(long.checks[0].detail) == 500


def test_source_contract():
    assert check_verifier_source(COUNT_ORDERS) == []
    assert check_verifier_source("def verify(initial, final, answer=None, **kw): pass") == []
    assert "syntax error" in check_verifier_source("def verify(:")[0]
    assert check_verifier_source("def check(initial, final, answer): pass")
    assert check_verifier_source("def verify(initial, final): pass") == ["verify() has no parameter 'answer'"]
    assert check_verifier_source("def verify(initial, final, answer, /): pass")
    v = run_code_verifier("def verify(:", INITIAL, FINAL, "x", runner=in_process)
    assert not v.passed and v.checks[0].name == "verifier_source"


def test_runs_with_a_runner():
    v = run_code_verifier(COUNT_ORDERS, INITIAL, FINAL, "Created order 2.", runner=in_process)
    assert v.passed and v.score == 1.0 and [c.name for c in v.checks] == ["one order added", "answer names the order"]
    v = run_code_verifier(COUNT_ORDERS, INITIAL, INITIAL, "Created order 2.", runner=in_process)
    assert not v.passed and v.checks[0].detail == "0 added"


def test_verifier_cannot_touch_the_callers_state():
    meddler = "def verify(initial, final, answer):\n    final['orders'].clear()\n    return {'passed': True}"
    tables = {"orders": [{"id": 1}]}
    assert run_code_verifier(meddler, tables, tables, None, runner=in_process).passed
    assert tables == {"orders": [{"id": 1}]}
    assert plain_state(Snapshot(tables=tables)) == tables


def test_runner_faults_become_failed_verdicts():
    raising = "def verify(initial, final, answer):\n    return 1 / 0"
    v = run_code_verifier(raising, INITIAL, FINAL, None, runner=in_process)
    assert not v.passed and v.checks[0].name == "verifier_error" and "ZeroDivisionError" in v.checks[0].detail

    def crashed(source: str, entry: str, kwargs: dict[str, Any]) -> ToolResult:
        return ToolResult(ok=False, error=ToolError(code="worker_crashed", message="killed"), env_error=True)

    v = run_code_verifier(COUNT_ORDERS, INITIAL, FINAL, None, runner=crashed)
    assert not v.passed and "sandbox fault: worker_crashed" in v.checks[0].detail


def test_sandbox_runner():
    v = run_code_verifier(COUNT_ORDERS, INITIAL, FINAL, "order 2", runner=sandboxed)
    assert v.passed and v.score == 1.0
    v = run_code_verifier(COUNT_ORDERS, INITIAL, FINAL, None, runner=sandboxed)
    assert not v.passed and [c.passed for c in v.checks] == [True, False]
    v = run_code_verifier(
        "def verify(initial, final, answer):\n    return {1, 2}", INITIAL, FINAL, None, runner=sandboxed
    )
    assert not v.passed and v.checks[0].name in ("verifier_result", "verifier_error")
    loop = "def verify(initial, final, answer):\n    while True:\n        pass"
    v = run_code_verifier(loop, INITIAL, FINAL, None, runner=sandboxed)
    assert not v.passed and "timeout" in v.checks[0].detail


def test_default_runner_is_the_sandbox():
    v = run_code_verifier(COUNT_ORDERS, INITIAL, FINAL, "order 2")
    assert v.passed
    pid = os.getpid()
    escape = f"import os\ndef verify(initial, final, answer):\n    return {{'passed': os.getpid() == {pid}}}"
    assert not run_code_verifier(escape, INITIAL, FINAL, None).passed  # it ran in another process


TOUCHY = """
def verify(initial, final, answer):
    if answer == "boom":
        raise ValueError("no")
    ok = answer == "2" and len(initial["orders"]) == 1 and len(final.get("orders", [])) == 2
    ok = ok and final["orders"][0]["total"] == 70
    ok = ok and initial["tags"][0]["labels"] == ["a"] == final["tags"][0]["labels"]
    initial["orders"].clear()  # a verifier that changes its input: the next case must not see it
    final["orders"][0]["total"] = -1  # nor a row it changed
    initial["tags"][0]["labels"].append("b")  # nor a nested value, in either state
    final["tags"][0]["labels"].append("c")
    return {"passed": ok}
"""
TAGS = [{"id": 1, "labels": ["a"]}]


def test_many_verdicts_in_few_calls_each_on_its_own_initial_state():
    calls = []

    def counting(source: str, entry: str, kwargs: dict[str, Any]) -> ToolResult:
        calls.append(entry)
        return sandboxed(source, entry, kwargs)

    answers = ["2", "boom", "3", *(["2"] * (BATCH_SIZE + 1))]
    initial = Snapshot(tables={**INITIAL.tables, "tags": TAGS})
    cases = [(Snapshot(tables={**FINAL.tables, "tags": TAGS}), a) for a in answers]
    verdicts = run_code_verifier_each(TOUCHY, initial, cases, runner=counting)
    assert len(calls) == 2  # BATCH_SIZE + 4 cases
    assert [v.passed for v in verdicts] == [a == "2" for a in answers]
    assert verdicts[1].checks[0].name == "verifier_error" and "ValueError: no" in verdicts[1].checks[0].detail
    one_by_one = [run_code_verifier(TOUCHY, initial, f, a, runner=sandboxed) for f, a in cases[:3]]
    assert [v.passed for v in one_by_one] == [v.passed for v in verdicts[:3]]
    assert verdicts[2] == one_by_one[2]
    assert INITIAL.tables["orders"] == [{"id": 1, "total": 70}] and TAGS == [{"id": 1, "labels": ["a"]}]


def test_a_case_that_faults_its_batch_fails_alone():
    """A dump answer that runs the verifier past its time limit faulted its whole batch, so the correct variants
    judged with it failed too; the batch is judged again case by case."""
    calls = []

    def hangs_on_dump(source: str, entry: str, kwargs: dict[str, Any]) -> ToolResult:
        calls.append(len(kwargs["cases"]))
        if any(answer == "dump" for _, answer in kwargs["cases"]):
            return ToolResult(ok=False, env_error=True, error=ToolError(code="timeout", message="ran past 10s"))
        return sandboxed(source, entry, kwargs)

    answers = ["2", "dump", "3", "2"]
    initial = Snapshot(tables={**INITIAL.tables, "tags": TAGS})
    cases = [(Snapshot(tables={**FINAL.tables, "tags": TAGS}), a) for a in answers]
    verdicts = run_code_verifier_each(TOUCHY, initial, cases, runner=hangs_on_dump)
    assert [v.passed for v in verdicts] == [True, False, False, True]
    assert [c.detail for c in verdicts[1].checks] == ["sandbox fault: timeout: ran past 10s"]
    assert not any("sandbox fault" in c.detail for c in verdicts[2].checks)  # "3" fails on its own answer
    assert calls == [4, 1, 1, 1, 1]


def test_a_batch_the_sandbox_cannot_run_fails_each_of_its_cases():
    broken = run_code_verifier_each(TOUCHY, INITIAL, [(FINAL, "2")] * 3, runner=lambda *a: ToolResult(ok=False))
    assert [v.passed for v in broken] == [False] * 3
    assert (
        run_code_verifier_each("def nope():\n    pass\n", INITIAL, [(FINAL, "2")], runner=sandboxed)[0].checks[0].name
        == "verifier_source"
    )
