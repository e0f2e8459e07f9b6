"""Per-environment stage runner: input hashing, reuse of unchanged work, atomic outputs, progress.

A category stage (databases, tool code, tasks, ...) does the same thing for every environment of
the category. This module owns the bookkeeping around it so the stage functions stay small:
an environment whose inputs and stage code version are unchanged is reused as it is (nothing
written, no tokens spent), every output directory is built aside and swapped in whole, and the
stage manifest, whose content hash is the Dagster data version, is rewritten only when something
changed.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from factory.models import Lineage, Model
from factory.pipeline.registry import Stage
from factory.store import (
    Store,
    atomic_dir,
    clean_stale_temps,
    dir_content_hash,
    hash_dir,
    hash_value,
    read_json,
    sha256_bytes,
    write_json_if_changed,
)

MANIFEST = "manifest.json"
DROP_PREFIX = "drop:"  # counts named `drop:<reason>` are tasks dropped for that reason

Progress = Callable[[int, int, str], None]


class EnvOutcome(Model):
    """What a stage did for one environment."""

    env_id: str
    kept: bool = True
    reason: str | None = None
    counts: dict[str, float] = Field(default_factory=dict)
    inputs_hash: str = ""
    content_hash: str = ""


class StageManifest(Model):
    """The record of a stage for one category; its hash is the asset's data version."""

    stage: str
    category: str
    envs: dict[str, EnvOutcome] = Field(default_factory=dict)
    lineage: Lineage

    @property
    def kept(self) -> list[str]:
        return sorted(e for e, o in self.envs.items() if o.kept)

    def totals(self) -> dict[str, float]:
        """Each count summed over the environments."""
        out: dict[str, float] = {}
        for o in self.envs.values():
            for k, v in o.counts.items():
                out[k] = out.get(k, 0) + v
        return out


@dataclass
class EnvWork:
    """One environment's job: its inputs (hashed to decide reuse) and how to build its output."""

    env_id: str
    inputs: dict[str, Any]
    build: Callable[[Path], EnvOutcome]


@dataclass
class CheckOutcome:
    """A gate's verdict on a stage: passed, and what the UI shows with it (markdown)."""

    passed: bool
    detail: str


@dataclass
class StageRun:
    manifest: StageManifest
    data_version: str
    rebuilt: list[str]
    reused: list[str]
    wrote_manifest: bool


def drop_counts(summary: dict[str, int]) -> dict[str, float]:
    """`drop:<reason>` counts for the stage manifest (the UI shows them as drops by reason)."""
    return {f"{DROP_PREFIX}{reason}": n for reason, n in summary.items() if reason != "kept"}


def env_dir(store: Store, stage: Stage, category: str, env_id: str) -> Path:
    return stage.dir(store, category) / env_id


def env_input_hash(store: Store, stage: Stage, category: str, env_id: str) -> str:
    """The content of an upstream environment directory as it is now (a tampered file counts as a change)."""
    return hash_dir(env_dir(store, stage, category, env_id))


def load_manifest(store: Store, stage: Stage, category: str) -> StageManifest | None:
    p = stage.dir(store, category) / MANIFEST
    if not p.is_file():
        return None
    return StageManifest.model_validate(read_json(p))


def require_manifest(store: Store, stage: Stage, category: str) -> StageManifest:
    """The upstream stage's manifest, or a clear error saying what to materialize first."""
    m = load_manifest(store, stage, category)
    if m is None:
        raise FileNotFoundError(
            f"no {stage.name} artifacts for category {category!r} under {store.artifacts}: "
            f"materialize {stage.name} first"
        )
    return m


def manifest_hashes(store: Store, category: str, *stages: Stage) -> dict[str, str]:
    """The data versions of upstream stages, for a lineage record."""
    return {s.name: sha256_bytes((s.dir(store, category) / MANIFEST).read_bytes()) for s in stages}


def run_stage(
    store: Store,
    stage: Stage,
    category: str,
    work: Iterable[EnvWork],
    *,
    upstream: dict[str, str] | None = None,
    progress: Progress | None = None,
    round: int = 0,
    generator: str = "procedural",
) -> StageRun:
    """Run `work` for a category, reusing environments whose inputs and the stage's code are unchanged."""
    root = stage.dir(store, category)
    clean_stale_temps(root)  # leftovers of a killed run
    previous = load_manifest(store, stage, category)
    code_version = stage.code_version
    jobs = list(work)
    outcomes: dict[str, EnvOutcome] = {}
    rebuilt: list[str] = []
    reused: list[str] = []
    for i, job in enumerate(jobs, 1):
        inputs_hash = hash_value({"code_version": code_version, "inputs": job.inputs})
        out = root / job.env_id
        old = previous.envs.get(job.env_id) if previous else None
        if old and old.inputs_hash == inputs_hash and out.is_dir() and hash_dir(out) == old.content_hash:
            outcomes[job.env_id] = old
            reused.append(job.env_id)
            if progress:
                progress(i, len(jobs), f"{job.env_id}: unchanged, reused")
            continue
        with atomic_dir(out) as tmp:
            outcome = job.build(tmp)
        outcome = outcome.model_copy(update={"inputs_hash": inputs_hash, "content_hash": dir_content_hash(out)})
        outcomes[job.env_id] = outcome
        rebuilt.append(job.env_id)
        if progress:
            status = "kept" if outcome.kept else f"dropped ({outcome.reason})"
            progress(i, len(jobs), f"{job.env_id}: {status}")
    if root.is_dir():
        for child in root.iterdir():
            if child.is_dir() and not child.name.startswith(".") and child.name not in outcomes:
                shutil.rmtree(child)
    lineage = Lineage(
        stage=stage.name,
        code_version=code_version,
        inputs=dict(sorted((upstream or {}).items())),
        round=round,
        generator=generator,
    )
    manifest = StageManifest(stage=stage.name, category=category, envs=dict(sorted(outcomes.items())), lineage=lineage)
    data_version, wrote = write_json_if_changed(root / MANIFEST, manifest)
    return StageRun(manifest, data_version, rebuilt, reused, wrote)


def summary_rows(manifest: StageManifest, columns: list[str]) -> list[dict[str, Any]]:
    """One row per environment (kept, the named counts, the reason it was dropped) for the UI's table."""
    return [
        {
            "environment": env_id,
            "kept": o.kept,
            **{c: o.counts.get(c) for c in columns},
            "reason": o.reason or "",
        }
        for env_id, o in manifest.envs.items()
    ]
