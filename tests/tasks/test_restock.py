"""The seeds' constrained-purchasing example end to end: restock A (3 units), B (only 2: the supplier has 2),
C (none: the budget is spent); 70 of a budget of 100. A purpose-built environment holds exactly that data."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from factory.envs.build import build_bundle
from factory.envs.bundle import Bundle
from factory.envs.runtime import Environment
from factory.envs.state import write_sqlite_state
from factory.models import EntitySpec, FieldSpec, Rule, Task, ToolCall, ToolOperation, ToolSpec, Topic, Trajectory
from factory.tasks.programs import EnvView, purchase_plan, synthesize_program_tasks
from factory.verify.code import run_code_verifier

F = FieldSpec
PAGE = {"limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}, "offset": {"type": "integer"}}

ENTITIES = [
    EntitySpec(
        name="product",
        table="products",
        id_prefix="pro_",
        fields=[
            F(name="id", primary_key=True),
            F(name="name", required=True),
            F(name="stock", type="integer"),
            F(name="target_level", type="integer"),
        ],
        rules=[Rule(kind="non_negative", field="stock")],
    ),
    EntitySpec(
        name="supplier_item",
        table="supplier_items",
        id_prefix="si_",
        fields=[
            F(name="id", primary_key=True),
            F(name="product_id", references="product.id", required=True),
            F(name="unit_cost", type="number", format="money"),
            F(name="stock", type="integer"),
        ],
        rules=[Rule(kind="non_negative", field="stock")],
    ),
    EntitySpec(
        name="budget",
        table="budgets",
        id_prefix="bud_",
        fields=[F(name="id", primary_key=True), F(name="name"), F(name="remaining", type="number", format="money")],
        rules=[Rule(kind="non_negative", field="remaining")],
    ),
    EntitySpec(
        name="purchase_order",
        table="purchase_orders",
        id_prefix="po_",
        fields=[
            F(name="id", primary_key=True),
            F(name="supplier_item_id", references="supplier_item.id", required=True),
            F(name="budget_id", references="budget.id", required=True),
            F(name="quantity", type="integer", required=True),
            F(name="amount", type="number", format="money", required=True),
        ],
        rules=[
            Rule(kind="consumes", field="quantity", target="supplier_item.stock"),
            Rule(kind="consumes", field="amount", target="budget.remaining"),
        ],
    ),
]


def _tool(name: str, kind: str, entity: str, props: dict, required: tuple[str, ...] = ()) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=f"{kind} {entity.replace('_', ' ')}s",
        parameters={"type": "object", "properties": props, "required": list(required)},
        mutates=kind == "create",
        operation=ToolOperation(kind=kind, entity=entity),
    )


TOOLS = [
    _tool("list_products", "list", "product", dict(PAGE)),
    _tool("list_supplier_items", "list", "supplier_item", {"product_id": {"type": "string"}, **PAGE}),
    _tool("get_budget", "get", "budget", {"budget_id": {"type": "string"}}, ("budget_id",)),
    _tool("list_purchase_orders", "list", "purchase_order", dict(PAGE)),
    _tool(
        "create_purchase_order",
        "create",
        "purchase_order",
        {
            "supplier_item_id": {"type": "string"},
            "budget_id": {"type": "string"},
            "quantity": {"type": "integer", "minimum": 0},
            "amount": {"type": "number", "minimum": 0},
        },
        ("supplier_item_id", "budget_id", "quantity", "amount"),
    ),
]

ROWS = {
    "products": [
        {"id": "pro_0001", "name": "Widget A", "stock": 2, "target_level": 5},
        {"id": "pro_0002", "name": "Widget B", "stock": 1, "target_level": 5},
        {"id": "pro_0003", "name": "Widget C", "stock": 0, "target_level": 2},
        {"id": "pro_0004", "name": "Widget D", "stock": 9, "target_level": 5},
    ],
    "supplier_items": [
        {"id": "si_0001", "product_id": "pro_0001", "unit_cost": 10.0, "stock": 50},
        {"id": "si_0002", "product_id": "pro_0001", "unit_cost": 12.0, "stock": 50},
        {"id": "si_0003", "product_id": "pro_0002", "unit_cost": 20.0, "stock": 2},
        {"id": "si_0004", "product_id": "pro_0003", "unit_cost": 40.0, "stock": 10},
        {"id": "si_0005", "product_id": "pro_0004", "unit_cost": 5.0, "stock": 10},
    ],
    "budgets": [{"id": "bud_0001", "name": "Q3 restock", "remaining": 100.0}],
    "purchase_orders": [],
}


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory):
    out: Path = tmp_path_factory.mktemp("restock") / "warehouse"
    topic = Topic(
        id="warehouse-purchasing",
        title="Warehouse purchasing",
        description="Products below their target level are bought from suppliers within a budget.",
        tools=TOOLS,
        entities=ENTITIES,
    )
    report = build_bundle(topic, out)
    assert report.kept, report.reasons
    bundle = Bundle.open(out)
    write_sqlite_state(bundle.spec.entities, ROWS, out)  # the example's exact rows replace the generated ones
    with Environment.open(out) as env:
        yield bundle, env


@pytest.fixture(scope="module")
def restock_task(shop) -> Task:
    bundle, env = shop
    tasks = [
        t for t in synthesize_program_tasks(bundle, env.session, random.Random(0), 12) if "constraint" in t.capabilities
    ]
    assert len(tasks) == 1
    return tasks[0]


def _score(env: Environment, task: Task, trajectory: Trajectory):
    """Replay the trajectory's calls in a fresh session and run the task's verifier in the sandbox."""
    with env.session() as session:
        initial = session.snapshot()
        for call in trajectory.tool_calls:
            session.call(call.tool, call.args)
        final = session.snapshot()
    return run_code_verifier(task.verifier or "", initial, final, trajectory.final_answer)


def _buy(item: str, quantity: int, amount: float) -> ToolCall:
    args = {"supplier_item_id": item, "budget_id": "bud_0001", "quantity": quantity, "amount": amount}
    return ToolCall(tool="create_purchase_order", args=args)


RIGHT = [_buy("si_0001", 3, 30.0), _buy("si_0003", 2, 40.0)]


def test_the_environment_has_the_purchasing_shape(shop):
    bundle, env = shop
    with env.session() as s:
        plan = purchase_plan(EnvView(bundle.spec, s.snapshot().tables))
    assert plan is not None
    assert (plan.offer.name, plan.product.name, plan.budget.name) == ("supplier_item", "product", "budget")
    assert (plan.cost, plan.stock, plan.target, plan.supply, plan.budget_field) == (
        "unit_cost",
        "stock",
        "target_level",
        "stock",
        "remaining",
    )


def test_gold_buys_three_of_a_two_of_b_and_none_of_c(shop, restock_task):
    _, env = shop
    assert restock_task.answer == 70
    assert restock_task.mutates and {"constraint", "mutation", "loops"} <= set(restock_task.capabilities)
    assert set(restock_task.difficulty.constraints) == {"budget", "supply"}
    assert "bud_0001" in restock_task.question and "create_purchase_order" not in restock_task.question
    assert "that" not in restock_task.question.split()  # "the product", "the supplier item's own stock": one referent
    with env.session() as s:
        run = s.run_program(str(restock_task.gold))
        orders = s.snapshot().tables["purchase_orders"]
        budget = s.call("get_budget", {"budget_id": "bud_0001"}).value
    assert run.error is None and run.answer == 70
    bought = sorted((o["supplier_item_id"], o["quantity"], o["amount"]) for o in orders)
    assert bought == [("si_0001", 3, 30.0), ("si_0003", 2, 40.0)]
    assert budget["remaining"] == pytest.approx(30.0)
    assert [c.tool for c in run.calls].count("create_purchase_order") == 2


def test_the_right_trajectory_scores_one(shop, restock_task):
    _, env = shop
    verdict = _score(env, restock_task, Trajectory(tool_calls=RIGHT, final_answer="I spent $70.00 of the 100 budget."))
    assert verdict.passed and verdict.score == 1.0, verdict.checks


def test_the_same_orders_in_another_order_also_score_one(shop, restock_task):
    _, env = shop
    verdict = _score(env, restock_task, Trajectory(tool_calls=RIGHT[::-1], final_answer="70"))
    assert verdict.passed, verdict.checks


@pytest.mark.parametrize(
    ("calls", "answer", "failing"),
    [
        ([_buy("si_0001", 3, 30.0), _buy("si_0003", 3, 60.0)], "90", "state"),  # 3 of B: more than the supplier has
        ([*RIGHT, _buy("si_0004", 1, 30.0)], "100", "state"),  # C bought below its cost to fit the budget
        ([_buy("si_0002", 3, 36.0), _buy("si_0003", 2, 40.0)], "76", "state"),  # not the cheapest offer for A
        (RIGHT, "60", "answer"),  # right orders, wrong total
        ([], "70", "state"),  # the right total without buying anything
    ],
)
def test_wrong_trajectories_score_zero(shop, restock_task, calls, answer, failing):
    _, env = shop
    verdict = _score(env, restock_task, Trajectory(tool_calls=calls, final_answer=answer))
    assert not verdict.passed and verdict.score == 0.0
    failed = [c.name for c in verdict.checks if not c.passed]
    assert any(name.startswith(failing) for name in failed), verdict.checks
