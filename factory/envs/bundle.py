"""The environment bundle: a directory that every later stage consumes.

Layout (README, "Environment bundles"): `env.json`, `tools.py`, `tests.json`, `report.json`, and the state:
`schema.sql` + `seed.sqlite` (sqlite backend) or `state/` with one JSON or CSV file per
collection (files backend).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from factory.models import EnvSpec, GateReport, TestCase
from factory.store import dir_content_hash, read_json

ENV_JSON = "env.json"
TOOLS_PY = "tools.py"
TESTS_JSON = "tests.json"
REPORT_JSON = "report.json"
SCHEMA_SQL = "schema.sql"
SEED_SQLITE = "seed.sqlite"
STATE_DIR = "state"

_test_cases = TypeAdapter(list[TestCase])


class BundleError(ValueError):
    """A bundle directory that is missing files or holds malformed ones."""


@lru_cache(maxsize=16)
def _read_spec(path: Path, stamp: tuple[int, int, int]) -> EnvSpec:
    """env.json parsed once per version of the file (`stamp`: inode, size, mtime): the filter, audit and attacks
    ask for the spec per task, and an API-sized env.json takes seconds to validate."""
    try:
        return EnvSpec.model_validate(read_json(path))
    except (ValidationError, json.JSONDecodeError) as e:
        raise BundleError(f"{path}: {e}") from e


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
        return p.read_text()

    def tests(self) -> list[TestCase]:
        p = self.path / TESTS_JSON
        if not p.is_file():
            return []
        try:
            return _test_cases.validate_python(read_json(p))
        except (ValidationError, json.JSONDecodeError) as e:
            raise BundleError(f"{p}: {e}") from e

    def report(self) -> GateReport | None:
        p = self.path / REPORT_JSON
        if not p.is_file():
            return None
        try:
            return GateReport.model_validate(read_json(p))
        except (ValidationError, json.JSONDecodeError) as e:
            raise BundleError(f"{p}: {e}") from e

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
