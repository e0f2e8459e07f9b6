"""Loaders for real source formats, on the realistic fixtures and on broken inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from factory.topics import SourceError, load_source

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sources"


def tools_by_name(topic):
    return {t.name: t for t in topic.tools}


def write(tmp_path: Path, name: str, content) -> Path:
    p = tmp_path / name
    p.write_text(content if isinstance(content, str) else json.dumps(content))
    return p


# --- MCP tools/list ---------------------------------------------------------------------------


def test_mcp_tools_list_in_jsonrpc_envelope():
    [topic] = load_source(FIXTURES / "linear-tracker.tools-list.json")
    assert topic.id == "linear-tracker" and topic.source == "mcp"
    tools = tools_by_name(topic)
    assert len(tools) == 12
    assert tools["list_issues"].mutates is False  # readOnlyHint
    assert tools["create_issue"].mutates is True  # readOnlyHint false
    assert tools["delete_issue"].mutates is True  # destructiveHint
    assert tools["search_issues"].mutates is False  # no hints: from the verb
    assert tools["cancel_issue"].mutates is True
    assert tools["get_issue"].output["properties"]["state"]["enum"][-1] == "cancelled"
    assert tools["create_issue"].parameters["required"] == ["team_id", "title"]
    assert all(t.operation is None for t in topic.tools)


def test_mcp_bare_result_and_bare_list(tmp_path):
    tool = {"name": "get_weather", "description": "Weather now.", "inputSchema": {"properties": {"city": {}}}}
    [a] = load_source(write(tmp_path, "weather.json", {"tools": [tool], "serverInfo": {"name": "acme/weather-api"}}))
    [b] = load_source(write(tmp_path, "forecast.json", [tool]))
    assert a.id == "weather-api" and b.id == "forecast"
    assert a.tools[0].parameters == {"type": "object", "properties": {"city": {}}}
    assert a.tools[0].mutates is False


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ({"tools": [{"name": "x"}]}, "no inputSchema"),
        ({"tools": [{"name": "x", "inputSchema": {"type": "array"}}]}, "type object"),
        ({"tools": [{"inputSchema": {"type": "object"}}]}, "no name"),
        ({"tools": []}, "empty"),
        ({"tools": "list_things"}, "must be a list"),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}}, "Method not found"),
        (
            {"tools": [{"name": "a", "inputSchema": {"type": "object"}}, {"name": "a", "inputSchema": {}}]},
            "appears twice",
        ),
    ],
)
def test_mcp_broken_tools_list(tmp_path, content, problem):
    path = write(tmp_path, "broken.json", content)
    with pytest.raises(SourceError, match=problem) as info:
        load_source(path)
    assert str(path) in str(info.value)


# --- MCP registry server.json -----------------------------------------------------------------


def test_registry_server_json_with_embedded_tools():
    [topic] = load_source(FIXTURES / "helpdesk.server.json")
    assert topic.id == "helpdesk-mcp" and topic.title == "Acme Helpdesk" and topic.source == "mcp-registry"
    tools = tools_by_name(topic)
    assert len(tools) == 9
    assert tools["close_ticket"].mutates and not tools["tickets_summary"].mutates


def test_registry_api_entry_and_listing(tmp_path):
    server = json.loads((FIXTURES / "helpdesk.server.json").read_text())
    [a] = load_source(write(tmp_path, "entry.json", {"server": server, "_meta": {}}))
    bare = {"name": "io.github.x/no-tools", "description": "d", "version": "1.0.0", "packages": []}
    topics = load_source(write(tmp_path, "list.json", {"servers": [{"server": bare}, {"server": server}]}))
    assert a.id == "helpdesk-mcp" and [t.id for t in topics] == ["helpdesk-mcp"]


def test_server_json_without_tools_says_tools_list_is_needed(tmp_path):
    doc = {
        "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
        "name": "io.github.user/weather",
        "description": "Weather.",
        "version": "1.0.0",
        "remotes": [{"type": "streamable-http", "url": "https://example.com/mcp"}],
    }
    with pytest.raises(SourceError, match=r"lists no tools.*tools/list"):
        load_source(write(tmp_path, "server.json", doc))
    doc["_meta"] = {"io.modelcontextprotocol.registry/publisher-provided": {"acme": {"tools": ["a", "b"]}}}
    with pytest.raises(SourceError, match="only tool names"):
        load_source(write(tmp_path, "server.json", doc))


# --- OpenAPI ----------------------------------------------------------------------------------


def test_openapi_30_yaml_petstore():
    [topic] = load_source(FIXTURES / "petstore.openapi.yaml")
    assert topic.id == "pet-store" and topic.source == "openapi"
    entities = {e.name: e for e in topic.entities}
    assert set(entities) == {"pet", "category", "order"}  # Tag has no id, Error and PetUpdate are not resources
    pet = {f.name: f for f in entities["pet"].fields}
    assert pet["id"].primary_key and entities["pet"].fields[0].name == "id"
    assert pet["category_id"].references == "category.id"  # nested $ref object -> foreign key
    assert pet["status"].enum == ["available", "pending", "sold"]
    assert pet["birth_date"].type == "date" and pet["created_at"].type == "datetime"
    assert pet["price"].required and pet["price"].minimum == 0
    assert {f.name: f for f in entities["category"].fields}["parent_id"].references == "category.id"  # recursive
    order = {f.name: f for f in entities["order"].fields}
    assert order["pet_id"].references == "pet.id" and order["customer_email"].format == "email"

    tools = tools_by_name(topic)
    ops = {name: (t.operation.kind, t.operation.entity) if t.operation else None for name, t in tools.items()}
    assert ops == {
        "list_pets": ("list", "pet"),
        "add_pet": ("create", "pet"),
        "search_pets": ("search", "pet"),
        "get_pet_by_id": ("get", "pet"),
        "update_pet": ("update", "pet"),
        "delete_pet": ("delete", "pet"),
        "list_categories": ("list", "category"),
        "place_order": ("create", "order"),
        "list_orders": ("list", "order"),
        "get_order_by_id": ("get", "order"),
        "cancel_order": ("action", "order"),
        "get_inventory": None,
    }
    cancel = tools["cancel_order"].operation
    assert (cancel.action, cancel.field, cancel.to_value) == ("transition", "status", "cancelled")
    assert "cancelled" not in cancel.from_values and "placed" in cancel.from_values
    assert tools["get_pet_by_id"].parameters["required"] == ["pet_id"]
    add = tools["add_pet"].parameters
    assert "id" not in add["properties"] and add["properties"]["category_id"]["type"] == "string"
    assert add["required"] == ["name", "price"]
    assert set(tools["list_pets"].parameters["properties"]) == {"limit", "offset", "status", "category_id"}
    assert [t.mutates for t in topic.tools].count(True) == 5
    for t in topic.tools:
        Draft202012Validator.check_schema(t.parameters)
    pet_out = tools["list_pets"].output["items"]
    assert pet_out["type"] == "object" and {"id", "name", "created_at", "birth_date"} <= set(pet_out["properties"])
    # Tag lives in another file, reached through a relative $ref
    assert add["properties"]["tags"]["items"]["properties"]["name"]["maxLength"] == 32


def test_openapi_31_json_bank():
    [topic] = load_source(FIXTURES / "community-bank.openapi.json")
    assert topic.id == "community-bank-api"
    assert {e.name for e in topic.entities} == {"customer", "account", "transaction"}  # AccountPage is a wrapper
    account = {f.name: f for f in next(e for e in topic.entities if e.name == "account").fields}
    assert account["balance"].format == "money" and account["customer_id"].references == "customer.id"
    ops = {t.name: t.operation for t in topic.tools}
    assert (ops["deposit"].action, ops["deposit"].field, ops["deposit"].amount_param) == (
        "increment",
        "balance",
        "amount",
    )
    assert ops["withdraw"].action == "decrement"
    assert ops["transfer_account"].action == "transfer"
    assert {"from_account_id", "to_account_id"} <= set(
        next(t for t in topic.tools if t.name == "transfer_account").parameters["properties"]
    )
    assert (ops["freeze_account"].to_value, ops["freeze_account"].from_values) == ("frozen", ["open"])
    assert ops["list_account_transactions"].kind == "list" and ops["list_account_transactions"].entity == "transaction"
    assert ops["update_account"].kind == "update"
    phone = next(t for t in topic.tools if t.name == "create_customer").parameters["properties"]["phone"]
    assert phone["type"] == ["string", "null"]


def openapi(paths, schemas=None):
    return {
        "openapi": "3.0.0",
        "info": {"title": "T", "version": "1"},
        "paths": paths,
        "components": {"schemas": schemas or {}},
    }


def test_recursive_refs_do_not_loop(tmp_path):
    node = {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}},
            "parent": {"$ref": "#/components/schemas/Node"},
        },
    }
    resp = {
        "200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Node"}}}}
    }
    doc = openapi(
        {
            "/nodes/{nodeId}": {
                "get": {"parameters": [{"name": "nodeId", "in": "path", "required": True}], "responses": resp}
            }
        },
        {"Node": node},
    )
    [topic] = load_source(write(tmp_path, "tree.json", doc))
    out = topic.tools[0].output
    assert out["properties"]["parent"] == out["properties"]["children"]["items"]
    assert out["properties"]["parent"]["type"] == "object" and "recursive" in out["properties"]["parent"]["description"]
    assert topic.tools[0].name == "get_node"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("openapi: 3.0.0\ninfo: {title: T, version: '1'}\n", "without paths"),
        ("openapi: 3.0.0\ninfo: {title: T, version: '1'}\npaths: {}\n", "without paths"),
        ("openapi: 2.5.0\ninfo: {title: T}\npaths: {/a: {get: {}}}\n", "unsupported OpenAPI version"),
        ("openapi: 3.1.0\npaths: {/a: {get: {}}}\n", "info.title"),
        (
            "openapi: 3.0.0\ninfo: {title: T}\npaths:\n  /a:\n"
            "    get: {parameters: [{$ref: '#/components/parameters/Nope'}]}\n",
            "points nowhere",
        ),
        (
            "openapi: 3.0.0\ninfo: {title: T}\npaths:\n  /a:\n    get:\n      responses:\n"
            "        '200': {description: x, content: {application/json: {schema: {$ref: 'missing.yaml#/X'}}}}\n",
            "cannot be read",
        ),
        ("openapi: 3.0.0\ninfo: {title: T}\npaths: {/a: {summary: nothing}}\n", "no operations"),
        ("openapi: 3.0.0\ninfo: [unclosed\n", "invalid YAML"),
        ("swagger: '2.0'\ninfo: {title: T}\n", "Swagger"),
    ],
)
def test_openapi_broken(tmp_path, content, problem):
    path = write(tmp_path, "api.yaml", content)
    with pytest.raises(SourceError, match=problem) as info:
        load_source(path)
    assert str(path) in str(info.value)


# --- detection and files ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("bad.json", '{"tools": [', "invalid JSON"),
        ("empty.json", "  \n", "empty"),
        ("other.json", {"hello": "world"}, "top-level keys: hello"),
        ("list.json", [1, 2], "not a list of MCP tools"),
        ("scalar.yaml", "just words", "expected a JSON or YAML object"),
    ],
)
def test_detection_errors(tmp_path, name, content, problem):
    with pytest.raises(SourceError, match=problem):
        load_source(write(tmp_path, name, content))


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(SourceError, match="no such file"):
        load_source(tmp_path / "nope.json")
    with pytest.raises(SourceError, match="directory"):
        load_source(tmp_path)
    assert issubclass(SourceError, ValueError)
