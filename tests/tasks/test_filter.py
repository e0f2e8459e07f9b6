"""The solvability filter on hand-made tasks over a built catalog bundle (online-shop)."""

from __future__ import annotations

import random

import pytest

from factory.models import RubricCheck, Task, ToolCall, Trajectory
from factory.tasks.end_state import end_state_check
from factory.tasks.filter import checked_values, filter_task, ungrounded_values
from factory.tasks.synthesize import curate_tasks, task_id
from factory.verify.answers import normalize_text
from factory.verify.scoring import SessionFactory, replay_writes
from tests.builders import open_products


@pytest.fixture
def shop(shop_runtime):
    return shop_runtime


def set_stock(pid: str, stock: int, question: str | None = None) -> Task:
    return Task(
        id="t",
        env_id="online-shop",
        kind="graph",
        question=question or f"Set the stock of product {pid} to {stock}.",
        gold=[
            ToolCall(tool="get_product", args={"product_id": pid}),
            ToolCall(tool="update_product", args={"product_id": pid, "stock": stock}),
        ],
        rubric=[RubricCheck(kind="field_equals", table="products", where={"id": pid}, field="stock", value=stock)],
        mutates=True,
    )


def with_end_state(bundle, sessions: SessionFactory, task: Task) -> Task:
    """The task with the exact end-state check of its gold run, as synthesized tasks carry."""
    with sessions() as s:
        initial = s.snapshot()
        for call in task.gold:
            assert s.call(call.tool, call.args).ok
        final = s.snapshot()
    return task.model_copy(update={"rubric": [*task.rubric, end_state_check(bundle.spec, initial, final)]})


def test_a_good_mutation_task_is_kept(shop):
    bundle, sessions, seed = shop
    result = filter_task(bundle, set_stock(open_products(seed)[0]["id"], 777), sessions)
    assert result.kept, result.reasons
    assert result.successes == 5 and result.runs == 5


def test_initial_state_that_already_satisfies_the_task_is_dropped(shop):
    bundle, sessions, seed = shop
    p = open_products(seed)[0]  # an archived product would refuse the write instead
    task = Task(
        id="t",
        env_id="online-shop",
        kind="graph",
        question=f"Make sure product {p['id']} is in the {p['category']} category.",
        gold=[ToolCall(tool="update_product", args={"product_id": p["id"], "category": p["category"]})],
        rubric=[
            RubricCheck(
                kind="field_equals", table="products", where={"id": p["id"]}, field="category", value=p["category"]
            )
        ],
        mutates=True,
    )
    result = filter_task(bundle, task, sessions)
    assert not result.kept
    assert any(r.startswith("already_satisfied") for r in result.reasons)
    assert any(r.startswith("no_state_change") for r in result.reasons)


def test_a_gold_write_using_a_value_nobody_read_is_dropped(shop):
    bundle, sessions, seed = shop
    p = open_products(seed)[1]  # an archived product would refuse the write before its grounding is judged
    stock = next(v for v in range(31, 1000) if v not in p.values())  # a value the read does not return
    result = filter_task(bundle, set_stock(p["id"], stock, question="Fix the stock of the second product."), sessions)
    assert not result.kept
    assert result.reasons == [
        f"ungrounded_write: call 2 update_product: stock={stock} is in neither the question nor an output"
    ]


def test_grounding_accepts_values_from_earlier_outputs_and_rejects_later_ones(shop):
    bundle, sessions, seed = shop
    cid = seed["customers"][0]["id"]
    pid = next(p["id"] for p in open_products(seed) if p["stock"] >= 1)  # a product that can be ordered
    calls = [
        ToolCall(tool="get_customer", args={"customer_id": cid}),
        ToolCall(tool="create_order", args={"customer_id": cid, "product_id": pid, "quantity": 1}),
        ToolCall(tool="get_product", args={"product_id": pid}),
    ]
    with sessions() as s:
        results = [s.call(c.tool, c.args) for c in calls]
    problems = _ungrounded(bundle.spec, "Order 1 of them for that customer.", calls, results)
    assert problems == [f"call 2 create_order: product_id={pid!r} is in neither the question nor an output"]
    assert _ungrounded(bundle.spec, f"Order 1 of {pid} for that customer.", calls, results) == []


def _ungrounded(*args, **kwargs) -> list[str]:
    return [str(p) for p in ungrounded_values(*args, **kwargs)]


def test_a_value_that_fills_a_stated_template_or_a_program_date_is_grounded(shop):
    bundle, sessions, seed = shop
    product = open_products(seed)[0]
    call = ToolCall(tool="create_customer", args={"name": "Ops Desk", "email": f"ops+{product['id']}@example.com"})
    with sessions() as s:
        result = s.call("get_product", {"product_id": product["id"]})
    calls = [ToolCall(tool="get_product", args={"product_id": product["id"]}), call]
    results = [result, result]
    template = 'Add a customer "Ops Desk" with email "ops+<ID>@example.com", where <ID> is the product\'s ID.'
    assert _ungrounded(bundle.spec, template, calls, results) == []
    bare = 'Add a customer "Ops Desk" whose email names the product, where <ID> is its ID.'
    (problem,) = _ungrounded(bundle.spec, bare, calls, results)
    assert "email=" in problem  # a bare placeholder is no template
    dated = [ToolCall(tool="update_product", args={"product_id": product["id"], "name": "2026-02-03T10:00:00"})]
    assert _ungrounded(bundle.spec, f"Rename {product['id']}.", dated, results[:1], numbers_free=True) == []
    assert _ungrounded(bundle.spec, f"Rename {product['id']}.", dated, results[:1]) != []


def test_prose_no_check_holds_is_the_solver_s_to_word(shop):
    bundle, sessions, seed = shop
    product = open_products(seed)[0]
    prose = "Renamed after the spring catalog review."
    calls = [
        ToolCall(tool="get_product", args={"product_id": product["id"]}),
        ToolCall(tool="update_product", args={"product_id": product["id"], "name": prose}),
    ]
    with sessions() as s:
        results = [s.call(c.tool, c.args) for c in calls]
    question = f"Rename {product['id']}."
    task = Task(id="t", env_id="online-shop", kind="graph", question=question, gold=calls, mutates=True)
    (problem,) = _ungrounded(bundle.spec, question, calls, results)  # no rubric given: held to grounding
    assert "name=" in problem
    assert _ungrounded(bundle.spec, question, calls, results, checked=checked_values(task)) == []
    named = RubricCheck(kind="field_equals", table="products", where={"id": product["id"]}, field="name", value=prose)
    checked = checked_values(task.model_copy(update={"rubric": [named]}))
    assert _ungrounded(bundle.spec, question, calls, results, checked=checked) == [problem]  # a check needs it
    short = [calls[0], ToolCall(tool="update_product", args={"product_id": product["id"], "name": "Kettle Pro"})]
    assert _ungrounded(bundle.spec, question, short, results) != []
    assert _ungrounded(bundle.spec, question, short, results, checked=set()) == []  # nothing holds a name
    # the key of the row a write changes is held to, as the end state's changes name it
    end = RubricCheck(kind="end_state", value={"tables": {"products": {"changed": {product["id"]: {"name": "x"}}}}})
    assert ("s", normalize_text(product["id"])) in checked_values(task.model_copy(update={"rubric": [end]}))


def test_a_gold_that_fails_is_dropped(shop):
    bundle, sessions, _ = shop
    task = set_stock("pro_9999", 5)
    result = filter_task(bundle, task, sessions)
    assert not result.kept and result.reasons[0].startswith("gold_fails: call 1 get_product: not_found")


class FlakySolver:
    """Passes only on its first attempt: a task an agent cannot solve reliably."""

    name = "flaky"

    def __init__(self) -> None:
        self.calls = 0

    def solve(self, task: Task, session_factory: SessionFactory, rng: random.Random) -> Trajectory:
        self.calls += 1
        if self.calls == 1:
            return Trajectory(tool_calls=list(task.gold))
        return Trajectory()


def test_validation_runs_need_two_consistent_successes(shop):
    bundle, sessions, seed = shop
    solver = FlakySolver()
    result = filter_task(bundle, set_stock(open_products(seed)[2]["id"], 555), sessions, solver=solver)
    assert solver.calls == 5
    assert not result.kept
    assert result.reasons == ["unstable: 1/5 validation runs passed, 1 reached the same end state (need 2)"]


def test_curate_gives_content_ids_and_counts_reasons(shop):
    bundle, sessions, seed = shop
    pid = open_products(seed)[0]["id"]
    good = with_end_state(bundle, sessions, set_stock(pid, 901))
    tasks = [good, good.model_copy(), set_stock(pid, 902, question="Fix that stock.")]
    result = curate_tasks(bundle, tasks, sessions)
    assert [t.id for t in result.tasks] == [task_id(good)]
    assert result.tasks[0].id.startswith("graph-") and result.tasks[0].lineage is not None
    assert result.audit_summary == {"duplicate": 1, "kept": 1, "ungrounded_write": 1}
    assert result.generated == 3 and result.yield_rate == pytest.approx(1 / 3)
    assert task_id(set_stock(pid, 901)) == task_id(good)


def test_a_value_the_question_names_in_the_singular_is_grounded(shop):
    """ "publish an article" grounds the `articles` collection a write names."""
    bundle, sessions, seed = shop
    product = open_products(seed)[0]
    calls = [ToolCall(tool="update_product", args={"product_id": product["id"], "name": "Kettles"})]
    with sessions() as s:
        results = [s.call(c.tool, c.args) for c in calls]
    assert _ungrounded(bundle.spec, f"List {product['id']} as our kettle.", calls, results) == []
    assert _ungrounded(bundle.spec, f"List {product['id']} as our teapot.", calls, results) != []


def test_grounding_is_asked_of_the_calls_that_write(shop):
    """A write tool's call that changes nothing (the name it already has) writes nothing to ground; the same call
    with a new name does."""
    bundle, sessions, seed = shop
    product = open_products(seed)[0]
    same = ToolCall(tool="update_product", args={"product_id": product["id"], "name": product["name"]})
    new = ToolCall(tool="update_product", args={"product_id": product["id"], "name": "Kettle Pro"})
    calls = [same, new]
    _, writes = replay_writes(sessions, calls, bundle.spec.bookkeeping, bundle.spec.primary_keys())
    assert writes == [False, True]
    with sessions() as s:
        results = [s.call(c.tool, c.args) for c in calls]
    question = f"Rename {product['id']}."
    assert [p.call for p in ungrounded_values(bundle.spec, question, calls, results)] == [1, 2]
    assert [p.call for p in ungrounded_values(bundle.spec, question, calls, results, writes=writes)] == [2]
