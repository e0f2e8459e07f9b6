"""The program verifier's logic, called in-process: lenient answers, exact state checks, the verdict.

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


def test_the_module_is_self_contained():
    """Its source is the verifier the sandbox runs: standard library only, and no __future__ import, which
    would have to come first in the task's verifier."""
    tree = ast.parse(inspect.getsource(pv))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported == {"fnmatch", "json", "re", "typing"}


@pytest.mark.parametrize(
    ("value", "number"),
    [(3, 3.0), (2.5, 2.5), ("$1,200.50", 1200.5), (" 7 ", 7.0), (True, None), ("seven", None), (None, None)],
)
def test_number(value, number):
    assert pv.number(value) == number


@pytest.mark.parametrize(
    ("expected", "actual", "ok"),
    [
        (70, 70, True),
        (70, "70", True),
        (70, "I spent $70.00 of the budget.", True),
        (70, 70.004, True),
        (70, "1,070", False),  # a number is a whole token
        (70, "170", False),
        (70, "70.5", False),
        (70, 71, False),
        (70, True, False),
        (70, " ".join(str(70 + k) for k in range(-4, 5)), False),  # guessing many numbers
        (1200.5, "1,200.50", True),
        ("paid", "Paid.", True),
        ("in_progress", "in progress", True),
        ("pro_0001", "It is PRO_0001.", True),
        ("pro_0001", "pro_00012", False),
        ("pro_0001", ["pro_0001"], False),
        ("paid", "unpaid", False),
    ],
)
def test_scalar_answers_are_lenient_in_form_only(expected, actual, ok):
    assert pv.scalar_ok(expected, actual) is ok


def test_list_answers():
    ids = ["pro_0001", "pro_0002"]
    assert pv.list_ok(ids, ["pro_0002", "pro_0001"], ordered=False)
    assert not pv.list_ok(ids, ["pro_0002", "pro_0001"], ordered=True)
    assert pv.list_ok(ids, "PRO_0002 and pro_0001", ordered=False)
    assert not pv.list_ok(ids, "pro_0001, pro_0002, pro_0003", ordered=False)  # an extra id
    assert not pv.list_ok(ids, ["pro_0001"], ordered=False)
    assert not pv.list_ok(ids, ["pro_0001", "pro_0001"], ordered=False)  # each item counts once
    assert pv.list_ok(["pro_0001"], "pro_0001", ordered=False)
    assert pv.list_ok([5], 5, ordered=False)


def test_answers_arrive_as_values_or_text():
    assert not pv.answer_ok(70, None, False)
    assert pv.answer_ok(["a_1", "a_2"], '["a_2", "a_1"]', False)  # JSON text is decoded
    named = {"customer_id": "cus_0003", "total": 120.5}
    assert pv.answer_ok(named, {"customer": "cus_0003", "sum": "120.50"}, False)
    assert pv.answer_ok(named, "Customer cus_0003 spent $120.50 in total.", False)
    assert not pv.answer_ok(named, "Customer cus_0004 spent $120.50 in total.", False)
    assert not pv.answer_ok(named, {"customer_id": "cus_0003"}, False)


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
    assert noop["checks"][0]["detail"] == "expected 70"


def test_verify_judges_against_the_tasks_expected(monkeypatch):
    monkeypatch.setattr(pv, "EXPECTED", EXPECTED)
    assert pv.verify(INITIAL, FINAL, "70") == pv.check(EXPECTED, INITIAL, FINAL, "70")
    assert not pv.verify(INITIAL, FINAL, "60")["passed"]
