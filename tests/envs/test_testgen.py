"""Generated tool tests: expectations from the seed rows, one case per error a tool can return."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from factory.envs.codegen import generate_tools
from factory.envs.gate import check_case
from factory.envs.testgen import generate_tests, next_id, schema_example
from factory.models import (
    EntitySpec,
    EnvSpec,
    FieldSpec,
    Snapshot,
    TestCase,
    ToolError,
    ToolOperation,
    ToolResult,
    ToolSpec,
)
from factory.sandbox.schema import compile_schema

from .conftest import load_state, shop_rows, shop_spec


def call_in_process(ns: dict[str, Any], case: TestCase, state: Any) -> ToolResult:
    """The case's call on the exec'd tools in `ns`, as the runtime would report it."""
    try:
        value = ns[case.tool](state, **case.args)
    except Exception as e:
        return ToolResult(ok=False, error=ToolError(code="tool_exception", message=repr(e)))
    error = value.get("error") if isinstance(value, dict) else None
    return ToolResult(ok=False, error=ToolError(**error)) if error else ToolResult(ok=True, value=value)


def run_in_process(source: str, backend: str, cases: list[TestCase], tmp: Path) -> dict[str, str]:
    """Each case in a fresh state with the given tools.py source; case name -> why it failed."""
    ns: dict[str, Any] = {}
    exec(compile(source, "tools.py", "exec"), ns)
    failures = {}
    for i, case in enumerate(cases):
        state = load_state(shop_spec(backend), shop_rows(), tmp / f"s{i}")
        result = call_in_process(ns, case, state)
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


def test_page_cases_ask_for_the_next_page_in_the_tools_own_style(tmp_path: Path):
    """Page 2 by number, and the next cursor, must give the next rows: code ignoring them fails."""
    styles = {
        "browse_by_page": {"page": {"type": "integer", "minimum": 1}, "page_size": {"type": "integer"}},
        "browse_by_cursor": {"cursor": {"type": "string"}, "limit": {"type": "integer"}},
    }
    spec = shop_spec()
    extra = [
        ToolSpec(
            name=name,
            description=name,
            parameters={"type": "object", "properties": props},
            operation=ToolOperation(kind="list", entity="product"),
        )
        for name, props in styles.items()
    ]
    spec = spec.model_copy(update={"tools": [*spec.tools, *extra]})
    cases = {c.name: c for c in generate_tests(spec, shop_rows(), seed=0)}
    second = cases["browse_by_page: page at page=2"]
    assert second.args == {"page_size": 1, "page": 2} and second.expect.match["next_page"] == 3
    assert second.expect.match["items"][0] == {"id": "pro_0002"}
    following = next(c for n, c in cases.items() if n.startswith("browse_by_cursor: page at cursor="))
    assert following.expect.match["items"][0] == {"id": "pro_0002"} and following.expect.match["next_cursor"]
    assert cases["browse_by_cursor: unknown cursor"].expect.error_code == "invalid_arguments"
    source = generate_tools(spec)
    assert run_in_process(source, "sqlite", list(cases.values()), tmp_path / "right") == {}
    ignoring = source.replace("_numbered_page(rows, page_size, page, 1)", "_numbered_page(rows, page_size, None, 1)")
    ignoring = ignoring.replace("_cursor_page(rows, limit, cursor)", "_cursor_page(rows, limit, None)")
    failed = run_in_process(ignoring, "sqlite", list(cases.values()), tmp_path / "wrong")
    assert "browse_by_page: page at page=2" in failed
    assert any(n.startswith("browse_by_cursor: page at cursor=") for n in failed)


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


# --- arguments valid for the schema as declared (real OpenAPI documents) -------------------------

S_SCHEMA, INT_SCHEMA = {"type": "string"}, {"type": "integer"}
ACCOUNT = {"type": "string", "minLength": 1, "pattern": "^[^ :]+$"}
ROOM = {"type": "object", "properties": {"room": {"type": "string"}, "floor": INT_SCHEMA}, "required": ["room"]}
TAGS = {"type": "array", "items": {"type": "string", "enum": ["blue", "red"]}, "minItems": 1}
CONTACT = {"type": "string", "enum": ["BILLING", "TECHNICAL"]}


def vault_spec(backend: str = "sqlite") -> EnvSpec:
    """Secrets whose tools' schemas are stricter than the seeded values: patterns, objects, arrays, enum ids."""
    fields = [
        FieldSpec(name="id", primary_key=True),
        FieldSpec(name="account", required=True, minimum=1, maximum=255),  # a length, as importers give it
        FieldSpec(name="token", required=True),
        FieldSpec(name="location", format="json"),
        FieldSpec(name="tags", format="json", required=True),
        FieldSpec(name="version", type="integer"),
    ]
    entity = EntitySpec(name="secret", table="secrets", fields=fields)
    tools = [
        _vault_tool("list_secrets", "list", {"account": ACCOUNT, "app_id": S_SCHEMA, "limit": S_SCHEMA}, ("account",)),
        _vault_tool("list_all_secrets", "list", {"limit": {"type": "integer", "default": -1}, "offset": INT_SCHEMA}),
        _vault_tool("list_app_secrets", "list", {"app_id": S_SCHEMA}, ("app_id",)),
        _vault_tool("get_contact", "get", {"secret_id": CONTACT}, ("secret_id",)),
        _vault_tool("get_secret", "get", {"secret_id": S_SCHEMA}, ("secret_id",)),
        _vault_tool("move_secret", "update", {"secret_id": S_SCHEMA, "location": ROOM}, ("secret_id",)),
        _vault_tool("create_secret", "create", {"account": ACCOUNT, "location": ROOM, "tags": TAGS}, ("account",)),
        _vault_tool("tag_secret", "update", {"secret_id": S_SCHEMA, "tags": TAGS, "state": S_SCHEMA}, ("secret_id",)),
    ]
    return EnvSpec(
        id="vault",
        title="Vault",
        topic_id="vault",
        description="Secrets.",
        backend=backend,
        tools=tools,
        entities=[entity],
    )


def _vault_tool(name: str, kind: str, entity_props: dict[str, Any], required: tuple[str, ...] = ()) -> ToolSpec:
    schema = {"type": "object", "properties": entity_props, "required": list(required)}
    operation = ToolOperation(kind=kind, entity="secret")
    return ToolSpec(name=name, description=name, parameters=schema, mutates=kind != "list", operation=operation)


def vault_rows() -> dict[str, list[dict[str, Any]]]:
    rows = [
        {
            "id": f"sec_000{i}",
            "account": f"Account {i}",
            "token": f"Token {i}",
            "location": "Skyline Room",
            "tags": "Tags 1",
            "version": i,
        }
        for i in range(1, 5)
    ]
    return {"secrets": rows}


def run_vault(source: str, backend: str, cases: list[TestCase], tmp: Path) -> dict[str, str]:
    """Each case as the gate runs it: arguments the schema refuses answer invalid_arguments, else the tool runs."""
    ns: dict[str, Any] = {}
    exec(compile(source, "tools.py", "exec"), ns)
    spec = vault_spec(backend)
    tools = {t.name: t for t in spec.tools}
    failures = {}
    for i, case in enumerate(cases):
        refused = compile_schema(tools[case.tool].parameters)(case.args)
        if refused:
            result = ToolResult(ok=False, error=ToolError(code="invalid_arguments", message=refused))
        else:
            state = load_state(spec, vault_rows(), tmp / f"s{i}")
            result = call_in_process(ns, case, state)
        if why := check_case(case, result, None):
            failures[case.name] = why
    return failures


def test_arguments_fit_the_declared_schema_and_pass_on_both_backends(backend: str, tmp_path: Path):
    spec = vault_spec(backend)
    cases = generate_tests(spec, vault_rows(), seed=0)
    tools = {t.name: t for t in spec.tools}
    assert {c.tool for c in cases} == set(tools)
    for c in cases:
        if c.expect.error_code != "invalid_arguments":
            assert compile_schema(tools[c.tool].parameters)(c.args) is None, c.name
    assert run_vault(generate_tools(spec), backend, cases, tmp_path) == {}


def test_cases_send_what_the_schema_declares():
    cases = {c.name: c for c in generate_tests(vault_spec(), vault_rows(), seed=0)}
    create = cases["create_secret: new row"]
    assert isinstance(create.args["tags"], list) and create.args["tags"][0] in ("blue", "red")
    assert isinstance(create.args["location"]["room"], str)
    assert create.expect.match["token"] == ""  # a NOT NULL field no parameter sets gets a blank
    assert " " not in create.args["account"]
    moved = cases["move_secret: change location"]
    assert moved.expect.match["location"] == moved.args["location"] and moved.args["location"]
    # no seeded account fits the pattern: the filter takes a value that does, and expects no rows
    assert cases["list_secrets: no filter"].expect.match["total"] == 0
    # app_id names no field: required, but it filters nothing
    assert cases["list_app_secrets: no filter"].expect.match["total"] == 4
    # an enum-typed key: no seeded id is a member, so only an unknown member is asked for
    assert cases["get_contact: unknown id"].args == {"secret_id": "BILLING"}
    assert not any(c.expect.ok for c in cases.values() if c.tool == "get_contact")
    # a string-typed limit is not sent; a limit default of -1 pages by the tool's default
    assert all("limit" not in c.args for c in cases.values() if c.tool == "list_secrets")
    assert cases["list_all_secrets: no filter"].expect.count == 4


@pytest.mark.parametrize(
    "schema",
    [
        ACCOUNT,
        ROOM,
        TAGS,
        CONTACT,
        {"type": "string", "pattern": "(?i)^[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"},
        {
            "type": "object",
            "required": ["channel"],
            "properties": {"channel": {"allOf": [ROOM, {"required": ["floor"]}]}},
        },
        {"type": ["integer", "null"], "minimum": 5, "maximum": 9},
        {"anyOf": [{"type": "null"}, {"type": "string", "format": "date-time"}]},
        {"type": "string", "format": "email", "maxLength": 40},
    ],
)
def test_schema_example_is_accepted_by_the_gate_validator(schema: dict[str, Any]):
    value = schema_example(schema)
    assert value is not None
    assert compile_schema({"type": "object", "properties": {"v": schema}})({"v": value}) is None
