"""The task stages per category: tasks (synthesis + solvability filter), then verifiers (the audit gate).

`artifacts/tasks/<category>/<env>/candidates.parquet` holds the tasks that passed the filter, with
`dropped.json` saying why the others went; `artifacts/verifiers/<category>/<env>/tasks.parquet` holds
the audited tasks with their split, and `audit.json` the audit's record of every candidate.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from factory.building import bundles, env_input_hash
from factory.envs.bundle import Bundle
from factory.evolve.splits import assign_splits
from factory.models import Model
from factory.stages import (
    CheckOutcome,
    EnvOutcome,
    EnvWork,
    Progress,
    StageManifest,
    StageRun,
    manifest_hash,
    require_manifest,
    run_stage,
    stage_dir,
)
from factory.store import Store, read_json, write_json_atomic
from factory.tasks.synthesize import DroppedTask, audit_tasks, synthesize_tasks
from factory.tasks.table import read_tasks, write_tasks

TASKS_CODE_VERSION = "1"
VERIFIERS_CODE_VERSION = "1"
CANDIDATES = "candidates.parquet"
TASKS = "tasks.parquet"
DROPPED_JSON = "dropped.json"
AUDIT_JSON = "audit.json"
DROP_PREFIX = "drop:"


class AuditRecord(Model):
    """audit.json: which candidates the audit kept, which it dropped and why."""

    env_id: str
    kept: list[str] = Field(default_factory=list)
    dropped: list[DroppedTask] = Field(default_factory=list)
    summary: dict[str, int] = Field(default_factory=dict)


def drop_counts(summary: dict[str, int]) -> dict[str, float]:
    """`drop:<reason>` counts for the stage manifest (the UI shows them as drops by reason)."""
    return {f"{DROP_PREFIX}{reason}": n for reason, n in summary.items() if reason != "kept"}


def synthesize_category_tasks(
    store: Store, category: str, *, n: int = 20, seed: int = 0, progress: Progress | None = None
) -> StageRun:
    """Graph-walk and program tasks for every gated environment of the category, solvability-filtered."""

    def job(bundle: Bundle) -> EnvWork:
        def make(out: Path) -> EnvOutcome:
            result = synthesize_tasks(bundle, n=n, seed=seed, kind="both", audit=False)
            write_tasks(result.tasks, out / CANDIDATES)
            write_json_atomic(out / DROPPED_JSON, [d.model_dump(mode="json") for d in result.dropped])
            kinds = [t.kind for t in result.tasks]
            return EnvOutcome(
                env_id=bundle.spec.id,
                kept=bool(result.tasks),
                reason=None if result.tasks else "no task passed the solvability filter",
                counts={
                    "generated": result.generated,
                    "candidates": len(result.tasks),
                    "graph": kinds.count("graph"),
                    "program": kinds.count("program"),
                    "filter_drops": len(result.dropped),
                    "seconds": round(result.seconds, 2),
                    **drop_counts(result.audit_summary),
                },
            )

        inputs = {"bundle": env_input_hash(store, "tool_tests", category, bundle.spec.id), "n": n, "seed": seed}
        return EnvWork(bundle.spec.id, inputs, make)

    return run_stage(
        store,
        "tasks",
        category,
        TASKS_CODE_VERSION,
        [job(b) for b in bundles(store, category)],
        upstream={s: manifest_hash(store, s, category) for s in ("tool_tests", "tool_graphs")},
        progress=progress,
    )


def audit_category_tasks(
    store: Store, category: str, *, seed: int = 0, arena_per_category: int = 5, progress: Progress | None = None
) -> StageRun:
    """The blocking verifier audit over every candidate; kept tasks get their environment's split."""
    candidates = require_manifest(store, "tasks", category)
    by_env = {b.spec.id: b for b in bundles(store, category)}
    env_ids = [e for e in candidates.kept if e in by_env]
    splits = assign_splits({category: env_ids}, seed=seed, arena_per_category=arena_per_category)

    def job(env_id: str) -> EnvWork:
        def make(out: Path) -> EnvOutcome:
            tasks = read_tasks(stage_dir(store, "tasks", category) / env_id / CANDIDATES)
            result = audit_tasks(by_env[env_id], tasks)
            kept = [t.model_copy(update={"split": splits[env_id]}) for t in result.tasks]
            write_tasks(kept, out / TASKS)
            record = AuditRecord(
                env_id=env_id, kept=[t.id for t in kept], dropped=result.dropped, summary=result.audit_summary
            )
            write_json_atomic(out / AUDIT_JSON, record)
            return EnvOutcome(
                env_id=env_id,
                kept=bool(kept),
                reason=None if kept else "no task passed the verifier audit",
                counts={
                    "candidates": len(tasks),
                    "tasks": len(kept),
                    "audit_drops": len(result.dropped),
                    "mutation_tasks": sum(1 for t in kept if t.mutates),
                    **drop_counts(result.audit_summary),
                },
            )

        inputs = {"candidates": env_input_hash(store, "tasks", category, env_id), "split": splits[env_id]}
        return EnvWork(env_id, inputs, make)

    return run_stage(
        store,
        "verifiers",
        category,
        VERIFIERS_CODE_VERSION,
        [job(e) for e in env_ids],
        upstream={"tasks": manifest_hash(store, "tasks", category)},
        progress=progress,
    )


def audit_check(store: Store, manifest: StageManifest) -> CheckOutcome:
    """The blocking audit gate: every kept task has a passing audit record, and the category keeps some."""
    problems: list[str] = []
    total = 0
    for env_id in manifest.kept:
        d = stage_dir(store, "verifiers", manifest.category) / env_id
        audited = set(AuditRecord.model_validate(read_json(d / AUDIT_JSON)).kept)
        ids = [t.id for t in read_tasks(d / TASKS)]
        total += len(ids)
        problems += [f"- `{env_id}`: task {i} has no passing audit" for i in ids if i not in audited]
    if total == 0:
        problems.append("- no audited task in this category")
    lines = [f"{total} kept tasks, {total - len(problems)} with a passing audit", *problems]
    return CheckOutcome(passed=not problems, detail="\n".join(lines))
