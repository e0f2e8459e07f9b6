"""The helpers every generated tools.py shares, whatever its state backend.

Tool functions call these with literal arguments (table, field and entity names from the schema) and a
store (`_SqliteStore` or `_FileStore`). A check that fails raises `_Refusal`; `_tool` turns it into the
call's answer `{"error": {"code": ..., "message": ...}}`, and since checks run before any write, a refused
call changes nothing. New ids continue the largest existing id and timestamps the latest existing one
(no clock, no uuid), so replaying the same calls in a fresh session gives the same answers.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import functools
import re
import typing

if typing.TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

DEFAULT_LIMIT = 10
MAX_LIMIT = 20  # the largest page: seed tables hold more rows than this, so reading everything pages


class _Store(typing.Protocol):
    """What the helpers need from a state backend (`_SqliteStore`, `_FileStore`): tables of records."""

    def key(self, table: str) -> str:
        """The primary key column of `table`."""
        ...

    def select(
        self,
        table: str,
        where: dict[str, Any] | None = None,
        ranges: dict[str, tuple[Any, Any]] | None = None,
    ) -> list[dict[str, Any]]:
        """Rows (ordered by key) equal to `where` and inside `ranges`; None values and bounds filter nothing."""
        ...

    def get(self, table: str, key: Any) -> dict[str, Any] | None:
        """The row whose key is `key`, or None."""
        ...

    def insert(self, table: str, record: dict[str, Any]) -> None: ...

    def update(self, table: str, key: Any, changes: dict[str, Any]) -> None: ...

    def delete(self, table: str, key: Any) -> None: ...


class _Refusal(Exception):
    """A tool call refused on purpose: bad arguments, a missing row, a broken business rule."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message


def _tool(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The tool function answering a `_Refusal` from its checks as an error value (other errors propagate)."""

    @functools.wraps(fn)
    def call(*args: Any, **params: Any) -> Any:
        try:
            return fn(*args, **params)
        except _Refusal as refusal:
            return {"error": {"code": refusal.code, "message": refusal.message}}

    return call


# --- checks on arguments ------------------------------------------------------------------------


def _require(values: dict[str, Any]) -> None:
    """Refuse a call without one of these required parameters (the first missing one is named)."""
    for name, value in values.items():
        if value is None:
            raise _Refusal("invalid_arguments", f"{name} is required")


def _check_one_of(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value is not None and value not in allowed:
        raise _Refusal("invalid_arguments", f"{name} must be one of: {', '.join(allowed)}")


def _valid_time(value: Any, kind: str) -> bool:
    try:
        if kind == "date":
            datetime.date.fromisoformat(value)
        else:
            datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (AttributeError, TypeError, ValueError):
        return False
    return True


def _check_time(name: str, value: Any, kind: str) -> None:
    """Refuse a value that is not an ISO date or datetime (`kind`)."""
    if value is not None and not _valid_time(value, kind):
        raise _Refusal("invalid_arguments", f"{name} must be an ISO {kind}")


def _check_not_negative(name: str, value: Any, code: str) -> None:
    """Refuse a negative value with `code` (insufficient_<field> for a quantity that may never go below 0)."""
    if value is not None and value < 0:
        raise _Refusal(code, f"{name} cannot be negative")


def _check_at_least(name: str, value: Any, minimum: float) -> None:
    if value is not None and value < minimum:
        raise _Refusal("invalid_arguments", f"{name} must be at least {minimum}")


def _check_at_most(name: str, value: Any, maximum: float) -> None:
    if value is not None and value > maximum:
        raise _Refusal("invalid_arguments", f"{name} must be at most {maximum}")


def _check_positive(name: str, value: Any) -> None:
    if value <= 0:
        raise _Refusal("invalid_arguments", f"{name} must be positive")


# --- checks against the state -------------------------------------------------------------------


def _find(db: _Store, table: str, key: Any, entity: str) -> dict[str, Any]:
    """The row of `table` with key `key`; refused as not_found when there is none."""
    row = db.get(table, key)
    if row is None:
        raise _Refusal("not_found", f"no {entity} with id {key!r}")
    return row


def _check_reference(db: _Store, table: str, field: str, value: Any, entity: str) -> None:
    """Refuse a foreign key `value` that no row of `table` holds in `field`."""
    if value is not None and not db.select(table, {field: value}):
        raise _Refusal("invalid_reference", f"no {entity} with {field} {value!r}")


def _check_unique(
    db: _Store, table: str, field: str, value: Any, entity: str, current: dict[str, Any] | None = None
) -> None:
    """Refuse a `value` of `field` that another row already holds (`current`, the row being updated, may keep it)."""
    if value is None:
        return
    key = db.key(table)
    if any(current is None or row[key] != current[key] for row in db.select(table, {field: value})):
        raise _Refusal("conflict", f"a {entity} with {field} {value!r} already exists")


def _check_unique_together(
    db: _Store, table: str, record: dict[str, Any], fields: tuple[str, ...], entity: str
) -> None:
    """Refuse a `record` whose values of `fields` (all given) another row already has."""
    if any(record[f] is None for f in fields):
        return
    key = db.key(table)
    if any(row[key] != record[key] for row in db.select(table, {f: record[f] for f in fields})):
        raise _Refusal("conflict", f"another {entity} has the same {', '.join(fields)}")


def _check_unreferenced(db: _Store, entity: str, key: Any, table: str, where: dict[str, Any]) -> None:
    """Refuse deleting the `entity` `key` while rows of `table` still point at it (`where`: their foreign key)."""
    if db.select(table, where):
        raise _Refusal("conflict", f"{entity} {key!r} is still referenced by {table}")


def _delete_where(db: _Store, table: str, where: dict[str, Any]) -> None:
    """Delete the rows of `table` equal to `where` (those pointing at a row a cascading delete removes)."""
    key = db.key(table)
    for row in db.select(table, where):
        db.delete(table, row[key])


def _check_transition(current: dict[str, Any], entity: str, field: str, allowed: tuple[str, ...], target: str) -> None:
    """Refuse moving `field` of `current` to `target` unless it is one of the `allowed` source values."""
    if current[field] not in allowed:
        raise _Refusal(
            "invalid_transition",
            f"cannot move {entity} from {field} {current[field]!r} to {target!r} (only from: {', '.join(allowed)})",
        )


# --- supply: rows whose quantity is taken from a field of the row they reference ---------------


def _held(row: dict[str, Any] | None, quantity: str | None, status: str | None = None, released: Any = ()) -> Any:
    """What `row` holds of a supply: its `quantity` (None: one unit), nothing when there is no row or its
    `status` is one of the `released` states (a cancelled order, a finished booking)."""
    if row is None or (status is not None and row.get(status) in released):
        return 0
    return 1 if quantity is None else row.get(quantity) or 0


def _check_supply(
    db: _Store,
    table: str,
    field: str,
    entity: str,
    key: Any,
    wanted: Any,
    old_key: Any = None,
    old_amount: Any = 0,
) -> None:
    """Refuse taking `wanted` of `field` from the `table` row `key` when less is left.

    A row that already held `old_amount` of the supply `old_key` (an update, a status change) first gives
    that back, when it keeps the same supply.
    """
    supply = db.get(table, key) if key is not None else None
    if supply is None or not wanted:
        return
    returned = (old_amount or 0) if old_key == key else 0
    available = (supply[field] or 0) + returned
    if available < wanted:
        raise _Refusal(f"insufficient_{field}", f"only {available} {field} left on {entity} {key!r}")


def _take_supply(db: _Store, table: str, field: str, key: Any, quantity: Any) -> None:
    if key is not None and quantity and (row := db.get(table, key)) is not None:
        db.update(table, key, {field: _round((row[field] or 0) - quantity)})


def _return_supply(db: _Store, table: str, field: str, key: Any, quantity: Any) -> None:
    if key is not None and quantity and (row := db.get(table, key)) is not None:
        db.update(table, key, {field: _round((row[field] or 0) + quantity)})


# --- closed rows: done with, no more changes or new rows pointing at them ---------------------


def _check_open(row: dict[str, Any], entity: str, status: str, closed: tuple[str, ...]) -> None:
    """Refuse changing a row whose `status` is one of the `closed` states (a closed account, an archived page)."""
    if row.get(status) in closed:
        raise _Refusal("invalid_state", f"the {entity} is {row[status]}: it takes no more changes")


def _check_open_reference(
    db: _Store, table: str, field: str, value: Any, entity: str, status: str, closed: tuple[str, ...]
) -> None:
    """Refuse pointing a new or changed row at a closed row of `table` (booking a cancelled flight)."""
    if value is None:
        return
    for row in db.select(table, {field: value}):
        if row.get(status) in closed:
            raise _Refusal("invalid_state", f"{entity} {value!r} is {row[status]}: nothing new can point at it")


# --- ledger: rows recording each amount moved -------------------------------------------------


def _post_entry(db: _Store, table: str, entry: dict[str, Any], prefix: str | None, stamps: dict[str, str]) -> None:
    """Insert the ledger row `entry` (a deposit, a withdrawal, one leg of a transfer) with a new id and time."""
    _assign_key(db, table, entry, prefix)
    _stamp(db, table, entry, stamps, only_missing=True)
    db.insert(table, entry)


# --- writing ------------------------------------------------------------------------------------


def _round(value: Any) -> Any:
    """Floats to 6 decimals, so sums of money do not show binary noise."""
    return round(value, 6) if isinstance(value, float) else value


def _fill_defaults(record: dict[str, Any], defaults: dict[str, Any]) -> None:
    for name, value in defaults.items():
        if record[name] is None:
            record[name] = value


def _next_id(db: _Store, table: str, prefix: str | None) -> Any:
    """The id after the largest existing one: 41 -> 42, "ord_0041" -> "ord_0042" (`prefix` None: integer ids)."""
    keys = [row[db.key(table)] for row in db.select(table)]
    if prefix is None:
        return max((k for k in keys if isinstance(k, int)), default=0) + 1
    best = None
    for key in keys:
        match = re.fullmatch(r"(.*?)(\d+)", str(key))
        if match and (best is None or int(match.group(2)) > int(best.group(2))):
            best = match
    if best is None:
        return f"{prefix}0001"
    digits = best.group(2)
    return f"{best.group(1)}{int(digits) + 1:0{len(digits)}d}"


def _assign_key(db: _Store, table: str, record: dict[str, Any], prefix: str | None) -> None:
    """Give `record` the next id of `table` unless the caller chose one."""
    key = db.key(table)
    if record[key] is None:
        record[key] = _next_id(db, table, prefix)


def _next_time(db: _Store, table: str, field: str, kind: str) -> str:
    """A logical clock: the latest existing value of `field` plus one second (dates stay on that day)."""
    values = [row[field] for row in db.select(table) if isinstance(row.get(field), str)]
    if not values:
        return "2025-01-01" if kind == "date" else "2025-01-01T00:00:00"
    latest = max(values)
    if kind == "date":
        return latest
    try:
        moment = datetime.datetime.fromisoformat(latest.replace("Z", "+00:00"))
    except ValueError:
        return latest
    text = (moment + datetime.timedelta(seconds=1)).isoformat()
    return text.replace("+00:00", "Z") if latest.endswith("Z") else text


def _stamp(db: _Store, table: str, record: dict[str, Any], stamps: dict[str, str], *, only_missing: bool) -> None:
    """Set the timestamp fields {field: "date" | "datetime"} of `record` from the logical clock of `table`."""
    for name, kind in stamps.items():
        if not only_missing or record[name] is None:
            record[name] = _next_time(db, table, name, kind)


def _given(values: dict[str, Any]) -> dict[str, Any]:
    """The values the caller gave (not None)."""
    return {name: value for name, value in values.items() if value is not None}


def _changes(values: dict[str, Any]) -> dict[str, Any]:
    """The fields an update sets; refused when it sets none."""
    changes = _given(values)
    if not changes:
        raise _Refusal("invalid_arguments", "give at least one field to change")
    return changes


def _write_changes(
    db: _Store, table: str, current: dict[str, Any], changes: dict[str, Any], stamps: dict[str, str]
) -> dict[str, Any]:
    """Write `changes` (and fresh update timestamps `stamps`) to the row `current`; the row as it is now."""
    _stamp(db, table, changes, stamps, only_missing=False)
    db.update(table, current[db.key(table)], changes)
    return {**current, **changes}


def _add_amount(current: dict[str, Any], field: str, amount: Any, *, non_negative: bool, maximum: Any) -> Any:
    """`field` of `current` plus `amount`; refused below 0 (when `non_negative`) or above `maximum`."""
    value = (current[field] or 0) + amount
    if non_negative and value < 0:
        raise _Refusal(f"insufficient_{field}", f"only {current[field]} {field} left")
    if maximum is not None and value > maximum:
        raise _Refusal("invalid_arguments", f"{field} cannot exceed {maximum}")
    return _round(value)


def _transfer(
    db: _Store,
    table: str,
    field: str,
    source_key: Any,
    destination_key: Any,
    amount: Any,
    *,
    entity: str,
    amount_name: str,
    non_negative: bool,
    status: str | None = None,
    closed: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Move `amount` of `field` from one row of `table` to another; both rows as they are now.

    Refused between closed rows (`status` in `closed`).
    """
    if source_key == destination_key:
        raise _Refusal("invalid_arguments", f"cannot transfer to the same {entity}")
    source = _find(db, table, source_key, entity)
    destination = _find(db, table, destination_key, entity)
    if status is not None:
        _check_open(source, entity, status, closed)
        _check_open(destination, entity, status, closed)
    if non_negative and (source[field] or 0) < amount:
        raise _Refusal(f"insufficient_{field}", f"only {source[field]} {field} left")
    source = {**source, field: _round((source[field] or 0) - amount)}
    destination = {**destination, field: _round((destination[field] or 0) + amount)}
    key = db.key(table)
    for row in (source, destination):
        db.update(table, row[key], {field: row[field]})
    return {"from": source, "to": destination, amount_name: amount}


# --- reading ------------------------------------------------------------------------------------


def _edit_list(db: _Store, table: str, key: Any, field: str, values: list[Any], add: bool) -> dict[str, Any]:
    """Row `key` after adding `values` to its list `field` (those it lacks, in order), or removing them."""
    current = db.get(table, key) or {}
    held = list(current.get(field) or [])
    if add:
        changed = held + [v for v in dict.fromkeys(values) if v not in held]
    else:
        changed = [v for v in held if v not in values]
    db.update(table, key, {field: changed})
    return {**current, field: changed}


def _search(rows: list[dict[str, Any]], query: Any, fields: tuple[str, ...]) -> list[dict[str, Any]]:
    """The rows where one of the text `fields` (or a text in a list field) contains `query`, ignoring case; all
    rows for an empty query."""
    if not query:
        return rows
    needle = query.casefold()

    def holds(value: Any) -> bool:
        if isinstance(value, list):
            return any(holds(v) for v in value)
        return isinstance(value, str) and needle in value.casefold()

    return [row for row in rows if any(holds(row.get(f)) for f in fields)]


def _page(rows: list[dict[str, Any]], limit: Any, offset: Any) -> dict[str, Any]:
    """One page of `rows`: {"items", "total", "next_offset"} (None on the last page)."""
    limit = DEFAULT_LIMIT if limit is None else limit
    offset = 0 if offset is None else offset
    if limit < 1 or offset < 0:
        raise _Refusal("invalid_arguments", "limit must be at least 1 and offset at least 0")
    limit = min(limit, MAX_LIMIT)
    end = offset + limit
    return {"items": rows[offset:end], "total": len(rows), "next_offset": end if end < len(rows) else None}


def _every_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """All of `rows` as one page, for a tool that declares no paging parameter: {"items", "total", "next_offset"}."""
    return {"items": rows, "total": len(rows), "next_offset": None}


def _first_rows(rows: list[dict[str, Any]], size: Any) -> dict[str, Any]:
    """The first `size` of `rows`, for a listing whose only paging parameter is a count (git's `max_count`):
    {"items", "total", "next_offset"}, no next page, since no parameter could ask for one. A larger count shows
    more rows; it is not capped like a page, or rows past the cap could never be seen."""
    size = DEFAULT_LIMIT if size is None else size
    if size < 1:
        raise _Refusal("invalid_arguments", "the count must be at least 1")
    return {"items": rows[:size], "total": len(rows), "next_offset": None}


def _numbered_page(rows: list[dict[str, Any]], size: Any, number: Any, first: int) -> dict[str, Any]:
    """Page `number` of `rows` (numbered from `first`), `size` rows a page: {"items", "total", "next_page"}."""
    size = DEFAULT_LIMIT if size is None else size
    number = first if number is None else number
    if size < 1 or number < first:
        raise _Refusal("invalid_arguments", f"the page size must be at least 1 and the page at least {first}")
    page = _page(rows, size, (number - first) * min(size, MAX_LIMIT))
    following = None if page["next_offset"] is None else number + 1
    return {"items": page["items"], "total": page["total"], "next_page": following}


def _cursor_token(offset: int) -> str:
    """The opaque cursor of the page starting at `offset`."""
    return base64.urlsafe_b64encode(f"offset:{offset}".encode()).decode().rstrip("=")


def _cursor_offset(cursor: Any) -> int:
    """The offset a cursor from `_cursor_token` stands for; any other value is refused."""
    text = ""
    if isinstance(cursor, str):
        try:
            text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        except (binascii.Error, UnicodeDecodeError, ValueError):
            text = ""
    number = text.removeprefix("offset:")
    if not text.startswith("offset:") or not number.isascii() or not number.isdigit():
        raise _Refusal("invalid_arguments", "the cursor is not one a previous page returned")
    return int(number)


def _cursor_page(rows: list[dict[str, Any]], size: Any, cursor: Any) -> dict[str, Any]:
    """The page `cursor` points at (the first without one): {"items", "total", "next_cursor"} (None on the last)."""
    page = _page(rows, size, 0 if cursor is None or cursor == "" else _cursor_offset(cursor))
    after = page["next_offset"]
    following = None if after is None else _cursor_token(after)
    return {"items": page["items"], "total": page["total"], "next_cursor": following}


def _summary(rows: list[dict[str, Any]], field: str | None) -> dict[str, Any]:
    """count, and sum/avg/min/max of `field` over the rows where it is set."""
    result: dict[str, Any] = {"count": len(rows)}
    if field is not None:
        values = [row[field] for row in rows if row.get(field) is not None]
        total = sum(values)
        result["sum"] = _round(total)
        result["avg"] = _round(total / len(values)) if values else None
        result["min"] = min(values, default=None)
        result["max"] = max(values, default=None)
    return result


def _aggregate(rows: list[dict[str, Any]], field: str | None, group_by: str | None) -> dict[str, Any]:
    """The summary of `rows`, or one summary per value of `group_by` (None last)."""
    if group_by is None:
        return _summary(rows, field)
    groups: dict[Any, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row.get(group_by), []).append(row)
    ordered = sorted(groups.items(), key=lambda item: (item[0] is None, item[0]))
    return {"groups": [{group_by: value, **_summary(members, field)} for value, members in ordered]}
