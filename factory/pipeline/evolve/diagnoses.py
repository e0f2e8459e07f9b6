"""Diagnoses: the round's failures over every category's arena rollouts, read by the offline rule-based
diagnosis (factory.evolve.diagnosis): failure rates per environment, category, capability, difficulty knob and
error kind, the weak environments ranked, and a guideline for each (which knobs to turn, whether to complexify
the database). The diagnosed round is the latest one any category's arena reached; categories whose arena is
of an earlier round (or has none) are named, not mixed in. A weak environment whose failures no capability
explains (it fails at everything alike) gets no guideline, so its category is weak but not targeted.

`artifacts/diagnoses/diagnosis.json` holds the latest round's record; each round's is kept in the archive.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import Field

from factory.agents.rollouts import RolloutRow
from factory.evolve.diagnosis import (
    MIN_FAILURE_RATE,
    MIN_ROLLOUTS,
    CapabilityDiagnosis,
    capabilities,
    diagnose,
    failed,
)
from factory.models import Lineage, Model, Task
from factory.pipeline.artifacts import Written, load_taxonomy
from factory.pipeline.evolve.rollouts import ArenaSettings, category_arena, load_arena_settings
from factory.pipeline.evolve.rounds import archive, arena_rounds, kept_rounds, round_dir
from factory.pipeline.registry import DIAGNOSES, ROLLOUTS
from factory.pipeline.runner import manifest_hashes
from factory.store import Store, read_json, write_json_if_changed

DIAGNOSIS_JSON = "diagnosis.json"


class FailureCell(Model):
    """One cell of the round's failure table: a category's counted rollouts needing a capability."""

    category: str
    capability: str
    rollouts: int
    failures: int
    failure_rate: float


class SkillTrack(Model):
    """A capability this round: old (a guideline of an earlier round targeted it) or new, with its failure rate
    now and in the round it was first targeted, so a round shows whether targeted skills held while new ones
    were trained."""

    capability: str
    first_targeted: int | None = None  # None: never targeted, a new skill
    rollouts: int
    failure_rate: float
    failure_rate_when_targeted: float | None = None


class DiagnosisRecord(Model):
    """One round's diagnosis and where it came from: the categories it read, those it could not (their arena is
    of another round), the categories holding a weak environment, and those with a guideline (targeted next)."""

    round: int
    categories: list[str]
    stale_categories: list[str] = Field(default_factory=list)
    weak_categories: list[str] = Field(default_factory=list)
    targeted_categories: list[str] = Field(default_factory=list)  # those with a guideline: targeted next
    failure_table: list[FailureCell] = Field(default_factory=list)
    skills: list[SkillTrack] = Field(default_factory=list)
    arena: ArenaSettings | None = None  # how the round was played (its policy profiles the targeted tasks)
    diagnosis: CapabilityDiagnosis
    lineage: Lineage


class NoArena(FileNotFoundError):
    """No category has arena rollouts to diagnose yet."""


def failure_table(
    rows: Sequence[RolloutRow], tasks: Sequence[Task], env_category: Mapping[str, str]
) -> list[FailureCell]:
    """Failure rates by category and capability over the counted rollouts (a task needing no named capability
    counts under `none`)."""
    by_id = {t.id: t for t in tasks}
    cells: dict[tuple[str, str], list[bool]] = {}
    for r in rows:
        if r.counted:
            for capability in sorted(capabilities(by_id[r.task_id])) or ["none"]:
                cells.setdefault((env_category[r.env_id], capability), []).append(failed(r))
    return [
        FailureCell(category=c, capability=k, rollouts=len(f), failures=sum(f), failure_rate=round(sum(f) / len(f), 4))
        for (c, k), f in sorted(cells.items())
    ]


def skill_tracks(diagnosis: CapabilityDiagnosis, earlier: Sequence[DiagnosisRecord]) -> list[SkillTrack]:
    """Every capability this round's rollouts needed, old (targeted in an `earlier` round) or new."""
    first: dict[str, DiagnosisRecord] = {}
    for record in sorted(earlier, key=lambda r: r.round):
        for g in record.diagnosis.guidelines:
            first.setdefault(g.capability, record)
    out = []
    for capability, rate in sorted(diagnosis.by_capability.items()):
        then = first.get(capability)
        before = then.diagnosis.by_capability.get(capability) if then else None
        out.append(
            SkillTrack(
                capability=capability,
                first_targeted=then.round if then else None,
                rollouts=rate.rollouts,
                failure_rate=rate.failure_rate,
                failure_rate_when_targeted=before.failure_rate if before else None,
            )
        )
    return out


def diagnosis_path(store: Store) -> Path:
    return DIAGNOSES.dir(store) / DIAGNOSIS_JSON


def diagnose_round(
    store: Store, *, min_rollouts: int = MIN_ROLLOUTS, min_failure_rate: float = MIN_FAILURE_RATE
) -> tuple[DiagnosisRecord, Written]:
    """Diagnose the latest arena round; the record is rewritten (and archived) only when it changed."""
    categories = load_taxonomy(store).categories()
    rounds = arena_rounds(store, categories)
    if not rounds:
        raise NoArena(f"no arena rollouts under {store.artifacts}: materialize {ROLLOUTS.name} first")
    round = max(rounds.values())
    diagnosed = sorted(c for c, r in rounds.items() if r == round)
    tasks: list[Task] = []
    rows: list[RolloutRow] = []
    env_category: dict[str, str] = {}
    for category in diagnosed:
        cat_tasks, cat_rows = category_arena(store, category)
        tasks += cat_tasks
        rows += cat_rows
        env_category |= {t.env_id: category for t in cat_tasks}
    diagnosis = diagnose(rows, tasks, round, env_category, min_rollouts=min_rollouts, min_failure_rate=min_failure_rate)
    lineage = Lineage(
        stage=DIAGNOSES.name,
        code_version=DIAGNOSES.code_version,
        inputs={f"{ROLLOUTS.name}/{c}": manifest_hashes(store, c, ROLLOUTS)[ROLLOUTS.name] for c in diagnosed},
        round=round,
    )
    record = DiagnosisRecord(
        round=round,
        categories=diagnosed,
        stale_categories=sorted(set(categories) - set(diagnosed)),
        weak_categories=sorted({env_category[e] for e in diagnosis.weak_envs}),
        targeted_categories=sorted({g.category for g in diagnosis.guidelines}),
        failure_table=failure_table(rows, tasks, env_category),
        arena=load_arena_settings(store, diagnosed[0]) if diagnosed else None,
        skills=skill_tracks(diagnosis, [r for r in round_history(store) if r.round < round]),
        diagnosis=diagnosis.model_copy(update={"lineage": lineage}),
        lineage=lineage,
    )
    h, wrote = write_json_if_changed(diagnosis_path(store), record)
    archive(store, round, DIAGNOSIS_JSON, diagnosis_path(store))
    return record, Written(h, wrote)


def load_diagnosis(store: Store) -> DiagnosisRecord:
    """The latest round's diagnosis, or a clear error saying what to materialize first."""
    path = diagnosis_path(store)
    if not path.is_file():
        raise FileNotFoundError(f"no diagnosis under {store.artifacts}: materialize {DIAGNOSES.name} first")
    return DiagnosisRecord.model_validate(read_json(path))


def round_history(store: Store) -> list[DiagnosisRecord]:
    """Every kept round's diagnosis, oldest first (the round-over-round view)."""
    out = []
    for round in kept_rounds(store):
        path = round_dir(store, round) / DIAGNOSIS_JSON
        if path.is_file():
            out.append(DiagnosisRecord.model_validate(read_json(path)))
    return out
