"""Offline phrasing: readable, varied by seed, consistent names, no raw field names, obscured synonyms."""

from __future__ import annotations

import random

from factory.naming import plural
from factory.tasks.phrasing import (
    ENTITY_SYNONYMS,
    Filter,
    Intent,
    Style,
    compose_question,
    humanize,
    phrasing_report,
    raw_field_phrases,
    undefined_reference,
    value_text,
)

CHAIN = [
    Intent(kind="find_extreme", entity="product", filters=[Filter(field="category", value="home")], field="price"),
    Intent(
        kind="find_extreme",
        entity="order",
        filters=[Filter(field="product_id", relation="product")],
        field="placed_at",
        temporal=True,
    ),
    Intent(kind="lookup", entity="customer", source="order"),
    Intent(kind="update", entity="order", changes={"quantity": 3}),
    Intent(kind="transition", entity="order", value="cancelled", verb="cancel"),
]
ASKS = [("customer", "email"), ("order", "shipping_address")]


def test_humanize_plural_and_values():
    assert humanize("shipping_address") == "shipping address"
    assert humanize("kyc_status") == "KYC status"
    assert humanize("opened_on") == "opening date"
    assert humanize("ends_at") == "end time" and humanize("placed_at") == "placement time"
    assert plural("category") == "categories" and plural("box") == "boxes" and plural("day") == "days"
    assert plural("ledger entry") == "ledger entries"
    assert value_text("non_fiction") == "non fiction"
    assert value_text("Blue Mug") == '"Blue Mug"'
    assert value_text(12.5) == "12.5" and value_text(40.0) == "40" and value_text(True) == "yes"


def test_question_describes_intent_without_raw_field_names():
    q = compose_question(CHAIN, ASKS, random.Random(0), Style())
    assert q.count(".") >= len(CHAIN) + 1
    assert "home" in q and "3" in q
    for raw in ("shipping_address", "placed_at", "product_id", "_"):
        assert raw not in q, q
    assert "shipping address" in q and "email" in q
    assert "latest" in q or "earliest" in q
    assert "order" in q and "customer" in q


def test_templates_vary_with_the_seed_and_repeat_for_the_same_seed():
    questions = {compose_question(CHAIN, ASKS, random.Random(seed), Style()) for seed in range(12)}
    assert len(questions) >= 6
    a = compose_question(CHAIN, ASKS, random.Random(4), Style())
    assert a == compose_question(CHAIN, ASKS, random.Random(4), Style())


def test_obscured_phrasing_uses_synonyms_consistently():
    for seed in range(8):
        q = compose_question(CHAIN, ASKS, random.Random(seed), Style(obscured=True))
        words = f" {q.lower()} "
        for entity in ("product", "order", "customer"):
            assert f" {entity} " not in words and f" {entity}'s " not in words, q
        used = [s for s in ENTITY_SYNONYMS["order"] if s in q.lower()]
        assert len(used) == 1, q  # one synonym per entity, kept through the question


def test_each_operation_kind_has_a_sentence():
    kinds = [
        Intent(kind="find_named", entity="book", value="Dune"),
        Intent(kind="find_only", entity="loan", filters=[Filter(field="member_id", relation="member")]),
        Intent(kind="aggregate", entity="transaction", field="amount", statistic="avg"),
        Intent(kind="aggregate", entity="transaction", statistic="count"),
        Intent(kind="create", entity="booking", changes={"seats": 2}, links=["flight", "passenger"]),
        Intent(kind="delete", entity="review"),
        Intent(kind="adjust", entity="account", field="balance", value=50.0, verb="deposit", sign=1),
        Intent(kind="adjust", entity="product", field="stock", value=4, sign=-1, limit_note="at most 4"),
    ]
    for it in kinds:
        q = compose_question([it], [], random.Random(1), Style())
        assert q.endswith(".") and q[0].isupper(), q
    create = compose_question([kinds[4]], [], random.Random(0), Style())
    assert "that flight" in create and "that passenger" in create and "2" in create
    adjust = compose_question([kinds[6]], [], random.Random(0), Style())
    assert "50" in adjust and "account" in adjust


def _spec():
    from factory.models import EntitySpec, EnvSpec, FieldSpec

    fields = [
        FieldSpec(name="id"),
        FieldSpec(name="ends_at", type="datetime"),
        FieldSpec(name="opened_on", type="date"),
        FieldSpec(name="scheduled_at", type="datetime"),
    ]
    entity = EntitySpec(
        name="booking", table="bookings", fields=[*fields, FieldSpec(name="status", enum=["open", "done"])]
    )
    return EnvSpec.model_construct(id="t", entities=[entity], tools=[])


def test_raw_field_phrases_are_the_naive_forms():
    phrases = raw_field_phrases(_spec())
    assert {"ends_at", "ends at", "ends time", "opened_on", "opened on", "opened date"} <= phrases
    assert "end time" not in phrases and "opening date" not in phrases
    assert "scheduled at" in phrases and "scheduled time" not in phrases  # the English form is no raw name


def test_undefined_references():
    assert undefined_reference("Delete that record.")
    assert undefined_reference("Find the item of the second kind.")
    assert undefined_reference("Cancel that order.")  # no order was introduced
    assert not undefined_reference("Find the order with the latest placement time. Cancel that order.")
    assert not undefined_reference("How many adjustments that belong to stock items are there?")  # a relative clause


def test_phrasing_report_counts():
    qs = [
        'Find the booking "A". Tell me its ends time.',
        'Find the booking "B". Tell me its ends time.',
        "Go through the bookings whose end time is on or after 2024-05-01 and whose status is open. Delete that entry.",
    ]
    r = phrasing_report(qs, _spec())
    assert r["questions"] == 3 and r["distinct_templates"] == 2
    assert r["raw_field_names"] == 2 and r["undefined_references"] == 1
