"""One evolution round from the shell (`factory evolve`, and the last step of `factory run`): every category's
arena, the diagnosis, then targeted tasks for exactly the runs the diagnosis sensor requests (its weak
categories), all in this process and recorded in the instance like any UI run."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import dagster as dg

from factory.pipeline.evolve.diagnoses import load_diagnosis
from factory.pipeline.evolve.rollouts import arena_envs
from factory.pipeline.evolve.targeted import Control
from factory.pipeline.registry import DIAGNOSES, ROLLOUTS, TARGETED_TASKS
from factory.pipeline.runner import load_manifest
from factory.store import Store

if TYPE_CHECKING:
    from assets.run import JobRunner


@dataclass
class EvolutionSummary:
    """What a round did, as `factory evolve` prints it (one JSON line)."""

    round: int = 0
    weak_categories: list[str] = field(default_factory=list)
    gaps: list[dict[str, Any]] = field(default_factory=list)
    targeted_tasks: int = 0
    rematerialized_partitions: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)

    def json_line(self) -> str:
        return json.dumps(
            {
                "round": self.round,
                "weak_categories": self.weak_categories,
                "gaps": self.gaps,
                "targeted_tasks": self.targeted_tasks,
                "rematerialized_partitions": self.rematerialized_partitions,
                "failed": self.failed,
            },
            sort_keys=True,
        )


def _config(asset: str, values: dict[str, Any]) -> dict[str, Any]:
    return {"ops": {asset: {"config": values}}} if values else {}


def evolve_round(
    runner: JobRunner,
    store: Store,
    categories: Sequence[str],
    *,
    round: int | None = None,
    policy: str | None = None,
    control: Control = "diagnosis",
    arena: dict[str, Any] | None = None,
    targeted: dict[str, Any] | None = None,
    echo: Callable[[str], None] = print,
) -> EvolutionSummary:
    """The arena of `categories` at `round` (None: the current round), diagnosed, and targeted tasks for the
    weak categories (`control: random` spends their budget on random knobs). `arena` and `targeted` are extra
    config of the rollouts and targeted_tasks assets."""
    from assets.evolve import diagnoses_job, rollouts_job, targeted_run_requests, targeted_tasks_job

    summary = EvolutionSummary()

    def ran(key: str, job: str, partition: str | None = None, run_config: dict[str, Any] | None = None) -> bool:
        """Run one job; a failure is recorded under `key` and told, and the round goes on where it can."""
        failure = runner.execute(job, partition, run_config)
        if failure:
            summary.failed[key] = failure
            echo(f"  {key} failed:\n{failure}")
        return not failure

    playing = [c for c in categories if arena_envs(store, c)]
    if not playing:
        echo(
            "[evolve] skipped: no arena environment (a category needs two or more environments outside the "
            "held-out set)"
        )
        return summary
    arena_config = {**(arena or {}), **({"round": round} if round else {}), **({"policy": policy} if policy else {})}
    for i, category in enumerate(playing, 1):
        echo(f"[evolve {i}/{len(playing)}] arena rollouts: {category}")
        ran(f"rollouts/{category}", rollouts_job.name, category, _config(ROLLOUTS.name, arena_config))
    echo("[evolve] diagnosis")
    if not ran(DIAGNOSES.name, diagnoses_job.name):
        return summary
    record = load_diagnosis(store)
    summary.round = record.round
    summary.weak_categories = record.weak_categories
    summary.gaps = [{"capability": g.capability, "env_id": g.env_id} for g in record.diagnosis.guidelines]
    event = runner.instance.get_latest_materialization_event(dg.AssetKey(DIAGNOSES.name))
    targeted_config = _config(TARGETED_TASKS.name, {**(targeted or {}), "control": control})
    requests = targeted_run_requests(event, targeted_config) if event else []
    for request in requests:
        category = request.partition_key or ""
        echo(f"[evolve] targeted tasks: {category} (weak)")
        if not ran(f"targeted_tasks/{category}", targeted_tasks_job.name, category, request.run_config):
            continue
        summary.rematerialized_partitions.append(category)
        manifest = load_manifest(store, TARGETED_TASKS, category)
        summary.targeted_tasks += int(manifest.totals().get("tasks", 0)) if manifest else 0
    return summary
