"""Rubric checks over final states and answers; all-or-nothing versus mean reward."""

from __future__ import annotations

import pytest

from factory.models import RubricCheck, Snapshot
from factory.verify.rubric import rubric_verdict, run_check

INITIAL = Snapshot(
    tables={
        "orders": [
            {"id": 1, "customer_id": 7, "status": "placed", "total": 70.0, "gift": 0},
            {"id": 2, "customer_id": 8, "status": "placed", "total": 12.5, "gift": 1},
        ],
        "customers": [{"id": 7, "name": "Ada"}, {"id": 8, "name": "Bo"}],
    }
)
FINAL = Snapshot(
    tables={
        "orders": [
            {"id": 1, "customer_id": 7, "status": "shipped", "total": 70.0, "gift": 0},
            {"id": 3, "customer_id": 8, "status": "placed", "total": 30, "gift": 0},
        ],
        "customers": INITIAL.tables["customers"],
    }
)
TASK = [
    RubricCheck(kind="field_equals", table="orders", where={"id": 1}, field="status", value="shipped"),
    RubricCheck(kind="row_absent", table="orders", where={"id": 2}),
    RubricCheck(kind="row_exists", table="orders", where={"customer_id": 8, "total": "$30.00"}),
    RubricCheck(kind="answer_contains", value=70),
]


def test_all_checks_pass():
    v = rubric_verdict(TASK, INITIAL, FINAL, "Shipped order 1 ($70) and replaced order 2.")
    assert v.passed and v.score == 1.0
    assert [c.passed for c in v.checks] == [True] * 4


def test_all_is_default_and_pays_nothing_for_partial_work():
    # A no-op run: the state is the initial one, the answer restates the number.
    v = rubric_verdict(TASK, INITIAL, INITIAL, "The total is $70.")
    assert not v.passed and v.score == 0.0
    mean = rubric_verdict(TASK, INITIAL, INITIAL, "The total is $70.", reward="mean")
    assert not mean.passed
    assert mean.score == pytest.approx(1 / 4)  # what a mean reward would pay for doing nothing
    wrong_answer = rubric_verdict(TASK, INITIAL, FINAL, "The total is $170.", reward="mean")
    assert not wrong_answer.passed and wrong_answer.score == pytest.approx(3 / 4)
    with pytest.raises(ValueError):
        rubric_verdict(TASK, INITIAL, FINAL, "", reward="max")


def test_each_kind_fails_when_it_should():
    assert not run_check(TASK[0], INITIAL, INITIAL, None).passed  # status still placed
    assert not run_check(RubricCheck(kind="row_absent", table="orders", where={"id": 1}), INITIAL, FINAL, None).passed
    assert not run_check(RubricCheck(kind="row_exists", table="orders", where={"id": 9}), INITIAL, FINAL, None).passed
    assert not run_check(TASK[3], INITIAL, FINAL, None).passed
    assert not run_check(
        RubricCheck(kind="field_equals", table="orders", where={"id": 9}, field="status", value="x"), INITIAL, FINAL, ""
    ).passed


def test_lenient_values_and_sqlite_booleans():
    check = RubricCheck(kind="field_equals", table="orders", where={"status": "SHIPPED"}, field="total", value="70")
    assert run_check(check, INITIAL, FINAL, None).passed
    gift = RubricCheck(kind="row_exists", table="orders", where={"id": 2, "gift": True})
    assert run_check(gift, INITIAL, INITIAL, None).passed
    assert not run_check(gift.model_copy(update={"where": {"id": 1, "gift": True}}), INITIAL, INITIAL, None).passed


def test_field_equals_needs_every_matching_row():
    check = RubricCheck(kind="field_equals", table="orders", where={"status": "placed"}, field="total", value=70)
    result = run_check(check, INITIAL, INITIAL, None)
    assert not result.passed and "12.5" in result.detail


def test_malformed_checks_fail_instead_of_raising():
    bad = [
        RubricCheck(kind="row_absent", table="order", where={"id": 2}),  # misspelled table: not vacuously absent
        RubricCheck(kind="row_exists", where={"id": 1}),
        RubricCheck(kind="field_equals", table="orders", where={"id": 1}),
        RubricCheck(kind="answer_contains"),
    ]
    for check in bad:
        result = run_check(check, INITIAL, FINAL, "anything")
        assert not result.passed and result.detail
    empty = rubric_verdict([], INITIAL, FINAL, "x")
    assert not empty.passed and empty.score == 0.0


def test_details_note_rows_already_present():
    check = RubricCheck(kind="row_exists", table="customers", where={"name": "ada"}, description="Ada exists")
    result = run_check(check, INITIAL, FINAL, None)
    assert result.passed and result.name == "Ada exists" and "initial" in result.detail
    assert rubric_verdict([check], INITIAL.tables, FINAL.tables, None).passed  # plain dict states too


END_STATE = RubricCheck(
    kind="end_state",
    value={
        "tables": {
            "orders": {
                "changed": {"1": {"status": "shipped"}},
                "added": [{"customer_id": 8, "status": "placed", "total": 30, "gift": 0}],
                "removed": [2],
            }
        },
        "keys": {"orders": "id", "customers": "id"},
        "ignore": [],
    },
)


def test_end_state_needs_exactly_the_gold_diff():
    result = run_check(END_STATE, INITIAL, FINAL, None)
    assert result.passed and result.name == "the end state is the gold's, and nothing else changed"
    assert run_check(END_STATE, INITIAL.tables, FINAL.tables, None).passed  # plain dict states too
    renamed = Snapshot(tables={**FINAL.tables, "customers": [{"id": 7, "name": "Ada"}, {"id": 8, "name": "Bob"}]})
    result = run_check(END_STATE, INITIAL, renamed, None)
    assert not result.passed and result.detail == "unchanged: customers: 8 is not as expected"
    assert not run_check(END_STATE, INITIAL, INITIAL, None).passed
    new_id = [{**r, "id": 30} if r["id"] == 3 else r for r in FINAL.tables["orders"]]
    assert run_check(END_STATE, INITIAL, Snapshot(tables={**FINAL.tables, "orders": new_id}), None).passed
    # The rows the gold touched are right, yet the row was created twice.
    again = {**FINAL.tables["orders"][1], "id": 4}
    twice = Snapshot(tables={**FINAL.tables, "orders": [*FINAL.tables["orders"], again]})
    assert not run_check(END_STATE, INITIAL, twice, None).passed


def test_malformed_end_state_checks_fail_with_a_reason():
    for value in (None, {}, {"tables": {}, "keys": {}}, {"tables": [], "keys": {}, "ignore": []}):
        result = run_check(RubricCheck(kind="end_state", value=value), INITIAL, INITIAL, None)
        assert not result.passed and result.detail == "end_state check holds no gold diff"
