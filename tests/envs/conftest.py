"""Shared fixtures of the environment tests: a small shop (customers, products with stock, orders that
consume stock, reviews unique per customer and product) with hand-written entities, rules, tools and rows."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from factory.models import EntitySpec, EnvSpec, FieldSpec, Rule, ToolOperation, ToolSpec

F = FieldSpec


def _tool(
    name: str, kind: str, entity: str, props: dict[str, dict], required: tuple[str, ...] = (), **op: Any
) -> ToolSpec:
    schema = {"type": "object", "properties": props, "required": list(required)}
    mutates = kind in ("create", "update", "delete", "action")
    return ToolSpec(
        name=name,
        description=f"{kind} {entity}",
        parameters=schema,
        mutates=mutates,
        operation=ToolOperation(kind=kind, entity=entity, **op),
    )


S, INT, N, B = {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}
PAGE = {"limit": {"type": "integer", "default": 20}, "offset": {"type": "integer", "default": 0}}

ENTITIES = [
    EntitySpec(
        name="customer",
        table="customers",
        fields=[
            F(name="id", primary_key=True),
            F(name="name", required=True),
            F(name="email", format="email", unique=True),
            F(name="tier", enum=["basic", "gold"]),
            F(name="credit", type="number"),
            F(name="created_at", type="datetime"),
        ],
        rules=[Rule(kind="non_negative", field="credit")],
    ),
    EntitySpec(
        name="product",
        table="products",
        fields=[
            F(name="id", primary_key=True),
            F(name="name", required=True),
            F(name="description"),
            F(name="price", type="number", format="money"),
            F(name="stock", type="integer"),
            F(name="active", type="boolean"),
        ],
        rules=[Rule(kind="non_negative", field="stock")],
    ),
    EntitySpec(
        name="order",
        table="orders",
        fields=[
            F(name="id", primary_key=True),
            F(name="customer_id", required=True, references="customer.id"),
            F(name="product_id", required=True, references="product.id"),
            F(name="quantity", type="integer", required=True),
            F(name="status", enum=["pending", "paid", "shipped", "cancelled"]),
            F(name="created_at", type="datetime"),
            F(name="updated_at", type="datetime"),
        ],
        rules=[Rule(kind="consumes", field="quantity", target="product.stock")],
    ),
    EntitySpec(
        name="review",
        table="reviews",
        fields=[
            F(name="id", type="integer", primary_key=True),
            F(name="customer_id", required=True, references="customer.id"),
            F(name="product_id", required=True, references="product.id"),
            F(name="rating", type="integer", minimum=1, maximum=5),
            F(name="text"),
        ],
        rules=[Rule(kind="unique_together", fields=["customer_id", "product_id"])],
    ),
]

TOOLS = [
    _tool("list_products", "list", "product", {"active": B, "min_price": N, "max_price": N, **PAGE}),
    _tool("search_products", "search", "product", {"query": S, **PAGE}, ("query",)),
    _tool("get_product", "get", "product", {"product_id": S}, ("product_id",)),
    _tool(
        "create_product",
        "create",
        "product",
        {"name": S, "description": S, "price": N, "stock": INT, "active": B},
        ("name",),
    ),
    _tool(
        "update_product", "update", "product", {"product_id": S, "price": N, "stock": INT, "name": S}, ("product_id",)
    ),
    _tool("delete_product", "delete", "product", {"product_id": S}, ("product_id",)),
    _tool(
        "restock_product",
        "action",
        "product",
        {"product_id": S, "amount": INT},
        ("product_id", "amount"),
        action="increment",
        field="stock",
        amount_param="amount",
    ),
    _tool("get_customer", "get", "customer", {"customer_id": S}, ("customer_id",)),
    _tool(
        "create_customer",
        "create",
        "customer",
        {"name": S, "email": S, "tier": {"type": "string", "enum": ["basic", "gold"]}, "credit": N},
        ("name",),
    ),
    _tool(
        "spend_credit",
        "action",
        "customer",
        {"customer_id": S, "amount": N},
        ("customer_id", "amount"),
        action="decrement",
        field="credit",
        amount_param="amount",
    ),
    _tool(
        "transfer_credit",
        "action",
        "customer",
        {"from_customer_id": S, "to_customer_id": S, "amount": N},
        ("from_customer_id", "to_customer_id", "amount"),
        action="transfer",
        field="credit",
        amount_param="amount",
    ),
    _tool(
        "list_orders",
        "list",
        "order",
        {"customer_id": S, "status": {"type": "string", "enum": ["pending", "paid", "shipped", "cancelled"]}, **PAGE},
    ),
    _tool("get_order", "get", "order", {"order_id": S}, ("order_id",)),
    _tool(
        "create_order",
        "create",
        "order",
        {"customer_id": S, "product_id": S, "quantity": INT, "status": S},
        ("customer_id", "product_id", "quantity"),
    ),
    _tool("update_order", "update", "order", {"order_id": S, "quantity": INT, "product_id": S}, ("order_id",)),
    _tool("delete_order", "delete", "order", {"order_id": S}, ("order_id",)),
    _tool(
        "pay_order",
        "action",
        "order",
        {"order_id": S},
        ("order_id",),
        action="transition",
        field="status",
        to_value="paid",
        from_values=["pending"],
    ),
    _tool(
        "ship_order",
        "action",
        "order",
        {"order_id": S},
        ("order_id",),
        action="transition",
        field="status",
        to_value="shipped",
        from_values=["paid"],
    ),
    _tool("order_stats", "aggregate", "order", {"status": S, "field": S, "group_by": S}, field="quantity"),
    _tool(
        "create_review",
        "create",
        "review",
        {"customer_id": S, "product_id": S, "rating": INT, "text": S},
        ("customer_id", "product_id", "rating"),
    ),
    _tool("list_reviews", "list", "review", {"product_id": S, "min_rating": INT, **PAGE}),
    ToolSpec(
        name="contact_support",
        description="Open a ticket with a human.",
        parameters={"type": "object", "properties": {}},
    ),
]

ROWS: dict[str, list[dict[str, Any]]] = {
    "customers": [
        {
            "id": "cus_0001",
            "name": "Ada Lovelace",
            "email": "ada@example.com",
            "tier": "gold",
            "credit": 120.5,
            "created_at": "2025-03-01T09:00:00",
        },
        {
            "id": "cus_0002",
            "name": "Alan Turing",
            "email": "alan@example.com",
            "tier": "basic",
            "credit": 10.0,
            "created_at": "2025-03-02T10:30:00",
        },
        {
            "id": "cus_0003",
            "name": "Grace Hopper",
            "email": "grace@example.com",
            "tier": "basic",
            "credit": 0.0,
            "created_at": "2025-03-03T11:00:00",
        },
    ],
    "products": [
        {
            "id": "pro_0001",
            "name": "Blue Mug",
            "description": "A sturdy ceramic mug",
            "price": 9.5,
            "stock": 3,
            "active": True,
        },
        {
            "id": "pro_0002",
            "name": "Red Kettle",
            "description": "Boils water fast",
            "price": 39.0,
            "stock": 0,
            "active": True,
        },
        {
            "id": "pro_0003",
            "name": "Green Teapot",
            "description": "Ceramic, holds a litre",
            "price": 24.0,
            "stock": 7,
            "active": False,
        },
        {"id": "pro_0004", "name": "Tea Towel", "description": None, "price": 4.25, "stock": 40, "active": True},
    ],
    "orders": [
        {
            "id": "ord_0001",
            "customer_id": "cus_0001",
            "product_id": "pro_0001",
            "quantity": 2,
            "status": "paid",
            "created_at": "2025-04-01T08:00:00",
            "updated_at": "2025-04-01T08:00:00",
        },
        {
            "id": "ord_0002",
            "customer_id": "cus_0001",
            "product_id": "pro_0003",
            "quantity": 1,
            "status": "pending",
            "created_at": "2025-04-02T08:00:00",
            "updated_at": "2025-04-02T08:00:00",
        },
        {
            "id": "ord_0003",
            "customer_id": "cus_0002",
            "product_id": "pro_0004",
            "quantity": 5,
            "status": "shipped",
            "created_at": "2025-04-03T08:00:00",
            "updated_at": "2025-04-05T12:00:00",
        },
        {
            "id": "ord_0004",
            "customer_id": "cus_0002",
            "product_id": "pro_0001",
            "quantity": 1,
            "status": "pending",
            "created_at": "2025-04-04T08:00:00",
            "updated_at": "2025-04-04T08:00:00",
        },
        {
            "id": "ord_0005",
            "customer_id": "cus_0003",
            "product_id": "pro_0004",
            "quantity": 3,
            "status": "cancelled",
            "created_at": "2025-04-05T08:00:00",
            "updated_at": "2025-04-06T08:00:00",
        },
    ],
    "reviews": [
        {"id": 1, "customer_id": "cus_0001", "product_id": "pro_0001", "rating": 5, "text": "Lovely mug"},
        {"id": 2, "customer_id": "cus_0002", "product_id": "pro_0004", "rating": 3, "text": None},
    ],
}

_SQL_TYPES = {"integer": "INTEGER", "number": "REAL", "boolean": "INTEGER"}


def shop_spec(backend: str = "sqlite") -> EnvSpec:
    return EnvSpec(
        id="shop",
        title="Corner Shop",
        topic_id="shop",
        description="A small online shop.",
        backend=backend,
        tools=TOOLS,
        entities=ENTITIES,
    )


def shop_rows() -> dict[str, list[dict[str, Any]]]:
    return json.loads(json.dumps(ROWS))


def fixture_schema_sql(entities: list[EntitySpec]) -> str:
    """A plain schema for the fixture (the real one comes from factory.envs.schema)."""
    out = []
    for e in entities:
        cols = []
        for f in e.fields:
            col = f'"{f.name}" {_SQL_TYPES.get(f.type, "TEXT")}'
            if f.name == e.primary_key:
                col += " PRIMARY KEY"
            if f.references:
                ent, _, ref = f.references.partition(".")
                table = next(x.table for x in entities if x.name == ent)
                col += f' REFERENCES "{table}"("{ref}")'
            cols.append(col)
        out.append(f'CREATE TABLE "{e.table}" ({", ".join(cols)});')
    return "\n".join(out) + "\n"


def load_state(spec: EnvSpec, rows: dict[str, list[dict]], where: Path) -> Any:
    """The state a tool gets: an in-memory sqlite connection, or a directory of JSON collections."""
    if spec.backend == "sqlite":
        conn = sqlite3.connect(":memory:")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.executescript(fixture_schema_sql(spec.entities))
        for table, items in rows.items():
            for r in items:
                conn.execute(
                    f'INSERT INTO "{table}" ({", ".join(r)}) VALUES ({", ".join("?" for _ in r)})', list(r.values())
                )
        return conn
    where.mkdir(parents=True, exist_ok=True)
    for table, items in rows.items():
        (where / f"{table}.json").write_text(json.dumps(items, indent=2))
    return str(where)


@pytest.fixture(params=["sqlite", "files"])
def backend(request) -> str:
    return request.param


def write_bundle(spec: EnvSpec, rows: dict[str, list[dict]], out: Path, tools_source: str | None = None) -> Path:
    """A bundle of the fixture on disk (env.json, tools.py, seed.sqlite or state/) for the runtime."""
    from factory.envs.codegen import generate_tools
    from factory.store import write_json_atomic

    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "env.json", spec)
    (out / "tools.py").write_text(generate_tools(spec) if tools_source is None else tools_source)
    if spec.backend == "sqlite":
        conn = load_state(spec, rows, out)
        disk = sqlite3.connect(out / "seed.sqlite")
        conn.commit()
        conn.backup(disk)
        disk.close()
        conn.close()
    else:
        load_state(spec, rows, out / "state")
    return out
