"""Builders shared by the tests: catalog bundles built once per test session.

A bundle is built by the real pipeline (`factory.envs.build.build_env`); tests read it and never
write into it (a test that must change a bundle copies it first, `copy_bundle`).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from factory.envs.build import build_env
from factory.models import GateReport, StateBackend

SHOP = "online-shop"


@dataclass(frozen=True)
class BuiltBundle:
    path: Path
    report: GateReport


@dataclass
class CatalogBundles:
    """Catalog environments built on first request and shared for the rest of the session."""

    root: Path
    built: dict[tuple[str, StateBackend], BuiltBundle] = field(default_factory=dict)

    def get(self, topic_id: str, backend: StateBackend = "sqlite") -> BuiltBundle:
        key = (topic_id, backend)
        if key not in self.built:
            out = self.root / f"{topic_id}-{backend}"
            self.built[key] = BuiltBundle(out, build_env(topic_id, out, backend=backend))
        return self.built[key]

    def kept(self, topic_id: str, backend: StateBackend = "sqlite") -> Path:
        """The bundle's path, asserting the gate kept it."""
        b = self.get(topic_id, backend)
        assert b.report.kept, (topic_id, backend, b.report.reasons)
        return b.path


def copy_bundle(bundle: Path, to: Path) -> Path:
    """A private copy of a shared bundle, for a test that changes files in it."""
    shutil.copytree(bundle, to)
    return to
