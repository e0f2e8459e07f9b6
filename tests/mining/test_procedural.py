"""Procedural rows: seeded, realistic, consistent with the schema and the entity rules."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from factory.envs.entities import infer_entities
from factory.envs.state import build_seed_db
from factory.mining.procedural import DATE_DAYS, DATE_START, generate_rows, row_counts
from factory.models import EntitySpec, FieldSpec, Rule, ToolSpec, Topic

S, INT, N = {"type": "string"}, {"type": "integer"}, {"type": "number"}
EMAIL = re.compile(r"^[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}$")
PHONE = re.compile(r"^\+1-\d{3}-\d{3}-\d{4}$")


def tool(name: str, props: dict, required: list[str] | None = None) -> ToolSpec:
    return ToolSpec(
        name=name, description=name, parameters={"type": "object", "properties": props, "required": required or []}
    )


SHOP = Topic(
    id="shop",
    title="Shop",
    description="A shop",
    tools=[
        tool("create_customer", {"name": S, "email": S, "phone": S, "joined_on": {"type": "string", "format": "date"}}),
        tool(
            "create_product", {"name": S, "sku": S, "price": N, "stock": INT, "active": {"type": "boolean"}}, ["name"]
        ),
        tool(
            "create_order",
            {
                "customer_id": S,
                "product_id": S,
                "quantity": INT,
                "total": N,
                "status": {"type": "string", "enum": ["pending", "shipped", "cancelled"]},
                "created_at": {"type": "string", "format": "date-time"},
                "updated_at": {"type": "string", "format": "date-time"},
            },
            ["customer_id", "product_id", "quantity"],
        ),
        tool("list_order_items", {"order_id": S, "product_id": S, "quantity": INT}),
        tool("list_categories", {"label": S}),
    ],
)


@pytest.fixture(scope="module")
def entities() -> list[EntitySpec]:
    return infer_entities(SHOP)[0]


@pytest.fixture(scope="module")
def rows(entities: list[EntitySpec]) -> dict[str, list[dict]]:
    return generate_rows(entities, seed=11)


def test_same_seed_same_rows(entities: list[EntitySpec], rows: dict[str, list[dict]]) -> None:
    assert generate_rows(entities, seed=11) == rows
    assert generate_rows(entities, seed=12) != rows


def test_adding_an_entity_leaves_the_others_alone(entities: list[EntitySpec], rows: dict[str, list[dict]]) -> None:
    extra = EntitySpec(name="coupon", table="coupons", fields=[FieldSpec(name="id", primary_key=True)])
    more = generate_rows([*entities, extra], seed=11)
    assert {t: more[t] for t in rows} == rows


def test_counts_need_pagination(entities: list[EntitySpec], rows: dict[str, list[dict]]) -> None:
    counts = {t: len(r) for t, r in rows.items()}
    assert counts["customers"] >= 30 and counts["products"] >= 30
    assert 30 < counts["orders"] <= 120 and counts["order_items"] > counts["orders"]
    assert counts["categories"] == 12
    assert row_counts(entities, scale=0.1)["order"] < counts["orders"]
    small = generate_rows(entities, seed=11, scale=0.1)
    assert 0 < len(small["orders"]) < counts["orders"]


def test_ids_keys_and_references(entities: list[EntitySpec], rows: dict[str, list[dict]]) -> None:
    for e in entities:
        ids = [r["id"] for r in rows[e.table]]
        assert ids == [f"{e.id_prefix}{i:04d}" for i in range(1, len(ids) + 1)]
        for f in e.fields:
            if f.references:
                parent = f.references.split(".")[0]
                table = next(p.table for p in entities if p.name == parent)
                existing = {r["id"] for r in rows[table]}
                assert {r[f.name] for r in rows[e.table]} <= existing, (e.name, f.name)
            if f.unique:
                values = [r[f.name] for r in rows[e.table]]
                assert len(values) == len(set(values)), (e.name, f.name)
            if f.enum:
                assert {r[f.name] for r in rows[e.table]} <= set(f.enum)
            if f.required:
                assert all(r[f.name] is not None for r in rows[e.table])


def test_values_look_real(rows: dict[str, list[dict]]) -> None:
    customers, products, orders = rows["customers"], rows["products"], rows["orders"]
    assert all(EMAIL.match(c["email"]) for c in customers)
    assert all(PHONE.match(c["phone"]) for c in customers)
    # emails follow the person's name
    assert sum(c["email"].split("@")[0].startswith(c["name"].split()[0].lower()) for c in customers) >= 20
    assert all(re.fullmatch(r"SKU-\d{5}(-\d+)?", p["sku"]) for p in products)
    assert all(isinstance(p["price"], float) and round(p["price"], 2) == p["price"] for p in products)
    assert all(isinstance(p["stock"], int) and p["stock"] >= 0 for p in products)
    assert all(isinstance(p["active"], bool) for p in products)
    assert len({p["name"] for p in products}) > 20
    last = DATE_START + dt.timedelta(days=DATE_DAYS)
    for c in customers:
        assert DATE_START <= dt.date.fromisoformat(c["joined_on"]) < last
    for o in orders:
        assert 1 <= o["quantity"] <= 5
        assert o["created_at"] <= o["updated_at"]
        dt.datetime.fromisoformat(o["created_at"])
    # an order's total is its quantity times the product's price
    price = {p["id"]: p["price"] for p in products}
    assert all(o["total"] == round(price[o["product_id"]] * o["quantity"], 2) for o in orders)


def test_rows_satisfy_every_constraint(entities: list[EntitySpec], rows: dict[str, list[dict]]) -> None:
    assert build_seed_db(entities, rows)  # sqlite checks FK, CHECK, NOT NULL and UNIQUE on insert


def test_rules_and_bounds_are_respected() -> None:
    wallet = EntitySpec(
        name="wallet",
        table="wallets",
        fields=[
            FieldSpec(name="id", primary_key=True, required=True),
            FieldSpec(name="balance", type="number", format="money"),
            FieldSpec(name="capacity", type="integer"),
            FieldSpec(name="seats_available", type="integer"),
            FieldSpec(name="score", type="integer", minimum=40, maximum=60),
            FieldSpec(name="code", unique=True),
        ],
        rules=[Rule(kind="non_negative", field="balance")],
        id_prefix="w_",
    )
    rows = generate_rows([wallet], seed=3, scale=5)["wallets"]
    assert len(rows) == row_counts([wallet], scale=5)["wallet"] == 150
    assert all(r["balance"] >= 0 and 40 <= r["score"] <= 60 for r in rows)
    assert all(0 <= r["seats_available"] <= r["capacity"] for r in rows)
    assert len({r["code"] for r in rows}) == len(rows)


def test_unique_together_rows_are_distinct() -> None:
    user = EntitySpec(name="user", table="users", fields=[FieldSpec(name="id", primary_key=True)])
    group = EntitySpec(name="group", table="groups", fields=[FieldSpec(name="id", primary_key=True)])
    membership = EntitySpec(
        name="membership",
        table="memberships",
        fields=[
            FieldSpec(name="id", primary_key=True),
            FieldSpec(name="user_id", references="user.id", required=True),
            FieldSpec(name="group_id", references="group.id", required=True),
        ],
        rules=[Rule(kind="unique_together", fields=["user_id", "group_id"])],
    )
    entities = [user, group, membership]
    rows = generate_rows(entities, seed=5, scale=0.2)  # few parents: collisions are likely
    pairs = [(r["user_id"], r["group_id"]) for r in rows["memberships"]]
    assert len(pairs) == len(set(pairs)) and pairs
    assert build_seed_db(entities, rows)


def test_every_catalog_topic_seeds_a_valid_database() -> None:
    from factory.topics import load_catalog

    for t in load_catalog():
        entities = infer_entities(t)[0]
        rows = generate_rows(entities, seed=0, scale=0.3)
        assert build_seed_db(entities, rows), t.id


def test_text_values_follow_the_pattern_their_parameters_declare():
    """Conjur's `account` must match `^[^ :]+$`: "Account 43" would be refused as an argument."""
    account = EntitySpec(
        name="account",
        table="accounts",
        primary_key="id",
        fields=[
            FieldSpec(name="id", primary_key=True, unique=True, required=True),
            FieldSpec(name="account", pattern=r"^[^ :]+$"),
            FieldSpec(name="slug", pattern=r"^[a-z0-9]+$", unique=True),
        ],
    )
    rows = generate_rows([account], seed=3)["accounts"]
    assert rows and all(re.search(r"^[^ :]+$", r["account"]) for r in rows), [r["account"] for r in rows]
    assert all(re.fullmatch(r"[a-z0-9]+", r["slug"]) for r in rows), [r["slug"] for r in rows]
    free = account.model_copy(update={"fields": [f.model_copy(update={"pattern": None}) for f in account.fields]})
    plain = generate_rows([free], seed=3)["accounts"]
    assert any(" " in r["account"] for r in plain)  # what the pattern changed: the same values, respelled
    assert [r["account"] for r in rows] == [r["account"].replace(" ", "-") for r in plain]
    assert "pattern" not in FieldSpec(name="label").model_dump()  # specs without patterns keep their bytes
