"""The tasks table: parquet round trip, one flat structure for every row, atomic writes."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from factory.models import Difficulty, Lineage, RubricCheck, Task, ToolCall
from factory.tasks.table import SCHEMA, read_tasks, write_tasks

GRAPH = Task(
    id="graph-1",
    env_id="shop",
    kind="graph",
    question="Cancel order ord_0001.",
    answer={"status": "cancelled", "refund": 12.5},
    gold=[ToolCall(tool="cancel_order", args={"order_id": "ord_0001", "reason": None})],
    rubric=[RubricCheck(kind="field_equals", table="orders", where={"id": "ord_0001"}, field="status", value="x")],
    difficulty=Difficulty(chain_length=1, constraints=["only pending orders"]),
    capabilities=["mutation"],
    mutates=True,
    lineage=Lineage(stage="tasks", code_version="1", inputs={"bundle": "abc"}),
)
PROGRAM = Task(
    id="program-1",
    env_id="shop",
    kind="program",
    question="How many products are out of stock?",
    answer=3,
    gold="def solve(tools):\n    return 3\n",
    verifier="def verify(initial, final, answer):\n    return {'passed': answer == '3'}\n",
    split="arena",
)


def test_round_trip_keeps_every_field(tmp_path):
    path = tmp_path / "tasks.parquet"
    digest = write_tasks([GRAPH, PROGRAM], path)
    assert len(digest) == 64
    assert read_tasks(path) == [GRAPH, PROGRAM]


def test_every_row_has_the_same_flat_structure(tmp_path):
    path = tmp_path / "tasks.parquet"
    write_tasks([GRAPH, PROGRAM], path)
    table = pq.read_table(path)
    assert table.schema.equals(SCHEMA)
    rows = table.to_pylist()
    assert json.loads(rows[0]["gold"]) == [{"tool": "cancel_order", "args": {"order_id": "ord_0001", "reason": None}}]
    assert json.loads(rows[1]["gold"]) == PROGRAM.gold
    assert rows[0]["verifier"] is None and rows[1]["verifier"].startswith("def verify")
    assert [r["kind"] for r in rows] == ["graph", "program"]


def test_an_empty_table_is_still_a_table(tmp_path):
    path = tmp_path / "empty.parquet"
    write_tasks([], path)
    assert read_tasks(path) == []
    assert pq.read_table(path).schema.equals(SCHEMA)


def test_a_file_that_is_not_a_tasks_table_is_named(tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_text("not parquet")
    with pytest.raises(ValueError, match="not a parquet tasks table"):
        read_tasks(bad)
    other = tmp_path / "other.parquet"
    pq.write_table(pq.read_table(_write(tmp_path)).drop(["gold"]), other)
    with pytest.raises(ValueError, match="missing columns gold"):
        read_tasks(other)


def test_rewrite_is_atomic_and_leaves_no_temp_files(tmp_path):
    path = tmp_path / "t.parquet"
    write_tasks([GRAPH], path)
    write_tasks([PROGRAM], path)
    assert read_tasks(path) == [PROGRAM]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.parquet"]


def _write(tmp_path):
    path = tmp_path / "src.parquet"
    write_tasks([GRAPH], path)
    return path
