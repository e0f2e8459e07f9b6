"""Tool graph: edge kinds and reasons on fixture environments, JSON round trip, walk rules."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from factory.graphs import (
    INDEPENDENT_WEIGHT,
    NAME_MATCH_BONUS,
    STRONG_WEIGHT,
    WEAK_WEIGHT,
    build_tool_graph,
    edge_kind,
    edge_weight,
    graph_from_json,
    graph_to_json,
    start_tools,
    strong_producers,
    tool_entity,
    walk_edges,
    weighted_walk,
)
from factory.models import EntitySpec, EnvSpec, FieldSpec, ToolOperation, ToolSpec

_JSON = {"integer": "integer", "number": "number", "boolean": "boolean"}


def _record(entity: EntitySpec) -> dict[str, Any]:
    return {"type": "object", "properties": {f.name: {"type": _JSON.get(f.type, "string")} for f in entity.fields}}


def _params(props: dict[str, str], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": {k: {"type": v} for k, v in props.items()}, "required": required}


def _crud(entity: EntitySpec, *, filters: dict[str, str], create: dict[str, str], create_required: list[str]) -> list:
    rec = _record(entity)
    pid = f"{entity.name}_id"
    return [
        ToolSpec(
            name=f"list_{entity.table}",
            description=f"List {entity.table}.",
            parameters=_params({**filters, "limit": "integer", "offset": "integer"}, []),
            output={
                "type": "object",
                "properties": {
                    "items": {"type": "array", "items": rec},
                    "total": {"type": "integer"},
                    "next_offset": {"type": ["integer", "null"]},
                },
            },
            operation=ToolOperation(kind="list", entity=entity.name),
        ),
        ToolSpec(
            name=f"get_{entity.name}",
            description=f"Get one {entity.name}.",
            parameters=_params({pid: "integer"}, [pid]),
            output=rec,
            operation=ToolOperation(kind="get", entity=entity.name),
        ),
        ToolSpec(
            name=f"create_{entity.name}",
            description=f"Create a {entity.name}.",
            parameters=_params(create, create_required),
            output=rec,
            mutates=True,
            operation=ToolOperation(kind="create", entity=entity.name),
        ),
        ToolSpec(
            name=f"delete_{entity.name}",
            description=f"Delete a {entity.name}.",
            parameters=_params({pid: "integer"}, [pid]),
            output={"type": "object", "properties": {"deleted": {"type": "boolean"}, pid: {"type": "integer"}}},
            mutates=True,
            operation=ToolOperation(kind="delete", entity=entity.name),
        ),
    ]


def shop_spec() -> EnvSpec:
    product = EntitySpec(
        name="product",
        table="products",
        fields=[
            FieldSpec(name="id", type="integer", primary_key=True),
            FieldSpec(name="name"),
            FieldSpec(name="category"),
            FieldSpec(name="price", type="number"),
            FieldSpec(name="stock", type="integer"),
        ],
    )
    customer = EntitySpec(
        name="customer",
        table="customers",
        fields=[
            FieldSpec(name="id", type="integer", primary_key=True),
            FieldSpec(name="name"),
            FieldSpec(name="email", format="email"),
        ],
    )
    order = EntitySpec(
        name="order",
        table="orders",
        fields=[
            FieldSpec(name="id", type="integer", primary_key=True),
            FieldSpec(name="product_id", type="integer", references="product.id"),
            FieldSpec(name="customer_id", type="integer", references="customer.id"),
            FieldSpec(name="quantity", type="integer"),
            FieldSpec(name="status", enum=["placed", "shipped", "cancelled"]),
        ],
    )
    tools = [
        *_crud(
            product,
            filters={"category": "string"},
            create={"name": "string", "category": "string", "price": "number", "stock": "integer"},
            create_required=["name", "price"],
        ),
        *_crud(
            customer,
            filters={"email": "string"},
            create={"name": "string", "email": "string"},
            create_required=["name"],
        ),
        *_crud(
            order,
            filters={"customer_id": "integer", "status": "string"},
            create={"product_id": "integer", "customer_id": "integer", "quantity": "integer"},
            create_required=["product_id", "customer_id", "quantity"],
        ),
        ToolSpec(
            name="cancel_order",
            description="Cancel an order.",
            parameters=_params({"order_id": "integer", "reason": "string"}, ["order_id"]),
            output=None,
            mutates=True,
            operation=ToolOperation(
                kind="action", entity="order", action="transition", field="status", to_value="cancelled"
            ),
        ),
    ]
    return EnvSpec(
        id="shop",
        title="Shop",
        topic_id="shop",
        description="A web shop.",
        tools=tools,
        entities=[product, customer, order],
    )


def bank_spec() -> EnvSpec:
    """Operations unknown (as from an MCP tools/list): entities come from names and output schemas."""
    account = {
        "type": "object",
        "properties": {"account_id": {"type": "string"}, "owner": {"type": "string"}, "balance": {"type": "number"}},
    }
    return EnvSpec(
        id="bank",
        title="Bank",
        topic_id="bank",
        description="Accounts and transfers.",
        tools=[
            ToolSpec(name="list_accounts", description="", output={"type": "array", "items": account}),
            ToolSpec(
                name="get_balance",
                description="",
                parameters=_params({"account_id": "string"}, ["account_id"]),
                output={"type": "object", "properties": {"balance": {"type": "number"}}},
            ),
            ToolSpec(
                name="transfer",
                description="",
                parameters=_params(
                    {"from_account_id": "string", "to_account_id": "string", "amount": "number"},
                    ["from_account_id", "to_account_id", "amount"],
                ),
                output={
                    "type": "object",
                    "properties": {"transfer_id": {"type": "string"}, "amount": {"type": "number"}},
                },
                mutates=True,
            ),
            ToolSpec(
                name="get_transfer",
                description="",
                parameters=_params({"transfer_id": "string"}, ["transfer_id"]),
                output={"type": "object", "properties": {"transfer_id": {"type": "string"}}},
            ),
            # Same parameter name, other type: must not connect.
            ToolSpec(
                name="get_statement",
                description="",
                parameters=_params({"account_id": "integer"}, ["account_id"]),
                output={"type": "object", "properties": {"lines": {"type": "array", "items": {"type": "string"}}}},
            ),
        ],
    )


def tracker_spec() -> EnvSpec:
    issue = {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "title": {"type": "string"},
            "assignee_id": {"type": "string"},
            "project_id": {"type": "string"},
        },
    }
    return EnvSpec(
        id="tracker",
        title="Tracker",
        topic_id="tracker",
        description="Issues in projects.",
        tools=[
            ToolSpec(
                name="list_projects",
                description="",
                output={
                    "type": "object",
                    "properties": {
                        "projects": {
                            "type": "array",
                            "items": {"type": "object", "properties": {"id": {"type": "string"}}},
                        }
                    },
                },
            ),
            ToolSpec(
                name="search_issues",
                description="",
                parameters=_params({"project_id": "string", "query": "string"}, ["project_id"]),
                output={"type": "object", "properties": {"results": {"type": "array", "items": issue}}},
            ),
            ToolSpec(
                name="assign_issue",
                description="",
                parameters=_params({"issue_id": "string", "assignee_id": "string"}, ["issue_id", "assignee_id"]),
                output={"type": "object", "properties": {"ok": {"type": "boolean"}}},
                mutates=True,
            ),
            ToolSpec(
                name="list_users",
                description="",
                output={
                    "type": "object",
                    "properties": {
                        "users": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {"id": {"type": "string"}, "name": {"type": "string"}},
                            },
                        }
                    },
                },
            ),
        ],
    )


@pytest.fixture
def shop():
    return build_tool_graph(shop_spec())


def test_strong_edges_feed_required_ids(shop):
    for src in ("list_products", "get_product", "create_product"):
        assert edge_kind(shop, src, "create_order") == "strong", src
    reasons = shop.edges["list_products", "create_order"]["reasons"]
    assert {"field": "items[].id", "param": "product_id", "value": "product_id", "strong": True} in reasons
    # An order list feeds customer_id through its foreign key, not its own id.
    reasons = shop.edges["list_orders", "create_order"]["reasons"]
    assert {(r["field"], r["param"]) for r in reasons} == {
        ("items[].customer_id", "customer_id"),
        ("items[].product_id", "product_id"),
        ("items[].quantity", "quantity"),  # a plain field of the same entity
    }
    assert edge_kind(shop, "create_order", "get_order") == "strong"
    assert edge_kind(shop, "list_customers", "get_customer") == "strong"
    # A new customer's required name may copy an existing one's, but does not need it.
    assert edge_kind(shop, "list_customers", "create_customer") == "weak"


def test_weak_edges_feed_optional_filters(shop):
    assert edge_kind(shop, "list_customers", "list_orders") == "weak"
    assert shop.edges["list_customers", "list_orders"]["weight"] == WEAK_WEIGHT
    assert edge_kind(shop, "get_product", "list_products") == "weak"  # category filter, same entity
    # A plain field never crosses entities: a customer's `name` does not feed create_product(name).
    assert edge_kind(shop, "get_customer", "create_product") == "independent"


def test_no_edges_from_deletes_or_unknown_outputs(shop):
    assert not list(shop.out_edges("delete_order"))
    assert not list(shop.out_edges("cancel_order"))
    assert edge_kind(shop, "get_order", "delete_order") == "strong"


def test_tool_kinds(shop):
    kinds = dict(shop.nodes(data="kind"))
    assert kinds["list_products"] == "query"
    assert kinds["get_order"] == "query"
    assert kinds["create_order"] == "mutation+query"
    assert kinds["delete_order"] == "mutation"
    assert kinds["cancel_order"] == "mutation"


def test_name_bonus_counts_shared_parameter_names(shop):
    # create_order's parameters product_id, customer_id, quantity all appear in list_orders' items.
    assert shop.edges["list_orders", "create_order"]["weight"] == STRONG_WEIGHT + 3 * NAME_MATCH_BONUS
    assert shop.edges["list_products", "create_order"]["weight"] == STRONG_WEIGHT
    # customer_id and status: parameters of create_order or fields of its output.
    assert shop.edges["create_order", "list_orders"]["weight"] == WEAK_WEIGHT + 2 * NAME_MATCH_BONUS
    assert edge_weight(shop, "list_products", "get_customer") == INDEPENDENT_WEIGHT
    # Independent (different entities) but both name a `name`: the fallback weight gets the bonus.
    assert edge_weight(shop, "get_customer", "create_product") == INDEPENDENT_WEIGHT + NAME_MATCH_BONUS


def test_bank_without_operations_matches_by_name_and_type():
    g = build_tool_graph(bank_spec())
    assert edge_kind(g, "list_accounts", "get_balance") == "strong"
    assert edge_kind(g, "list_accounts", "transfer") == "strong"
    params = {r["param"] for r in g.edges["list_accounts", "transfer"]["reasons"]}
    assert params == {"from_account_id", "to_account_id"}
    assert edge_kind(g, "transfer", "get_transfer") == "strong"
    assert g.nodes["transfer"]["kind"] == "mutation+query"
    assert edge_kind(g, "list_accounts", "get_statement") == "independent"  # string id vs integer parameter
    # `amount` is a plain field of a transfer; get_balance's `balance` is not an amount.
    assert edge_kind(g, "get_balance", "transfer") == "independent"


def test_tracker_nested_collections_name_their_entity():
    g = build_tool_graph(tracker_spec())
    assert edge_kind(g, "list_projects", "search_issues") == "strong"
    assert edge_kind(g, "search_issues", "assign_issue") == "strong"
    fields = {r["field"] for r in g.edges["search_issues", "assign_issue"]["reasons"]}
    assert fields == {"results[].id", "results[].assignee_id"}
    assert edge_kind(g, "list_users", "assign_issue") == "independent"  # users[].id is a user id, not an assignee id
    assert g.nodes["assign_issue"]["kind"] == "mutation"


def test_json_round_trip(shop):
    data = graph_to_json(shop)
    text = json.dumps(data)
    back = graph_from_json(json.loads(text))
    assert isinstance(back.number_of_nodes(), int)
    assert sorted(back.nodes) == sorted(shop.nodes)
    assert dict(back.nodes(data=True)) == dict(shop.nodes(data=True))
    assert {(a, b): d for a, b, d in back.edges(data=True)} == {(a, b): d for a, b, d in shop.edges(data=True)}
    assert back.graph["env_id"] == "shop"
    assert back.is_directed()


def test_start_rule(shop):
    starts = start_tools(shop)
    assert "list_products" in starts and "list_customers" in starts and "create_customer" in starts
    assert "get_product" not in starts  # needs a product id from another tool
    assert "create_order" not in starts
    assert "delete_order" not in starts and "cancel_order" not in starts  # mutations return nothing to build on
    for seed in range(30):
        walk = weighted_walk(shop, random.Random(seed), 4)
        assert walk[0] in starts


def test_walk_is_deterministic_and_respects_dependencies(shop):
    walks = [weighted_walk(shop, random.Random(7), 6) for _ in range(3)]
    assert walks[0] == walks[1] == walks[2]
    seen_different = {tuple(weighted_walk(shop, random.Random(s), 6)) for s in range(20)}
    assert len(seen_different) > 5
    for seed in range(50):
        walk = weighted_walk(shop, random.Random(seed), 8)
        assert len(walk) == len(set(walk)) <= 8
        for i, tool in enumerate(walk[1:], start=1):
            for param, producers in strong_producers(shop, tool).items():
                assert producers & set(walk[:i]), (walk, tool, param)


def test_walk_prefers_strong_edges(shop):
    # After list_orders: 8 callable tools behind strong edges (weight >= 3), 4 independent ones (weight 1).
    strong_targets = {b for _, b, d in shop.out_edges("list_orders", data=True) if d["kind"] == "strong"}
    assert strong_targets >= {"get_order", "create_order", "get_product", "get_customer", "cancel_order"}
    counts = {"strong": 0, "weak": 0, "independent": 0}
    for seed in range(400):
        walk = weighted_walk(shop, random.Random(seed), 2, start="list_orders")
        counts[next(walk_edges(shop, walk))[2]] += 1
    assert counts["strong"] / 400 > 0.8
    assert counts["independent"] > 0  # the fallback is still taken sometimes


def test_walk_stops_when_stuck():
    g = build_tool_graph(tracker_spec())
    # After list_users nothing needing a project or issue id is callable until list_projects runs.
    walk = weighted_walk(g, random.Random(0), 10, start="list_users")
    assert walk[1] == "list_projects"
    assert len(walk) <= 4
    assert weighted_walk(g, random.Random(0), 0) == []
    with pytest.raises(KeyError):
        weighted_walk(g, random.Random(0), 3, start="nope")


def test_tool_entity_from_names():
    spec = shop_spec()
    bare = [t.model_copy(update={"operation": None}) for t in spec.tools]
    spec = spec.model_copy(update={"tools": bare})
    named = {
        "get_customer_orders": "order",
        "list_products": "product",
        "get_order_status": "order",
        "reorder_product": "product",
        "get_weather_report": "weather_report",
        "transfer": None,
    }
    for name, entity in named.items():
        assert tool_entity(ToolSpec(name=name, description=""), spec) == entity, name
    # Without operations the shop graph is the same: entities come from the names.
    with_ops = build_tool_graph(shop_spec())
    without = build_tool_graph(spec)
    assert sorted(without.edges) == sorted(with_ops.edges)


def test_untyped_nested_output_schema():
    order = {"properties": {"id": {"type": "integer"}, "customer": {"properties": {"id": {"type": "integer"}}}}}
    spec = EnvSpec(
        id="x",
        title="x",
        topic_id="x",
        description="",
        tools=[
            ToolSpec(name="list_orders", description="", output={"items": order}),
            ToolSpec(
                name="get_customer", description="", parameters=_params({"customer_id": "integer"}, ["customer_id"])
            ),
        ],
    )
    g = build_tool_graph(spec)
    assert g.edges["list_orders", "get_customer"]["reasons"][0]["field"] == "[].customer.id"


def test_builder_annotations_name_entities_and_references():
    """The environment builder marks records with x-entity and foreign keys with x-references."""
    account = {
        "type": "object",
        "x-entity": "account",
        "properties": {"id": {"type": "string"}, "holder": {"type": "string", "x-references": "customer.id"}},
    }
    spec = EnvSpec(
        id="bank2",
        title="Bank",
        topic_id="bank",
        description="",
        tools=[
            ToolSpec(
                name="move_funds",
                description="",
                parameters=_params({"from_account_id": "string", "to_account_id": "string", "amount": "number"}, []),
                output={"type": "object", "properties": {"from": account, "to": account, "amount": {"type": "number"}}},
                mutates=True,
            ),
            ToolSpec(
                name="close_account", description="", parameters=_params({"account_id": "string"}, ["account_id"])
            ),
            ToolSpec(name="get_client", description="", parameters=_params({"customer_id": "string"}, ["customer_id"])),
        ],
    )
    g = build_tool_graph(spec)
    assert {r["field"] for r in g.edges["move_funds", "close_account"]["reasons"]} == {"from.id", "to.id"}
    assert {r["field"] for r in g.edges["move_funds", "get_client"]["reasons"]} == {"from.holder", "to.holder"}
    assert g.nodes["move_funds"]["kind"] == "mutation+query"
