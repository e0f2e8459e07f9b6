"""Generated tool tests: expectations from the seed rows, one case per error a tool can return."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from factory.envs.codegen import generate_tools
from factory.envs.gate import check_case
from factory.envs.testgen import generate_tests, next_id
from factory.models import Snapshot, TestCase, ToolError, ToolResult

from .conftest import load_state, shop_rows, shop_spec


def run_in_process(source: str, backend: str, cases: list[TestCase], tmp: Path) -> dict[str, str]:
    """Each case in a fresh state with the given tools.py source; case name -> why it failed."""
    ns: dict[str, Any] = {}
    exec(compile(source, "tools.py", "exec"), ns)
    failures = {}
    for i, case in enumerate(cases):
        state = load_state(shop_spec(backend), shop_rows(), tmp / f"s{i}")
        try:
            value = ns[case.tool](state, **case.args)
            error = value.get("error") if isinstance(value, dict) else None
            result = ToolResult(ok=False, error=ToolError(**error)) if error else ToolResult(ok=True, value=value)
        except Exception as e:
            result = ToolResult(ok=False, error=ToolError(code="tool_exception", message=repr(e)))
        why = check_case(case, result, _snapshot(backend, state))
        if why:
            failures[case.name] = why
    return failures


def _snapshot(backend: str, state: Any) -> Snapshot:
    """The state a tool call left, as the runtime's snapshot gives it."""
    tables: dict[str, list[dict[str, Any]]] = {}
    for e in shop_spec(backend).entities:
        if backend == "sqlite":
            cursor = state.execute(f'SELECT * FROM "{e.table}"')
            columns = [c[0] for c in cursor.description]
            tables[e.table] = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
        else:
            path = Path(state) / f"{e.table}.json"
            tables[e.table] = json.loads(path.read_text()) if path.exists() else []
    return Snapshot(tables=tables)


def test_cases_pass_against_the_generated_code_on_both_backends(backend: str, tmp_path: Path):
    spec = shop_spec(backend)
    cases = generate_tests(spec, shop_rows(), seed=0)
    assert len(cases) > 60
    assert run_in_process(generate_tools(spec), backend, cases, tmp_path) == {}


def test_every_tool_with_code_gets_success_and_error_cases():
    cases = generate_tests(shop_spec(), shop_rows(), seed=0)
    tools = {t.name for t in shop_spec().tools if t.operation}
    assert {c.tool for c in cases} == tools
    for name in tools:
        mine = [c for c in cases if c.tool == name]
        assert any(c.expect.ok for c in mine), name
        assert any(not c.expect.ok for c in mine), name
    codes = {c.expect.error_code for c in cases if not c.expect.ok}
    assert codes >= {
        "not_found",
        "invalid_arguments",
        "invalid_reference",
        "conflict",
        "insufficient_stock",
        "insufficient_credit",
        "invalid_transition",
    }
    assert all(c.name.startswith(c.tool + ": ") for c in cases)


def test_expectations_come_from_the_rows():
    cases = {c.name: c for c in generate_tests(shop_spec(), shop_rows(), seed=0)}
    stats = cases["order_stats: over all rows"]
    assert stats.args == {"field": "quantity"} and stats.expect.match == {
        "count": 5,
        "sum": 12,
        "avg": 2.4,
        "min": 1,
        "max": 5,
    }
    page = cases["list_products: page at offset 1"]
    assert page.args == {"limit": 1, "offset": 1} and page.expect.count == 1
    assert page.expect.match["total"] == 4 and page.expect.match["next_offset"] == 2
    assert page.expect.match["items"][0] == {"id": "pro_0002"}
    new_order = cases["create_order: new row"]
    assert new_order.expect.match["id"] == "ord_0006" and new_order.args["quantity"] == 1
    too_many = next(
        c for c in cases.values() if c.tool == "create_order" and c.expect.error_code == "insufficient_stock"
    )
    stock = {p["id"]: p["stock"] for p in shop_rows()["products"]}
    assert too_many.args["quantity"] == stock[too_many.args["product_id"]] + 1
    refused = next(c for c in cases.values() if c.expect.error_code == "invalid_transition" and c.tool == "pay_order")
    status = {o["id"]: o["status"] for o in shop_rows()["orders"]}
    assert status[refused.args["order_id"]] != "pending"
    busy = cases["delete_product: row still referenced"]
    assert busy.args["product_id"] in {o["product_id"] for o in shop_rows()["orders"]}


def test_same_seed_same_cases_other_seed_other_picks():
    first = generate_tests(shop_spec(), shop_rows(), seed=3)
    assert first == generate_tests(shop_spec(), shop_rows(), seed=3)
    others = [generate_tests(shop_spec(), shop_rows(), seed=s) for s in range(4, 8)]
    assert any(o != first for o in others)


@pytest.mark.parametrize(
    ("wrong", "right", "tool"),
    [
        ("end if end < len(rows) else None", "None", "list_products"),
        ("if available < wanted:", "if False:", "create_order"),
        ('_check_transition(current, "order", "status", ("pending",), "paid")', "None", "pay_order"),
        ('result["sum"] = _round(total)', 'result["sum"] = _round(total) + 1', "order_stats"),
    ],
)
def test_broken_code_fails_the_cases_of_that_tool(wrong: str, right: str, tool: str, tmp_path: Path):
    spec = shop_spec("sqlite")
    source = generate_tools(spec)
    cases = [c for c in generate_tests(spec, shop_rows(), seed=0) if c.tool == tool]
    assert wrong in source
    failed = run_in_process(source.replace(wrong, right), "sqlite", cases, tmp_path)
    assert failed, f"no case of {tool} noticed the bug"


def test_next_id_follows_the_existing_shape():
    assert next_id(["ord_0009", "ord_0010"], False, "ord_") == "ord_0011"
    assert next_id([3, 41, 7], True, "") == 42
    assert next_id([], False, "inv_") == "inv_0001"
    assert next_id([], True, "") == 1
