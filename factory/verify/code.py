"""The code-verifier contract, and a trusted check of what untrusted verifier code returns.

A code verifier is Python source defining

    def verify(initial, final, answer) -> dict

where `initial` and `final` are plain `{table: [row dicts]}` and `answer` is the agent's final answer
(text or None). It returns `{"passed": bool, "score": float in [0, 1], "checks": [{"name", "passed",
"detail"}]}`; `score` defaults to 1.0/0.0 from `passed`, `checks` to none. The source is generated, so it
runs in the sandbox (the caller's `runner`), never in this process (AWM exec'd verifiers in-process with
full builtins and no timeout), and whatever comes back is validated here: garbage, an
exception or a sandbox fault becomes a failed Verdict with a check that says why, never an exception.
"""

from __future__ import annotations

import ast
import json
import marshal
import math
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from factory.models import CheckResult, Snapshot, ToolResult, Verdict
from factory.verify.state import Tables

ENTRY = "verify"
ARGUMENTS = ("initial", "final", "answer")
MAX_CHECKS = 100
MAX_TEXT = 500

Runner = Callable[[str, str, dict[str, Any]], Any]


def _failed(name: str, detail: str) -> Verdict:
    return Verdict(passed=False, score=0.0, checks=[CheckResult(name=name, passed=False, detail=detail[:MAX_TEXT])])


def check_verifier_source(source: str) -> list[str]:
    """Problems that make a source break the contract, found without running it."""
    return list(_source_problems(source))


@lru_cache(maxsize=256)
def _source_problems(source: str) -> tuple[str, ...]:
    """check_verifier_source, cached: the audit judges one task's verifier dozens of times."""
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        return (f"syntax error: {e.msg} (line {e.lineno})",)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == ENTRY:
            names = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
            missing = [a for a in ARGUMENTS if a not in names and node.args.kwarg is None]
            positional_only = [a.arg for a in node.args.posonlyargs if a.arg in ARGUMENTS]
            problems = [f"{ENTRY}() has no parameter {a!r}" for a in missing]
            problems += [f"{ENTRY}() takes {a!r} positionally only; it is passed by name" for a in positional_only]
            return tuple(problems)
    return (f"no top-level function {ENTRY}(initial, final, answer)",)


def _tables_of(state: Snapshot | Tables) -> Tables:
    return state.tables if isinstance(state, Snapshot) else state


def plain_state(state: Snapshot | Tables) -> dict[str, list[dict[str, Any]]]:
    """A deep, JSON-plain copy of a state: what a verifier receives (it cannot touch the caller's objects)."""
    tables = _tables_of(state)
    return json.loads(json.dumps({t: [dict(r) for r in rows] for t, rows in tables.items()}, default=str))


def _text(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{what} is {type(value).__name__}, not a string")
    return value[:MAX_TEXT]


def verdict_from_result(value: Any) -> Verdict:
    """Validate what a verifier returned. Only a well-formed, self-consistent result can pass:
    `passed` needs score 1 and no failed check, a failure needs a score below 1."""
    if not isinstance(value, dict):
        return _failed("verifier_result", f"verify() returned {type(value).__name__}, not a dict")
    passed = value.get("passed")
    if not isinstance(passed, bool):
        return _failed("verifier_result", f"'passed' must be a bool, got {type(passed).__name__}")
    score = value.get("score", 1.0 if passed else 0.0)
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score) or not 0 <= score <= 1:
        return _failed("verifier_result", f"'score' must be a number in [0, 1], got {str(score)[:50]!r}")
    raw_checks = value.get("checks", [])
    if not isinstance(raw_checks, list):
        return _failed("verifier_result", f"'checks' must be a list, got {type(raw_checks).__name__}")
    if len(raw_checks) > MAX_CHECKS:
        return _failed("verifier_result", f"{len(raw_checks)} checks; at most {MAX_CHECKS}")
    checks: list[CheckResult] = []
    for i, c in enumerate(raw_checks):
        if not isinstance(c, dict) or not isinstance(c.get("passed"), bool):
            return _failed("verifier_result", f"check {i} is not {{'name', 'passed': bool, 'detail'}}")
        try:
            name = _text(c.get("name"), f"check {i} name") or f"check {i}"
            detail = _text(c.get("detail"), f"check {i} detail")
        except ValueError as e:
            return _failed("verifier_result", str(e))
        checks.append(CheckResult(name=name, passed=c["passed"], detail=detail))
    if passed and (score != 1 or not all(c.passed for c in checks)):
        return _failed(
            "verifier_result",
            f"inconsistent: passed with score {score} and {sum(not c.passed for c in checks)} failed checks",
        )
    if not passed and score == 1:
        return _failed("verifier_result", "inconsistent: failed with score 1")
    return Verdict(passed=passed, score=float(score), checks=checks)


def default_runner() -> Runner:
    """The sandbox's run_function: generated code never runs in the orchestrator's process."""
    from factory.sandbox import run_function

    return run_function


def _run(runner: Runner | None, source: str, entry: str, kwargs: dict[str, Any]) -> tuple[Any, Verdict | None]:
    """`entry(**kwargs)` of `source` through the runner: its value, or the failed verdict that says why not."""
    run = runner or default_runner()
    try:
        value = run(source, entry, kwargs)
    except Exception as e:  # the runner's fault must not take the caller down
        return None, _failed("verifier_error", f"{type(e).__name__}: {e}")
    if isinstance(value, ToolResult):
        if not value.ok:
            err = value.error
            where = "sandbox fault" if value.env_error else "verifier raised"
            return None, _failed("verifier_error", f"{where}: {err.code}: {err.message}" if err else where)
        value = value.value
    return value, None


def run_code_verifier(
    source: str,
    initial: Snapshot | Tables,
    final: Snapshot | Tables,
    answer: Any,
    runner: Runner | None = None,
) -> Verdict:
    """Run a verifier's `verify(initial, final, answer)` through `runner` and validate its result.
    `runner(source, entry, kwargs)` returns the value, or a ToolResult as the sandbox does."""
    problems = check_verifier_source(source)
    if problems:
        return _failed("verifier_source", "; ".join(problems))
    kwargs = {"initial": plain_state(initial), "final": plain_state(final), "answer": answer}
    value, failed = _run(runner, source, ENTRY, kwargs)
    return failed or verdict_from_result(value)


BATCH_ENTRY = "__verify_each__"
BATCH_SIZE = 16  # verdicts per sandbox call: one start and one load of the verifier for all of them
_BATCH_SOURCE = f"""

def {BATCH_ENTRY}(initial, cases):
    import marshal as _marshal

    base = _marshal.loads(initial)
    flat = {{
        t: all(type(r) is dict and all(type(v) not in (list, dict) for v in r.values()) for r in rows)
        for t, rows in base.items()
    }}

    def fresh():
        return {{
            t: [r.copy() for r in rows] if flat[t] else _marshal.loads(_marshal.dumps(rows))
            for t, rows in base.items()
        }}

    out = []
    for change, answer in cases:
        changed, removed = _marshal.loads(change)
        final = fresh()
        for name in removed:
            final.pop(name, None)
        final.update(changed)
        try:
            out.append({{"ok": {ENTRY}(initial=fresh(), final=final, answer=answer)}})
        except Exception as e:
            out.append({{"raised": type(e).__name__ + ": " + str(e)}})
    return out
"""


def _change(initial: Tables, final: Tables) -> bytes:
    """What `final` changed from `initial`, as (tables that differ, tables removed), marshalled: a verdict's
    input costs the tables a run wrote, not the database (states share the lists of unchanged tables)."""
    changed = {t: rows for t, rows in final.items() if (was := initial.get(t)) is not rows and was != rows}
    return marshal.dumps((plain_state(changed), [t for t in initial if t not in final]))


def run_code_verifier_each(
    source: str,
    initial: Snapshot | Tables,
    cases: list[tuple[Snapshot | Tables, Any]],
    runner: Runner | None = None,
) -> list[Verdict]:
    """`run_code_verifier` for many (final, answer) pairs against one initial state, BATCH_SIZE per sandbox
    call. Each case gets its own copies of both states, so a verifier that changes its input cannot change
    the next verdict (rows of plain values are copied, a quarter of what unmarshalling the state again costs
    on an API-sized one); an exception fails only its case. A batch the sandbox cannot finish (a case past the
    time limit) is judged again case by case, so the fault fails only the cases that cause it."""
    problems = check_verifier_source(source)
    if problems:
        return [_failed("verifier_source", "; ".join(problems)) for _ in cases]
    before = _tables_of(initial)
    start = marshal.dumps(plain_state(before))
    verdicts: list[Verdict] = []
    for i in range(0, len(cases), BATCH_SIZE):
        batch = [[_change(before, _tables_of(final)), answer] for final, answer in cases[i : i + BATCH_SIZE]]
        verdicts += _judge_batch(runner, source, start, batch)
    return verdicts


def _judge_batch(runner: Runner | None, source: str, start: bytes, batch: list[list[Any]]) -> list[Verdict]:
    value, failed = _run(runner, source + _BATCH_SOURCE, BATCH_ENTRY, {"initial": start, "cases": batch})
    if failed is None and not (isinstance(value, list) and len(value) == len(batch)):
        failed = _failed("verifier_result", f"the batch returned {type(value).__name__}, not {len(batch)} results")
    if failed is not None:
        if len(batch) > 1:
            return [v for case in batch for v in _judge_batch(runner, source, start, [case])]
        return [failed]
    verdicts = []
    for item in value:
        if isinstance(item, dict) and "raised" in item:
            verdicts.append(_failed("verifier_error", f"verifier raised: exception: {item['raised']}"))
        else:
            verdicts.append(verdict_from_result(item.get("ok") if isinstance(item, dict) else item))
    return verdicts
