"""The files backend of generated tools: the session's state directory, one `<table>.json` list per table.

A write replaces the whole file through a temp file and a rename, so a crash never leaves half a file.
"""

from __future__ import annotations

import json
import os
import tempfile
import typing

if typing.TYPE_CHECKING:
    from typing import Any


def _inside(row: dict[str, Any], where: dict[str, Any] | None, ranges: dict[str, tuple[Any, Any]] | None) -> bool:
    """Whether `row` equals `where` and lies inside `ranges`; a row without the column is outside any range."""
    for column, value in (where or {}).items():
        if value is not None and row.get(column) != value:
            return False
    for column, (low, high) in (ranges or {}).items():
        value = row.get(column)
        if (low is not None or high is not None) and value is None:
            return False
        if (low is not None and value < low) or (high is not None and value > high):
            return False
    return True


class _FileStore:
    """Tables stored as JSON files in the directory `root`; `keys` names each table's primary key."""

    def __init__(self, root: str, keys: dict[str, str]) -> None:
        self.root = root
        self.keys = keys

    def key(self, table: str) -> str:
        return self.keys[table]

    def select(
        self,
        table: str,
        where: dict[str, Any] | None = None,
        ranges: dict[str, tuple[Any, Any]] | None = None,
    ) -> list[dict[str, Any]]:
        """Rows (ordered by key) equal to `where` and inside `ranges` {column: (low, high)}; None filters nothing."""
        key = self.keys[table]
        rows = [row for row in self._load(table) if _inside(row, where, ranges)]
        return sorted(rows, key=lambda row: row[key])

    def get(self, table: str, key: Any) -> dict[str, Any] | None:
        rows = self.select(table, {self.keys[table]: key})
        return rows[0] if rows else None

    def insert(self, table: str, record: dict[str, Any]) -> None:
        self._save(table, [*self._load(table), record])

    def update(self, table: str, key: Any, changes: dict[str, Any]) -> None:
        rows = self._load(table)
        for row in rows:
            if row[self.keys[table]] == key:
                row.update(changes)
        self._save(table, rows)

    def delete(self, table: str, key: Any) -> None:
        self._save(table, [row for row in self._load(table) if row[self.keys[table]] != key])

    def _load(self, table: str) -> list[dict[str, Any]]:
        path = os.path.join(self.root, f"{table}.json")
        if not os.path.exists(path):
            return []
        with open(path, encoding="utf-8") as f:
            return json.load(f)

    def _save(self, table: str, rows: list[dict[str, Any]]) -> None:
        fd, tmp = tempfile.mkstemp(prefix=f".{table}.", suffix=".tmp", dir=self.root)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=2, ensure_ascii=False)
            f.write("\n")
        os.replace(tmp, os.path.join(self.root, f"{table}.json"))
