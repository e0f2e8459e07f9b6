"""Verifiers: the blocking audit over every candidate task. The gold must pass; a no-op, an answer-only
run and mutated end states must fail; a replay must give the same verdict. Kept tasks get their
environment's split (train or arena).

`artifacts/verifiers/<category>/<env>/tasks.parquet` holds the audited tasks, `audit.json` the audit's
record of every candidate.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from factory.evolve.splits import assign_splits
from factory.models import Model
from factory.pipeline.artifacts import AUDIT_JSON, CANDIDATES_PARQUET, TASKS_PARQUET, bundles
from factory.pipeline.registry import TASKS, VERIFIERS
from factory.pipeline.runner import (
    CheckOutcome,
    EnvOutcome,
    EnvWork,
    Progress,
    StageManifest,
    StageRun,
    drop_counts,
    env_dir,
    env_input_hash,
    manifest_hashes,
    require_manifest,
    run_stage,
)
from factory.sandbox import SandboxPool
from factory.store import Store, read_json, write_json_atomic
from factory.tasks.synthesize import DroppedTask, audit_tasks
from factory.tasks.table import read_tasks, write_tasks


class AuditRecord(Model):
    """audit.json: which candidates the audit kept, which it dropped and why."""

    env_id: str
    kept: list[str] = Field(default_factory=list)
    dropped: list[DroppedTask] = Field(default_factory=list)
    summary: dict[str, int] = Field(default_factory=dict)


def audit_category_tasks(
    store: Store,
    category: str,
    *,
    pool: SandboxPool,
    seed: int = 0,
    arena_per_category: int = 5,
    progress: Progress | None = None,
) -> StageRun:
    """Audit every candidate of the category; kept tasks get their environment's split."""
    candidates = require_manifest(store, TASKS, category)
    by_env = {b.spec.id: b for b in bundles(store, category)}
    env_ids = [e for e in candidates.kept if e in by_env]
    splits = assign_splits({category: env_ids}, seed=seed, arena_per_category=arena_per_category)

    def job(env_id: str) -> EnvWork:
        def make(out: Path) -> EnvOutcome:
            tasks = read_tasks(env_dir(store, TASKS, category, env_id) / CANDIDATES_PARQUET)
            result = audit_tasks(by_env[env_id], tasks, pool=pool)
            kept = [t.model_copy(update={"split": splits[env_id]}) for t in result.tasks]
            write_tasks(kept, out / TASKS_PARQUET)
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

        inputs = {"candidates": env_input_hash(store, TASKS, category, env_id), "split": splits[env_id]}
        return EnvWork(env_id, inputs, make)

    return run_stage(
        store,
        VERIFIERS,
        category,
        [job(e) for e in env_ids],
        upstream=manifest_hashes(store, category, TASKS),
        progress=progress,
    )


def audit_check(store: Store, manifest: StageManifest) -> CheckOutcome:
    """The blocking audit gate: every kept task has a passing audit record, and the category keeps some."""
    problems: list[str] = []
    total = 0
    for env_id in manifest.kept:
        d = env_dir(store, VERIFIERS, manifest.category, env_id)
        audited = set(AuditRecord.model_validate(read_json(d / AUDIT_JSON)).kept)
        ids = [t.id for t in read_tasks(d / TASKS_PARQUET)]
        total += len(ids)
        problems += [f"- `{env_id}`: task {i} has no passing audit" for i in ids if i not in audited]
    if total == 0:
        problems.append("- no audited task in this category")
    lines = [f"{total} kept tasks, {total - len(problems)} with a passing audit", *problems]
    return CheckOutcome(passed=not problems, detail="\n".join(lines))
