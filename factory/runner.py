"""`factory run`: materialize the whole asset graph through Dagster's own CLI.

The factory library never imports Dagster; this wrapper drives `dagster asset materialize`, the same
command CI uses, so every run is recorded in the instance under FACTORY_HOME and shows in the UI.
Discovery runs first (it registers the category partitions), then each category's partition.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from factory.store import Store

CODE_LOCATION = "assets.definitions"
DISCOVERY_ASSETS = ["topics", "taxonomy"]
CATEGORY_ASSETS = ["mined_datasets", "databases", "tool_code", "tool_tests", "tool_graphs", "tasks", "verifiers"]
PROJECT_DAGSTER_YAML = Path(__file__).resolve().parents[1] / "dagster.yaml"


@dataclass
class RunSummary:
    categories: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failed


def prepare_dagster_home(store: Store) -> Path:
    """DAGSTER_HOME under FACTORY_HOME, with the project's instance settings."""
    home = store.dagster_home
    home.mkdir(parents=True, exist_ok=True)
    target = home / "dagster.yaml"
    if PROJECT_DAGSTER_YAML.is_file() and not target.exists():
        shutil.copyfile(PROJECT_DAGSTER_YAML, target)
    return home


def dagster_env(store: Store) -> dict[str, str]:
    env = dict(os.environ)
    env["FACTORY_HOME"] = str(store.home)
    env["DAGSTER_HOME"] = str(prepare_dagster_home(store))
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    return env


def materialize_command(assets: Sequence[str], partition: str | None = None) -> list[str]:
    dagster = Path(sys.executable).with_name("dagster")
    cmd = [str(dagster), "asset", "materialize", "-m", CODE_LOCATION, "--select", ",".join(assets)]
    if partition:
        cmd += ["--partition", partition]
    return cmd


def run_factory(
    store: Store,
    *,
    categories: Sequence[str] = (),
    category_assets: Sequence[str] = CATEGORY_ASSETS,
    echo: Callable[[str], None] = print,
) -> RunSummary:
    """Materialize discovery, then `category_assets` for each category (all of them by default)."""
    from factory.discovery import load_taxonomy

    start = time.monotonic()
    env = dagster_env(store)
    summary = RunSummary()
    echo(f"[discovery] materializing {', '.join(DISCOVERY_ASSETS)}")
    if not _materialize(materialize_command(DISCOVERY_ASSETS), env, echo):
        summary.failed["discovery"] = "topics/taxonomy failed (see the run in the UI)"
        summary.seconds = time.monotonic() - start
        return summary
    known = load_taxonomy(store).categories()
    unknown = sorted(set(categories) - set(known))
    if unknown:
        raise KeyError(f"unknown categories: {', '.join(unknown)} (known: {', '.join(known)})")
    summary.categories = list(categories) or known
    for i, category in enumerate(summary.categories, 1):
        echo(f"[{i}/{len(summary.categories)} categories] {category}")
        if not _materialize(materialize_command(category_assets, category), env, echo):
            summary.failed[category] = "materialization failed (see the run in the UI)"
    summary.seconds = time.monotonic() - start
    return summary


def _materialize(cmd: list[str], env: dict[str, str], echo: Callable[[str], None]) -> bool:
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
        echo(f"  failed (exit {proc.returncode}):\n{tail}")
        return False
    return True
