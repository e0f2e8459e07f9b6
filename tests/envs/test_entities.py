"""Entity inference on hand-written MCP-like tool lists: a shop, a bank and an issue tracker."""

from __future__ import annotations

from factory.envs.entities import infer_entities, parse_tool_name, unmapped_reasons
from factory.envs.entities.outputs import range_field
from factory.envs.entities.tools import UNAPPLIED_NOTE
from factory.models import EntitySpec, FieldSpec, Rule, ToolOperation, ToolSpec, Topic
from factory.naming import split_words

S, INT, N = {"type": "string"}, {"type": "integer"}, {"type": "number"}


def tool(name: str, props: dict | None = None, required: list[str] | None = None, **extra) -> ToolSpec:
    schema = {"type": "object", "properties": props or {}, "required": required or []}
    return ToolSpec(name=name, description=f"{name} tool", parameters=schema, **extra)


def topic(tid: str, tools: list[ToolSpec], entities: list[EntitySpec] | None = None) -> Topic:
    return Topic(id=tid, title=tid, description=tid, source="mcp", tools=tools, entities=entities or [])


ORDER_STATUS = {"type": "string", "enum": ["pending", "paid", "shipped", "delivered", "cancelled"]}
SHOP = topic(
    "shop",
    [
        tool("list_products", {"category": S, "min_price": N, "max_price": N, "limit": INT, "offset": INT}),
        tool("get_product", {"product_id": S}, ["product_id"]),
        tool("search_products", {"q": S}),
        tool(
            "create_product",
            {"name": S, "sku": S, "price": {"type": "number", "minimum": 0}, "stock": INT, "category": S},
            ["name", "sku", "price"],
        ),
        tool("restock_product", {"product_id": S, "quantity": INT}, ["product_id", "quantity"]),
        tool("create_customer", {"name": S, "email": {"type": "string", "format": "email"}, "phone": S}, ["name"]),
        tool("getCustomer", {"customerId": S}, ["customerId"]),
        tool("list_orders", {"customer_id": S, "status": ORDER_STATUS, "page": INT, "per_page": INT}),
        tool(
            "create_order",
            {"customer_id": S, "product_id": S, "quantity": {"type": "integer", "minimum": 1}},
            ["customer_id", "product_id", "quantity"],
        ),
        tool("update_order", {"order_id": S, "shipping_address": S}, ["order_id"]),
        tool("cancel_order", {"order_id": S, "reason": S}, ["order_id"]),
        tool("ship_order", {"order_id": S}, ["order_id"]),
        tool("deliver_order", {"order_id": S}, ["order_id"]),
        tool("count_orders", {"status": S, "group_by": S}),
        tool("delete_customer", {"customer_id": S}, ["customer_id"]),
        tool("ping", {}),
    ],
)

BANK = topic(
    "bank",
    [
        tool("list_accounts", {"customer_id": S, "limit": INT, "offset": INT}),
        tool("get_account_balance", {"account_id": S}, ["account_id"]),
        tool("open_account", {"customer_id": S, "currency": {"type": "string", "enum": ["USD", "EUR"]}}),
        tool("deposit", {"account_id": S, "amount": N}, ["account_id", "amount"]),
        tool("withdraw_funds", {"account_id": S, "amount": N}, ["account_id", "amount"]),
        tool("transfer_funds", {"from_account": S, "to_account": S, "amount": N}, ["from_account", "to_account"]),
        tool("list_transactions", {"account_id": S, "min_amount": N, "created_after": S}),
        tool("freeze_account", {"account_id": S}),
    ],
)

ISSUE_STATE = {"type": "string", "enum": ["open", "in_progress", "closed", "all"]}
TRACKER = topic(
    "tracker",
    [
        tool("issues_list", {"state": ISSUE_STATE, "assignee": S, "limit": INT}),
        tool("getIssue", {"issueNumber": INT}, ["issueNumber"]),
        tool("create_issue", {"title": S, "body": S, "assignee": S}, ["title"]),
        tool("close_issue", {"issue_id": S}, ["issue_id"]),
        tool("reopen_issue", {"issue_id": S}, ["issue_id"]),
        tool("mark_issue_as_in_progress", {"issue_id": S}, ["issue_id"]),
        tool("list_issue_comments", {"issue_id": S}),
        tool("add_comment", {"issue_id": S, "body": S, "author": S}, ["issue_id", "body"]),
        tool("delete_comment", {"comment_id": S}, ["comment_id"]),
        tool("issues_summary", {"state": ISSUE_STATE, "group_by": S}),
    ],
)


def by_name(entities: list[EntitySpec]) -> dict[str, EntitySpec]:
    return {e.name: e for e in entities}


def field(entity: EntitySpec, name: str) -> FieldSpec:
    return next(f for f in entity.fields if f.name == name)


def tools_by_name(tools: list[ToolSpec]) -> dict[str, ToolSpec]:
    return {t.name: t for t in tools}


def test_tool_names_in_any_style() -> None:
    assert split_words("listPullRequests") == ["list", "pull", "requests"]
    assert parse_tool_name("issues_list").verb == "list"
    assert parse_tool_name("issues_list").noun == ["issues"]
    assert parse_tool_name("get_order_by_id").noun == ["order"]
    assert parse_tool_name("github_list_open_issues").noun == ["issues"]
    assert parse_tool_name("top_up_wallet").verb == "top_up"
    assert parse_tool_name("orders_summary").verb == "summary"


def test_shop_entities_keys_and_references() -> None:
    entities, _ = infer_entities(SHOP)
    es = by_name(entities)
    assert set(es) == {"product", "customer", "order"}
    for e in entities:
        pk = field(e, "id")
        assert e.primary_key == "id" and pk.primary_key and pk.type == "string"
        assert e.id_prefix and e.id_prefix.endswith("_")
    assert len({e.id_prefix for e in entities}) == 3
    assert es["order"].table == "orders" and es["product"].table == "products"
    assert field(es["order"], "customer_id").references == "customer.id"
    assert field(es["order"], "product_id").references == "product.id"
    # parents come before children
    names = [e.name for e in entities]
    assert names.index("customer") < names.index("order") and names.index("product") < names.index("order")
    # create's required -> NOT NULL; unique on sku and email; types from parameters
    assert field(es["product"], "price").required and field(es["product"], "price").type == "number"
    assert field(es["product"], "price").minimum == 0
    assert not field(es["product"], "stock").required
    assert field(es["product"], "sku").unique and field(es["customer"], "email").unique
    assert field(es["customer"], "email").format == "email"
    assert field(es["order"], "status").enum == ["pending", "paid", "shipped", "delivered", "cancelled"]
    assert field(es["order"], "shipping_address").type == "string"


def test_shop_rules() -> None:
    es = by_name(infer_entities(SHOP)[0])
    assert Rule(kind="non_negative", field="stock") in es["product"].rules
    assert Rule(kind="consumes", field="quantity", target="product.stock") in es["order"].rules
    assert es["customer"].rules == []


def test_shop_operations() -> None:
    _, tools = infer_entities(SHOP)
    ts = tools_by_name(tools)
    op = {name: t.operation for name, t in ts.items()}
    assert op["list_products"] == ToolOperation(kind="list", entity="product")
    assert op["get_product"] == ToolOperation(kind="get", entity="product")
    assert op["search_products"] == ToolOperation(kind="search", entity="product")
    assert op["create_order"] == ToolOperation(kind="create", entity="order")
    assert op["update_order"] == ToolOperation(kind="update", entity="order")
    assert op["delete_customer"] == ToolOperation(kind="delete", entity="customer")
    assert op["count_orders"] == ToolOperation(kind="aggregate", entity="order")
    assert op["restock_product"] == ToolOperation(
        kind="action", entity="product", action="increment", field="stock", amount_param="quantity"
    )
    cancel = op["cancel_order"]
    assert cancel is not None and cancel.action == "transition" and cancel.to_value == "cancelled"
    assert set(cancel.from_values or []) == {"pending", "paid"}  # not shipped, delivered or cancelled
    ship = op["ship_order"]
    assert ship is not None and ship.to_value == "shipped" and set(ship.from_values or []) == {"pending", "paid"}
    deliver = op["deliver_order"]
    assert deliver is not None and deliver.from_values == ["shipped"]
    assert op["ping"] is None
    assert "ping" in unmapped_reasons(SHOP)
    assert len(unmapped_reasons(SHOP)) == 1
    reads = {"list_products", "get_product", "search_products", "count_orders", "getCustomer", "list_orders"}
    for name, t in ts.items():
        if t.operation is not None:
            assert t.mutates == (name not in reads), name


def test_shop_parameters_follow_the_contract() -> None:
    """A catalog topic's listings page by `limit`/`offset` and search by `query`, whatever they said."""
    ts = tools_by_name(infer_entities(SHOP.model_copy(update={"source": "catalog"}))[1])
    get_customer = ts["getCustomer"].parameters
    assert list(get_customer["properties"]) == ["customer_id"] and get_customer["required"] == ["customer_id"]
    orders = ts["list_orders"].parameters["properties"]
    assert "page" not in orders and "per_page" not in orders
    assert orders["limit"]["default"] == 10 and orders["limit"]["maximum"] == 20 and "offset" in orders
    search = ts["search_products"].parameters
    assert "query" in search["properties"] and "q" not in search["properties"] and "query" in search["required"]
    assert ts["restock_product"].parameters["required"] == ["product_id", "quantity"]


def test_an_mcp_servers_listings_keep_the_paging_and_query_it_declared() -> None:
    """A server's tools/list states its interface: no `limit`/`offset` invented, none renamed."""
    ts = tools_by_name(infer_entities(SHOP)[1])
    orders = ts["list_orders"].parameters["properties"]
    assert set(orders) == {"customer_id", "status", "page", "per_page"}
    products = ts["list_products"].parameters["properties"]
    assert set(products) == {"category", "min_price", "max_price", "limit", "offset"}
    search = ts["search_products"].parameters
    assert set(search["properties"]) == {"q"} and "query" not in (search.get("required") or [])


def test_shop_outputs_use_real_field_names() -> None:
    entities, tools = infer_entities(SHOP)
    es, ts = by_name(entities), tools_by_name(tools)
    record = ts["get_product"].output
    assert record is not None and record["x-entity"] == "product"
    assert set(record["properties"]) == {f.name for f in es["product"].fields}
    assert record["properties"]["price"]["type"] == "number"
    page = ts["list_orders"].output
    assert page is not None and set(page["properties"]) == {"items", "total", "next_page"}  # its page/per_page
    item = page["properties"]["items"]["items"]
    assert item["properties"]["customer_id"]["x-references"] == "customer.id"
    deleted = ts["delete_customer"].output
    assert deleted is not None and set(deleted["properties"]) == {"deleted", "customer_id"}
    assert ts["ping"].output is None


def test_bank_balance_actions_and_transfer() -> None:
    entities, tools = infer_entities(BANK)
    es, ts = by_name(entities), tools_by_name(tools)
    assert {"customer", "account", "transaction"} <= set(es)
    balance = field(es["account"], "balance")
    assert balance.type == "number" and balance.format == "money"
    assert Rule(kind="non_negative", field="balance") in es["account"].rules
    assert field(es["transaction"], "account_id").references == "account.id"
    # a customer only named by `customer_id` still becomes a table with a name
    assert [f.name for f in es["customer"].fields][:2] == ["id", "name"]
    assert ts["get_account_balance"].operation == ToolOperation(kind="get", entity="account")
    assert ts["open_account"].operation == ToolOperation(kind="create", entity="account")
    assert ts["deposit"].operation == ToolOperation(
        kind="action", entity="account", action="increment", field="balance", amount_param="amount"
    )
    assert ts["withdraw_funds"].operation == ToolOperation(
        kind="action", entity="account", action="decrement", field="balance", amount_param="amount"
    )
    transfer = ts["transfer_funds"]
    assert transfer.operation == ToolOperation(
        kind="action", entity="account", action="transfer", field="balance", amount_param="amount"
    )
    props = transfer.parameters["properties"]
    assert set(props) == {"from_account_id", "to_account_id", "amount"}
    assert set(transfer.parameters["required"]) == {"from_account_id", "to_account_id", "amount"}
    # a server's range filter keeps its name and is applied; a catalog topic's is normalized
    listing = ts["list_transactions"].parameters["properties"]
    assert set(listing) == {"account_id", "min_amount", "created_after"}
    assert UNAPPLIED_NOTE not in str(listing["created_after"].get("description"))
    assert range_field(es["transaction"], "created_after") == ("created_at", 0)
    catalog = tools_by_name(infer_entities(BANK.model_copy(update={"source": "catalog"}))[1])
    listing = catalog["list_transactions"].parameters["properties"]
    assert "min_created_at" in listing and "min_amount" in listing and "created_after" not in listing
    assert field(es["transaction"], "created_at").type == "datetime"
    freeze = ts["freeze_account"].operation
    assert freeze is None or freeze.action == "transition"


def test_tracker_transitions_and_comments() -> None:
    entities, tools = infer_entities(TRACKER)
    es, ts = by_name(entities), tools_by_name(tools)
    assert set(es) == {"issue", "comment"}
    state = field(es["issue"], "state")
    assert state.enum == ["open", "in_progress", "closed"]  # the filter value "all" is not a state
    assert ts["issues_list"].operation == ToolOperation(kind="list", entity="issue")
    get_issue = ts["getIssue"]
    assert get_issue.operation == ToolOperation(kind="get", entity="issue")
    assert get_issue.parameters["properties"] == {"issue_id": {"type": "string", "description": "ID of the issue."}}
    close, reopen = ts["close_issue"].operation, ts["reopen_issue"].operation
    assert close is not None and close.field == "state" and close.to_value == "closed"
    assert set(close.from_values or []) == {"open", "in_progress"}
    assert reopen is not None and reopen.to_value == "open" and reopen.from_values == ["closed"]
    progress = ts["mark_issue_as_in_progress"].operation
    assert progress is not None and progress.to_value == "in_progress"
    assert ts["list_issue_comments"].operation == ToolOperation(kind="list", entity="comment")
    assert ts["add_comment"].operation == ToolOperation(kind="create", entity="comment")
    assert field(es["comment"], "issue_id").references == "issue.id"
    assert field(es["comment"], "body").required
    assert ts["issues_summary"].operation == ToolOperation(kind="aggregate", entity="issue")


def test_status_enum_is_invented_in_lifecycle_order() -> None:
    t = topic(
        "tickets",
        [
            tool("create_ticket", {"subject": S}, ["subject"]),
            tool("resolve_ticket", {"ticket_id": S}),
            tool("reopen_ticket", {"ticket_id": S}),
            tool("escalate_ticket", {"ticket_id": S}),
        ],
    )
    es = by_name(infer_entities(t)[0])
    assert field(es["ticket"], "status").enum == ["open", "escalated", "resolved"]


def test_seats_and_budgets_are_consumed() -> None:
    t = topic(
        "travel",
        [
            tool("list_flights", {"origin": S, "seats_available": INT}),
            tool("book_flight", {"flight_id": S, "seats": INT, "passenger_name": S}, ["flight_id", "seats"]),
            tool("get_budget", {"budget_id": S}, output={"type": "object", "properties": {"remaining": N}}),
            tool("create_purchase_order", {"budget_id": S, "total": N}, ["budget_id", "total"]),
            tool("list_memberships", {"user_id": S, "group_id": S}),
        ],
    )
    entities, tools = infer_entities(t)
    es = by_name(entities)
    assert tools_by_name(tools)["book_flight"].operation == ToolOperation(kind="create", entity="booking")
    assert Rule(kind="consumes", field="seats", target="flight.seats_available") in es["booking"].rules
    assert Rule(kind="non_negative", field="seats_available") in es["flight"].rules
    assert Rule(kind="consumes", field="total", target="budget.remaining") in es["purchase_order"].rules
    assert Rule(kind="unique_together", fields=["user_id", "group_id"]) in es["membership"].rules


def record(props: dict, required: list[str] | None = None) -> dict:
    return {"type": "object", "properties": props, "required": required or []}


def page(item: dict) -> dict:
    return record({"items": {"type": "array", "items": item}, "total": INT, "next_offset": INT, "error": S})


PRODUCT_OUT = record(
    {
        "product_id": S,
        "name": S,
        "sku": {"type": "string", "description": "Stock keeping unit."},
        "stock": {"type": "integer", "minimum": 0},
        "target_level": {"type": "integer", "minimum": 0},
        "category": {"type": "string", "enum": ["raw_material", "packaging"]},
        "homepage": {"type": "string", "format": "uri"},
        "error": S,
        "next_offset": INT,
    },
    ["product_id", "name"],
)
PROCUREMENT = topic(
    "procurement",
    [
        tool("list_products", {"category": S, "limit": INT, "offset": INT}),
        tool("get_product", {"product_id": S}, ["product_id"], output=PRODUCT_OUT),
        tool(
            "list_supplier_items",
            {"supplier_id": S, "product_id": S, "limit": INT},
            output=page(record({"supplier_item_id": S, "supplier_id": S, "product_id": S, "unit_cost": N})),
        ),
        tool("list_budgets", {"min_amount": N, "limit": INT}),
        tool(
            "get_budget",
            {"budget_id": S},
            ["budget_id"],
            output=record({"budget": record({"budget_id": S, "name": S, "period": S, "remaining": N}), "error": S}),
        ),
        tool(
            "create_purchase_order",
            {
                "supplier_item_id": S,
                "budget_id": S,
                "quantity": {"type": "integer", "description": "Units ordered; taken from the supplier item's stock."},
                "amount": {"type": "number", "description": "Total cost; taken from the budget's remaining amount."},
                "warehouse_id": S,
            },
            ["supplier_item_id", "budget_id", "quantity", "amount"],
            output=record({"purchase_order_id": S, "quantity": S, "total": N, "count": INT}),
        ),
    ],
)


def test_fields_only_outputs_name_become_columns() -> None:
    es = by_name(infer_entities(PROCUREMENT)[0])
    product = {f.name: f for f in es["product"].fields}
    assert list(product) == ["id", "name", "sku", "stock", "target_level", "category", "homepage"]
    assert product["target_level"].type == "integer" and product["target_level"].minimum == 0
    assert product["category"].enum == ["raw_material", "packaging"]
    assert product["homepage"].format == "url" and product["sku"].description == "Stock keeping unit."
    assert product["sku"].unique and not product["name"].required  # outputs never make a create argument required
    assert Rule(kind="non_negative", field="stock") in es["product"].rules
    # the record inside an envelope, the rows of a page; never the response's own fields
    assert [f.name for f in es["budget"].fields] == ["id", "name", "period", "remaining", "amount"]
    supplier_item = {f.name: f for f in es["supplier_item"].fields}
    assert supplier_item["unit_cost"].type == "number" and supplier_item["supplier_id"].references == "supplier.id"
    for e in es.values():
        assert not {f.name for f in e.fields} & {"error", "next_offset", "items", "count"}, e.name
    # a record's own `total` is a column; a parameter's type wins over what the output says
    order = {f.name: f for f in es["purchase_order"].fields}
    assert order["total"].type == "number" and order["quantity"].type == "integer"
    assert order["warehouse_id"].references == "warehouse.id" and "warehouse" in es


def test_output_foreign_keys_and_types_never_override_parameters() -> None:
    t = topic(
        "tracker",
        [
            tool("list_tasks", {"priority": INT, "limit": INT}),
            tool(
                "get_task",
                {"task_id": S},
                ["task_id"],
                output=record({"task_id": S, "priority": S, "project_id": S, "due_on": S}),
            ),
        ],
    )
    es = by_name(infer_entities(t)[0])
    task = {f.name: f for f in es["task"].fields}
    assert task["priority"].type == "integer"  # the filter parameter says so, the output's string does not win
    assert task["project_id"].references == "project.id" and "project" in es
    assert task["due_on"].type == "date"


def test_descriptions_state_what_a_create_consumes() -> None:
    entities, tools = infer_entities(PROCUREMENT)
    es = by_name(entities)
    stock = field(es["supplier_item"], "stock")
    assert stock.type == "integer"
    assert Rule(kind="consumes", field="quantity", target="supplier_item.stock") in es["purchase_order"].rules
    assert Rule(kind="consumes", field="amount", target="budget.remaining") in es["purchase_order"].rules
    assert Rule(kind="non_negative", field="stock") in es["supplier_item"].rules
    assert Rule(kind="non_negative", field="remaining") in es["budget"].rules
    assert not any(f.name.startswith("remaining_") for f in es["budget"].fields)  # "remaining amount" is `remaining`
    assert tools_by_name(tools)["get_budget"].output["properties"]["remaining"]["type"] == ["number", "null"]


def test_catalog_procurement_has_the_restock_data() -> None:
    from factory.topics import load_catalog

    t = next(x for x in load_catalog() if x.id == "procurement")
    es = by_name(infer_entities(t)[0])
    assert field(es["product"], "target_level").type == "integer"
    assert field(es["supplier_item"], "stock").type == "integer"
    assert field(es["budget"], "remaining").type == "number"
    rules = es["purchase_order"].rules
    assert Rule(kind="consumes", field="quantity", target="supplier_item.stock") in rules
    assert Rule(kind="consumes", field="amount", target="budget.remaining") in rules


def test_given_entities_are_kept_and_only_missing_operations_filled() -> None:
    pet = EntitySpec(
        name="pet",
        table="pets",
        fields=[
            FieldSpec(name="id", primary_key=True, required=True),
            FieldSpec(name="name", required=True),
            FieldSpec(name="status", enum=["available", "sold"]),
        ],
    )
    preset = ToolOperation(kind="list", entity="pet")
    t = topic(
        "petstore",
        [
            tool("findPets", {"status": S}, operation=preset),
            tool("getPetById", {"petId": S}, ["petId"]),
            tool("deletePet", {"petId": S}, ["petId"]),
            tool("archive_pet", {"pet_id": S}),
        ],
        entities=[pet],
    )
    entities, tools = infer_entities(t)
    ts = tools_by_name(tools)
    assert [f.model_dump() for f in entities[0].fields] == [f.model_dump() for f in pet.fields]
    assert entities[0].id_prefix
    assert ts["findPets"].operation == preset and ts["findPets"].output is not None
    assert ts["getPetById"].operation == ToolOperation(kind="get", entity="pet")
    assert "pet_id" in ts["getPetById"].parameters["properties"]
    assert ts["deletePet"].operation == ToolOperation(kind="delete", entity="pet")
    assert ts["archive_pet"].operation is None  # "archived" is not one of the given statuses
    assert "archive_pet" in unmapped_reasons(t)


def test_inference_is_deterministic() -> None:
    a, b = infer_entities(TRACKER), infer_entities(TRACKER)
    assert [e.model_dump() for e in a[0]] == [e.model_dump() for e in b[0]]
    assert [t.model_dump() for t in a[1]] == [t.model_dump() for t in b[1]]


def test_every_catalog_topic_maps_its_tools() -> None:
    from factory.topics import load_catalog

    topics = load_catalog()
    assert len(topics) >= 40
    for t in topics:
        entities, tools = infer_entities(t)
        assert entities, t.id
        mapped = sum(1 for x in tools if x.operation is not None)
        assert mapped / len(tools) >= 0.8, (t.id, unmapped_reasons(t))
        names = {e.name for e in entities}
        assert all(x.operation.entity in names for x in tools if x.operation is not None), t.id


def test_server_hints_outrank_the_name_and_unstated_hints_change_nothing() -> None:
    read_only, destructive = {"readOnlyHint": True}, {"readOnlyHint": False, "destructiveHint": True}

    def hinted(hints: bool) -> dict[str, ToolOperation | None]:
        tools = [
            tool("list_tickets", {"status": S}),
            tool("open_ticket", {"ticket_id": S}, ["ticket_id"], annotations=read_only if hints else None),
            tool("log_reading", {"sensor_id": S, "value": N}, ["sensor_id"], annotations=read_only if hints else None),
            tool("reset_counter", {"counter_id": S}, ["counter_id"], annotations=destructive if hints else None),
            tool("get_counter", {"counter_id": S}, ["counter_id"]),
        ]
        return {t.name: t.operation for t in infer_entities(topic("hints", tools))[1]}

    told, guessed = hinted(True), hinted(False)
    assert told["open_ticket"] == ToolOperation(kind="get", entity="ticket")
    assert told["log_reading"] == ToolOperation(kind="list", entity="reading")
    assert told["reset_counter"] == ToolOperation(kind="delete", entity="counter")
    assert guessed["open_ticket"] is not None and guessed["open_ticket"].action == "transition"
    assert guessed["log_reading"] == ToolOperation(kind="create", entity="reading")
    assert guessed["reset_counter"] is None  # `reset` deletes only when the server says it destroys
