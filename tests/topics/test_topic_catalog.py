"""The bundled catalog: size, shape and the naming conventions entity inference relies on."""

from __future__ import annotations

import re

import pytest
from jsonschema import Draft202012Validator

from factory.models import Topic
from factory.naming import plural, singular
from factory.topics import get_topic, load_catalog
from factory.topics.bundled import load_categories
from factory.topics.taxonomy import SLUG_RE

CRUD = ("list", "get", "search", "create", "update", "delete", "count")
ACTIONS = {
    "cancel": "cancelled",
    "approve": "approved",
    "reject": "rejected",
    "close": "closed",
    "reopen": "open",
    "complete": "completed",
    "archive": "archived",
    "ship": "shipped",
    "confirm": "confirmed",
    "assign": "assigned",
}
AMOUNT_ACTIONS = {"restock", "deposit", "withdraw", "transfer"}
READ_ONLY = {"list", "get", "search", "count"}


def entities_of(topic: Topic) -> set[str]:
    """Entities named by CRUD tools: `get_issue` -> issue, `list_issues` -> issue."""
    names = set()
    for t in topic.tools:
        verb, _, rest = t.name.partition("_")
        if verb in ("get", "create", "update", "delete"):
            names.add(rest)
        elif verb in ("list", "search", "count"):
            names.add(singular(rest))
        elif t.name.endswith("_summary"):
            names.add(singular(t.name.removesuffix("_summary")))
    return names


@pytest.fixture(scope="module")
def catalog() -> list[Topic]:
    return load_catalog()


def test_catalog_size_and_categories(catalog):
    assert len(catalog) >= 40
    l1s = {t.taxonomy_hint.l1 for t in catalog}
    assert len(l1s) >= 8
    assert len({t.id for t in catalog}) == len(catalog)
    assert {c.l1 for c in load_categories()} == l1s


def test_every_topic_is_well_formed(catalog):
    for topic in catalog:
        assert topic.source == "catalog" and topic.category_hint == topic.taxonomy_hint.l1
        for slug in (topic.id, topic.taxonomy_hint.l1, topic.taxonomy_hint.l2, topic.taxonomy_hint.l3):
            assert SLUG_RE.match(slug), slug
        assert 5 <= len(topic.tools) <= 12, topic.id
        names = [t.name for t in topic.tools]
        assert len(names) == len(set(names)), topic.id
        assert len(topic.description) > 30


def test_tool_schemas_are_valid_json_schema_objects(catalog):
    for topic in catalog:
        for tool in topic.tools:
            Draft202012Validator.check_schema(tool.parameters)
            assert tool.parameters["type"] == "object"
            assert set(tool.parameters.get("required", [])) <= set(tool.parameters["properties"])
            if tool.output is not None:
                Draft202012Validator.check_schema(tool.output)
            assert tool.operation is None, f"{topic.id}.{tool.name}: catalog tools must not set operation"
            assert re.fullmatch(r"[a-z]+(_[a-z]+)+", tool.name), tool.name


def test_naming_conventions_hold(catalog):
    for topic in catalog:
        entities = entities_of(topic)
        for tool in topic.tools:
            verb, _, rest = tool.name.partition("_")
            props = tool.parameters["properties"]
            assert tool.mutates == (verb not in READ_ONLY and not tool.name.endswith("_summary")), tool.name
            if verb in ("get", "update", "delete"):
                assert f"{rest}_id" in tool.parameters["required"], tool.name
            if verb in ("list", "search"):
                assert {"limit", "offset"} <= set(props), tool.name
                assert props["limit"]["maximum"] == 100
            if verb in ACTIONS or verb in AMOUNT_ACTIONS:
                assert rest in entities, f"{topic.id}.{tool.name}: action on an entity without CRUD tools"
            for p in props:
                if p.endswith("_id"):
                    ref = p.removesuffix("_id").removeprefix("from_").removeprefix("to_")
                    assert ref in entities, f"{topic.id}.{tool.name}.{p} references no entity of the topic"


def test_main_entity_has_list_and_get(catalog):
    for topic in catalog:
        names = {t.name for t in topic.tools}
        assert any(f"list_{plural(e)}" in names and f"get_{e}" in names for e in entities_of(topic)), topic.id


def test_status_actions_have_their_target_state(catalog):
    for topic in catalog:
        enums: dict[str, set[str]] = {}
        for tool in topic.tools:
            verb, _, rest = tool.name.partition("_")
            entity = singular(rest) if verb in ("list", "count") else rest
            status = tool.parameters["properties"].get("status") or (tool.output or {}).get("properties", {}).get(
                "status"
            )
            if status and "enum" in status:
                enums.setdefault(entity, set()).update(status["enum"])
        for tool in topic.tools:
            verb, _, entity = tool.name.partition("_")
            if verb in ACTIONS:
                assert ACTIONS[verb] in enums.get(entity, set()), f"{topic.id}.{tool.name}"


def test_most_topics_relate_two_entities(catalog):
    related = 0
    for topic in catalog:
        entities = entities_of(topic)
        fks = {
            p.removesuffix("_id")
            for t in topic.tools
            if t.name.startswith("create_")
            for p in t.parameters["properties"]
            if p.endswith("_id")
        }
        related += bool(len(entities) >= 2 and fks & entities)
    assert related >= 0.8 * len(catalog)


def test_business_rule_fields_are_present(catalog):
    fields = {
        topic.id: {p for t in topic.tools for p in t.parameters["properties"]}
        | {p for t in topic.tools if t.output for p in t.output["properties"]}
        for topic in catalog
    }
    assert {"stock", "quantity", "price"} <= fields["online-shop"]
    assert {"balance", "amount", "from_account_id", "to_account_id"} <= fields["retail-banking"]
    assert {"seats_available"} <= fields["flight-booking"]
    procurement = fields["procurement"]
    assert {
        "supplier_id",
        "supplier_item_id",
        "budget_id",
        "quantity",
        "target_level",
        "remaining",
        "stock",
    } <= procurement


def test_get_topic_and_helpful_key_error():
    topic = get_topic("issue-tracker")
    assert topic.id == "issue-tracker" and topic.taxonomy_hint.l1 == "dev-tools"
    topic.tools.clear()
    assert get_topic("issue-tracker").tools, "callers get copies, the catalog stays intact"
    with pytest.raises(KeyError, match="issue-tracker"):
        get_topic("issue-trackr")
