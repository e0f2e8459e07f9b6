"""`factory run`: discovery, then the build and tasks jobs of every category (or the ones named), all in
this process through Dagster's own API, recorded in the instance under FACTORY_HOME so the UI shows them.

One writer at a time: the run holds FACTORY_HOME's lock from before the instance opens until it closes, so
a second run waits (or refuses) instead of creating the instance's schemas at the same time. Holding the
lock also means every run an earlier `factory run` left in progress is dead: those are marked failed.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg
from dagster._core.events import RunFailureReason

from assets.evolve_round import EvolutionSummary
from factory.home_lock import DEFAULT_WAIT_S, clean_sandbox_leftovers, home_lock
from factory.pipeline.artifacts import load_taxonomy
from factory.pipeline.registry import CATEGORY_GROUPS
from factory.store import Store

PROJECT_DAGSTER_YAML = Path(__file__).resolve().parents[1] / "dagster.yaml"
FAILURE_LINES = 25
# The terminal shows the stages' progress lines; Dagster's own step events stay in the UI.
LOG_CONFIG = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}
# Every run `factory run` starts carries these tags; the pid names the process in the UI.
WRITER_TAG = "factory/writer"
PID_TAG = "factory/pid"
NOT_FINISHED = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]


class RunInterrupted(KeyboardInterrupt):
    """A signal stopped a job mid-run; Dagster has recorded that run as failed and no later job starts."""

    def __init__(self, run_id: str):
        super().__init__(run_id)
        self.run_id = run_id


@dataclass
class RunSummary:
    categories: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    evolution: EvolutionSummary | None = None

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
    wait_s: float = DEFAULT_WAIT_S,
    evolve: bool = True,
) -> RunSummary:
    """Run discovery, then each category's build and tasks jobs (a failed category does not stop the others),
    then, with `evolve`, the current evolution round on the categories that built."""
    start = time.monotonic()
    with writer(store, echo, wait_s) as runner:
        summary = _run_jobs(runner, store, categories, echo, evolve)
    summary.seconds = time.monotonic() - start
    return summary


@contextmanager
def writer(store: Store, echo: Callable[[str], None], wait_s: float) -> Iterator[JobRunner]:
    """FACTORY_HOME's one writer: its lock held, leftovers of killed runs cleaned, the instance open.

    Waits up to `wait_s` for another writer of the same home, then raises `HomeLocked`.
    """
    with home_lock(store.home, wait_s=wait_s, on_wait=echo) as holder:
        if removed := clean_sandbox_leftovers(store.home):
            echo(f"removed {removed} sandbox directories left by a killed run")
        with dg.DagsterInstance.from_config(str(prepare_dagster_home(store))) as instance:
            killed = "the `factory run` that started it was killed"
            for run_id in fail_unfinished_runs(instance, killed):
                echo(f"marked run {run_id} failed: {killed}")
            tags = {WRITER_TAG: "run", PID_TAG: str(holder.pid)}
            try:
                yield JobRunner(instance, store, tags)
            except KeyboardInterrupt:  # a signal outside Dagster's own handling (e.g. while a run starts)
                fail_unfinished_runs(instance, "`factory run` was interrupted by a signal", tags)
                raise


def fail_unfinished_runs(instance: dg.DagsterInstance, reason: str, tags: dict[str, str] | None = None) -> list[str]:
    """Mark failed the runs of `factory run` (those with `tags`, default: any) that never finished.

    Call it holding the home's lock: then no other `factory run` is alive, so its unfinished runs are dead.
    Only runs `factory run` tagged: runs the UI or Dagster's CLI launched have their own process to watch.
    """
    runs = instance.get_runs(dg.RunsFilter(statuses=NOT_FINISHED, tags=tags or {WRITER_TAG: "run"}))
    for run in runs:
        instance.report_run_failed(run, f"{reason} (pid {run.tags.get(PID_TAG, '?')})")
    return [run.run_id for run in runs]


class JobRunner:
    """Executes the code location's jobs in this process, on one instance, with the run's tags and resources."""

    def __init__(self, instance: dg.DagsterInstance, store: Store, tags: dict[str, str]):
        from assets.definitions import defs
        from resources import StoreResource, default_resources

        self.instance = instance
        self.defs = defs
        self.tags = tags
        self.resources = {**default_resources(), "store": StoreResource(home=str(store.home))}

    def execute(self, job: str, partition: str | None = None, run_config: dict | None = None) -> str | None:
        """Run `job` (for `partition`); None when it succeeded, else what failed, for the terminal."""
        result = self.defs.resolve_job_def(job).execute_in_process(
            instance=self.instance,
            partition_key=partition,
            resources=self.resources,
            run_config={**LOG_CONFIG, **(run_config or {})},
            tags=self.tags,
            raise_on_error=False,
        )
        if result.success:
            return None
        if _interrupted(result):
            raise RunInterrupted(result.run_id)
        return _failure(result)


def _run_jobs(
    runner: JobRunner,
    store: Store,
    categories: Sequence[str],
    echo: Callable[[str], None],
    evolve: bool,
) -> RunSummary:
    from assets.evolve_round import evolve_round
    from assets.jobs import job_name

    summary = RunSummary()
    echo("[discovery] materializing topics, taxonomy")
    failure = runner.execute(job_name("discovery"))
    if failure:
        summary.failed["discovery"] = failure
        echo(f"  failed:\n{failure}")
        return summary
    known = load_taxonomy(store).categories()
    unknown = sorted(set(categories) - set(known))
    if unknown:
        raise KeyError(f"unknown categories: {', '.join(unknown)} (known: {', '.join(known)})")
    summary.categories = list(categories) or known
    for i, category in enumerate(summary.categories, 1):
        echo(f"[{i}/{len(summary.categories)} categories] {category}")
        for job in CATEGORY_GROUPS:
            failure = runner.execute(job_name(job), category)
            if failure:
                summary.failed[category] = f"{job} failed"
                echo(f"  {job} failed:\n{failure}")
                break
    built = [c for c in summary.categories if c not in summary.failed]
    if evolve and built:
        summary.evolution = evolve_round(runner, store, built, echo=echo)
        summary.failed |= summary.evolution.failed
    return summary


def _interrupted(result: dg.ExecuteInProcessResult) -> bool:
    """Whether the run failed because a signal interrupted it (Dagster then records it failed itself)."""
    return any(
        event.is_run_failure
        and event.job_failure_data is not None
        and event.job_failure_data.failure_reason == RunFailureReason.UNEXPECTED_TERMINATION
        for event in result.all_events
    )


def _failure(result: dg.ExecuteInProcessResult) -> str:
    """What went wrong in a run, for the terminal: each failed step's error, and the run id to open in the UI."""
    lines = [f"  run {result.run_id} (open it in the UI)"]
    for event in result.get_step_failure_events():
        error = event.step_failure_data.error
        while error is not None and error.cause is not None and "DagsterExecutionStepExecutionError" in error.cls_name:
            error = error.cause  # Dagster's wrapper says only which op failed: the cause says why
        message = f"{error.cls_name}: {error.message.strip()}" if error else "unknown error"
        lines.append(f"  step {event.step_key}: {message}")
    for check in result.get_asset_check_evaluations():
        if not check.passed:
            lines.append(f"  check {check.check_name} failed on {check.asset_key.to_user_string()}")
    return "\n".join(lines[:FAILURE_LINES])
