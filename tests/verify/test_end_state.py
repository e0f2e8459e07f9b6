"""The end_state check on the real online shop: the gold's diff exactly, whatever route reaches it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from factory.envs.runtime import Environment
from factory.models import EnvSpec, RubricCheck, Snapshot, ToolCall
from factory.tasks.end_state import end_state_check
from factory.verify.rubric import run_check
from tests.builders import cancellable_orders, open_products

ADA = {"name": "Ada Quartz", "email": "ada.quartz@example.org", "tier": "gold"}
BO = {"name": "Bo Maple", "email": "bo.maple@example.org", "tier": "silver"}


class Shop:
    """The shop, the rows the gold works on (picked from the seed by property) and the gold's end-state check.

    The gold reads and updates a product that takes changes, cancels a cancellable order of another such product
    (which gets the order's quantity back in stock) and creates two customers."""

    def __init__(self, env: Environment):
        self.env = env
        self.spec: EnvSpec = env.spec
        with env.session() as s:
            self.seed = s.snapshot()
        tables = self.seed.tables
        products = {p["id"]: p for p in open_products(tables)}
        self.product, self.other_product = list(products)[:2]
        orders = [o for o in cancellable_orders(tables) if o["product_id"] in products.keys() - {self.product}]
        self.order, self.other_order = orders[0]["id"], orders[1]["id"]
        self.ordered = products[orders[0]["product_id"]]
        self.quantity = orders[0]["quantity"]
        self.calls = [
            ToolCall(tool="get_product", args={"product_id": self.product}),
            ToolCall(tool="update_product", args={"product_id": self.product, "price": 99.5, "stock": 7}),
            ToolCall(tool="cancel_order", args={"order_id": self.order}),
            ToolCall(tool="create_customer", args=ADA),
            ToolCall(tool="create_customer", args=BO),
        ]
        self.gold = self.run(self.calls)
        self.check = end_state_check(self.spec, self.seed, self.gold)

    def run(self, calls: list[ToolCall]) -> Snapshot:
        with self.env.session() as s:
            for c in calls:
                assert s.call(c.tool, c.args).ok, c
            return s.snapshot()

    def passes(self, final: Snapshot, check: RubricCheck | None = None) -> bool:
        return run_check(check or self.check, self.seed, final, None).passed

    def status(self, product_id: Any) -> Any:
        return next(p["status"] for p in self.seed.tables["products"] if p["id"] == product_id)

    def updatable(self) -> list[Any]:
        """Every product that takes an update (an archived one refuses it)."""
        return [p["id"] for p in open_products(self.seed.tables)]


@pytest.fixture(scope="module")
def shop(shop_bundle) -> Shop:
    with Environment.open(shop_bundle) as env:
        yield Shop(env)


def test_the_value_is_the_gold_diff_and_the_gold_passes(shop):
    value = shop.check.value
    assert shop.check.kind == "end_state" and set(value) == {"tables", "keys", "ignore"}
    assert value["tables"]["products"]["changed"] == {
        shop.product: {"price": 99.5, "stock": 7},
        shop.ordered["id"]: {"stock": shop.ordered["stock"] + shop.quantity},  # the cancel gives its quantity back
    }
    assert value["tables"]["orders"]["changed"] == {shop.order: {"status": "cancelled"}}
    assert [r["email"] for r in value["tables"]["customers"]["added"]] == [ADA["email"], BO["email"]]
    assert "customers.created_at" in value["ignore"] or "*.created_at" in value["ignore"]
    result = run_check(shop.check, shop.seed, shop.gold, None)
    assert result.passed, result.detail
    assert not shop.passes(shop.seed)  # a no-op


def test_the_same_write_on_other_rows_fails(shop):
    update = shop.calls[1].args
    one_more = [*shop.calls, ToolCall(tool="update_product", args={**update, "product_id": shop.other_product})]
    assert not shop.passes(shop.run(one_more))
    every = [ToolCall(tool="update_product", args={**update, "product_id": p}) for p in shop.updatable()]
    result = run_check(shop.check, shop.seed, shop.run([*shop.calls, *every]), None)
    assert not result.passed and "products" in result.detail


def test_each_gold_write_sprayed_over_every_row_fails(shop):
    update = shop.calls[1].args
    sprayed = [ToolCall(tool="update_product", args={**update, "product_id": p}) for p in shop.updatable()]
    cancellable = [o["id"] for o in cancellable_orders(shop.seed.tables)]
    sprayed += [ToolCall(tool="cancel_order", args={"order_id": o}) for o in cancellable]
    sprayed += shop.calls[3:]
    assert not shop.passes(shop.run(sprayed))


def test_an_extra_change_elsewhere_fails(shop):
    cancel_another = [*shop.calls, ToolCall(tool="cancel_order", args={"order_id": shop.other_order})]
    assert not shop.passes(shop.run(cancel_another))
    create_another = [*shop.calls, ToolCall(tool="create_customer", args={**ADA, "email": "ada.two@example.org"})]
    assert not shop.passes(shop.run(create_another))
    deleted = copy.deepcopy(shop.gold.tables)
    deleted["customers"].pop(0)  # a row deleted on the side
    result = run_check(shop.check, shop.seed, Snapshot(tables=deleted), None)
    assert not result.passed and "was removed" in result.detail


def test_a_missing_or_wrong_gold_write_fails(shop):
    assert not shop.passes(shop.run(shop.calls[:-1]))  # one create missing
    half = [
        shop.calls[0],
        ToolCall(tool="update_product", args={"product_id": shop.product, "price": 99.5}),
        *shop.calls[2:],
    ]
    assert not shop.passes(shop.run(half))
    wrong = [shop.calls[0], ToolCall(tool="update_product", args={**shop.calls[1].args, "stock": 8}), *shop.calls[2:]]
    assert not shop.passes(shop.run(wrong))


def test_equivalent_routes_pass(shop):
    two_updates = [
        ToolCall(tool="update_product", args={"product_id": shop.product, "stock": 7}),
        ToolCall(tool="update_product", args={"product_id": shop.product, "price": 99.5}),
        *shop.calls[2:],
    ]
    assert shop.passes(shop.run(two_updates))
    detour = [
        ToolCall(tool="update_product", args={"product_id": shop.product, "price": 10.0, "status": "active"}),
        ToolCall(tool="get_product", args={"product_id": shop.other_product}),
        ToolCall(tool="update_product", args={**shop.calls[1].args, "status": shop.status(shop.product)}),
        *shop.calls[2:],
    ]
    assert shop.passes(shop.run(detour))
    # The customers created the other way round: each gets the other's generated id, the content is the same.
    swapped = shop.run([*shop.calls[:3], shop.calls[4], shop.calls[3]])
    created = {r["email"]: r["id"] for r in swapped.tables["customers"]}
    assert created[ADA["email"]] != next(r["id"] for r in shop.gold.tables["customers"] if r["email"] == ADA["email"])
    assert shop.passes(swapped)


def test_a_read_only_task_fails_when_any_row_changed(shop):
    unchanged = end_state_check(shop.spec, shop.seed, shop.seed)
    assert unchanged.value["tables"] == {}
    assert shop.passes(shop.seed, unchanged)
    reads = shop.run([ToolCall(tool="list_orders", args={"status": "paid"}), shop.calls[0]])
    assert shop.passes(reads, unchanged)
    for calls in (
        [shop.calls[2]],
        [shop.calls[3]],
        [ToolCall(tool="update_product", args={"product_id": shop.product, "stock": 1})],
    ):
        assert not shop.passes(shop.run(calls), unchanged), calls
    # A bookkeeping column is no change.
    stamped = copy.deepcopy(shop.seed.tables)
    stamped["customers"][0]["created_at"] = "2030-01-01T00:00:00"
    assert shop.passes(Snapshot(tables=stamped), unchanged)
