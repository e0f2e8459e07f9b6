"""State comparison for verifiers: a canonical hash of what matters in a snapshot, and a diff for diagnosis.

What matters excludes bookkeeping (the environment's `bookkeeping` columns: "table.column", "table.*",
or shell patterns such as "*.updated_at"; "table.+" makes the records calls add to a log table bookkeeping, while
the records it started with are compared as usual) and, by default, timestamp columns the clock writes
(`created_at`, `updated_at`, ...): hashing those made equivalent end states differ in τ²-bench
(FACTS.md). Column names that carry task meaning (`due_date`, `departure_time`, `deleted_at`) are kept.
Row order never matters; an integral float equals its integer (SQLite may return 70.0 for 70).
"""

from __future__ import annotations

import fnmatch
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from typing import Any

from pydantic import Field

from factory.lexicon import TIMESTAMP_COLUMNS
from factory.models import Model, Snapshot
from factory.naming import singular
from factory.store import canonical_json, sha256_bytes

Tables = Mapping[str, Sequence[Mapping[str, Any]]]


def _tables(state: Snapshot | Tables) -> Tables:
    return state.tables if isinstance(state, Snapshot) else state


@lru_cache(maxsize=1 << 16)
def _matches(patterns: tuple[str, ...], name: str) -> bool:
    """Whether "table.column" matches a pattern; cached, since every cell of every compared row asks."""
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


class ColumnFilter:
    """Decides which columns a comparison ignores."""

    def __init__(self, bookkeeping: Iterable[str] = (), timestamp_columns: Iterable[str] = TIMESTAMP_COLUMNS):
        patterns = [p if "." in p else f"*.{p}" for p in bookkeeping]
        self.patterns = (*patterns, *(f"*.{c}" for c in timestamp_columns))
        self._ignored: dict[tuple[str, str], bool] = {}

    def ignored(self, table: str, column: str) -> bool:
        key = (table, column)
        found = self._ignored.get(key)
        if found is None:
            found = self._ignored[key] = _matches(self.patterns, f"{table}.{column}")
        return found

    def table_ignored(self, table: str) -> bool:
        """A whole table is bookkeeping ("audit_log.*"): even its row count does not matter."""
        return self.ignored(table, "*")

    def logged(self, table: str) -> bool:
        """Records added to the table are bookkeeping ("search_requests.+"): reads that meter append an audit
        record of themselves to a table whose existing records writes change (a search job cancelled)."""
        return self.ignored(table, "+")

    def row(self, table: str, row: Mapping[str, Any]) -> dict[str, Any]:
        return {k: normalize_value(v) for k, v in row.items() if not self.ignored(table, k)}


def json_leaves(value: Any) -> Iterator[Any]:
    """Every scalar inside a JSON value (dict values and list items, recursively), None included."""
    if isinstance(value, dict):
        for v in value.values():
            yield from json_leaves(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from json_leaves(v)
    else:
        yield value


_PLAIN = (str, int, bool)  # returned as they are (exact types: a subclass still goes the long way)


def normalize_value(value: Any) -> Any:
    """Equal values compare and hash equal: integral floats become ints, containers recurse."""
    if value is None or type(value) in _PLAIN:
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(k): normalize_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [normalize_value(v) for v in value]
    return value


_TABLE_HASHES: dict[tuple[int, tuple[str, ...]], tuple[Sequence[Mapping[str, Any]], str]] = {}
_TABLE_HASHES_MAX = 4096


def _table_hash(cols: ColumnFilter, table: str, rows: Sequence[Mapping[str, Any]]) -> str:
    """One table's content hash, memoized by the rows object: snapshots of one environment share the lists of
    tables nothing wrote (factory.envs.runtime), so hashing a state costs what changed, not the database.
    The entry holds the rows, so its id cannot be reused while cached; snapshots are read-only."""
    key = (id(rows), cols.patterns)
    hit = _TABLE_HASHES.pop(key, None)
    if hit is not None and hit[0] is rows:
        _TABLE_HASHES[key] = hit  # most recently used last: the seed's tables stay while fresh ones come and go
        return hit[1]
    digest = sha256_bytes(canonical_json(sorted(canonical_json(cols.row(table, row)).decode() for row in rows)))
    if len(_TABLE_HASHES) >= _TABLE_HASHES_MAX:
        _TABLE_HASHES.pop(next(iter(_TABLE_HASHES)))
    _TABLE_HASHES[key] = (rows, digest)
    return digest


def canonical_state_hash(
    snapshot: Snapshot | Tables,
    bookkeeping: Iterable[str] = (),
    timestamp_columns: Iterable[str] = TIMESTAMP_COLUMNS,
    since: Snapshot | Tables | None = None,
    keys: Mapping[str, str] | None = None,
) -> str:
    """Hash of the state's meaningful content: independent of row and table order, blind to ignored columns.
    Empty tables count as absent, so a files backend without a collection file equals one with `[]`. Given the
    state a run started from (`since`), the records the run added to log tables ("table.+") are left out."""
    cols = ColumnFilter(bookkeeping, timestamp_columns)
    tables = _tables(snapshot)
    if since is not None:
        tables = {t: _without_logged(cols, t, _tables(since).get(t, []), rows, keys) for t, rows in tables.items()}
    content = {
        table: _table_hash(cols, table, rows)
        for table, rows in tables.items()
        if rows and not cols.table_ignored(table)
    }
    return sha256_bytes(canonical_json(content))


def _without_logged(
    cols: ColumnFilter,
    table: str,
    before: Sequence[Mapping[str, Any]],
    after: Sequence[Mapping[str, Any]],
    keys: Mapping[str, str] | None,
) -> Sequence[Mapping[str, Any]]:
    """`after`'s records less those a run added to a log table (matched by key, else by content)."""
    if before is after or not cols.logged(table):
        return after
    key = _row_key(
        table, [cols.row(table, r) for r in before], [cols.row(table, r) for r in after], (keys or {}).get(table)
    )
    if key is not None:
        held = {canonical_json(r.get(key)) for r in before}
        return [r for r in after if canonical_json(r.get(key)) in held]
    remaining = Counter(canonical_json(cols.row(table, r)) for r in before)
    out = []
    for r in after:
        k = canonical_json(cols.row(table, r))
        if remaining[k] > 0:
            remaining[k] -= 1
            out.append(r)
    return out


_EXACT = ColumnFilter((), ())


def exact_state_hash(snapshot: Snapshot | Tables) -> str:
    """Hash of every table and column (empty tables included), memoized per table like canonical_state_hash:
    the key a verdict is cached under, cheap for states that share the seed's unchanged tables."""
    return sha256_bytes(canonical_json({t: _table_hash(_EXACT, t, rows) for t, rows in _tables(snapshot).items()}))


class RowChange(Model):
    key: Any  # the row's primary key value
    before: dict[str, Any]  # changed fields only
    after: dict[str, Any]


class TableDiff(Model):
    key: str | None = None  # column rows are matched on; None = whole rows (changes show as removed + added)
    added: list[dict[str, Any]] = Field(default_factory=list)
    removed: list[dict[str, Any]] = Field(default_factory=list)
    changed: list[RowChange] = Field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)


class StateDiff(Model):
    """What changed between two states, ignoring the same columns the hash ignores; only changed tables."""

    tables: dict[str, TableDiff] = Field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.tables

    def summary(self) -> str:
        if self.empty:
            return "no changes"
        parts = []
        for name, d in sorted(self.tables.items()):
            counts = [(len(d.added), "added"), (len(d.removed), "removed"), (len(d.changed), "changed")]
            parts.append(f"{name}: " + ", ".join(f"{n} {what}" for n, what in counts if n))
        return "; ".join(parts)


def _unique(rows: Sequence[Mapping[str, Any]], key: str) -> bool:
    values = [canonical_json(r.get(key)) for r in rows]
    return all(r.get(key) is not None for r in rows) and len(set(values)) == len(values)


def _row_key(table: str, before: list[dict[str, Any]], after: list[dict[str, Any]], given: str | None) -> str | None:
    """The column rows are matched on: the given one, else `id` or `<singular>_id`, when unique on both sides."""
    candidates = [given] if given else ["id", f"{singular(table)}_id"]
    for key in candidates:
        if all(_unique(rows, key) for rows in (before, after)):
            return key
    return None


def state_diff(
    initial: Snapshot | Tables,
    final: Snapshot | Tables,
    bookkeeping: Iterable[str] = (),
    timestamp_columns: Iterable[str] = TIMESTAMP_COLUMNS,
    keys: Mapping[str, str] | None = None,
) -> StateDiff:
    """Rows added, removed and changed per table. Rows are matched by `keys[table]`, else an inferred id column.
    Rows added to a log table ("table.+") are not changes; without a key only when no row went away."""
    cols = ColumnFilter(bookkeeping, timestamp_columns)
    a_tables, b_tables = _tables(initial), _tables(final)
    out: dict[str, TableDiff] = {}
    for table in sorted(set(a_tables) | set(b_tables)):
        if cols.table_ignored(table) or a_tables.get(table) is b_tables.get(table):
            continue  # the same rows object on both sides: nothing changed there
        before = [cols.row(table, r) for r in a_tables.get(table, [])]
        after = [cols.row(table, r) for r in b_tables.get(table, [])]
        key = _row_key(table, before, after, (keys or {}).get(table))
        diff = _keyed_diff(before, after, key) if key else _multiset_diff(before, after)
        if cols.logged(table) and (key or not diff.removed):
            diff.added = []
        if not diff.empty:
            out[table] = diff
    return StateDiff(tables=out)


def _keyed_diff(before: list[dict[str, Any]], after: list[dict[str, Any]], key: str) -> TableDiff:
    by_key_a = {canonical_json(r.get(key)): r for r in before}
    by_key_b = {canonical_json(r.get(key)): r for r in after}
    diff = TableDiff(key=key)
    for k, row in by_key_b.items():
        if k not in by_key_a:
            diff.added.append(row)
    for k, row in by_key_a.items():
        if k not in by_key_b:
            diff.removed.append(row)
            continue
        new = by_key_b[k]
        fields = sorted(f for f in set(row) | set(new) if canonical_json(row.get(f)) != canonical_json(new.get(f)))
        if fields:
            diff.changed.append(
                RowChange(key=row[key], before={f: row.get(f) for f in fields}, after={f: new.get(f) for f in fields})
            )
    return diff


def _multiset_diff(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> TableDiff:
    ca = Counter(canonical_json(r) for r in before)
    cb = Counter(canonical_json(r) for r in after)
    diff = TableDiff()
    for rows, other, target in ((after, ca, diff.added), (before, cb, diff.removed)):
        remaining = Counter(other)
        for r in rows:
            k = canonical_json(r)
            if remaining[k] > 0:
                remaining[k] -= 1
            else:
                target.append(r)
    return diff
