"""Targeted task synthesis: the next round's tasks for a weak environment, at the difficulty its guidelines ask
for (Agent-World, "targeted" regeneration), and the random control that spends the same task budget on random
knob settings, so a round can tell targeting apart from merely making more tasks.

Every task made here carries the round, and a targeted one its guideline id, in both `Task.origin` and
`Task.lineage` (the task id is a content hash of environment, kind, question and gold, so stamping them leaves
ids as they are).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

from pydantic import Field

from factory.envs.bundle import Bundle
from factory.evolve.diagnosis import TargetedGuideline
from factory.models import Guideline, Model, Origin, Task
from factory.sandbox import SandboxPool
from factory.tasks.difficulty import KNOBS, Knobs, knobs_for
from factory.tasks.synthesize import TaskKindChoice, TaskSynthesis, synthesize_tasks

# The values a random control draws each knob from (the presets' range).
CONTROL_RANGES: dict[str, tuple[int, int]] = {
    "chain_length": (1, 14),
    "pages": (1, 3),
    "constraints": (0, 2),
    "obscured": (0, 1),
    "distractors": (0, 2),
    "recovery": (0, 1),
}


class TargetedSynthesis(Model):
    """The tasks one environment got this round, and the synthesis run behind each share of the budget (keyed
    by guideline id, or `control-<i>` for the random control)."""

    env_id: str
    round: int
    tasks: list[Task] = Field(default_factory=list)
    runs: dict[str, TaskSynthesis] = Field(default_factory=dict)


def targeted_knobs(guideline: Guideline, base_knobs: Knobs) -> Knobs:
    """`base_knobs` with each knob the guideline names raised to its value (a knob never lowers a floor)."""
    unknown = sorted(set(guideline.knobs) - set(KNOBS))
    if unknown:
        raise ValueError(f"guideline {guideline.id}: unknown knob(s) {', '.join(unknown)} (knobs: {', '.join(KNOBS)})")
    base = base_knobs.model_dump()
    try:
        return Knobs.model_validate({**base, **{k: max(base[k], v) for k, v in guideline.knobs.items()}})
    except (TypeError, ValueError) as e:
        raise ValueError(f"guideline {guideline.id}: bad knob value ({e})") from e


def split_budget(n: int, parts: int) -> list[int]:
    """`n` tasks split over `parts` runs as evenly as it goes, the first runs taking the remainder (none: no run)."""
    return [n // parts + (i < n % parts) for i in range(parts)]


def stamped(task: Task, round: int, guideline_id: str | None = None) -> Task:
    """The task with its round (and guideline) in both its origin and its lineage."""
    lineage = task.lineage.model_copy(update={"round": round, "guideline_id": guideline_id}) if task.lineage else None
    return task.model_copy(update={"origin": Origin(round=round, guideline_id=guideline_id), "lineage": lineage})


def _run(
    bundle: Bundle,
    plans: Sequence[tuple[str, str | None, Knobs, int]],
    seed: int,
    round: int,
    kind: TaskKindChoice,
    pool: SandboxPool | None,
) -> TargetedSynthesis:
    """One synthesis run per plan (run key, guideline id, knobs, tasks), stamped and deduplicated by task id."""
    out = TargetedSynthesis(env_id=bundle.spec.id, round=round)
    seen: set[str] = set()
    for key, guideline_id, knobs, n in plans:
        if n <= 0:
            continue
        result = synthesize_tasks(bundle, n=n, seed=seed, kind=kind, knobs=knobs, pool=pool)
        out.runs[key] = result
        for task in result.tasks:
            if task.id not in seen:
                seen.add(task.id)
                out.tasks.append(stamped(task, round, guideline_id))
    return out


def _targeted(guidelines: Sequence[Guideline]) -> list[TargetedGuideline]:
    """The guidelines as targeted ones; a plain `Guideline` names no environment and is refused."""
    untargeted = [g.id for g in guidelines if not isinstance(g, TargetedGuideline)]
    if untargeted:
        raise ValueError(f"guidelines {', '.join(untargeted)} name no environment (a TargetedGuideline does)")
    return [g for g in guidelines if isinstance(g, TargetedGuideline)]


def _open(bundle_dir: str | Path | Bundle) -> Bundle:
    return bundle_dir if isinstance(bundle_dir, Bundle) else Bundle.open(bundle_dir)


def synthesize_targeted(
    bundle_dir: str | Path | Bundle,
    guidelines: Sequence[Guideline],
    n: int,
    seed: int,
    round: int,
    *,
    base_knobs: Knobs | None = None,
    kind: TaskKindChoice = "both",
    pool: SandboxPool | None = None,
) -> TargetedSynthesis:
    """About `n` tasks for this environment, split over the guidelines that name it, each at the knobs its
    guideline turns on top of `base_knobs` (None: the FACTORY_DIFFICULTY preset). An environment no guideline
    names is not weak: it gets no task."""
    targeted = _targeted(guidelines)
    bundle = _open(bundle_dir)
    base = base_knobs or knobs_for()
    mine = [g for g in targeted if g.env_id == bundle.spec.id]
    plans = [(g.id, g.id, targeted_knobs(g, base), k) for g, k in zip(mine, split_budget(n, len(mine)), strict=True)]
    return _run(bundle, plans, seed, round, kind, pool)


def random_knobs(base_knobs: Knobs, rng: random.Random) -> Knobs:
    """`base_knobs` with every knob raised to a random value of its range (a floor never lowers)."""
    base = base_knobs.model_dump()
    drawn = {k: rng.randint(*CONTROL_RANGES[k]) for k in KNOBS}
    return Knobs.model_validate({**base, **{k: max(base[k], v) for k, v in drawn.items()}})


def random_control(
    bundle_dir: str | Path | Bundle,
    guidelines: Sequence[Guideline],
    n: int,
    seed: int,
    round: int,
    *,
    base_knobs: Knobs | None = None,
    kind: TaskKindChoice = "both",
    pool: SandboxPool | None = None,
) -> TargetedSynthesis:
    """The control of `synthesize_targeted`: the same budget (the same `n`, split into as many runs as this
    environment has guidelines) spent on random knob settings, seeded by `seed`, `round` and the environment."""
    targeted = _targeted(guidelines)
    bundle = _open(bundle_dir)
    base = base_knobs or knobs_for()
    runs = sum(g.env_id == bundle.spec.id for g in targeted)
    rng = random.Random(f"control:{seed}:{round}:{bundle.spec.id}")
    plans = [(f"control-{i}", None, random_knobs(base, rng), k) for i, k in enumerate(split_budget(n, runs))]
    return _run(bundle, plans, seed, round, kind, pool)
