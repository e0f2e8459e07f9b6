"""The artifact store: FACTORY_HOME layout, atomic writes, content hashes.

Everything the factory writes lives under FACTORY_HOME (default `.factory/` in the working
directory). Writes go to a temporary sibling and are renamed into place, so a killed run never
leaves a half-written artifact; a directory is built aside and swapped in whole.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

HASH_FILE = ".content-hash"


def factory_home() -> Path:
    """FACTORY_HOME from the environment, else `.factory/` in the working directory."""
    return Path(os.environ.get("FACTORY_HOME") or ".factory").resolve()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def canonical_json(value: Any) -> bytes:
    """JSON bytes that hash the same for equal values (sorted keys, no whitespace)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_jsonable).encode()


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot hash a {type(value).__name__} as JSON")


def hash_value(value: Any) -> str:
    return sha256_bytes(canonical_json(value))


def hash_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def hash_dir(path: Path) -> str:
    """Content hash of a directory: relative paths and file bytes, independent of mtimes."""
    h = hashlib.sha256()
    for p in sorted(Path(path).rglob("*")):
        if p.is_file() and p.name != HASH_FILE and "__pycache__" not in p.parts:
            h.update(p.relative_to(path).as_posix().encode() + b"\0")
            h.update(hash_file(p).encode() + b"\0")
    return h.hexdigest()


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_bytes_atomic(path: Path, data: bytes) -> str:
    """Write `data` to `path` atomically; returns its content hash."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)
    return sha256_bytes(data)


def write_text_atomic(path: Path, text: str) -> str:
    return write_bytes_atomic(path, text.encode())


def _json_bytes(value: Any) -> bytes:
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    return (json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def write_json_atomic(path: Path, value: Any) -> str:
    """Pretty, key-sorted JSON (stable bytes for equal values); returns its content hash."""
    return write_bytes_atomic(path, _json_bytes(value))


def read_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


@contextlib.contextmanager
def atomic_dir(path: Path) -> Iterator[Path]:
    """Build a directory aside and swap it into `path` when the block succeeds.

    On an exception the partial directory is removed and `path` keeps its old contents.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        (tmp / HASH_FILE).write_text(hash_dir(tmp) + "\n")
        if path.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent))
            os.rmdir(old)
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
        _fsync_dir(path.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def dir_content_hash(path: Path) -> str:
    """The recorded hash of a directory written by `atomic_dir`, computed if missing."""
    marker = Path(path) / HASH_FILE
    if marker.exists():
        return marker.read_text().strip()
    return hash_dir(Path(path))


def clean_stale_temps(root: Path) -> int:
    """Remove leftovers of killed writes (`.*.tmp`, `.*.old`) under `root`; returns how many."""
    n = 0
    root = Path(root)
    if not root.exists():
        return 0
    for p in list(root.rglob(".*.tmp")) + list(root.rglob(".*.old")):
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
        n += 1
    return n


class Store:
    """FACTORY_HOME and its layout: `artifacts/<asset>/<category>/...`, `dagster/`, `llm-cache/`."""

    def __init__(self, home: Path | str | None = None):
        self.home = Path(home).resolve() if home else factory_home()

    @property
    def artifacts(self) -> Path:
        return self.home / "artifacts"

    @property
    def dagster_home(self) -> Path:
        return self.home / "dagster"

    @property
    def llm_cache(self) -> Path:
        return self.home / "llm-cache"

    def artifact_dir(self, asset: str, category: str | None = None) -> Path:
        d = self.artifacts / asset
        return d / category if category else d


def write_json_if_changed(path: Path, value: Any) -> tuple[str, bool]:
    """Write JSON atomically unless the file already holds these exact bytes; returns (hash, wrote)."""
    data = _json_bytes(value)
    path = Path(path)
    if path.is_file() and path.read_bytes() == data:
        return sha256_bytes(data), False
    return write_bytes_atomic(path, data), True


def write_parquet(rows: list[dict[str, Any]], schema: Any, path: str | Path) -> str:
    """Rows as a parquet table of `schema` (a pyarrow schema), written atomically; returns its content hash."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), buffer)
    return write_bytes_atomic(Path(path), buffer.getvalue())


def read_parquet(path: str | Path, schema: Any, what: str) -> list[dict[str, Any]]:
    """The rows of a parquet table holding `schema`'s columns; ValueError names the file and what it is not."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(Path(path))
    except (pa.ArrowInvalid, OSError) as e:
        raise ValueError(f"{path}: not a parquet {what} ({e})") from e
    missing = [n for n in schema.names if n not in table.column_names]
    if missing:
        raise ValueError(f"{path}: not a {what} (missing columns {', '.join(missing)})")
    return table.select(schema.names).to_pylist()
