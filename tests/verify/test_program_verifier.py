"""The program verifier's logic, called in-process: the answer judged by the answer module with the task's
competitors, exact state checks, the verdict.

In production this module's source runs only in the sandbox, as each program task's verifier; here its
functions are ordinary trusted code under test.
"""

from __future__ import annotations

import ast
import inspect
from typing import Any

import pytest

from factory.verify import program_verifier as pv

EXPECTED: dict[str, Any] = {
    "answer": 70,
    "ordered": False,
    "competitors": [69, 71],
    "keys": {"orders": "id", "budgets": "id", "products": "id"},
    "ignore": ["*.updated_at", "audit_log.*"],
    "tables": {
        "orders": {"changed": {}, "added": [{"item": "si_0001", "amount": 30.0}], "removed": []},
        "budgets": {"changed": {"bud_1": {"remaining": 70.0}}, "added": [], "removed": []},
    },
}
INITIAL = {
    "orders": [],
    "budgets": [{"id": "bud_1", "remaining": 100.0, "updated_at": "2024-01-01"}],
    "products": [{"id": "pro_1", "stock": 2}],
    "audit_log": [],
}
FINAL = {
    "orders": [{"id": "po_9", "item": "si_0001", "amount": 30.0}],
    "budgets": [{"id": "bud_1", "remaining": 70.0, "updated_at": "2024-06-30"}],
    "products": [{"id": "pro_1", "stock": 2}],
    "audit_log": [{"id": 1, "event": "order created"}],
}


def test_the_module_imports_the_standard_library_and_the_answer_module():
    """Its source follows the answer module's in the verifier the sandbox runs, without that one project import;
    and no __future__ import, which would have to come first in the task's verifier."""
    tree = ast.parse(inspect.getsource(pv))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported == {"fnmatch", "json", "typing", "factory.verify.answers"}


@pytest.mark.parametrize(
    ("value", "number"),
    [(3, 3.0), (2.5, 2.5), ("$1,200.50", 1200.5), (" 7 ", 7.0), (True, None), ("seven", None), (None, None)],
)
def test_number(value, number):
    assert pv.number(value) == number


@pytest.mark.parametrize(
    ("answer", "ok"),
    [
        ("I spent $70.00 of the budget.", True),
        ('{"spent": 70}', True),
        (70.0, True),
        ("1,070", False),
        ("70 or 71", False),  # a hedge: 71 is a competitor
        (" ".join(str(70 + k) for k in range(-4, 5)), False),  # a dump
        (None, False),
    ],
)
def test_the_answer_check_judges_with_the_tasks_competitors(answer, ok):
    verdict = pv.check(EXPECTED, INITIAL, FINAL, answer)
    assert verdict["checks"][0]["name"] == "answer" and verdict["checks"][0]["passed"] is ok


def test_ignored_columns_match_table_dot_column():
    assert pv.ignored(EXPECTED["ignore"], "budgets", "updated_at")
    assert pv.ignored(EXPECTED["ignore"], "audit_log", "*")
    assert not pv.ignored(EXPECTED["ignore"], "budgets", "remaining")


def _problems(table: str, final: list[dict[str, Any]], want: dict[str, Any] | None = None) -> list[str]:
    want = EXPECTED["tables"].get(table, {}) if want is None else want
    return pv.table_problems(table, INITIAL[table], final, want, "id", EXPECTED["ignore"])


def test_table_problems_find_every_difference_from_the_wanted_changes():
    assert _problems("budgets", FINAL["budgets"]) == []  # the clock column is ignored
    assert _problems("budgets", [{"id": "bud_1", "remaining": 70.004}]) == []  # float rounding only
    assert _problems("budgets", [{"id": "bud_1", "remaining": 71.0}]) == ["bud_1 is not as expected"]
    assert _problems("budgets", []) == ["bud_1 was removed"]
    assert _problems("orders", [{"id": "po_1", "item": "si_0001", "amount": 30.0}]) == []  # any new key
    assert _problems("orders", []) == ["1 expected new row(s) missing"]
    extra = _problems("orders", [*FINAL["orders"], {"id": "po_2", "item": "si_0002", "amount": 5.0}])
    assert extra == ['unexpected new row {"item": "si_0002", "amount": 5.0}']
    removal = {"changed": {}, "added": [], "removed": ["pro_1"]}
    assert _problems("products", [], removal) == []
    assert _problems("products", INITIAL["products"], removal) == ["pro_1 should have been removed"]


def test_records_added_to_a_log_table_are_no_unexpected_rows():
    before = [{"id": "j1", "status": "running"}]
    logged = [*before, {"id": "audit_1", "status": "succeeded"}]
    assert pv.table_problems("jobs", before, logged, {}, "id", ["jobs.+"]) == []
    assert pv.table_problems("jobs", before, logged, {}, "id", []) == ['unexpected new row {"status": "succeeded"}']
    cancelled = [{"id": "j1", "status": "cancelled"}, logged[1]]
    assert pv.table_problems("jobs", before, cancelled, {}, "id", ["jobs.+"]) == ["j1 is not as expected"]


def test_check_reports_the_answer_and_every_table_that_matters():
    verdict = pv.check(EXPECTED, INITIAL, FINAL, "I spent 70.")
    assert verdict["passed"] and verdict["score"] == 1.0
    assert [c["name"] for c in verdict["checks"]] == ["answer", "state: budgets", "state: orders"]
    changed = dict(FINAL, products=[{"id": "pro_1", "stock": 3}])
    verdict = pv.check(EXPECTED, INITIAL, changed, "70")
    assert not verdict["passed"] and verdict["score"] == 0.0
    assert [c["name"] for c in verdict["checks"] if not c["passed"]] == ["unchanged: products"]
    noop = pv.check(EXPECTED, INITIAL, INITIAL, None)
    assert [c["name"] for c in noop["checks"] if not c["passed"]] == ["answer", "state: budgets", "state: orders"]
    assert noop["checks"][0]["detail"] == "expected 70: no answer"


def test_verify_judges_against_the_tasks_expected(monkeypatch):
    monkeypatch.setattr(pv, "EXPECTED", EXPECTED)
    assert pv.verify(INITIAL, FINAL, "70") == pv.check(EXPECTED, INITIAL, FINAL, "70")
    assert not pv.verify(INITIAL, FINAL, "60")["passed"]
