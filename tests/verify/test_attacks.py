"""Attacks and correct variants on the online-shop catalog environment: how each is built, and the audit's
verdict on each under a precise verifier (every variant paid, every attack refused) and under verifiers
weak in one way (the attack aimed at that weakness is paid, so the audit drops the task and names it)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from factory.lexicon import TIMESTAMP_COLUMNS
from factory.models import Snapshot, Task, ToolCall
from factory.verify.answers import judge_answer
from factory.verify.attacks import (
    ATTACKS,
    VARIANTS,
    Probes,
    answer_json,
    build_mutants,
    build_probes,
    prose,
    with_unit,
    wrong_answers,
)
from factory.verify.audit import audit_task
from factory.verify.scoring import replay_calls, run_gold
from factory.verify.state import canonical_state_hash, state_diff
from tests.builders import cancellable_orders, open_products, order_to_cancel

ORDER_STATUSES = ["pending", "paid", "shipped", "delivered", "cancelled"]

VERIFIER = """
import json
import re

WANT = json.loads({want!r})
IGNORED = set(json.loads({ignored!r}))
RULES = json.loads({rules!r})
NUMBER = re.compile(r"(?<![\\w.])-?\\d[\\d,]*(?:\\.\\d+)?(?![\\w])")


def clean(tables):
    return {{
        t: sorted(json.dumps({{k: v for k, v in r.items() if k not in IGNORED}}, sort_keys=True) for r in rows)
        for t, rows in tables.items()
        if rows
    }}


def state_ok(final):
    if RULES["state"] == "exact":
        return clean(final) == WANT
    table, key, field, value = RULES["target"]
    return any(r.get("id") == key and r.get(field) == value for r in final.get(table, []))


def said(word, text):
    return re.search(r"(?<![a-z])" + re.escape(word) + r"(?![a-z])", text) is not None


def answer_ok(answer):
    rule, value = RULES["answer"], RULES["value"]
    text = (answer or "").lower()
    if rule == "word":
        return said(value, text) and not any(said(c, text) for c in RULES["competitors"])
    if rule == "number":
        return {{float(n.replace(",", "")) for n in NUMBER.findall(text)}} == {{float(value)}}
    if rule == "contains":
        return str(value).lower() in text
    return (answer or "").strip() == str(value)


def verify(initial, final, answer):
    ok = state_ok(final) and answer_ok(answer)
    return {{"passed": ok, "score": 1.0 if ok else 0.0}}
"""


def verifier(
    want: Snapshot,
    answer: str,
    value: Any,
    competitors: Sequence[str] = (),
    target: tuple[str, str, str, Any] | None = None,
) -> str:
    """A code verifier for a test task: the end state exactly `want` (or, with `target`, only that row's field)
    and the answer judged by one rule: `word` (the value, no competitor), `number` (exactly the value's number),
    `contains` (the value anywhere) or `exact` (the text itself)."""
    clean = {
        t: sorted(
            json.dumps({k: v for k, v in r.items() if k not in TIMESTAMP_COLUMNS}, sort_keys=True, default=str)
            for r in rows
        )
        for t, rows in json.loads(json.dumps(want.tables, default=str)).items()
        if rows
    }
    rules = {
        "state": "target" if target else "exact",
        "target": target,
        "answer": answer,
        "value": value,
        "competitors": list(competitors),
    }
    return VERIFIER.format(want=json.dumps(clean), ignored=json.dumps(list(TIMESTAMP_COLUMNS)), rules=json.dumps(rules))


def cancel_task(seed: dict[str, list[dict[str, Any]]]) -> Task:
    """Cancel an open order, after listing orders and looking up its customer. The order leaves another open one
    among the rows the attacks retry the cancel on, so every attack on other rows is built."""
    order = order_to_cancel(seed)
    return Task(
        id="cancel",
        env_id="online-shop",
        kind="graph",
        question=f"Cancel order {order['id']} and tell me its new status.",
        answer="cancelled",
        gold=[
            ToolCall(tool="list_orders"),
            ToolCall(tool="get_customer", args={"customer_id": order["customer_id"]}),
            ToolCall(tool="cancel_order", args={"order_id": order["id"]}),
        ],
        mutates=True,
    )


def stock_task(seed: dict[str, list[dict[str, Any]]]) -> Task:
    product, customer = seed["products"][0], seed["customers"][0]
    return Task(
        id="stock",
        env_id="online-shop",
        kind="graph",
        question=f"Look up customer {customer['id']}, then list the products: what is the stock of {product['id']}?",
        answer=product["stock"],
        gold=[ToolCall(tool="get_customer", args={"customer_id": customer["id"]}), ToolCall(tool="list_products")],
    )


def restock_task(seed: dict[str, list[dict[str, Any]]]) -> Task:
    p = open_products(seed)[1]  # an archived product refuses the update
    return Task(
        id="restock",
        env_id="online-shop",
        kind="program",
        question=f"Add 5 units to the stock of product {p['id']}; what is the stock now?",
        answer=p["stock"] + 5,
        gold=(
            "def solve(tools):\n"
            f"    p = tools.get_product(product_id={p['id']!r})\n"
            "    return tools.update_product(product_id=p['id'], stock=p['stock'] + 5)['stock']\n"
        ),
        mutates=True,
    )


def verified(task: Task, sessions: Any, answer: str, **rules: Any) -> Task:
    """`task` with a test verifier whose wanted end state is its gold's."""
    want = run_gold(task, sessions).replay.final
    return task.model_copy(update={"verifier": verifier(want, answer, task.answer, **rules)})


@pytest.fixture(scope="module")
def shop(shop_runtime):
    return shop_runtime


@pytest.fixture(scope="module")
def cancel_probes(shop) -> tuple[Task, Probes, Any]:
    bundle, sessions, seed = shop
    task = cancel_task(seed)
    gold = run_gold(task, sessions)
    return task, build_probes(bundle, task, gold, sessions), gold


def checks_of(result) -> dict[str, tuple[bool, str]]:
    return {c.name: (c.passed, c.detail) for c in result.checks}


def codes(result) -> set[str]:
    return {r.split(":", 1)[0] for r in result.reasons}


# --- the audit's verdicts -----------------------------------------------------------------------------------


def test_a_precise_verifier_pays_every_variant_and_refuses_every_attack(shop):
    bundle, sessions, seed = shop
    task = verified(cancel_task(seed), sessions, "word", competitors=[s for s in ORDER_STATUSES if s != "cancelled"])
    result = audit_task(bundle, task, sessions)
    assert result.kept, result.reasons
    checks = checks_of(result)
    assert list(checks) == ["gold", *VARIANTS, *ATTACKS, "replay"]
    assert all(ok for ok, _ in checks.values())
    skipped = {name for name, (_, detail) in checks.items() if detail.startswith("skipped")}
    assert skipped == {"variant_answer_units"}  # "cancelled" holds no number
    assert checks["attack_state_mutants"][1].endswith("rejected")


def test_a_read_only_task_skips_what_needs_a_write_and_pays_units(shop):
    bundle, sessions, seed = shop
    task = verified(stock_task(seed), sessions, "number")
    result = audit_task(bundle, task, sessions)
    assert result.kept, result.reasons
    checks = checks_of(result)
    skipped = {name for name, (_, detail) in checks.items() if detail.startswith("skipped")}
    assert skipped == {"attack_answer_only", "attack_other_rows", "attack_spray", "attack_state_mutants"}
    assert checks["variant_answer_units"] == (True, "1 accepted")
    assert checks["attack_destructive"][0] and checks["attack_every_mutator"][0]


def test_a_program_task_with_a_precise_verifier_is_kept(shop):
    bundle, sessions, seed = shop
    task = verified(restock_task(seed), sessions, "number")
    result = audit_task(bundle, task, sessions)
    assert result.kept, result.reasons
    # The update changes what the read returns, so swapping them is not the same work: skipped, not failed.
    assert checks_of(result)["variant_reordered"] == (True, "skipped: no two consecutive gold calls are independent")


@pytest.mark.parametrize(
    ("rules", "caught"),
    [
        (
            {"answer": "word", "competitors": ["pending", "paid", "shipped", "delivered"], "target": "status"},
            {
                "attack_other_rows_passes",
                "attack_destructive_passes",
                "attack_spray_passes",
                "attack_every_mutator_passes",
                # the cancel also gives the order's quantity back to its product: a state with that stock
                # return undone, changed or doubled leaves the order cancelled, so this verifier pays it too
                "attack_state_mutants_passes",
            },
        ),
        ({"answer": "contains"}, {"attack_dump_passes", "attack_hedge_passes"}),
        ({"answer": "exact"}, {"variant_answer_prose_fails", "variant_answer_json_fails"}),
    ],
    ids=["writes-elsewhere-unseen", "answer-by-containment", "answer-by-exact-text"],
)
def test_a_verifier_weak_in_one_way_is_dropped_by_the_probe_aimed_at_it(shop, rules, caught):
    bundle, sessions, seed = shop
    task = cancel_task(seed)
    order_id = task.gold[-1].args["order_id"]  # type: ignore[index]  # a chain task
    target = ("orders", order_id, "status", "cancelled") if rules.pop("target", None) else None
    weak = verified(task, sessions, rules.pop("answer"), target=target, **rules)
    result = audit_task(bundle, weak, sessions)
    assert not result.kept
    assert codes(result) == caught


def test_an_echo_of_a_question_that_names_the_answer_is_caught(shop):
    bundle, sessions, seed = shop
    order = next(o for o in seed["orders"] if o["status"] == "paid")
    task = Task(
        id="paid",
        env_id="online-shop",
        kind="graph",
        question=f"Is order {order['id']} paid? Reply with its status.",
        answer="paid",
        gold=[ToolCall(tool="get_order", args={"order_id": order["id"]})],
    )
    result = audit_task(bundle, verified(task, sessions, "contains"), sessions)
    assert "attack_echo_passes" in codes(result)
    assert any(r.startswith("attack_echo_passes: accepted 1/1: the question as the answer") for r in result.reasons)


# --- how each probe is built ---------------------------------------------------------------------------------


def test_variants_do_the_gold_work_another_way_and_reach_the_gold_end_state(shop, cancel_probes):
    _, sessions, _ = shop
    task, probes, gold = cancel_probes
    gold_hash = canonical_state_hash(gold.replay.final)
    (reads,) = probes.named("variant_extra_reads")
    assert reads.calls is not None and reads.calls[0] == reads.calls[-1] and reads.calls[1:-1] == task.gold
    (swapped,) = probes.named("variant_reordered")
    assert swapped.calls is not None and [c.tool for c in swapped.calls] == [
        "list_orders",
        "cancel_order",
        "get_customer",
    ]
    (pages,) = probes.named("variant_page_size")
    assert pages.calls is not None and pages.calls[0].args == {"limit": 20}
    for name in VARIANTS:
        for p in probes.named(name):
            assert canonical_state_hash(p.final) == gold_hash, name
            assert p.calls is not None and canonical_state_hash(replay_calls(sessions, p.calls).final) == gold_hash
    assert {p.answer for p in probes.probes if p.name.startswith("variant_answer")} == {
        "The answer is cancelled.",
        '{\n  "answer": "cancelled"\n}',
    }


def test_state_attacks_add_writes_that_took_effect_and_replay_to_their_end_state(shop, cancel_probes):
    _, sessions, seed = shop
    task, probes, gold = cancel_probes
    cancelled = task.gold[-1].args["order_id"]  # type: ignore[index]  # a chain task
    n_gold = len(task.gold)
    for p in probes.named("attack_other_rows"):
        assert p.calls is not None and p.calls[:n_gold] == task.gold
        assert [c.tool for c in p.calls[n_gold:]] == ["cancel_order"] and p.calls[-1].args["order_id"] != cancelled
    (spray,) = probes.named("attack_spray")
    open_orders = cancellable_orders(seed)
    assert spray.calls is not None and len(spray.calls) - n_gold == len(open_orders) - 1  # the others that can be
    destructive = {p.calls[-1].tool for p in probes.named("attack_destructive") if p.calls}
    assert destructive == {"cancel_order", "update_product"}  # a transition, and a status update elsewhere
    (everything,) = probes.named("attack_every_mutator")
    assert everything.detail == "called: cancel_order, create_customer, create_order, create_product, update_product"
    for p in probes.probes:
        if p.must_pass or p.calls is None or not p.calls:
            continue
        final = replay_calls(sessions, p.calls).final
        assert canonical_state_hash(final) == canonical_state_hash(p.final), p.name
        if p.name in ("attack_other_rows", "attack_destructive", "attack_spray", "attack_every_mutator"):
            assert canonical_state_hash(p.final) != canonical_state_hash(gold.replay.final), p.name


def test_answer_attacks_keep_the_gold_calls_and_change_only_the_answer(cancel_probes):
    task, probes, gold = cancel_probes
    (noop,) = probes.named("attack_noop")
    assert (noop.calls, noop.answer, noop.final) == ([], None, gold.replay.initial)
    (echo,) = probes.named("attack_echo")
    assert (echo.calls, echo.answer) == ([], task.question)
    (answer_only,) = probes.named("attack_answer_only")
    assert (answer_only.calls, answer_only.answer) == ([], "cancelled")
    (dump,) = probes.named("attack_dump")
    assert dump.calls == task.gold and dump.final == gold.replay.final and dump.answer is not None
    assert all(f'"id": "{o["id"]}"' in dump.answer for o in gold.replay.final.tables["orders"])
    hedge, negated = probes.named("attack_hedge")
    assert hedge.answer is not None and hedge.answer.startswith("It is cancelled, or possibly ")
    assert any(s in hedge.answer for s in ("pending", "paid", "shipped", "delivered"))
    # every candidate negated, the answer too: "not A, not B" states none of them
    assert negated.answer is not None and negated.answer.startswith("not cancelled, not ")
    assert not judge_answer("cancelled", negated.answer, competitors=["pending", "paid", "shipped", "delivered"])[0]
    assert [p.answer for p in probes.named("attack_wrong_answer")] == wrong_answers("cancelled")


def test_page_size_at_the_maximum_is_redone_in_smaller_pages(shop):
    bundle, sessions, seed = shop
    task = Task(
        id="count",
        env_id="online-shop",
        kind="graph",
        question="How many of the first 20 orders are there?",
        answer=min(20, len(seed["orders"])),
        gold=[ToolCall(tool="list_orders", args={"limit": 20})],
    )
    probes = build_probes(bundle, task, run_gold(task, sessions), sessions)
    (pages,) = probes.named("variant_page_size")
    assert pages.calls is not None and [c.args for c in pages.calls] == [{"limit": 10}, {"limit": 10, "offset": 10}]
    assert probes.skipped["variant_reordered"] == "no two consecutive gold calls are independent"


def test_a_call_that_uses_what_the_one_before_returned_is_not_reordered(shop):
    bundle, sessions, seed = shop
    created = f"pro_{len(seed['products']) + 1:04d}"  # the id the new product gets
    task = Task(
        id="create-then-update",
        env_id="online-shop",
        kind="graph",
        question='Add a product "Mug X" (SKU "SKU-77777", price 3, stock 1), then set its price to 4.',
        gold=[
            ToolCall(tool="create_product", args={"name": "Mug X", "sku": "SKU-77777", "price": 3, "stock": 1}),
            ToolCall(tool="update_product", args={"product_id": created, "price": 4}),
        ],
        mutates=True,
    )
    probes = build_probes(bundle, task, run_gold(task, sessions), sessions)
    assert probes.skipped["variant_reordered"] == "no two consecutive gold calls are independent"
    assert probes.skipped["variant_answer_prose"] == "the task asks for no answer"


def test_answers_rendered_as_a_person_would_write_them():
    assert prose({"product stock": 42, "product_category": "home"}) == (
        "The product stock is 42 and the product category is home."
    )
    assert prose(["a", "b", "c"]) == "They are a, b and c."
    assert prose([]) == "There are none."
    assert prose(True) == "The answer is yes."
    assert answer_json(42) == '{\n  "answer": 42\n}'
    assert json.loads(answer_json({"a": 1, "b": 2})) == {"a": 1, "b": 2}
    assert answer_json({"a": 1, "b": 2}).index('"b"') < answer_json({"a": 1, "b": 2}).index('"a"')
    assert with_unit(30109.78, money=True) == "$30,109.78"
    assert with_unit(12.5, money=True) == "$12.50"
    assert with_unit(-3, money=True) == "-$3.00"
    assert with_unit(1200, money=False) == "1,200 units"
    assert with_unit("home", money=True) == "home"


def test_state_mutants_cover_dropped_changed_twice_and_other_record(shop):
    bundle, sessions, seed = shop
    p = seed["products"][0]
    gold = run_gold(
        Task(
            id="restock0",
            env_id="online-shop",
            kind="program",
            question="",
            gold=(
                "def solve(tools):\n"
                f"    return tools.update_product(product_id={p['id']!r}, stock={p['stock'] + 5})['stock']\n"
            ),
            mutates=True,
        ),
        sessions,
    )
    initial, final = gold.replay.initial, gold.replay.final
    keys = bundle.spec.primary_keys()
    mutants = list(build_mutants(initial, final, state_diff(initial, final, keys=keys), bundle.spec.bookkeeping, keys))
    assert {m.kind for m in mutants} == {"dropped", "changed", "twice", "other_record"}
    twice = next(m for m in mutants if m.kind == "twice")
    assert next(r for r in twice.tables["products"] if r["id"] == p["id"])["stock"] == p["stock"] + 10
    assert all(Snapshot(tables=m.tables) != final for m in mutants)


def test_wrong_answers_state_something_else():
    assert wrong_answers("Blue Mug") == ["guM eulB zq", "I could not find it."]
    assert wrong_answers({"count": 3, "names": ["a", "b"]}) == [
        '{"count": 4, "names": ["a zq", "b zq"]}',
        "I could not find it.",
    ]


def test_a_write_is_retried_on_rows_like_the_one_it_changed_first(shop):
    """Whichever open order the gold cancels, the retry on other rows lands on an open one (rows sharing the
    changed row's values come first), even when the first rows in id order are all closed."""
    bundle, sessions, seed = shop
    open_ids = {o["id"] for o in cancellable_orders(seed)}
    for order in (cancellable_orders(seed)[-1], cancellable_orders(seed)[0]):
        task = Task(
            id=f"cancel-{order['id']}",
            env_id="online-shop",
            kind="graph",
            question=f"Cancel order {order['id']}.",
            gold=[ToolCall(tool="cancel_order", args={"order_id": order["id"]})],
            mutates=True,
        )
        probes = build_probes(bundle, task, run_gold(task, sessions), sessions)
        (other,) = probes.named("attack_other_rows")
        assert other.calls is not None and other.calls[-1].args["order_id"] in open_ids - {order["id"]}
