"""Program questions with one reading: thresholds no row sits on (or words that say which way the boundary
goes), the status rule named where voided rows could count or not, and drafts that another reading answers
differently dropped with that reading as the reason."""

from __future__ import annotations

import random
import re
from datetime import date

import pytest

from factory.envs.bundle import Bundle
from factory.envs.runtime import Environment
from factory.models import Difficulty, EntitySpec, FieldSpec, Task
from factory.tasks.programs import FAMILIES, EnvView, conditions, synthesize_program_tasks
from factory.tasks.programs.conditions import Condition, Selection, StatusRule
from factory.tasks.programs.draft import Draft, program
from factory.tasks.programs.synthesis import DroppedDraft, realize

ENVS = ("online-shop", "issue-tracker", "hotel-reservations")
EXPLICIT = {">=", "<=", "on or after", "on or before"}  # the words say whether the boundary counts
WORDS = {">=": "at least", "<=": "at most", "on or after": "on or after", "on or before": "on or before"}


@pytest.fixture(scope="module")
def views(catalog_bundles) -> dict[str, tuple[Bundle, Environment, EnvView]]:
    opened = {}
    for topic in ENVS:
        path = catalog_bundles.kept(topic)
        bundle, env = Bundle.open(path), Environment.open(path)
        with env.session() as s:
            opened[topic] = (bundle, env, EnvView(bundle.spec, s.snapshot().tables))
    yield opened
    for _, env, _ in opened.values():
        env.close()


@pytest.fixture(scope="module")
def synthesized(views) -> dict[str, tuple[list[Task], list[DroppedDraft]]]:
    out = {}
    for topic, (bundle, env, _) in views.items():
        dropped: list[DroppedDraft] = []
        out[topic] = (synthesize_program_tasks(bundle, env.session, random.Random(3), 60, dropped), dropped)
    return out


def _drafts(view: EnvView) -> list[Draft]:
    return [d for propose in FAMILIES.values() for d in propose(view, random.Random(5))]


def test_no_threshold_sits_on_a_value_unless_the_words_say_which_way(views):
    for topic, (_, _, view) in views.items():
        for e in view.spec.entities:
            rows = view.rows(e)
            for c in conditions(e, rows, random.Random(0)):
                if c.op == "==":
                    continue
                dated = c.op in ("before", "after", "on or after", "on or before")
                held = {str(r[c.field])[:10] if dated else r[c.field] for r in rows if r.get(c.field) is not None}
                if c.op in EXPLICIT:
                    assert WORDS[c.op] in c.phrase(), (topic, c)
                else:
                    assert c.value not in held, (topic, c)


def test_whole_numbers_without_a_gap_and_adjacent_days_say_at_least_or_on_or_after():
    e = EntitySpec(
        name="ticket",
        table="tickets",
        fields=[
            FieldSpec(name="id", primary_key=True),
            FieldSpec(name="seats", type="integer"),
            FieldSpec(name="day", type="date"),
        ],
    )
    rows = [{"id": f"t{i}", "seats": 1 + i % 4, "day": f"2024-05-{10 + i % 6:02d}"} for i in range(12)]
    found = conditions(e, rows, random.Random(0))
    seats = [c for c in found if c.field == "seats"]
    days = [c for c in found if c.field == "day"]
    assert seats and {c.op for c in seats} <= {">=", "<="}
    assert days and {c.op for c in days} == {"on or after"}
    for c in seats + days:
        assert WORDS[c.op] in c.phrase()


def test_a_gap_between_days_gives_a_day_no_row_falls_on():
    e = EntitySpec(
        name="visit",
        table="visits",
        fields=[FieldSpec(name="id", primary_key=True), FieldSpec(name="at", type="datetime")],
    )
    rows = [{"id": f"v{i}", "at": f"2024-0{1 + i % 9}-0{1 + i % 7}T10:00:00"} for i in range(20)]
    held = {r["at"][:10] for r in rows}
    for c in conditions(e, rows, random.Random(1)):
        assert c.op in ("before", "after") and c.value not in held
        date.fromisoformat(c.value)


def test_status_sensitive_questions_name_the_status_rule(views):
    for topic, (_, _, view) in views.items():
        for d in _drafts(view):
            for sel in d.selections:
                if sel.status is not None:
                    assert sel.status.phrase() in d.question, (topic, d.question)
            if d.family in ("aggregate", "pagination", "top_k"):  # one entity: every voided row it reads is ruled
                (sel,) = d.selections
                assert sel.unruled(view.rows(sel.entity)) == (), (topic, d.question)


def test_a_stated_status_rule_is_what_the_gold_does(views):
    _, env, view = views["online-shop"]
    counts = [d for d in _drafts(view) if d.family == "aggregate" and d.question.startswith(("How many", "Count"))]
    rules = [rule for d in counts for sel in d.selections if (rule := sel.status) is not None]
    assert {rule.counted for rule in rules} == {True, False}  # both ways occur, each as the gold does it
    for d in counts:
        (sel,) = d.selections
        with env.session() as s:
            run = s.run_program(d.program)
        assert run.answer == sum(sel.test(r) for r in view.rows(sel.entity)), d.question


def test_no_question_points_at_two_things_with_that(synthesized):
    for tasks, _ in synthesized.values():
        for t in tasks:
            assert all(w in ("is", "belong") for w in re.findall(r"\bthat (\w+)", t.question)), t.question


def test_the_families_phrasing_leaves_nothing_to_drop_as_ambiguous(synthesized):
    for topic, (tasks, dropped) in synthesized.items():
        assert tasks, topic
        assert not [d for d in dropped if d.reason.startswith("ambiguous")], topic


# planted drafts on the shop: a count of orders, as the aggregate family would write it


def _count(selections: tuple[Selection, ...]) -> str:
    (sel,) = selections
    return program(f"rows = [row for row in {sel.fetch(20)} if {sel.code()}]\nreturn len(rows)")


def _draft(sel: Selection, question: str) -> Draft:
    return Draft(
        family="aggregate",
        question=question,
        program=_count((sel,)),
        capabilities=["loops", "aggregation"],
        difficulty=Difficulty(chain_length=1),
        selections=(sel,),
        write=_count,
    )


@pytest.fixture(scope="module")
def shop(views):
    bundle, env, view = views["online-shop"]
    order = view.entity("order")
    tool = view.list_tool(order)
    assert order is not None and tool is not None
    return bundle, env, view, order, tool


def test_a_threshold_on_an_existing_value_is_dropped_with_the_boundary_row(shop):
    bundle, env, view, order, tool = shop
    rows = sorted(view.rows(order), key=lambda r: r["total"])
    on = rows[len(rows) // 2]
    cond = Condition("total", ">", on["total"], "total")
    sel = Selection(order, tool, cond, StatusRule("orders", (("status", ("cancelled",)),), True))
    reason = realize(_draft(sel, f"How many orders are there {sel.phrase()}?"), bundle, view, env.session)
    on_it = [r["id"] for r in view.rows(order) if r["total"] == on["total"]]
    sits = f"row {on_it[0]} sits" if len(on_it) == 1 else f"rows {', '.join(on_it)} sit"
    assert reason == f"ambiguous: boundary {sits} on the threshold {on['total']}"


def test_a_threshold_between_two_values_is_kept(shop):
    bundle, env, view, order, tool = shop
    totals = sorted({r["total"] for r in view.rows(order)})
    middle = round((totals[10] + totals[11]) / 2, 3)
    assert totals[10] < middle < totals[11]
    sel = Selection(order, tool, Condition("total", ">", middle, "total"))
    sel = sel.ruled(view.rows(order), random.Random(0))
    assert isinstance(
        realize(_draft(sel, f"How many orders are there {sel.phrase()}?"), bundle, view, env.session), Task
    )


def _customer_with_a_cancelled_order(view: EnvView, order: EntitySpec) -> str:
    return next(r["customer_id"] for r in view.rows(order) if r["status"] == "cancelled")


def test_a_count_that_leaves_the_status_rule_unsaid_is_dropped(shop):
    bundle, env, view, order, tool = shop
    customer = _customer_with_a_cancelled_order(view, order)
    sel = Selection(order, tool, Condition("customer_id", "==", customer, "customer"))
    reason = realize(_draft(sel, f"How many orders are there {sel.phrase()}?"), bundle, view, env.session)
    assert reason == 'ambiguous: answer changes if orders whose status is "cancelled" do not count'
    ruled = Selection(order, tool, sel.condition, StatusRule("orders", (("status", ("cancelled",)),), False))
    assert isinstance(
        realize(_draft(ruled, f"How many orders are there {ruled.phrase()}?"), bundle, view, env.session), Task
    )


def test_a_status_rule_the_question_does_not_state_is_dropped(shop):
    bundle, env, view, order, tool = shop
    customer = _customer_with_a_cancelled_order(view, order)
    rule = StatusRule("orders", (("status", ("cancelled",)),), False)
    sel = Selection(order, tool, Condition("customer_id", "==", customer, "customer"), rule)
    reason = realize(_draft(sel, f'How many orders does customer "{customer}" have?'), bundle, view, env.session)
    assert reason == 'ambiguous: answer changes if orders whose status is "cancelled" count'


def test_a_list_tool_filter_that_reads_the_threshold_otherwise_is_dropped(shop):
    bundle, env, view, *_ = shop
    customer = view.entity("customer")
    tool = view.list_tool(customer) if customer is not None else None
    assert customer is not None and tool is not None and "max_created_at" in tool.parameters["properties"]
    day = sorted(str(r["created_at"])[:10] for r in view.rows(customer))[10]  # a customer joined that day
    sel = Selection(customer, tool, Condition("created_at", "on or before", day, "created at"))
    reason = realize(_draft(sel, f"How many customers are there {sel.phrase()}?"), bundle, view, env.session)
    assert reason == f"ambiguous: the list tool's own filter (max_created_at={day!r}) gives another answer"
