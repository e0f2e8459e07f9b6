"""The tasks table: one parquet row per task, every nested value stored as a JSON string.

Rows with different nested structures get merged Arrow schemas with None fillers (as verl's dataset loader does), so
`gold` (a call list or program source), `answer`, `rubric`, `difficulty`, ... are JSON text and every row
has the same flat schema. Written atomically through the store.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from factory.models import Task
from factory.store import write_bytes_atomic

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


def tasks_table(tasks: list[Task]) -> pa.Table:
    return pa.Table.from_pylist([task_row(t) for t in tasks], schema=SCHEMA)


def write_tasks(tasks: list[Task], path: str | Path) -> str:
    """Write the table atomically; returns its content hash."""
    buffer = io.BytesIO()
    pq.write_table(tasks_table(tasks), buffer)
    return write_bytes_atomic(Path(path), buffer.getvalue())


def read_tasks(path: str | Path) -> list[Task]:
    """Read a tasks table back; a file that is not one raises ValueError naming what is wrong."""
    try:
        table = pq.read_table(Path(path))
    except (pa.ArrowInvalid, OSError) as e:
        raise ValueError(f"{path}: not a parquet tasks table ({e})") from e
    missing = [n for n in SCHEMA.names if n not in table.column_names]
    if missing:
        raise ValueError(f"{path}: not a tasks table (missing columns {', '.join(missing)})")
    try:
        return [row_task(r) for r in table.select(SCHEMA.names).to_pylist()]
    except (ValueError, TypeError) as e:
        raise ValueError(f"{path}: malformed task row ({e})") from e
