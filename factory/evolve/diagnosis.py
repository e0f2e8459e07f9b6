"""Offline, rule-based diagnosis of one policy's arena rollouts (Agent-World, "diagnosis" of the arena).

Failure rates are counted per environment, category, capability tag, difficulty knob and error kind, over the
rollouts that measure the policy (`RolloutRow.counted`: environment faults and policy failures never count
against it). A capability gap is where failures concentrate: a capability whose failure rate is above the
policy's overall rate (its lift), ranked by how much more often rollouts needing it fail than those of the same
environment and task kind that do not. Comparing within a task kind keeps a tag every program task carries
(`loops`) from standing in for the skill the failing tasks share, and comparing with tasks that do not need it
keeps a tag nearly every task carries (`pagination` where every listing is long) from being drowned by its own
base rate; pooling the environments lets one where every task pages still be told it fails at pagination,
since the skill a policy lacks is the policy's. Weak
environments get guidelines as data: the capability, the knobs to turn for the next round's targeted tasks,
the evidence, and whether a bigger database would help.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Literal

from pydantic import Field

from factory.agents.rollouts import RolloutRow
from factory.models import Diagnosis, Guideline, Model, Task
from factory.store import hash_value

MIN_ROLLOUTS = 2  # fewer counted rollouts than this: no rate is trusted (an environment, a capability)
MIN_FAILURE_RATE = 0.2  # an environment failing less often than this is not weak
MIN_LIFT = 1.0  # a capability failing no more often than the policy overall is no gap
GAPS_PER_ENV = 1  # guidelines written for each weak environment, from its strongest gaps

# The knob that makes a capability harder, and the least setting that asks for it.
CAPABILITY_KNOBS: dict[str, tuple[str, int]] = {
    "pagination": ("pages", 2),
    "recovery": ("recovery", 1),
    "constraint": ("constraints", 2),
    "multi-hop": ("chain_length", 4),
    "join": ("chain_length", 4),
    "mutation": ("chain_length", 4),
    "aggregation": ("distractors", 1),
    "search": ("distractors", 1),
}
# Capabilities that more rows exercise: longer listings to page through, more near misses to tell apart.
COMPLEXIFY_CAPABILITIES = frozenset({"pagination", "aggregation", "search"})
ANSWER_CHECK_PREFIX = "answer"  # verdict checks on the answer are named so (rubric and program verifiers)
SPECIFIC_CODES = ("not_found", "invalid_arguments")  # agent error codes kept apart; any other code is a refusal


class Rate(Model):
    rollouts: int
    failures: int
    failure_rate: float


class PolicyGap(Rate):
    """A capability the policy fails at more often than overall. `lift`: its failure rate over the policy's
    overall rate. `risk_difference`: how much more often rollouts needing it fail than those that do not, within
    the same environment and task kind (Mantel-Haenszel weighted: strata where every task or no task needs it
    say nothing); `excess`: the failures above what those strata's rates predict (the weighted sum)."""

    capability: str
    lift: float
    excess: float
    risk_difference: float


class CapabilityGap(Model):
    """A policy gap where it fails in one environment: the environment's rollouts with the capability, and the
    failed ones as evidence. `lift` and `excess` are the policy-wide gap's."""

    env_id: str
    category: str
    capability: str
    rollouts: int
    failures: int
    failure_rate: float
    lift: float
    excess: float
    trajectories: list[str]  # failed rollout ids
    tasks: list[str]  # their task ids
    # contrast: its rollouts fail more often than comparable ones without it; prevalence: the environment fails
    # at nearly everything, so no capability stands out, and this is the one most of its failures needed
    basis: Literal["contrast", "prevalence"] = "contrast"


class TargetedGuideline(Guideline):
    """A guideline for one weak environment, with the knobs and database change the next round's tasks get."""

    env_id: str
    round: int = 0
    complexify_db: bool = False
    lift: float = 1.0


class CapabilityDiagnosis(Diagnosis):
    """A `Diagnosis` with the partitions it was read from, the gaps, and guidelines that name their environment."""

    policy_id: str
    counted: int  # rollouts that measure the policy
    excluded: list[str] = Field(default_factory=list)  # rollout ids left out (environment fault, policy failure)
    base_failure_rate: float
    by_capability: dict[str, Rate] = Field(default_factory=dict)
    by_knob: dict[str, Rate] = Field(default_factory=dict)
    by_error: dict[str, Rate] = Field(default_factory=dict)  # error kind -> counted rollouts that failed with it
    policy_gaps: list[PolicyGap] = Field(default_factory=list)
    gaps: list[CapabilityGap] = Field(default_factory=list)
    guidelines: list[TargetedGuideline] = Field(default_factory=list)  # type: ignore[assignment]


def failed(rollout: RolloutRow) -> bool:
    return not (rollout.verdict and rollout.verdict.passed)


def capabilities(task: Task) -> set[str]:
    """The task's capability tags, plus those its reached difficulty implies: a gold that reads a later page
    exercises pagination and one that meets a refusal exercises recovery, tagged or not."""
    tags = set(task.capabilities)
    if task.needs_pagination or task.difficulty.pages > 1:
        tags.add("pagination")
    if task.refusals or task.difficulty.recovery > 0:
        tags.add("recovery")
    return tags


def knob_partitions(task: Task) -> list[str]:
    """The knob partitions a task falls in (`pages>=2`, `constraints>=1`...), by what it reached."""
    d = task.difficulty
    out = [f"pages>={p}" for p in (2, 3) if d.pages >= p]
    out += [f"recovery>={r}" for r in (1, 2) if d.recovery >= r]
    out += [f"constraints>={c}" for c in (1, 2) if len(d.constraints) >= c]
    out += [f"chain_length>={c}" for c in (4, 8) if task.gold_calls >= c]
    out += ["distractors>=1"] if d.distractors else []
    return out + (["obscured"] if d.obscured else [])


def error_kinds(rollout: RolloutRow) -> set[str]:
    """Why a rollout failed: the agent errors it met (refused, not_found, invalid_arguments), no answer, a wrong
    answer, a wrong end state (from the verdict's failed checks)."""
    kinds = set()
    for error in rollout.agent_errors:
        parts = error.split(": ", 2)
        code = parts[1] if len(parts) > 1 else ""
        kinds.add(code if code in SPECIFIC_CODES else "refused")
    checks = [c for c in (rollout.verdict.checks if rollout.verdict else []) if not c.passed]
    if not (rollout.final_answer or "").strip():
        kinds.add("no_answer")
    elif any(c.name.startswith(ANSWER_CHECK_PREFIX) for c in checks):
        kinds.add("wrong_answer")
    if any(not c.name.startswith(ANSWER_CHECK_PREFIX) for c in checks):
        kinds.add("state_wrong")
    return kinds


def _rate(rows: Sequence[RolloutRow]) -> Rate:
    failures = sum(failed(r) for r in rows)
    return Rate(rollouts=len(rows), failures=failures, failure_rate=failures / len(rows) if rows else 0.0)


def _partition(rows: Iterable[RolloutRow], keys: Callable[[RolloutRow], Iterable[str]]) -> dict[str, Rate]:
    groups: dict[str, list[RolloutRow]] = {}
    for r in rows:
        for key in keys(r):
            groups.setdefault(key, []).append(r)
    return {k: _rate(v) for k, v in sorted(groups.items())}


def _errors(counted: Sequence[RolloutRow]) -> dict[str, Rate]:
    """Error kind -> how many of the counted rollouts failed with it (a failure may have several kinds)."""
    kinds = _partition([r for r in counted if failed(r)], lambda r: sorted(error_kinds(r)))
    n = len(counted)
    return {k: Rate(rollouts=n, failures=v.failures, failure_rate=v.failures / n) for k, v in kinds.items()}


def policy_gaps(counted: Sequence[RolloutRow], tasks: Mapping[str, Task], min_rollouts: int) -> list[PolicyGap]:
    """The policy's capability gaps over all its counted rollouts, strongest (largest risk difference) first."""
    base = _rate(counted).failure_rate
    strata: dict[str, list[RolloutRow]] = {}
    for r in counted:
        strata.setdefault(f"{r.env_id}/{tasks[r.task_id].kind}", []).append(r)
    gaps = []
    for cap in sorted({c for r in counted for c in capabilities(tasks[r.task_id])}):
        excess = weight = 0.0
        for rows in strata.values():
            needing = [r for r in rows if cap in capabilities(tasks[r.task_id])]
            others = len(rows) - len(needing)
            if needing and others:
                with_rate = _rate(needing)
                without = (sum(map(failed, rows)) - with_rate.failures) / others
                w = len(needing) * others / len(rows)
                excess, weight = excess + w * (with_rate.failure_rate - without), weight + w
        rate = _rate([r for r in counted if cap in capabilities(tasks[r.task_id])])
        lift = rate.failure_rate / base if base else 0.0
        if rate.rollouts >= min_rollouts and lift > MIN_LIFT and weight and excess > 0:
            difference = excess / weight
            gaps.append(
                PolicyGap(capability=cap, **rate.model_dump(), lift=lift, excess=excess, risk_difference=difference)
            )
    return sorted(gaps, key=lambda g: (-g.risk_difference, -g.excess, -g.lift, g.capability))


def _env_gaps(
    env_id: str, category: str, rows: list[RolloutRow], tasks: Mapping[str, Task], gaps: list[PolicyGap]
) -> list[CapabilityGap]:
    """The policy's gaps where they fail in one environment, strongest first."""
    out = []
    for gap in gaps:
        members = [r for r in rows if gap.capability in capabilities(tasks[r.task_id])]
        bad = [r for r in members if failed(r)]
        if bad:
            out.append(
                CapabilityGap(
                    env_id=env_id,
                    category=category,
                    capability=gap.capability,
                    rollouts=len(members),
                    failures=len(bad),
                    failure_rate=len(bad) / len(members),
                    lift=gap.lift,
                    excess=gap.excess,
                    trajectories=[r.id for r in bad],
                    tasks=sorted({r.task_id for r in bad}),
                )
            )
    return out


def prevalent_gap(
    env_id: str, category: str, rows: list[RolloutRow], tasks: Mapping[str, Task], base_failure_rate: float
) -> CapabilityGap | None:
    """A weak environment's gap when no capability stands out by contrast: the capability its failed rollouts
    needed most often (then the higher failure rate, then the name)."""
    bad = [r for r in rows if failed(r)]
    counts: dict[str, int] = {}
    for r in bad:
        for cap in capabilities(tasks[r.task_id]):
            counts[cap] = counts.get(cap, 0) + 1
    if not counts:
        return None

    def rate(cap: str) -> float:
        return _rate([r for r in rows if cap in capabilities(tasks[r.task_id])]).failure_rate

    cap = min(counts, key=lambda c: (-counts[c], -rate(c), c))
    members = [r for r in rows if cap in capabilities(tasks[r.task_id])]
    failing = [r for r in members if failed(r)]
    return CapabilityGap(
        env_id=env_id,
        category=category,
        capability=cap,
        rollouts=len(members),
        failures=len(failing),
        failure_rate=len(failing) / len(members),
        lift=rate(cap) / base_failure_rate if base_failure_rate else 0.0,
        excess=0.0,
        trajectories=[r.id for r in failing],
        tasks=sorted({r.task_id for r in failing}),
        basis="prevalence",
    )


def guideline(gap: CapabilityGap, tasks: Mapping[str, Task], round: int) -> TargetedGuideline:
    """The guideline a gap asks for: its capability's knob set to what the failing tasks reached (at least the
    knob's least setting that asks for the capability), so the next round trains where the policy fails."""
    knobs: dict[str, int] = {}
    if gap.capability in CAPABILITY_KNOBS:
        knob, least = CAPABILITY_KNOBS[gap.capability]
        reached = [_reached(tasks[t], knob) for t in gap.tasks]
        knobs[knob] = max([least, *reached])
    return TargetedGuideline(
        id="gl-" + hash_value(["guideline", round, gap.env_id, gap.capability])[:12],
        category=gap.category,
        capability=gap.capability,
        knobs=knobs,
        evidence=[*gap.trajectories, *gap.tasks],
        env_id=gap.env_id,
        round=round,
        complexify_db=gap.capability in COMPLEXIFY_CAPABILITIES,
        lift=gap.lift,
    )


def _reached(task: Task, knob: str) -> int:
    d = task.difficulty
    return {
        "pages": d.pages,
        "recovery": d.recovery,
        "constraints": len(d.constraints),
        "chain_length": task.gold_calls,
        "distractors": d.distractors,
    }[knob]


def diagnose(
    rollouts: Sequence[RolloutRow],
    tasks: Sequence[Task],
    round: int,
    categories: Mapping[str, str],
    *,
    min_rollouts: int = MIN_ROLLOUTS,
    min_failure_rate: float = MIN_FAILURE_RATE,
    gaps_per_env: int = GAPS_PER_ENV,
) -> CapabilityDiagnosis:
    """The diagnosis of one policy's rollouts on `tasks` (`categories`: env id -> taxonomy category). Weak
    environments are those with at least `min_rollouts` counted rollouts failing at `min_failure_rate` or more,
    most failing first; each gets a guideline for each of its `gaps_per_env` strongest gaps."""
    policies = sorted({r.policy_id for r in rollouts})
    if len(policies) > 1:
        raise ValueError(f"rollouts: one policy's rollouts are diagnosed at a time, got {', '.join(policies)}")
    by_id = {t.id: t for t in tasks}
    unknown = sorted({r.task_id for r in rollouts} - set(by_id))
    if unknown:
        raise ValueError(f"rollouts name tasks not in tasks: {', '.join(unknown[:5])}")
    uncategorized = sorted({r.env_id for r in rollouts} - set(categories))
    if uncategorized:
        raise ValueError(f"categories: no category for environment(s) {', '.join(uncategorized)}")
    counted = [r for r in rollouts if r.counted]
    base = _rate(counted)
    by_env = _partition(counted, lambda r: [r.env_id])
    weak = sorted(
        (e for e, rate in by_env.items() if rate.rollouts >= min_rollouts and rate.failure_rate >= min_failure_rate),
        key=lambda e: (-by_env[e].failure_rate, -by_env[e].rollouts, e),
    )
    pooled = policy_gaps(counted, by_id, min_rollouts)
    gaps: list[CapabilityGap] = []
    for env in weak:
        rows = [r for r in counted if r.env_id == env]
        found = _env_gaps(env, categories[env], rows, by_id, pooled)
        fallback = None if found else prevalent_gap(env, categories[env], rows, by_id, base.failure_rate)
        gaps += found or ([fallback] if fallback else [])
    guidelines = [
        guideline(gap, by_id, round) for env in weak for gap in [g for g in gaps if g.env_id == env][:gaps_per_env]
    ]
    return CapabilityDiagnosis(
        round=round,
        policy_id=policies[0] if policies else "",
        counted=len(counted),
        excluded=[r.id for r in rollouts if not r.counted],
        base_failure_rate=base.failure_rate,
        failure_rate_by_env={e: rate.failure_rate for e, rate in by_env.items()},
        failure_rate_by_category={
            c: rate.failure_rate for c, rate in _partition(counted, lambda r: [categories[r.env_id]]).items()
        },
        weak_envs=weak,
        by_capability=_partition(counted, lambda r: sorted(capabilities(by_id[r.task_id]))),
        by_knob=_partition(counted, lambda r: knob_partitions(by_id[r.task_id])),
        by_error=_errors(counted),
        policy_gaps=pooled,
        gaps=gaps,
        guidelines=guidelines,
    )
