"""Writers of an environment's initial state: the sqlite seed database or the files backend.

The sqlite image is built in memory and serialized after VACUUM, so the same entities and rows
always give the same bytes (no file timestamps, no journal): the bundle's content hash is stable
and a session loads the seed with `deserialize` instead of copying files. The files backend
is one JSON list of records per collection, keys sorted, rows in primary-key order.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from factory.envs.bundle import SCHEMA_SQL, SEED_SQLITE, STATE_DIR
from factory.envs.schema import schema_sql, table_order
from factory.models import EntitySpec, EnvSpec
from factory.store import write_bytes_atomic, write_text_atomic

Rows = dict[str, list[dict[str, Any]]]


def build_seed_db(entities: list[EntitySpec], rows: Rows) -> bytes:
    """The seed database image: schema + rows, checked by sqlite itself (foreign keys, CHECK, UNIQUE)."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.executescript(schema_sql(entities))
        for e in table_order(entities):
            cols = [f.name for f in e.fields]
            sql = f'INSERT INTO "{e.table}" ({", ".join(_q(c) for c in cols)}) VALUES ({", ".join("?" * len(cols))})'
            conn.executemany(sql, [tuple(_to_sql(r.get(c)) for c in cols) for r in rows.get(e.table, [])])
        conn.commit()
        problems = conn.execute("PRAGMA foreign_key_check").fetchall()
        if problems:
            raise sqlite3.IntegrityError(f"foreign key violations in seed rows: {problems[:5]}")
        conn.execute("VACUUM")
        return conn.serialize()
    finally:
        conn.close()


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _to_sql(value: Any) -> Any:
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    return value


def open_seed(data: bytes) -> sqlite3.Connection:
    """An in-memory connection holding a seed image (foreign keys on), e.g. to inspect or reset state."""
    conn = sqlite3.connect(":memory:")
    conn.deserialize(data)
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def write_sqlite_state(entities: list[EntitySpec], rows: Rows, out_dir: Path) -> dict[str, str]:
    """Write `schema.sql` and `seed.sqlite` into a bundle directory; returns file name -> content hash."""
    out_dir = Path(out_dir)
    return {
        SCHEMA_SQL: write_text_atomic(out_dir / SCHEMA_SQL, schema_sql(entities)),
        SEED_SQLITE: write_bytes_atomic(out_dir / SEED_SQLITE, build_seed_db(entities, rows)),
    }


def _sorted_rows(entity: EntitySpec, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    pk = entity.primary_key
    return sorted(rows, key=lambda r: (str(type(r.get(pk))), r.get(pk)))


def write_files_state(entities: list[EntitySpec], rows: Rows, out_dir: Path) -> dict[str, str]:
    """Write `state/<table>.json` for every entity into a bundle directory; returns path -> content hash."""
    state = Path(out_dir) / STATE_DIR
    out: dict[str, str] = {}
    for e in entities:
        records = [{k: r.get(k) for k in sorted(r)} for r in _sorted_rows(e, rows.get(e.table, []))]
        text = json.dumps(records, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        out[f"{STATE_DIR}/{e.table}.json"] = write_text_atomic(state / f"{e.table}.json", text)
    return out


def read_files_state(path: Path) -> Rows:
    """Collections of a files-backend state: a bundle directory or its `state/` directory."""
    path = Path(path)
    state = path / STATE_DIR if (path / STATE_DIR).is_dir() else path
    out: Rows = {}
    for p in sorted(state.glob("*.json")):
        with open(p, encoding="utf-8") as f:
            out[p.stem] = json.load(f)
    return out


def read_sqlite_state(data: bytes, entities: list[EntitySpec] | None = None) -> Rows:
    """Rows of a seed image by table, in primary-key order; booleans come back as bools when entities are given."""
    conn = open_seed(data)
    try:
        conn.row_factory = sqlite3.Row
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        booleans = {(e.table, f.name) for e in entities or [] for f in e.fields if f.type == "boolean"}
        pks = {e.table: e.primary_key for e in entities or []}
        out: Rows = {}
        for t in names:
            order = f" ORDER BY {_q(pks[t])}" if t in pks else " ORDER BY rowid"
            rows = [dict(r) for r in conn.execute(f"SELECT * FROM {_q(t)}{order}")]
            for r in rows:
                for k, v in r.items():
                    if (t, k) in booleans and v is not None:
                        r[k] = bool(v)
            out[t] = rows
        return out
    finally:
        conn.close()


def write_state(spec: EnvSpec, rows: Rows, out_dir: Path) -> dict[str, str]:
    """The environment's database in its backend: schema.sql + seed.sqlite, or state/ collections."""
    write = write_sqlite_state if spec.backend == "sqlite" else write_files_state
    return write(spec.entities, rows, out_dir)
