"""The verifier of a program task: the answer checked leniently, the final state exactly.

Each program task's verifier is the answer module's source, then this file's source without its import of that
module, then one line that sets `EXPECTED` to that task's values, so it runs on its own in the sandbox: it
imports only the standard library, never this project. `EXPECTED` holds the gold's answer, whether a list
answer is ordered, the values a near-miss answer would state instead (`competitors`), each table's key column,
the "table.column" patterns the state check ignores, and per table what the gold wrote (changed fields by key,
rows added without their key, keys removed); a table it does not name must not change.
"""

import fnmatch
import json
from typing import Any

from factory.verify.answers import judge_answer  # dropped from the task's verifier, which holds that module

Rows = list[dict[str, Any]]
Tables = dict[str, Rows]

EXPECTED: dict[str, Any] = {}  # a task's verifier sets this after the source (see the module docstring)
STATE_TOLERANCE = 0.005  # stored amounts may differ in float rounding only
MAX_CHECKS = 100


def number(value: Any) -> float | None:
    """A value as a number: JSON numbers, or text such as "$1,200.50"; booleans are not numbers."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip().replace("$", "").replace(",", "")
        try:
            return float(text)
        except ValueError:
            return None
    return None


def ignored(patterns: list[str], table: str, column: str) -> bool:
    return any(fnmatch.fnmatchcase(table + "." + column, p) for p in patterns)


def _same(a: Any, b: Any) -> bool:
    x = number(a) if not isinstance(a, str) else None
    y = number(b) if not isinstance(b, str) else None
    if x is not None and y is not None:
        return abs(x - y) <= STATE_TOLERANCE
    return bool(a == b)


def _rows_equal(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return set(a) == set(b) and all(_same(a[k], b[k]) for k in a)


def table_problems(
    table: str, before: Rows, after: Rows, want: dict[str, Any], key: str, ignore: list[str]
) -> list[str]:
    """What differs between the table's final rows and its initial rows with the wanted changes applied."""
    columns = {k for rows in (before, after) for r in rows for k in r}
    hidden = {k for k in columns if ignored(ignore, table, k)}  # once per column, not per row

    def clean(row: dict[str, Any], drop: str | None = None) -> dict[str, Any]:
        return {k: v for k, v in row.items() if k != drop and k not in hidden}

    old = {r.get(key): r for r in before}
    new = {r.get(key): r for r in after}
    changed = {str(k): v for k, v in want.get("changed", {}).items()}
    removed = {str(k) for k in want.get("removed", [])}
    problems = []
    for k, row in old.items():
        if str(k) in removed:
            if k in new:
                problems.append(f"{k} should have been removed")
            continue
        if k not in new:
            problems.append(f"{k} was removed")
            continue
        expected_row = dict(clean(row), **changed.get(str(k), {}))
        if not _rows_equal(expected_row, clean(new[k])):
            problems.append(f"{k} is not as expected")
    # records added to a log table ("table.+", a metered read's audit record) are bookkeeping
    added = [] if ignored(ignore, table, "+") else [clean(r, key) for k, r in new.items() if k not in old]
    pending = [dict(r) for r in want.get("added", [])]
    for row in added:
        hit = next((i for i, r in enumerate(pending) if _rows_equal(r, row)), None)
        if hit is None:
            problems.append(f"unexpected new row {json.dumps(row, default=str)[:120]}")
        else:
            pending.pop(hit)
    if pending:
        problems.append(f"{len(pending)} expected new row(s) missing")
    return problems


def state_checks(expected: dict[str, Any], initial: Tables, final: Tables) -> list[dict[str, Any]]:
    """One check per table that had to change or did: the final rows must be the initial rows with exactly the
    wanted changes (`expected["tables"]`) applied. Rubric tasks run this in-process for their end_state check."""
    checks = []
    tables = expected["tables"]
    for table in sorted(set(initial) | set(final)):
        if ignored(expected["ignore"], table, "*"):
            continue
        key = expected["keys"].get(table, "id")
        before, after = initial.get(table, []), final.get(table, [])
        if table not in tables and before == after:  # nothing to find; on an API-sized state most tables are so
            continue
        problems = table_problems(table, before, after, tables.get(table, {}), key, expected["ignore"])
        name = ("state: " if table in tables else "unchanged: ") + table
        if table in tables or problems:
            checks.append({"name": name, "passed": not problems, "detail": "; ".join(problems)[:400]})
    return checks


def check(expected: dict[str, Any], initial: Tables, final: Tables, answer: Any) -> dict[str, Any]:
    """The verdict on a run against a task's `expected` values: the answer, then every table that changed or
    had to change."""
    checks = []
    ok, why = judge_answer(expected["answer"], answer, competitors=expected["competitors"], ordered=expected["ordered"])
    detail = "" if ok else f"expected {json.dumps(expected['answer'], default=str)[:200]}: {why[:200]}"
    checks.append({"name": "answer", "passed": ok, "detail": detail})
    checks += state_checks(expected, initial, final)
    passed = all(c["passed"] for c in checks)
    return {"passed": passed, "score": 1.0 if passed else 0.0, "checks": checks[:MAX_CHECKS]}


def verify(initial: Tables, final: Tables, answer: Any) -> dict[str, Any]:
    """The sandbox's entry point: the run judged against this task's EXPECTED."""
    return check(EXPECTED, initial, final, answer)
