"""Databases: the schema (keys, foreign keys, CHECKs) and seed state of each environment
(schema.sql + seed.sqlite, or state/ collections)."""

from __future__ import annotations

from pathlib import Path

from factory.envs.state import Rows, write_state
from factory.models import EnvSpec
from factory.pipeline.artifacts import dataset_work
from factory.pipeline.registry import DATABASES, MINED_DATASETS
from factory.pipeline.runner import Progress, StageRun, manifest_hashes, run_stage
from factory.store import Store


def build_databases(store: Store, category: str, *, progress: Progress | None = None) -> StageRun:
    """The database of every kept mined dataset."""

    def make(spec: EnvSpec, rows: Rows, out: Path) -> dict[str, float]:
        write_state(spec, rows, out)
        size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
        return {"tables": len(spec.entities), "rows": sum(len(r) for r in rows.values()), "bytes": size}

    work = dataset_work(store, category, make)
    upstream = manifest_hashes(store, category, MINED_DATASETS)
    return run_stage(store, DATABASES, category, work, upstream=upstream, progress=progress)
