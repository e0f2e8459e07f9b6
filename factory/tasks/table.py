"""The tasks table: one parquet row per task, every nested value stored as a JSON string.

Rows with different nested structures get merged Arrow schemas with None fillers (as verl's dataset loader does), so
`gold` (a call list or program source), `answer`, `rubric`, `difficulty`, ... are JSON text and every row
has the same flat schema. Written atomically through the store.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from factory.models import Task
from factory.store import read_parquet, write_parquet

JSON_COLUMNS = ("answer", "gold", "rubric", "difficulty", "capabilities", "refusals", "origin", "lineage")
SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("env_id", pa.string()),
        ("kind", pa.string()),
        ("question", pa.string()),
        ("answer", pa.string()),
        ("gold", pa.string()),
        ("rubric", pa.string()),
        ("verifier", pa.string()),
        ("difficulty", pa.string()),
        ("capabilities", pa.string()),
        ("mutates", pa.bool_()),
        ("gold_calls", pa.int64()),
        ("needs_pagination", pa.bool_()),
        ("refusals", pa.string()),
        ("split", pa.string()),
        ("origin", pa.string()),
        ("lineage", pa.string()),
    ]
)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def task_row(task: Task) -> dict[str, Any]:
    """A task as a flat row (JSON strings for nested values; `verifier` is source text or null)."""
    data = task.model_dump(mode="json")
    return {name: _dumps(data[name]) if name in JSON_COLUMNS else data[name] for name in SCHEMA.names}


def row_task(row: dict[str, Any]) -> Task:
    return Task.model_validate({k: json.loads(v) if k in JSON_COLUMNS else v for k, v in row.items()})


def write_tasks(tasks: list[Task], path: str | Path) -> str:
    """Write the table atomically; returns its content hash."""
    return write_parquet([task_row(t) for t in tasks], SCHEMA, path)


def read_tasks(path: str | Path) -> list[Task]:
    """Read a tasks table back; a file that is not one raises ValueError naming what is wrong."""
    rows = read_parquet(path, SCHEMA, "tasks table")
    try:
        return [row_task(r) for r in rows]
    except (ValueError, TypeError) as e:
        raise ValueError(f"{path}: malformed task row ({e})") from e
