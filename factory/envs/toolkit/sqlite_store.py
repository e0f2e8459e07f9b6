"""The sqlite backend of generated tools: the session's sqlite3 connection seen as tables of records.

Only parameterized SQL touches the data; table and column names come from the environment's schema.
SQLite has no boolean or JSON column types, so booleans are read back as `bool`, and lists and objects
are stored as JSON text and list columns read back as lists.
"""

from __future__ import annotations

import json
import typing

if typing.TYPE_CHECKING:
    import sqlite3
    from typing import Any


def _column_values(values: Any) -> list[Any]:
    return [json.dumps(v) if isinstance(v, list | dict) else v for v in values]


class _SqliteStore:
    """Tables of a sqlite3 connection; `keys` names each table's primary key, `booleans` its boolean columns,
    `lists` its list columns."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        keys: dict[str, str],
        booleans: dict[str, tuple[str, ...]],
        lists: dict[str, tuple[str, ...]] | None = None,
    ) -> None:
        self.conn = conn
        self.keys = keys
        self.booleans = booleans
        self.lists = lists or {}

    def key(self, table: str) -> str:
        return self.keys[table]

    def select(
        self,
        table: str,
        where: dict[str, Any] | None = None,
        ranges: dict[str, tuple[Any, Any]] | None = None,
    ) -> list[dict[str, Any]]:
        """Rows (ordered by key) equal to `where` and inside `ranges` {column: (low, high)}; None filters nothing."""
        clauses, values = [], []
        for column, value in (where or {}).items():
            if value is not None:
                clauses.append(f'"{column}" = ?')
                values.append(value)
        for column, (low, high) in (ranges or {}).items():
            if low is not None:
                clauses.append(f'"{column}" >= ?')
                values.append(low)
            if high is not None:
                clauses.append(f'"{column}" <= ?')
                values.append(high)
        sql = f'SELECT * FROM "{table}"'
        if clauses:
            sql += " WHERE " + " AND ".join(clauses)
        cursor = self.conn.execute(sql + f' ORDER BY "{self.keys[table]}"', values)
        columns = [c[0] for c in cursor.description]
        return [self._record(table, columns, row) for row in cursor.fetchall()]

    def get(self, table: str, key: Any) -> dict[str, Any] | None:
        rows = self.select(table, {self.keys[table]: key})
        return rows[0] if rows else None

    def insert(self, table: str, record: dict[str, Any]) -> None:
        columns = ", ".join(f'"{c}"' for c in record)
        marks = ", ".join("?" for _ in record)
        self.conn.execute(f'INSERT INTO "{table}" ({columns}) VALUES ({marks})', _column_values(record.values()))

    def update(self, table: str, key: Any, changes: dict[str, Any]) -> None:
        assignments = ", ".join(f'"{c}" = ?' for c in changes)
        sql = f'UPDATE "{table}" SET {assignments} WHERE "{self.keys[table]}" = ?'
        self.conn.execute(sql, [*_column_values(changes.values()), key])

    def delete(self, table: str, key: Any) -> None:
        self.conn.execute(f'DELETE FROM "{table}" WHERE "{self.keys[table]}" = ?', [key])

    def _record(self, table: str, columns: list[str], row: tuple[Any, ...]) -> dict[str, Any]:
        record = dict(zip(columns, row, strict=True))
        for name in self.booleans.get(table, ()):
            if record.get(name) is not None:
                record[name] = bool(record[name])
        for name in self.lists.get(table, ()):
            if isinstance(record.get(name), str):
                record[name] = json.loads(record[name])
        return record
