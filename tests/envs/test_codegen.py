"""The generated tools.py, run in-process against both backends (the runtime's own tests cover the sandbox)."""

from __future__ import annotations

import ast
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from factory.envs.codegen import (
    CodegenError,
    Supply,
    _call,
    _Code,
    _docstring,
    _layout,
    _literal,
    consumed_supplies,
    generate_tools,
    searchable_fields,
    unsupported_tools,
)
from factory.models import EnvSpec, Rule, ToolOperation, ToolSpec

from .conftest import load_state, shop_rows, shop_spec


class Tools:
    """The generated module bound to one state, plus a way to read that state back."""

    def __init__(self, backend: str, tmp: Path, spec=None):
        self.spec = spec or shop_spec(backend)
        self.ns: dict[str, Any] = {}
        exec(compile(generate_tools(self.spec), "tools.py", "exec"), self.ns)
        self.state = load_state(self.spec, shop_rows(), tmp / "state")

    def __getattr__(self, name: str):
        fn = self.ns[name]
        return lambda **kw: fn(self.state, **kw)

    def table(self, table: str) -> list[dict]:
        if isinstance(self.state, sqlite3.Connection):
            cur = self.state.execute(f'SELECT * FROM "{table}" ORDER BY 1')
            return [dict(zip([c[0] for c in cur.description], r, strict=True)) for r in cur.fetchall()]
        return json.loads((Path(self.state) / f"{table}.json").read_text())

    def dump(self) -> dict[str, list[dict]]:
        return {t: self.table(t) for t in ("customers", "products", "orders", "reviews")}


@pytest.fixture
def tools(backend: str, tmp_path: Path) -> Tools:
    return Tools(backend, tmp_path)


def _code(result: Any) -> str | None:
    return result["error"]["code"] if isinstance(result, dict) and "error" in result else None


def test_source_compiles_has_one_function_per_tool_and_no_clock_or_uuid():
    for backend in ("sqlite", "files"):
        src = generate_tools(shop_spec(backend))
        tree = ast.parse(src)
        names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")}
        expected = {t.name for t in shop_spec().tools if t.operation is not None}
        assert names == expected
        assert "contact_support" not in src
        assert not re.search(r"import uuid|\.now\(|time\.time\(|random", src)
    assert "?" in generate_tools(shop_spec("sqlite")) and "os.replace" in generate_tools(shop_spec("files"))


def test_explicit_keyword_parameters_mirror_the_schema():
    tree = ast.parse(generate_tools(shop_spec()))
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "list_products")
    assert [a.arg for a in fn.args.args] == ["state", "active", "min_price", "max_price", "limit", "offset"]
    assert [ast.literal_eval(d) for d in fn.args.defaults][-2:] == [20, 0]


def test_order_exceeding_stock_fails_and_leaves_state_unchanged(tools: Tools):
    before = tools.dump()
    result = tools.create_order(customer_id="cus_0001", product_id="pro_0001", quantity=4)
    assert _code(result) == "insufficient_stock"
    assert tools.dump() == before
    ok = tools.create_order(customer_id="cus_0001", product_id="pro_0001", quantity=3)
    assert ok["id"] == "ord_0006" and ok["status"] == "pending" and ok["quantity"] == 3
    assert ok["created_at"] == "2025-04-05T08:00:01"
    assert tools.get_product(product_id="pro_0001")["stock"] == 0
    assert _code(tools.create_order(customer_id="cus_0001", product_id="pro_0001", quantity=1)) == "insufficient_stock"


def test_delete_gives_supply_back_and_update_moves_it(tools: Tools):
    assert tools.delete_order(order_id="ord_0001") == {"deleted": True, "order_id": "ord_0001"}
    assert tools.get_product(product_id="pro_0001")["stock"] == 5
    assert _code(tools.get_order(order_id="ord_0001")) == "not_found"
    updated = tools.update_order(order_id="ord_0004", quantity=6)
    assert updated["quantity"] == 6 and updated["updated_at"] == "2025-04-06T08:00:01"
    assert tools.get_product(product_id="pro_0001")["stock"] == 0
    assert _code(tools.update_order(order_id="ord_0004", quantity=7)) == "insufficient_stock"
    tools.update_order(order_id="ord_0004", product_id="pro_0004")
    assert tools.get_product(product_id="pro_0001")["stock"] == 6
    assert tools.get_product(product_id="pro_0004")["stock"] == 34


def test_delete_of_referenced_row_is_a_conflict(tools: Tools):
    before = tools.dump()
    assert _code(tools.delete_product(product_id="pro_0001")) == "conflict"
    assert tools.dump() == before
    assert tools.delete_product(product_id="pro_0002")["deleted"] is True
    assert len(tools.table("products")) == 3


def test_transition_rules(tools: Tools):
    assert tools.pay_order(order_id="ord_0002")["status"] == "paid"
    assert _code(tools.pay_order(order_id="ord_0002")) == "invalid_transition"
    assert tools.ship_order(order_id="ord_0002")["status"] == "shipped"
    assert _code(tools.ship_order(order_id="ord_0004")) == "invalid_transition"
    assert _code(tools.pay_order(order_id="ord_9999")) == "not_found"


def test_list_filters_and_pagination(tools: Tools):
    first = tools.list_products(limit=3)
    assert [p["id"] for p in first["items"]] == ["pro_0001", "pro_0002", "pro_0003"]
    assert first["total"] == 4 and first["next_offset"] == 3
    last = tools.list_products(limit=3, offset=3)
    assert [p["id"] for p in last["items"]] == ["pro_0004"] and last["next_offset"] is None
    assert tools.list_products(active=False)["total"] == 1
    assert tools.list_products(active=False)["items"][0]["active"] is False
    cheap = tools.list_products(min_price=5, max_price=30)
    assert [p["id"] for p in cheap["items"]] == ["pro_0001", "pro_0003"]
    assert tools.list_orders(status="pending", customer_id="cus_0002")["total"] == 1
    assert _code(tools.list_products(limit=0)) == "invalid_arguments"
    assert len(tools.list_products(limit=500)["items"]) == 4


def _paged_products(props: dict) -> EnvSpec:
    """The shop with one more product list tool taking `props`, the document's own paging parameters."""
    tool = ToolSpec(
        name="browse_products",
        description="Browse products.",
        parameters={"type": "object", "properties": props},
        operation=ToolOperation(kind="list", entity="product"),
    )
    spec = shop_spec()
    return spec.model_copy(update={"tools": [*spec.tools, tool]})


def test_list_tools_page_as_their_parameters_say(tmp_path: Path):
    by_page = _paged_products({"page": {"type": "integer"}, "per_page": {"type": "integer", "default": -1}})
    source = generate_tools(by_page)
    assert "def browse_products(state, page=1, per_page=10):" in source
    assert "return _numbered_page(rows, per_page, page, 1)" in source
    tools = Tools("sqlite", tmp_path, by_page)
    second = tools.browse_products(page=2, per_page=3)
    assert [p["id"] for p in second["items"]] == ["pro_0004"] and second["next_page"] is None
    assert tools.browse_products(page=1, per_page=3)["next_page"] == 2
    by_cursor = Tools(
        "files", tmp_path / "c", _paged_products({"page_token": {"type": "string"}, "count": {"type": "integer"}})
    )
    first = by_cursor.browse_products(count=3)
    rest = by_cursor.browse_products(count=3, page_token=first["next_cursor"])
    assert [p["id"] for p in rest["items"]] == ["pro_0004"] and rest["next_cursor"] is None
    assert _code(by_cursor.browse_products(page_token="pro_0003")) == "invalid_arguments"


def test_search_is_case_insensitive_over_text_fields(tools: Tools):
    assert searchable_fields(shop_spec().entities[1]) == ["name", "description"]
    found = tools.search_products(query="CERAMIC")
    assert [p["id"] for p in found["items"]] == ["pro_0001", "pro_0003"]
    assert tools.search_products(query="pro_000")["total"] == 0


def test_aggregate_and_group_by(tools: Tools):
    assert tools.order_stats() == {"count": 5, "sum": 12, "avg": 2.4, "min": 1, "max": 5}
    assert tools.order_stats(status="pending") == {"count": 2, "sum": 2, "avg": 1.0, "min": 1, "max": 1}
    groups = tools.order_stats(group_by="customer_id")["groups"]
    assert [(g["customer_id"], g["count"], g["sum"]) for g in groups] == [
        ("cus_0001", 2, 3),
        ("cus_0002", 2, 6),
        ("cus_0003", 1, 3),
    ]
    assert _code(tools.order_stats(field="status")) == "invalid_arguments"
    assert _code(tools.order_stats(group_by="nope")) == "invalid_arguments"


def test_create_validation(tools: Tools):
    assert _code(tools.create_order(customer_id="cus_9", product_id="pro_0001", quantity=1)) == "invalid_reference"
    assert _code(tools.create_order(customer_id="cus_0001", quantity=1)) == "invalid_arguments"
    bad_status = tools.create_order(customer_id="cus_0001", product_id="pro_0004", quantity=1, status="lost")
    assert _code(bad_status) == "invalid_arguments"
    assert _code(tools.create_customer(name="X", email="ada@example.com")) == "conflict"
    assert _code(tools.create_product(name="Y", stock=-1)) == "insufficient_stock"
    assert _code(tools.create_review(customer_id="cus_0001", product_id="pro_0001", rating=2)) == "conflict"
    assert _code(tools.create_review(customer_id="cus_0003", product_id="pro_0001", rating=9)) == "invalid_arguments"
    review = tools.create_review(customer_id="cus_0003", product_id="pro_0001", rating=4)
    assert review["id"] == 3
    customer = tools.create_customer(name="Edsger", email="ed@example.com")
    assert customer["id"] == "cus_0004" and customer["tier"] == "basic"
    assert customer["created_at"] == "2025-03-03T11:00:01"


def test_increment_decrement_transfer(tools: Tools):
    assert tools.restock_product(product_id="pro_0002", amount=5)["stock"] == 5
    assert _code(tools.restock_product(product_id="pro_0002", amount=0)) == "invalid_arguments"
    assert tools.spend_credit(customer_id="cus_0002", amount=2.5)["credit"] == 7.5
    assert _code(tools.spend_credit(customer_id="cus_0002", amount=8)) == "insufficient_credit"
    moved = tools.transfer_credit(from_customer_id="cus_0001", to_customer_id="cus_0003", amount=20.25)
    assert moved["from"]["credit"] == 100.25 and moved["to"]["credit"] == 20.25
    assert tools.get_customer(customer_id="cus_0003")["credit"] == 20.25
    before = tools.dump()
    assert _code(tools.transfer_credit(from_customer_id="cus_0003", to_customer_id="cus_0001", amount=21)) == (
        "insufficient_credit"
    )
    assert _code(tools.transfer_credit(from_customer_id="cus_0003", to_customer_id="cus_0003", amount=1)) == (
        "invalid_arguments"
    )
    assert tools.dump() == before


def test_both_backends_give_the_same_answers(tmp_path: Path):
    calls = [
        ("create_order", {"customer_id": "cus_0002", "product_id": "pro_0003", "quantity": 2}),
        ("pay_order", {"order_id": "ord_0006"}),
        ("list_orders", {"customer_id": "cus_0002"}),
        ("order_stats", {"group_by": "status"}),
        ("transfer_credit", {"from_customer_id": "cus_0001", "to_customer_id": "cus_0002", "amount": 0.1}),
    ]
    answers = []
    for backend in ("sqlite", "files"):
        t = Tools(backend, tmp_path / backend)
        answers.append([getattr(t, name)(**args) for name, args in calls])
    assert answers[0] == answers[1]


def test_unsupported_tools_get_reasons_and_odd_parameter_names_use_params():
    spec = shop_spec()
    odd = ToolSpec(
        name="get_product_by_sku",
        description="d",
        parameters={"type": "object", "properties": {"product_id": {"type": "string"}, "class": {"type": "string"}}},
        operation=ToolOperation(kind="get", entity="product"),
    )
    ghost = ToolSpec(name="get_ghost", description="d", operation=ToolOperation(kind="get", entity="ghost"))
    keyless = ToolSpec(name="get_thing", description="d", operation=ToolOperation(kind="get", entity="product"))
    spec = spec.model_copy(update={"tools": [*spec.tools, odd, ghost, keyless]})
    reasons = unsupported_tools(spec)
    assert set(reasons) == {"contact_support", "get_ghost", "get_thing"}
    assert "unknown entity" in reasons["get_ghost"] and "product_id" in reasons["get_thing"]
    ns: dict[str, Any] = {}
    exec(compile(generate_tools(spec), "tools.py", "exec"), ns)
    conn = load_state(spec, shop_rows(), Path("."))
    assert ns["get_product_by_sku"](conn, **{"product_id": "pro_0002", "class": "x"})["name"] == "Red Kettle"


def _with_minimums(backend: str):
    """The shop where stock (never negative) and quantity (consumed) also have a schema minimum."""
    spec = shop_spec(backend)
    minimums = {("product", "stock"): 0.0, ("order", "quantity"): 1.0}
    entities = [
        e.model_copy(
            update={
                "fields": [
                    f.model_copy(update={"minimum": minimums[(e.name, f.name)]}) if (e.name, f.name) in minimums else f
                    for f in e.fields
                ]
            }
        )
        for e in spec.entities
    ]
    return spec.model_copy(update={"entities": entities})


def test_a_negative_value_is_refused_once_with_the_rule_code(backend: str, tmp_path: Path):
    spec = _with_minimums(backend)
    source = generate_tools(spec)
    # A minimum of 0 adds nothing to the sign check (it used to be a second, unreachable check with another code).
    assert source.count('_check_not_negative("stock", stock, "insufficient_stock")') == 2  # create and update
    assert '_check_at_least("stock"' not in source
    assert source.count('_check_at_least("quantity", quantity, 1.0)') == 2
    tools = Tools(backend, tmp_path, spec)
    assert _code(tools.create_product(name="Y", stock=-1)) == "insufficient_stock"
    assert tools.create_product(name="Y", stock=0)["stock"] == 0
    assert _code(tools.create_order(customer_id="cus_0001", product_id="pro_0004", quantity=-1)) == "invalid_arguments"
    refused = tools.create_order(customer_id="cus_0001", product_id="pro_0004", quantity=0)
    assert refused["error"]["message"] == "quantity must be at least 1.0"


def test_literals_and_layout_are_what_ruff_writes():
    assert _literal("plain") == '"plain"' and _literal("it's") == '"it\'s"'
    assert _literal('say "hi"') == "'say \"hi\"'" and _literal("a\\b\n") == '"a\\\\b\\n"'
    assert [_literal(v) for v in (None, True, 3, 0.5)] == ["None", "True", "3", "0.5"]
    with pytest.raises(CodegenError):
        _literal(float("nan"))
    short = _call("_check_one_of", "tier", _Code("tier"), ("basic",))
    assert _layout(short, "    ") == ['    _check_one_of("tier", tier, ("basic",))']
    long = _call("_check_one_of", "tier", _Code("tier"), tuple(f"value {i:02d}" for i in range(12)))
    lines = _layout(long, "    ", "x = ")
    assert lines[0] == "    x = _check_one_of(" and lines[-1] == "    )"
    assert lines[1:4] == ['        "tier",', "        tier,", "        ("] and lines[-2] == "        ),"
    assert all(len(line) <= 120 for line in lines)


def test_docstrings_keep_quotes_and_fit_the_line():
    assert _docstring(['Ends in "x"'], "    ") == ['    """Ends in "x" """']
    assert _docstring(['a\\b """ c'], "") == ['"""a\\\\b \'\'\' c"""']
    wrapped = _docstring(["word " * 40], "    ")
    assert len(wrapped) == 3 and wrapped[-1] == '    """' and all(len(line) <= 120 for line in wrapped)


def test_consumed_supplies_need_the_supply_field_and_a_foreign_key():
    spec = shop_spec()
    order = next(e for e in spec.entities if e.name == "order")
    product = next(e for e in spec.entities if e.name == "product")
    assert consumed_supplies(spec.entities, order) == [Supply("quantity", product, "stock", "product_id")]
    for target in ("product.no_such_field", "ghost.stock", "customer.credit_limit"):
        broken = order.model_copy(update={"rules": [Rule(kind="consumes", field="quantity", target=target)]})
        assert consumed_supplies(spec.entities, broken) == [], target
    review = next(e for e in spec.entities if e.name == "review")
    unlinked = review.model_copy(update={"rules": [Rule(kind="consumes", field="rating", target="order.quantity")]})
    assert consumed_supplies(spec.entities, unlinked) == []
