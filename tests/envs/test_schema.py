"""The sqlite schema: DDL that loads, and constraints that sqlite enforces."""

from __future__ import annotations

import sqlite3

import pytest

from factory.envs.schema import SchemaError, build_metadata, schema_sql, table_order
from factory.models import EntitySpec, FieldSpec, Rule

F = FieldSpec

CUSTOMER = EntitySpec(
    name="customer",
    table="customers",
    fields=[
        F(name="id", primary_key=True, required=True),
        F(name="name", required=True),
        F(name="email", format="email", unique=True, required=True),
        F(name="vip", type="boolean"),
    ],
)
PRODUCT = EntitySpec(
    name="product",
    table="products",
    fields=[
        F(name="id", primary_key=True, required=True),
        F(name="name", required=True),
        F(name="price", type="number", minimum=0.5, maximum=1000),
        F(name="stock", type="integer"),
    ],
    rules=[Rule(kind="non_negative", field="stock")],
)
ORDER = EntitySpec(
    name="order",
    table="orders",
    fields=[
        F(name="id", primary_key=True, required=True),
        F(name="customer_id", references="customer.id", required=True),
        F(name="product_id", references="product.id", required=True),
        F(name="quantity", type="integer", required=True, minimum=1),
        F(name="status", enum=["pending", "shipped", "it's odd"]),
        F(name="placed_on", type="date"),
    ],
    rules=[
        Rule(kind="consumes", field="quantity", target="product.stock"),
        Rule(kind="unique_together", fields=["customer_id", "product_id"]),
    ],
)
ENTITIES = [ORDER, PRODUCT, CUSTOMER]  # children first on purpose


@pytest.fixture
def db() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.executescript(schema_sql(ENTITIES))
    conn.execute("INSERT INTO customers VALUES ('cus_0001', 'Ada', 'ada@example.com', 1)")
    conn.execute("INSERT INTO products VALUES ('pro_0001', 'Mug', 9.5, 3)")
    conn.execute("INSERT INTO orders VALUES ('ord_0001', 'cus_0001', 'pro_0001', 2, 'pending', '2024-05-01')")
    return conn


def test_tables_come_parents_first_and_text_is_deterministic() -> None:
    assert [e.name for e in table_order(ENTITIES)] == ["customer", "product", "order"]
    sql = schema_sql(ENTITIES)
    assert sql == schema_sql(ENTITIES)
    assert sql.index("CREATE TABLE orders") > sql.index("CREATE TABLE customers")
    assert sql.index("CREATE TABLE orders") > sql.index("CREATE TABLE products")
    assert "CREATE INDEX ix_orders_customer_id ON orders (customer_id)" in sql
    assert not any(line != line.rstrip() for line in sql.splitlines())
    metadata = build_metadata(ENTITIES)
    assert [t.name for t in metadata.sorted_tables][-1] == "orders"
    assert {fk.target_fullname for fk in metadata.tables["orders"].foreign_keys} == {"customers.id", "products.id"}


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("INSERT INTO orders VALUES ('o2', 'cus_9999', 'pro_0001', 1, 'pending', NULL)", "FOREIGN KEY"),
        ("INSERT INTO orders VALUES ('o2', 'cus_0001', 'pro_0001', 1, 'lost', NULL)", "CHECK"),
        ("INSERT INTO orders VALUES ('o2', 'cus_0001', 'pro_0001', 0, 'pending', NULL)", "CHECK"),
        ("INSERT INTO orders VALUES ('o2', 'cus_0001', 'pro_0001', 1, 'pending', NULL)", "UNIQUE"),
        ("INSERT INTO orders (id, product_id, quantity) VALUES ('o2', 'pro_0001', 1)", "NOT NULL"),
        ("INSERT INTO customers VALUES ('cus_0002', 'Bob', 'ada@example.com', 0)", "UNIQUE"),
        ("INSERT INTO customers VALUES ('cus_0002', 'Bob', 'bob@example.com', 2)", "CHECK"),
        ("INSERT INTO customers VALUES ('cus_0001', 'Bob', 'bob@example.com', 0)", "UNIQUE"),
        ("UPDATE products SET stock = -1", "CHECK"),
        ("UPDATE products SET price = 0.25", "CHECK"),
        ("UPDATE products SET price = 1000.5", "CHECK"),
        ("DELETE FROM customers WHERE id = 'cus_0001'", "FOREIGN KEY"),
    ],
)
def test_constraints_are_enforced(db: sqlite3.Connection, statement: str, message: str) -> None:
    with pytest.raises(sqlite3.IntegrityError, match=message):
        db.execute(statement)


def test_valid_writes_pass(db: sqlite3.Connection) -> None:
    db.execute("INSERT INTO products VALUES ('pro_0002', 'Pen', 1000, NULL)")
    db.execute("INSERT INTO orders VALUES ('ord_0002', 'cus_0001', 'pro_0002', 1, 'it''s odd', NULL)")
    db.execute("UPDATE products SET stock = 0")
    db.execute("INSERT INTO customers (id, name, email) VALUES ('cus_0002', 'Bob', 'bob@example.com')")
    assert db.execute("SELECT count(*) FROM orders").fetchone() == (2,)


def test_broken_entities_are_refused() -> None:
    dangling = ORDER.model_copy(update={"name": "line", "table": "lines"})
    with pytest.raises(SchemaError, match="unknown entity"):
        schema_sql([dangling])
    with pytest.raises(SchemaError, match="table"):
        schema_sql([CUSTOMER, CUSTOMER.model_copy(update={"name": "client"})])
    a = EntitySpec(name="a", table="as_", fields=[F(name="id", primary_key=True), F(name="b_id", references="b.id")])
    b = EntitySpec(name="b", table="bs", fields=[F(name="id", primary_key=True), F(name="a_id", references="a.id")])
    with pytest.raises(SchemaError, match="cycle"):
        schema_sql([a, b])


def test_self_reference_is_allowed() -> None:
    folder = EntitySpec(
        name="folder",
        table="folders",
        fields=[F(name="id", primary_key=True), F(name="name"), F(name="folder_id", references="folder.id")],
    )
    conn = sqlite3.connect(":memory:")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.executescript(schema_sql([folder]))
    conn.execute("INSERT INTO folders VALUES ('f1', 'root', NULL)")
    conn.execute("INSERT INTO folders VALUES ('f2', 'docs', 'f1')")
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("INSERT INTO folders VALUES ('f3', 'x', 'nope')")
