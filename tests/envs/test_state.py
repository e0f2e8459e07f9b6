"""State writers: a byte-identical sqlite seed and the files backend, both round-tripping the rows."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from factory.envs.bundle import SCHEMA_SQL, SEED_SQLITE, STATE_DIR
from factory.envs.entities import infer_entities
from factory.envs.schema import schema_sql
from factory.envs.state import (
    build_seed_db,
    open_seed,
    read_files_state,
    read_sqlite_state,
    write_files_state,
    write_sqlite_state,
)
from factory.mining.procedural import generate_rows
from factory.models import EntitySpec, ToolSpec, Topic
from factory.store import sha256_bytes

S, INT, N, B = {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}


def tool(name: str, props: dict, required: list[str] | None = None) -> ToolSpec:
    return ToolSpec(
        name=name, description=name, parameters={"type": "object", "properties": props, "required": required or []}
    )


LIBRARY = Topic(
    id="library",
    title="Library",
    description="Books, members and loans",
    tools=[
        tool("create_member", {"name": S, "email": S, "premium": B}, ["name", "email"]),
        tool("create_book", {"title": S, "isbn": S, "copies_available": INT, "price": N}, ["title"]),
        tool("create_loan", {"member_id": S, "book_id": S, "due_date": {"type": "string", "format": "date"}}),
        tool("return_loan", {"loan_id": S}),
    ],
)


@pytest.fixture(scope="module")
def world() -> tuple[list[EntitySpec], dict[str, list[dict]]]:
    entities = infer_entities(LIBRARY)[0]
    return entities, generate_rows(entities, seed=42)


def test_sqlite_seed_is_byte_identical(world, tmp_path: Path) -> None:
    entities, rows = world
    a = write_sqlite_state(entities, rows, tmp_path / "a")
    b = write_sqlite_state(entities, generate_rows(entities, seed=42), tmp_path / "b")
    assert a == b
    seed_a, seed_b = (tmp_path / "a" / SEED_SQLITE).read_bytes(), (tmp_path / "b" / SEED_SQLITE).read_bytes()
    assert seed_a == seed_b and sha256_bytes(seed_a) == a[SEED_SQLITE]
    assert seed_a.startswith(b"SQLite format 3\x00")
    assert (tmp_path / "a" / SCHEMA_SQL).read_text() == schema_sql(entities)
    other = build_seed_db(entities, generate_rows(entities, seed=43))
    assert other != seed_a


def test_sqlite_seed_round_trips_rows(world, tmp_path: Path) -> None:
    entities, rows = world
    write_sqlite_state(entities, rows, tmp_path)
    data = (tmp_path / SEED_SQLITE).read_bytes()
    back = read_sqlite_state(data, entities)
    assert set(back) == set(rows)
    for table, records in rows.items():
        assert back[table] == sorted(records, key=lambda r: r["id"])
    members = back["members"]
    assert all(isinstance(m["premium"], bool) for m in members)


def test_seed_connection_enforces_foreign_keys(world) -> None:
    entities, rows = world
    conn = open_seed(build_seed_db(entities, rows))
    loan = rows["loans"][0]
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("DELETE FROM members WHERE id = ?", (loan["member_id"],))
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("INSERT INTO loans (id, member_id, book_id) VALUES ('loa_9999', 'nobody', ?)", (loan["book_id"],))


def test_broken_rows_are_refused(world) -> None:
    entities, rows = world
    broken = {**rows, "loans": [{**rows["loans"][0], "member_id": "mem_9999"}]}
    with pytest.raises(sqlite3.IntegrityError):
        build_seed_db(entities, broken)
    negative = {**rows, "books": [{**rows["books"][0], "copies_available": -1}, *rows["books"][1:]]}
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        build_seed_db(entities, negative)


def test_files_state_is_sorted_json(world, tmp_path: Path) -> None:
    entities, rows = world
    shuffled = {t: list(reversed(r)) for t, r in rows.items()}
    hashes = write_files_state(entities, shuffled, tmp_path)
    assert set(hashes) == {f"{STATE_DIR}/{e.table}.json" for e in entities}
    text = (tmp_path / STATE_DIR / "books.json").read_text()
    records = json.loads(text)
    assert [r["id"] for r in records] == sorted(r["id"] for r in rows["books"])
    assert all(list(r) == sorted(r) for r in records)
    assert text == json.dumps(records, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    again = write_files_state(entities, rows, tmp_path / "again")
    assert list(again.values()) == list(hashes.values())


def test_files_state_round_trips(world, tmp_path: Path) -> None:
    entities, rows = world
    write_files_state(entities, rows, tmp_path)
    expected = {t: sorted(r, key=lambda x: x["id"]) for t, r in rows.items()}
    assert read_files_state(tmp_path) == expected
    assert read_files_state(tmp_path / STATE_DIR) == expected
