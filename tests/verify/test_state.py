"""State hash invariants and diff content."""

from __future__ import annotations

import random

from factory.models import Snapshot
from factory.verify.state import canonical_state_hash, state_diff

ORDERS = [
    {"id": 1, "product_id": 10, "quantity": 2, "status": "placed", "created_at": "2024-01-01T10:00:00"},
    {"id": 2, "product_id": 11, "quantity": 1, "status": "shipped", "created_at": "2024-01-02T10:00:00"},
    {"id": 3, "product_id": 10, "quantity": 5, "status": "placed", "created_at": "2024-01-03T10:00:00"},
]
PRODUCTS = [
    {"id": 10, "name": "Lamp", "stock": 7, "price": 70.0},
    {"id": 11, "name": "Desk", "stock": 2, "price": 250.5},
]


def snap(orders=ORDERS, products=PRODUCTS, **extra) -> Snapshot:
    return Snapshot(tables={"orders": [dict(r) for r in orders], "products": [dict(r) for r in products], **extra})


def test_hash_ignores_row_and_table_order():
    shuffled = list(ORDERS)
    random.Random(3).shuffle(shuffled)
    assert shuffled != ORDERS
    a = canonical_state_hash(snap())
    b = canonical_state_hash(Snapshot(tables={"products": list(reversed(PRODUCTS)), "orders": shuffled}))
    assert a == b
    # Key order inside rows does not matter either.
    reordered = [dict(reversed(list(r.items()))) for r in ORDERS]
    assert canonical_state_hash(snap(orders=reordered)) == a
    # Plain dicts hash like snapshots.
    assert canonical_state_hash(snap().tables) == a


def test_hash_detects_real_changes():
    base = canonical_state_hash(snap())
    changed = [dict(r) for r in ORDERS]
    changed[1]["status"] = "cancelled"
    assert canonical_state_hash(snap(orders=changed)) != base
    assert canonical_state_hash(snap(orders=ORDERS[:2])) != base  # a row deleted
    assert canonical_state_hash(snap(orders=[*ORDERS, ORDERS[0]])) != base  # a duplicate row is a change
    products = [dict(PRODUCTS[0], stock=6), PRODUCTS[1]]
    assert canonical_state_hash(snap(products=products)) != base
    assert canonical_state_hash(snap(products=[dict(PRODUCTS[0], price=70.01), PRODUCTS[1]])) != base


def test_hash_ignores_bookkeeping_and_timestamps():
    base = canonical_state_hash(snap(), ["orders.status"])
    touched = [dict(r, created_at="2030-01-01T00:00:00") for r in ORDERS]
    assert canonical_state_hash(snap(orders=touched)) == canonical_state_hash(snap())  # timestamps by default
    assert canonical_state_hash(snap(orders=touched), timestamp_columns=()) != canonical_state_hash(snap())
    status = [dict(r, status="x") for r in ORDERS]
    assert canonical_state_hash(snap(orders=status), ["orders.status"]) == base
    # Only the named table's column: products.status would still count.
    assert canonical_state_hash(snap(orders=status), ["products.status"]) != canonical_state_hash(
        snap(), ["products.status"]
    )
    audit = [{"id": 1, "event": "login"}]
    with_log = snap(audit_log=audit)
    assert canonical_state_hash(with_log, ["audit_log.*"]) == canonical_state_hash(snap(), ["audit_log.*"])
    assert canonical_state_hash(with_log) != canonical_state_hash(snap())
    # Patterns over every table.
    stock = [dict(PRODUCTS[0], stock=0), PRODUCTS[1]]
    assert canonical_state_hash(snap(products=stock), ["*.stock"]) == canonical_state_hash(snap(), ["*.stock"])


def test_hash_equal_values_in_other_forms():
    as_float = [dict(r, quantity=float(r["quantity"])) for r in ORDERS]
    assert canonical_state_hash(snap(orders=as_float)) == canonical_state_hash(snap())
    assert canonical_state_hash(snap(empty=[])) == canonical_state_hash(snap())


def test_diff_reports_added_removed_changed():
    final_orders = [dict(ORDERS[0], status="shipped", created_at="2031-01-01"), ORDERS[1]]
    final_orders.append({"id": 4, "product_id": 11, "quantity": 1, "status": "placed", "created_at": "2031-01-01"})
    final_products = [dict(PRODUCTS[0]), dict(PRODUCTS[1], stock=1)]
    diff = state_diff(snap(), snap(orders=final_orders, products=final_products))
    orders = diff.tables["orders"]
    assert orders.key == "id"
    assert [r["id"] for r in orders.added] == [4]
    assert [r["id"] for r in orders.removed] == [3]
    assert len(orders.changed) == 1
    change = orders.changed[0]
    assert change.key == 1 and change.before == {"status": "placed"} and change.after == {"status": "shipped"}
    assert "created_at" not in orders.added[0]  # ignored columns are left out of the diff too
    assert diff.tables["products"].changed[0].before == {"stock": 2}
    assert diff.summary() == "orders: 1 added, 1 removed, 1 changed; products: 1 changed"


def test_diff_empty_exactly_when_hash_equal():
    touched = [dict(r, created_at="2040-01-01") for r in reversed(ORDERS)]
    assert state_diff(snap(), snap(orders=touched)).empty
    assert state_diff(snap(), snap(orders=touched), ["orders.status"]).summary() == "no changes"
    changed = [dict(ORDERS[0], status="lost"), *ORDERS[1:]]
    diff = state_diff(snap(), snap(orders=changed), ["orders.status"])
    assert diff.empty
    assert not state_diff(snap(), snap(orders=changed)).empty


def test_diff_without_a_key_uses_whole_rows():
    before = {"tags": [{"name": "a"}, {"name": "b"}, {"name": "b"}]}
    after = {"tags": [{"name": "b"}, {"name": "c"}]}
    d = state_diff(before, after).tables["tags"]
    assert d.key is None
    assert d.added == [{"name": "c"}]
    assert sorted(r["name"] for r in d.removed) == ["a", "b"]
    # An explicit key wins over inference.
    keyed = state_diff({"t": [{"code": "x", "v": 1}]}, {"t": [{"code": "x", "v": 2}]}, keys={"t": "code"})
    assert keyed.tables["t"].changed[0].after == {"v": 2}
    # A table that appears is all added.
    assert len(state_diff({}, {"notes": [{"id": 1}]}).tables["notes"].added) == 1


def test_records_added_to_a_log_table_are_bookkeeping_and_its_old_records_count():
    """ "jobs.+": a metered read appends its own audit record to the jobs a cancel changes."""
    jobs = [{"id": "j1", "status": "running"}, {"id": "j2", "status": "queued"}]
    audit = {"id": "audit_7", "status": "succeeded"}
    read_twice = {"jobs": [*jobs, audit, dict(audit, id="audit_8")]}
    cancelled = {"jobs": [dict(jobs[0], status="cancelled"), jobs[1], audit]}
    log = ["jobs.+"]
    assert state_diff({"jobs": jobs}, read_twice, log).empty
    assert not state_diff({"jobs": jobs}, read_twice).empty
    d = state_diff({"jobs": jobs}, cancelled, log).tables["jobs"]
    assert d.added == [] and [c.after for c in d.changed] == [{"status": "cancelled"}]
    assert state_diff({"jobs": jobs}, {"jobs": jobs[:1]}, log).tables["jobs"].removed == [jobs[1]]
    # the hash of a run's end state, given where it started, is blind to what it logged, not to what it changed
    base = canonical_state_hash({"jobs": jobs}, log)
    assert canonical_state_hash(read_twice, log, since={"jobs": jobs}) == base
    assert canonical_state_hash(read_twice, log) != base
    assert canonical_state_hash(cancelled, log, since={"jobs": jobs}) != base
    # without a key, records are matched by content: a changed record is no logged one
    tags = {"tags": [{"name": "a"}]}
    assert state_diff(tags, {"tags": [{"name": "a"}, {"name": "b"}]}, ["tags.+"]).empty
    assert not state_diff(tags, {"tags": [{"name": "c"}]}, ["tags.+"]).empty
    assert canonical_state_hash({"tags": [{"name": "c"}]}, ["tags.+"], since=tags) != canonical_state_hash(tags)


def test_hash_is_memoized_per_rows_object_and_sees_new_content(monkeypatch):
    import factory.verify.state as state

    base = Snapshot.model_construct(tables=snap().tables)  # as the runtime builds them: lists kept, not copied
    before = canonical_state_hash(base)
    rows_hashed = []
    real_row = state.ColumnFilter.row
    monkeypatch.setattr(state.ColumnFilter, "row", lambda self, t, r: rows_hashed.append(t) or real_row(self, t, r))
    changed = Snapshot.model_construct(tables={**base.tables, "orders": [{**ORDERS[0], "quantity": 9}, *ORDERS[1:]]})
    assert canonical_state_hash(changed) != before
    assert rows_hashed == ["orders"] * len(ORDERS)  # the shared products list was not hashed again
    assert canonical_state_hash(snap()) == before  # equal content in new lists hashes the same
