"""The shared parts of the program families: conditions (test, code and words agree), page sizes, the gold
programs' prelude, and the registry that synthesis iterates."""

from __future__ import annotations

import ast
import random
from typing import Any

import pytest

from factory.envs.toolkit.common import DEFAULT_LIMIT
from factory.models import Difficulty, EntitySpec, FieldSpec, Task, ToolOperation, ToolSpec
from factory.tasks.programs import FAMILIES, FAMILY_MARK, PAGE_SIZE, Condition, conditions, family_of, page_size
from factory.tasks.programs.conditions import Selection, StatusRule
from factory.tasks.programs.draft import Draft, program
from factory.tasks.programs.view import default_page

F = FieldSpec
ENTITY = EntitySpec(
    name="order",
    table="orders",
    fields=[
        F(name="id", primary_key=True),
        F(name="status", enum=["open", "paid", "void"]),
        F(name="total", type="number"),
        F(name="items", type="integer"),
        F(name="rush", type="boolean"),
        F(name="placed", type="date"),
        F(name="customer_id", references="customer.id"),
    ],
)
ROWS = [
    {
        "id": f"ord_{i}",
        "status": ["open", "paid", "void"][i % 3],
        "total": 10.0 * i + 0.5,
        "items": i % 5,
        "rush": i % 2 == 0,
        "placed": f"2024-0{1 + i % 9}-1{i % 10}",
        "customer_id": f"cus_{i % 4}",
    }
    for i in range(12)
]


def test_conditions_select_some_rows_and_their_code_agrees_with_their_test():
    found = conditions(ENTITY, ROWS, random.Random(0))
    assert {c.field for c in found} == {"status", "total", "items", "rush", "placed", "customer_id"}
    assert sum(c.field == "customer_id" for c in found) <= 2  # parents do not crowd out the rest
    for c in found:
        selected = [r for r in ROWS if c.test(r)]
        assert 0 < len(selected) < len(ROWS), c
        assert [r for r in ROWS if eval(c.code(), {"row": r})] == selected, c
        assert c.phrase().startswith("whose ")
    assert "total" not in {c.field for c in conditions(ENTITY, ROWS, random.Random(0), exclude=("total",))}


@pytest.mark.parametrize(
    ("condition", "phrase"),
    [
        (Condition("status", "==", "paid", "status"), 'whose status is "paid"'),
        (Condition("rush", "==", True, "rush"), 'whose "rush" flag is set'),
        (Condition("total", ">", 50, "total"), "whose total is above 50"),
        (Condition("placed", "before", "2024-03-01", "placed"), "whose placed is before 2024-03-01"),
        (Condition("items", ">=", 3, "items"), "whose items is at least 3"),
        (Condition("items", "<=", 2, "items"), "whose items is at most 2"),
        (Condition("placed", "on or after", "2024-03-01", "placed"), "whose placed is on or after 2024-03-01"),
    ],
)
def test_conditions_in_words(condition, phrase):
    assert condition.phrase() == phrase


def test_the_readings_a_condition_leaves_open():
    assert Condition("total", ">", 50, "total").inclusive() == Condition("total", ">=", 50, "total")
    before = Condition("placed", "before", "2024-03-01", "placed")
    assert before.inclusive() == Condition("placed", "on or before", "2024-03-01", "placed")
    assert Condition("items", ">=", 3, "items").inclusive() is None  # the words settle the boundary
    lister = _lister({"type": "integer"})
    lister.parameters["properties"]["min_total"] = {"type": "number"}
    assert Condition("total", ">", 50, "total").tool_filter(lister) == {"min_total": 50}
    assert Condition("total", "<", 50, "total").tool_filter(lister) is None  # no max_total to read it with
    assert Condition("status", "==", "paid", "status").tool_filter(lister) is None


def test_a_status_rule_is_said_tested_and_coded_alike():
    left_out = StatusRule("orders", (("status", ("void",)),), counted=False)
    assert left_out.phrase() == 'leaving out orders whose status is "void"'
    assert left_out.flipped().phrase() == 'including orders whose status is "void"'
    for rule in (left_out, left_out.flipped()):
        assert [r for r in ROWS if rule.test(r)] == [r for r in ROWS if eval(rule.code(), {"row": r})]
    assert sum(left_out.test(r) for r in ROWS) == 8


def test_a_selection_rules_the_voided_rows_it_reads_and_codes_its_reading():
    cond = Condition("total", ">", 45, "total")
    sel = Selection(ENTITY, _lister({"type": "integer"}), cond).ruled(ROWS, random.Random(0))
    assert sel.status is not None and sel.status.states == (("status", ("void",)),)
    assert sel.phrase() == f"whose total is above 45, {sel.status.phrase()}"
    assert sel.unruled(ROWS) == ()
    assert [r for r in ROWS if sel.test(r)] == [r for r in ROWS if eval(sel.code(), {"row": r})]
    assert sel.fetch(50) == "_all(tools.list_orders, 50)" and sel.fetch(None) == "_all(tools.list_orders)"
    paid = Selection(ENTITY, _lister({"type": "integer"}), Condition("status", "==", "paid", "status"))
    assert paid.ruled(ROWS, random.Random(0)) == paid  # it reads no voided row


PET = EntitySpec(name="pet", table="pets", fields=[F(name="id", primary_key=True), F(name="name"), F(name="tag")])


def test_a_text_field_whose_values_repeat_names_kinds_of_rows_and_a_name_does_not():
    """Nothing else to filter pets on: a tag held by several pets is a kind, a tag on one pet is no condition,
    and names, which rarely repeat, give none."""
    tags = ["health", "ideas", "health", "todo", "ideas", "finance", "health", "home", "ideas", "work"]
    rows = [{"id": i, "name": ["Lucy", "Max"][i % 2] if i < 2 else f"Pet {i}", "tag": t} for i, t in enumerate(tags)]
    found = conditions(PET, rows, random.Random(0))
    assert [(c.field, c.value) for c in found] == [("tag", "health"), ("tag", "ideas")]
    assert [c.phrase() for c in found] == ['whose tag is "health"', 'whose tag is "ideas"']
    spread = [dict(r, tag=f"tag {r['id']}") if r["id"] > 3 else r for r in rows]  # 8 tags on 10 pets: labels
    assert conditions(PET, spread, random.Random(0)) == []


def test_a_missing_value_matches_no_condition():
    for c in (Condition("total", "<", 5, "total"), Condition("placed", "after", "2000-01-01", "placed")):
        assert not c.test({"id": "ord_x"})
        assert not eval(c.code("p"), {"p": {"id": "ord_x"}})


def _lister(limit: dict[str, Any]) -> ToolSpec:
    props = {"limit": limit, "offset": {"type": "integer"}}
    return ToolSpec(
        name="list_orders",
        description="List orders.",
        parameters={"type": "object", "properties": props},
        operation=ToolOperation(kind="list", entity="order"),
    )


def test_page_sizes_follow_the_tools_limit():
    assert page_size(_lister({"type": "integer"})) == PAGE_SIZE
    assert page_size(_lister({"type": "integer", "maximum": 50})) == 50
    assert page_size(_lister({"type": "integer", "maximum": 500})) == PAGE_SIZE
    assert default_page(_lister({"type": "integer", "default": 25})) == 25
    assert default_page(_lister({"type": "integer"})) == DEFAULT_LIMIT  # what the generated code returns


def test_a_gold_program_is_the_prelude_and_solve():
    source = program("rows = _all(tools.list_orders, 50)\nreturn len(rows)")
    tree = ast.parse(source)
    assert [n.name for n in tree.body if isinstance(n, ast.FunctionDef)] == ["_all", "_ok", "solve"]
    assert "    rows = _all(tools.list_orders, 50)\n    return len(rows)\n" in source


def test_the_registry_lists_every_family_in_a_fixed_order():
    assert list(FAMILIES) == [
        "aggregate",
        "top_k",
        "bulk_update",
        "pagination",
        "join",
        "restock",
        "cascade",
        "notify",
        "branch",
        "recovery",
        "reschedule",
    ]


def _task(task_id: str) -> Task:
    return Task(id=task_id, env_id="shop", kind="program", question="?", answer=1, gold=program("return 1"))


def test_family_of_reads_the_task_id():
    assert family_of(_task(f"shop{FAMILY_MARK}bulk_update-0123456789")) == "bulk_update"
    assert family_of(_task(f"shop{FAMILY_MARK}top_k-0123456789")) == "top_k"
    assert family_of(_task(f"shop{FAMILY_MARK}unknown-0123456789")) is None
    assert family_of(_task("program-0123456789ab")) is None


def test_a_draft_defaults_to_reading_only():
    draft = Draft("aggregate", "How many?", program("return 1"), ["loops"], Difficulty(chain_length=1))
    assert not draft.mutates
