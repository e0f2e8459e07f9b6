"""The baseline's state: the seed rows dumped as SQL, and AWM's reset (rebuild the database file from SQL).

AWM ships each environment as a schema plus sample-data SQL and resets an instance by creating its
SQLite file again from them. We dump OUR bundle's seed rows (the very rows in seed.sqlite) as INSERT
statements, so both sides start from identical data.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path


def dump_seed_sql(seed: bytes) -> str:
    """The rows of a seed database image as INSERT statements (sqlite's own dump, schema lines left out)."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.deserialize(seed)
        return "\n".join(line for line in conn.iterdump() if line.startswith("INSERT INTO ")) + "\n"
    finally:
        conn.close()


def rebuild_database(path: Path, schema_sql: str, seed_sql: str) -> None:
    """AWM's reset: delete the database file and build it again from the schema and the seed SQL."""
    path = Path(path)
    for stale in (path, path.with_name(path.name + "-journal"), path.with_name(path.name + "-wal")):
        stale.unlink(missing_ok=True)
    conn = sqlite3.connect(path)
    try:
        conn.executescript(schema_sql)
        conn.executescript(f"BEGIN;\n{seed_sql}COMMIT;")
    finally:
        conn.close()
