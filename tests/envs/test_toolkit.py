"""The runtime helpers of generated tools, called directly on a real sqlite3 database and a real state directory."""

from __future__ import annotations

import ast
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from factory.envs.codegen import runtime_code
from factory.envs.toolkit import common, files_store, sqlite_store
from factory.envs.toolkit.common import (
    _add_amount,
    _aggregate,
    _assign_key,
    _changes,
    _check_at_least,
    _check_at_most,
    _check_not_negative,
    _check_one_of,
    _check_positive,
    _check_reference,
    _check_supply,
    _check_time,
    _check_transition,
    _check_unique,
    _check_unique_together,
    _check_unreferenced,
    _find,
    _next_id,
    _next_time,
    _page,
    _Refusal,
    _require,
    _return_supply,
    _search,
    _stamp,
    _take_supply,
    _tool,
    _transfer,
    _write_changes,
)
from factory.envs.toolkit.files_store import _FileStore
from factory.envs.toolkit.sqlite_store import _SqliteStore

KEYS = {"items": "id", "holds": "id", "empty": "id"}
ITEMS = [
    {"id": "itm_0002", "name": "Blue Mug", "qty": 3, "price": 9.5, "active": True, "at": "2025-01-02T10:00:00Z"},
    {"id": "itm_0001", "name": "Red Kettle", "qty": 0, "price": 39.0, "active": False, "at": "2025-01-01T09:00:00Z"},
    {"id": "itm_0010", "name": "Green Teapot", "qty": 7, "price": None, "active": True, "at": None},
]
HOLDS = [
    {"id": 1, "item_id": "itm_0002", "qty": 2, "code": "A"},
    {"id": 4, "item_id": "itm_0010", "qty": 1, "code": "B"},
]


def _sqlite() -> _SqliteStore:
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE TABLE items (id TEXT PRIMARY KEY, name TEXT, qty INTEGER, price REAL, active INTEGER, at TEXT)"
    )
    conn.execute("CREATE TABLE holds (id INTEGER PRIMARY KEY, item_id TEXT, qty INTEGER, code TEXT, tags TEXT)")
    conn.execute("CREATE TABLE empty (id TEXT PRIMARY KEY)")
    for table, rows in (("items", ITEMS), ("holds", HOLDS)):
        for row in rows:
            marks = ", ".join("?" for _ in row)
            conn.execute(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({marks})", list(row.values()))
    return _SqliteStore(conn, KEYS, {"items": ("active",)})


def _files(root: Path) -> _FileStore:
    for table, rows in (("items", ITEMS), ("holds", HOLDS)):
        (root / f"{table}.json").write_text(json.dumps(rows))
    return _FileStore(str(root), KEYS)


@pytest.fixture(params=["sqlite", "files"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    return _sqlite() if request.param == "sqlite" else _files(tmp_path)


def _refused(call: Any, *args: Any, **kwargs: Any) -> tuple[str, str]:
    with pytest.raises(_Refusal) as info:
        call(*args, **kwargs)
    return info.value.code, info.value.message


def _ids(rows: list[dict[str, Any]]) -> list[Any]:
    return [r["id"] for r in rows]


# --- the stores ---------------------------------------------------------------------------------


def test_select_orders_by_key_and_filters_by_value_and_range(db: Any):
    assert _ids(db.select("items")) == ["itm_0001", "itm_0002", "itm_0010"]
    assert _ids(db.select("items", {"active": True, "name": None})) == ["itm_0002", "itm_0010"]
    assert _ids(db.select("items", {}, {"qty": (1, None)})) == ["itm_0002", "itm_0010"]
    assert _ids(db.select("items", {}, {"qty": (None, 3), "price": (None, None)})) == ["itm_0001", "itm_0002"]
    assert _ids(db.select("items", {}, {"price": (0, 100)})) == ["itm_0001", "itm_0002"]
    assert db.select("items", {"name": "Blue Mug"})[0]["active"] is True
    assert db.get("items", "itm_0001")["active"] is False
    assert db.get("items", "nope") is None and db.key("holds") == "id"


def test_insert_update_delete(db: Any):
    db.insert("holds", {"id": 9, "item_id": "itm_0001", "qty": 5, "code": "C", "tags": ["x", "y"]})
    db.update("holds", 9, {"qty": 6})
    row = db.get("holds", 9)
    assert row["qty"] == 6 and row["code"] == "C"
    assert row["tags"] in (["x", "y"], '["x", "y"]')  # sqlite keeps lists as JSON text
    db.delete("holds", 1)
    assert _ids(db.select("holds")) == [4, 9]


def test_file_store_replaces_whole_files_and_reads_a_missing_table_as_empty(tmp_path: Path):
    store = _files(tmp_path)
    store.update("items", "itm_0001", {"qty": 4})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["holds.json", "items.json"]
    assert json.loads((tmp_path / "items.json").read_text())[1]["qty"] == 4
    assert store.select("empty") == []
    store.insert("empty", {"id": 1})
    assert store.get("empty", 1) == {"id": 1}


# --- refusals and checks ------------------------------------------------------------------------


def test_tool_answers_a_refusal_as_an_error_and_lets_other_exceptions_through():
    @_tool
    def picky(state: Any, n: int = 0) -> Any:
        """Doc."""
        _require({"n": n or None})
        return 1 / (n - 1)

    assert picky(None, n=0) == {"error": {"code": "invalid_arguments", "message": "n is required"}}
    assert picky(None, n=2) == 1.0 and picky.__doc__ == "Doc." and picky.__name__ == "picky"
    with pytest.raises(ZeroDivisionError):
        picky(None, n=1)


def test_argument_checks():
    assert _refused(_require, {"a": 1, "b": None, "c": None}) == ("invalid_arguments", "b is required")
    assert _refused(_check_one_of, "tier", "x", ("basic", "gold")) == (
        "invalid_arguments",
        "tier must be one of: basic, gold",
    )
    assert _refused(_check_time, "due", "2025-13-01", "date")[1] == "due must be an ISO date"
    assert _refused(_check_time, "at", 5, "datetime")[1] == "at must be an ISO datetime"
    assert _refused(_check_not_negative, "stock", -1, "insufficient_stock") == (
        "insufficient_stock",
        "stock cannot be negative",
    )
    assert _refused(_check_at_least, "rating", 0, 1.0)[1] == "rating must be at least 1.0"
    assert _refused(_check_at_most, "rating", 6, 5.0)[1] == "rating must be at most 5.0"
    assert _refused(_check_positive, "amount", 0)[1] == "amount must be positive"
    for check, args in (
        (_check_one_of, ("tier", None, ("basic",))),
        (_check_time, ("at", "2025-01-01T10:00:00Z", "datetime")),
        (_check_time, ("due", "2025-01-01", "date")),
        (_check_not_negative, ("stock", 0, "insufficient_stock")),
        (_check_at_least, ("rating", None, 1.0)),
        (_check_at_most, ("rating", 5, 5.0)),
    ):
        check(*args)


def test_state_checks(db: Any):
    assert _find(db, "items", "itm_0002", "item")["name"] == "Blue Mug"
    assert _refused(_find, db, "items", "itm_9", "item") == ("not_found", "no item with id 'itm_9'")
    _check_reference(db, "items", "id", "itm_0001", "item")
    assert _refused(_check_reference, db, "items", "id", "x", "item") == ("invalid_reference", "no item with id 'x'")
    assert _refused(_check_unique, db, "items", "name", "Blue Mug", "item") == (
        "conflict",
        "a item with name 'Blue Mug' already exists",
    )
    _check_unique(db, "items", "name", "Blue Mug", "item", current=db.get("items", "itm_0002"))
    assert _refused(_check_unique, db, "items", "name", "Blue Mug", "item", current=db.get("items", "itm_0001"))
    taken = {"id": 7, "item_id": "itm_0002", "code": "A"}
    assert _refused(_check_unique_together, db, "holds", taken, ("item_id", "code"), "hold") == (
        "conflict",
        "another hold has the same item_id, code",
    )
    _check_unique_together(db, "holds", {**taken, "id": 1}, ("item_id", "code"), "hold")
    _check_unique_together(db, "holds", {**taken, "code": None}, ("item_id", "code"), "hold")
    assert _refused(_check_unreferenced, db, "item", "itm_0002", "holds", {"item_id": "itm_0002"}) == (
        "conflict",
        "item 'itm_0002' is still referenced by holds",
    )
    _check_unreferenced(db, "item", "itm_0001", "holds", {"item_id": "itm_0001"})
    assert _refused(_check_transition, {"status": "shipped"}, "order", "status", ("pending", "paid"), "paid") == (
        "invalid_transition",
        "cannot move order from status 'shipped' to 'paid' (only from: pending, paid)",
    )
    _check_transition({"status": "pending"}, "order", "status", ("pending",), "paid")


def test_supply_is_checked_taken_and_given_back(db: Any):
    assert _refused(_check_supply, db, "items", "qty", "item", "itm_0002", 4) == (
        "insufficient_qty",
        "only 3 qty left on item 'itm_0002'",
    )
    # An update keeping its supply gets back what the row took; one moving to another supply does not.
    _check_supply(db, "items", "qty", "item", "itm_0002", 4, "itm_0002", 1)
    assert _refused(_check_supply, db, "items", "qty", "item", "itm_0001", 1, "itm_0002", 4)
    _check_supply(db, "items", "qty", "item", None, 99)
    _check_supply(db, "items", "qty", "item", "gone", 99)
    _take_supply(db, "items", "qty", "itm_0002", 3)
    _return_supply(db, "items", "price", "itm_0002", 0.1)
    _take_supply(db, "items", "qty", None, 3)
    _return_supply(db, "items", "qty", "itm_0002", None)
    row = db.get("items", "itm_0002")
    assert row["qty"] == 0 and row["price"] == 9.6


# --- ids, clocks and writes ---------------------------------------------------------------------


def test_next_id_continues_the_largest_id(db: Any):
    assert _next_id(db, "items", "itm_") == "itm_0011"
    assert _next_id(db, "holds", None) == 5
    assert _next_id(db, "empty", "emp_") == "emp_0001" and _next_id(db, "empty", None) == 1
    record = {"id": None}
    _assign_key(db, "items", record, "itm_")
    chosen = {"id": "mine"}
    _assign_key(db, "items", chosen, "itm_")
    assert record == {"id": "itm_0011"} and chosen == {"id": "mine"}


def test_logical_clock(db: Any):
    assert _next_time(db, "items", "at", "datetime") == "2025-01-02T10:00:01Z"
    assert _next_time(db, "holds", "code", "datetime") == "B"  # not a time: the latest value as it is
    assert _next_time(db, "holds", "missing", "date") == "2025-01-01"
    assert _next_time(db, "holds", "missing", "datetime") == "2025-01-01T00:00:00"
    record = {"at": None, "seen": "given"}
    _stamp(db, "items", record, {"at": "datetime", "seen": "date"}, only_missing=True)
    assert record == {"at": "2025-01-02T10:00:01Z", "seen": "given"}


def test_changes_are_written_with_fresh_update_stamps(db: Any):
    assert _refused(_changes, {"name": None}) == ("invalid_arguments", "give at least one field to change")
    current = db.get("items", "itm_0001")
    changes = _changes({"name": "Kettle", "qty": None})
    result = _write_changes(db, "items", current, changes, {"at": "datetime"})
    assert result == {**current, "name": "Kettle", "at": "2025-01-02T10:00:01Z"}
    assert db.get("items", "itm_0001") == result


def test_add_amount_keeps_the_rules():
    row = {"stock": 3, "credit": 0.1}
    assert _add_amount(row, "stock", -3, non_negative=True, maximum=None) == 0
    assert _add_amount(row, "credit", 0.2, non_negative=False, maximum=None) == 0.3
    assert _refused(_add_amount, row, "stock", -4, non_negative=True, maximum=None) == (
        "insufficient_stock",
        "only 3 stock left",
    )
    assert _refused(_add_amount, row, "stock", 3, non_negative=False, maximum=5.0) == (
        "invalid_arguments",
        "stock cannot exceed 5.0",
    )


def test_transfer(db: Any):
    moved = _transfer(db, "items", "qty", "itm_0010", "itm_0001", 2, entity="item", amount_name="n", non_negative=True)
    assert moved["from"]["qty"] == 5 and moved["to"]["qty"] == 2 and moved["n"] == 2
    assert db.get("items", "itm_0001")["qty"] == 2 and db.get("items", "itm_0010")["qty"] == 5
    kw = {"entity": "item", "amount_name": "n", "non_negative": True}
    assert _refused(_transfer, db, "items", "qty", "itm_0001", "itm_0001", 1, **kw) == (
        "invalid_arguments",
        "cannot transfer to the same item",
    )
    assert _refused(_transfer, db, "items", "qty", "itm_0001", "nope", 1, **kw)[0] == "not_found"
    assert _refused(_transfer, db, "items", "qty", "itm_0001", "itm_0002", 3, **kw) == (
        "insufficient_qty",
        "only 2 qty left",
    )
    overdraft = _transfer(db, "items", "qty", "itm_0001", "itm_0002", 3, **{**kw, "non_negative": False})
    assert overdraft["from"]["qty"] == -1


# --- reading ------------------------------------------------------------------------------------


def test_search_page_and_aggregate(db: Any):
    rows = db.select("items")
    assert _ids(_search(rows, "MUG", ("name",))) == ["itm_0002"] and _search(rows, "", ("name",)) == rows
    page = _page(rows, 2, None)
    assert _ids(page["items"]) == ["itm_0001", "itm_0002"] and page["total"] == 3 and page["next_offset"] == 2
    assert _page(rows, None, 2)["next_offset"] is None and len(_page(rows * 50, 500, 0)["items"]) == 20
    assert _refused(_page, rows, 0, 0)[0] == "invalid_arguments"
    assert _aggregate(rows, "price", None) == {"count": 3, "sum": 48.5, "avg": 24.25, "min": 9.5, "max": 39.0}
    grouped = _aggregate([*rows, {"id": "x", "active": None, "price": 1.0}], None, "active")
    assert grouped == {
        "groups": [{"active": False, "count": 1}, {"active": True, "count": 2}, {"active": None, "count": 1}]
    }


# --- the copy into tools.py ---------------------------------------------------------------------


@pytest.mark.parametrize("module", [common, sqlite_store, files_store])
def test_modules_copy_into_tools_py_without_imports_or_public_callables(module: Any):
    parts = runtime_code(module)
    assert parts.code and all(isinstance(n, ast.Import) for n in parts.imports)
    tree = ast.parse(parts.code)
    assert not [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)]
    names += [t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)]
    assert names and all(n.startswith("_") or n.isupper() for n in names), names
