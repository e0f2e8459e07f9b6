"""Evolution rounds: how they are numbered, and the archive that keeps every round's record.

The stages' own directories hold the latest round (what Dagster versions); `artifacts/rounds/round-NNNN/`
keeps each round's diagnosis, rollouts and targeted tasks after the next round replaces them there.
A round's number is in the lineage of everything made for it.
"""

from __future__ import annotations

import re
from pathlib import Path

from factory.pipeline.registry import ROLLOUTS
from factory.pipeline.runner import load_manifest
from factory.store import Store, write_bytes_atomic

ROUND_DIR = re.compile(r"round-(\d+)")


def rounds_root(store: Store) -> Path:
    return store.artifacts / "rounds"


def round_dir(store: Store, round: int) -> Path:
    return rounds_root(store) / f"round-{round:04d}"


def kept_rounds(store: Store) -> list[int]:
    """The rounds the archive holds, oldest first."""
    root = rounds_root(store)
    if not root.is_dir():
        return []
    return sorted(int(m.group(1)) for d in root.iterdir() if d.is_dir() and (m := ROUND_DIR.fullmatch(d.name)))


def arena_rounds(store: Store, categories: list[str]) -> dict[str, int]:
    """The round of each category's latest arena rollouts (categories without any are left out)."""
    out: dict[str, int] = {}
    for category in categories:
        manifest = load_manifest(store, ROLLOUTS, category)
        if manifest is not None:
            out[category] = manifest.lineage.round
    return out


def latest_round(store: Store, categories: list[str]) -> int:
    """The highest round anything was made for (0: no round yet)."""
    return max([0, *kept_rounds(store), *arena_rounds(store, categories).values()])


def current_round(store: Store, categories: list[str]) -> int:
    """The round a materialization without an explicit round belongs to: the latest one, or the first."""
    return latest_round(store, categories) or 1


def next_round(store: Store, categories: list[str]) -> int:
    """The round a new evolution round (`factory evolve`, the nightly schedule) gets."""
    return latest_round(store, categories) + 1


def archive(store: Store, round: int, relative: str, source: Path) -> Path:
    """Keep a copy of `source` in the round's archive (atomically; an identical copy is not rewritten)."""
    target = round_dir(store, round) / relative
    data = source.read_bytes()
    if not (target.is_file() and target.read_bytes() == data):
        write_bytes_atomic(target, data)
    return target
