"""`factory run`: discovery, then the build and tasks jobs of every category (or the ones named), all in
this process through Dagster's own API, recorded in the instance under FACTORY_HOME so the UI shows them."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg

from factory.pipeline.artifacts import load_taxonomy
from factory.pipeline.registry import CATEGORY_GROUPS
from factory.store import Store

PROJECT_DAGSTER_YAML = Path(__file__).resolve().parents[1] / "dagster.yaml"
FAILURE_LINES = 25
# The terminal shows the stages' progress lines; Dagster's own step events stay in the UI.
LOG_CONFIG = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}


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


def run_factory(
    store: Store,
    *,
    categories: Sequence[str] = (),
    echo: Callable[[str], None] = print,
) -> RunSummary:
    """Run discovery, then each category's build and tasks jobs; a failed category does not stop the others."""
    from assets.definitions import defs
    from assets.jobs import job_name
    from resources import StoreResource, default_resources

    start = time.monotonic()
    summary = RunSummary()
    resources = {**default_resources(), "store": StoreResource(home=str(store.home))}
    with dg.DagsterInstance.from_config(str(prepare_dagster_home(store))) as instance:

        def execute(job: str, partition: str | None = None) -> str | None:
            result = defs.resolve_job_def(job_name(job)).execute_in_process(
                instance=instance,
                partition_key=partition,
                resources=resources,
                run_config=LOG_CONFIG,
                raise_on_error=False,
            )
            return None if result.success else _failure(result)

        echo("[discovery] materializing topics, taxonomy")
        failure = execute("discovery")
        if failure:
            summary.failed["discovery"] = failure
            echo(f"  failed:\n{failure}")
        else:
            known = load_taxonomy(store).categories()
            unknown = sorted(set(categories) - set(known))
            if unknown:
                raise KeyError(f"unknown categories: {', '.join(unknown)} (known: {', '.join(known)})")
            summary.categories = list(categories) or known
            for i, category in enumerate(summary.categories, 1):
                echo(f"[{i}/{len(summary.categories)} categories] {category}")
                for job in CATEGORY_GROUPS:
                    failure = execute(job, category)
                    if failure:
                        summary.failed[category] = f"{job} failed"
                        echo(f"  {job} failed:\n{failure}")
                        break
    summary.seconds = time.monotonic() - start
    return summary


def _failure(result: dg.ExecuteInProcessResult) -> str:
    """What went wrong in a run, for the terminal: each failed step's error, and the run id to open in the UI."""
    lines = [f"  run {result.run_id} (open it in the UI)"]
    for event in result.get_step_failure_events():
        error = event.step_failure_data.error
        message = error.message.strip() if error else "unknown error"
        lines.append(f"  step {event.step_key}: {message}")
    for check in result.get_asset_check_evaluations():
        if not check.passed:
            lines.append(f"  check {check.check_name} failed on {check.asset_key.to_user_string()}")
    return "\n".join(lines[:FAILURE_LINES])
