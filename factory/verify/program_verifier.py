"""The verifier of a program task: the answer checked leniently, the final state exactly.

Each program task's verifier is this file's source followed by one line that sets `EXPECTED` to that task's
values, so it runs on its own in the sandbox: it imports only the standard library, never this project.
`EXPECTED` holds the gold's answer, whether a list answer is ordered, each table's key column, the
"table.column" patterns the state check ignores, and per table what the gold wrote (changed fields by key,
rows added without their key, keys removed); a table it does not name must not change.
"""

import fnmatch
import json
import re
from typing import Any

Rows = list[dict[str, Any]]
Tables = dict[str, Rows]

EXPECTED: dict[str, Any] = {}  # a task's verifier sets this after the source (see the module docstring)
NUMBER = re.compile(r"(?<![A-Za-z0-9_.])-?\d[\d,]*(?:\.\d+)?(?![A-Za-z0-9_])")
MAX_NUMBERS = 6  # an answer that lists more numbers than this is guessing
ANSWER_TOLERANCE = 0.01  # answers are asked for to 2 decimals
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


def close(expected: float, actual: float) -> bool:
    return abs(expected - actual) <= max(ANSWER_TOLERANCE + 1e-9, 1e-6 * abs(expected))


def normalize(text: Any) -> str:
    """Text without the differences of form that do not change its meaning: case, spacing, edge punctuation."""
    return re.sub(r"\s+", " ", str(text).replace("_", " ")).strip(" .,;:!?\"'`()[]{}").casefold()


def parsed(answer: Any) -> Any:
    """An answer given as JSON text, decoded; any other answer as it is."""
    if isinstance(answer, str):
        try:
            return json.loads(answer)
        except ValueError:
            return answer
    return answer


def scalar_ok(expected: Any, actual: Any) -> bool:
    """Whether `actual` states the single value `expected`: text may say more, but not many numbers."""
    if isinstance(expected, int | float) and not isinstance(expected, bool):
        if isinstance(actual, str):
            found = {float(t.replace(",", "")) for t in NUMBER.findall(actual)}
            return len(found) <= MAX_NUMBERS and any(close(expected, n) for n in found)
        n = number(actual)
        return n is not None and close(expected, n)
    if isinstance(actual, list | dict):
        return False
    if isinstance(actual, str) and normalize(actual) != normalize(expected):
        pattern = r"(?<![A-Za-z0-9_])" + re.escape(str(expected)) + r"(?![A-Za-z0-9_])"
        return re.search(pattern, actual, re.IGNORECASE) is not None
    return normalize(actual) == normalize(expected)


def _id_shape(item: Any) -> re.Pattern[str] | None:
    """For an id such as "pro_0042", a pattern that finds every id of its kind in a text; None for other values."""
    match = re.fullmatch(r"([A-Za-z]+[_-])\d+", str(item))
    if match is None:
        return None
    return re.compile(r"(?<![A-Za-z0-9_])" + re.escape(match.group(1)) + r"\d+(?![A-Za-z0-9_])", re.I)


def list_ok(expected: list[Any], actual: Any, ordered: bool) -> bool:
    """Whether `actual` (a list, or text) states exactly the items of `expected`: none missing, no extra id."""
    if isinstance(actual, list):
        if len(actual) != len(expected):
            return False
        if ordered:
            return all(scalar_ok(e, a) for e, a in zip(expected, actual, strict=False))
        left = list(actual)
        for e in expected:
            hit = next((i for i, a in enumerate(left) if scalar_ok(e, a)), None)
            if hit is None:
                return False
            left.pop(hit)
        return True
    if not isinstance(actual, str):
        return len(expected) == 1 and scalar_ok(expected[0], actual)
    if not all(scalar_ok(e, actual) for e in expected):
        return False
    shapes = [s for s in (_id_shape(e) for e in expected) if s]
    wanted = {str(e).casefold() for e in expected}
    extra = {m.casefold() for s in shapes for m in s.findall(actual)} - wanted
    return not extra


def answer_ok(expected: Any, answer: Any, ordered: bool) -> bool:
    """Whether the agent's final answer states the gold's answer (a value, a list of values, or named values)."""
    if answer is None:
        return False
    actual = parsed(answer)
    if isinstance(expected, list):
        return list_ok(expected, actual, ordered)
    if isinstance(expected, dict):
        if isinstance(actual, dict):
            values = list(actual.values())
            return all(any(scalar_ok(v, a) for a in values) for v in expected.values())
        text = answer if isinstance(answer, str) else json.dumps(actual)
        return all(scalar_ok(v, text) for v in expected.values())
    return scalar_ok(expected, actual)


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

    def clean(row: dict[str, Any], drop: str | None = None) -> dict[str, Any]:
        return {k: v for k, v in row.items() if k != drop and not ignored(ignore, table, k)}

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
    added = [clean(r, key) for k, r in new.items() if k not in old]
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


def check(expected: dict[str, Any], initial: Tables, final: Tables, answer: Any) -> dict[str, Any]:
    """The verdict on a run against a task's `expected` values: the answer, then every table that changed or
    had to change."""
    checks = []
    ok = answer_ok(expected["answer"], answer, expected["ordered"])
    detail = "" if ok else "expected " + json.dumps(expected["answer"])[:200]
    checks.append({"name": "answer", "passed": ok, "detail": detail})
    tables = expected["tables"]
    for table in sorted(set(initial) | set(final)):
        if ignored(expected["ignore"], table, "*"):
            continue
        key = expected["keys"].get(table, "id")
        before, after = initial.get(table, []), final.get(table, [])
        problems = table_problems(table, before, after, tables.get(table, {}), key, expected["ignore"])
        name = ("state: " if table in tables else "unchanged: ") + table
        if table in tables or problems:
            checks.append({"name": name, "passed": not problems, "detail": "; ".join(problems)[:400]})
    passed = all(c["passed"] for c in checks)
    return {"passed": passed, "score": 1.0 if passed else 0.0, "checks": checks[:MAX_CHECKS]}


def verify(initial: Tables, final: Tables, answer: Any) -> dict[str, Any]:
    """The sandbox's entry point: the run judged against this task's EXPECTED."""
    return check(EXPECTED, initial, final, answer)
