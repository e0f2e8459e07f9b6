"""The environment bundle: a directory that every later stage consumes.

Layout (README, "Environment bundles"): `env.json`, `tools.py`, `tests.json`, `report.json`, and the state:
`schema.sql` + `seed.sqlite` (sqlite backend) or `state/` with one JSON or CSV file per
collection (files backend).
"""

from __future__ import annotations

import csv
import io
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from factory.models import EnvSpec, GateReport, TestCase
from factory.store import dir_content_hash
from factory.topics.documents import SourceError, parse_json, read_text

ENV_JSON = "env.json"
TOOLS_PY = "tools.py"
TESTS_JSON = "tests.json"
REPORT_JSON = "report.json"
SCHEMA_SQL = "schema.sql"
SEED_SQLITE = "seed.sqlite"
STATE_DIR = "state"

_test_cases = TypeAdapter(list[TestCase])


class BundleError(ValueError):
    """A bundle directory that is missing files or holds malformed ones; the message names the file."""


def _text(path: Path) -> str:
    try:
        return read_text(path)
    except SourceError as e:
        raise BundleError(str(e)) from None


def _json(path: Path) -> Any:
    try:
        return parse_json(_text(path), path)
    except SourceError as e:
        raise BundleError(str(e)) from None


def _stamp(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_ino, st.st_size, st.st_mtime_ns


@lru_cache(maxsize=16)
def _read_spec(path: Path, stamp: tuple[int, int, int]) -> EnvSpec:
    """env.json parsed once per version of the file (`stamp`: inode, size, mtime): the filter, audit and attacks
    ask for the spec per task, and an API-sized env.json takes seconds to validate."""
    try:
        return EnvSpec.model_validate(_json(path))
    except ValidationError as e:
        raise BundleError(f"{path}: {e}") from e


@lru_cache(maxsize=256)
def _check_state_file(path: Path, stamp: tuple[int, int, int]) -> None:
    """Refuse a state file no session could start from; each version of a file is checked once."""
    if path.suffix == ".json":
        _json(path)
    elif path.suffix == ".csv":
        try:
            for _ in csv.reader(io.StringIO(_text(path), newline="")):
                pass
        except csv.Error as e:
            raise BundleError(f"{path}: invalid CSV: {e}") from None
    elif path.suffix == ".sqlite":
        if stamp[1] == 0:
            raise BundleError(f"{path}: empty file, not a SQLite database")
        try:
            with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)) as conn:
                problems = [r[0] for r in conn.execute("PRAGMA quick_check(5)")]
        except sqlite3.DatabaseError as e:
            raise BundleError(f"{path}: corrupt SQLite database ({e})") from None
        if problems != ["ok"]:
            raise BundleError(f"{path}: corrupt SQLite database ({'; '.join(problems)})")


@dataclass(frozen=True)
class Bundle:
    """A bundle on disk, read lazily."""

    path: Path

    @classmethod
    def open(cls, path: str | Path) -> Bundle:
        p = Path(path)
        if not (p / ENV_JSON).is_file():
            raise BundleError(f"{p}: not an environment bundle (no {ENV_JSON})")
        return cls(p.resolve())

    @property
    def spec(self) -> EnvSpec:
        """The environment's spec; shared between readers of the same file, so treat it as read-only."""
        p = self.path / ENV_JSON
        try:
            st = p.stat()
        except FileNotFoundError:
            raise BundleError(f"{self.path}: missing {ENV_JSON}") from None
        return _read_spec(p, (st.st_ino, st.st_size, st.st_mtime_ns))

    @property
    def tools_source(self) -> str:
        p = self.path / TOOLS_PY
        if not p.is_file():
            raise BundleError(f"{self.path}: missing {TOOLS_PY}")
        return _text(p)

    def tests(self) -> list[TestCase]:
        p = self.path / TESTS_JSON
        if not p.is_file():
            return []
        try:
            return _test_cases.validate_python(_json(p))
        except ValidationError as e:
            raise BundleError(f"{p}: {e}") from e

    def report(self) -> GateReport | None:
        p = self.path / REPORT_JSON
        if not p.is_file():
            return None
        try:
            return GateReport.model_validate(_json(p))
        except ValidationError as e:
            raise BundleError(f"{p}: {e}") from e

    def check_state(self) -> None:
        """Refuse a state that no session could start from, when the bundle is opened rather than at every
        session: seed.sqlite passes SQLite's quick_check (read-only), JSON and CSV state files parse."""
        if self.spec.backend == "sqlite":
            p = self.path / SEED_SQLITE
            if not p.is_file():
                raise BundleError(f"{self.path}: missing {SEED_SQLITE}")
            _check_state_file(p, _stamp(p))
            return
        if not self.state_dir.is_dir():
            raise BundleError(f"{self.state_dir}: missing state directory for the files backend")
        for p in sorted(self.state_dir.rglob("*")):
            if p.is_file() and p.suffix in (".json", ".csv"):
                _check_state_file(p, _stamp(p))

    def seed_bytes(self) -> bytes:
        """The seed database image (sqlite backend)."""
        p = self.path / SEED_SQLITE
        if not p.is_file():
            raise BundleError(f"{self.path}: missing {SEED_SQLITE}")
        return p.read_bytes()

    @property
    def state_dir(self) -> Path:
        return self.path / STATE_DIR

    @property
    def content_hash(self) -> str:
        return dir_content_hash(self.path)
