"""The verifier audit: a blocking gate on every kept task.

A verifier is only as good as what it rejects and what it does not. For each task the gold run must pass, then
every probe of factory/verify/attacks.py is judged: each correct variant (extra reads, reordered independent
calls, other page sizes, the answer as prose, as JSON, with units) must pass, and each attack (no-op, answer
only, echo, dump, hedge, wrong answers, writes on other rows, destructive extras, sprayed writes, every mutating
tool, every mutant of the end state) must fail; last, the gold replayed in a fresh session must get the same
verdict and end state. One accepted attack or one rejected variant drops the task: the reason names it
(`attack_spray_passes: ...`, `variant_reordered_fails: ...`). A probe that does not apply to the task is
skipped and reported as such, never failed.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import Field

from factory.envs.bundle import Bundle
from factory.models import CheckResult, Model, Snapshot, Task, Verdict
from factory.verify.attacks import ATTACKS, VARIANTS, Probe, build_probes
from factory.verify.code import Runner
from factory.verify.rubric import RubricReward
from factory.verify.scoring import GoldRun, SessionFactory, VerdictCache, judge, judge_each, run_gold
from factory.verify.state import canonical_state_hash

__all__ = ["AuditResult", "audit_task"]

OWN_FAILURES = {"gold": "gold_rejected", "replay": "replay_unstable"}  # the audit's checks besides the probes


class AuditResult(Model):
    kept: bool
    reasons: list[str] = Field(default_factory=list)  # "<check>_passes|_fails|...: detail" for each failed check
    checks: list[CheckResult] = Field(default_factory=list)  # gold, one per variant and attack, replay


def _failures(verdict: Verdict) -> str:
    return "; ".join(f"{c.name}: {c.detail}" if c.detail else c.name for c in verdict.checks if not c.passed)


def _probe_check(
    name: str, probes: list[Probe], skipped: str | None, verdict: Callable[[Probe], Verdict]
) -> CheckResult:
    """One check per variant or attack: every probe of it must get the verdict it deserves."""
    if not probes:
        return CheckResult(name=name, passed=True, detail=f"skipped: {skipped or 'not built'}")
    wrong = []
    for p in probes:
        v = verdict(p)
        if v.passed != p.must_pass:
            wrong.append(f"{p.detail}" + (f" ({_failures(v)[:200]})" if p.must_pass else ""))
    verb = "accepted" if probes[0].must_pass else "rejected"
    if not wrong:
        return CheckResult(name=name, passed=True, detail=f"{len(probes)} {verb}")
    opposite = "rejected" if probes[0].must_pass else "accepted"
    return CheckResult(
        name=name, passed=False, detail=f"{opposite} {len(wrong)}/{len(probes)}: " + " | ".join(wrong[:3])
    )


def _reason(check: CheckResult) -> str:
    """A failed check as a drop reason whose code says what happened: `attack_dump_passes`, `gold_rejected`."""
    if check.name.startswith("attack_"):
        return f"{check.name}_passes: {check.detail}"
    if check.name.startswith("variant_"):
        return f"{check.name}_fails: {check.detail}"
    return f"{OWN_FAILURES[check.name]}: {check.detail}"


def audit_task(
    bundle: Bundle,
    task: Task,
    session_factory: SessionFactory,
    *,
    gold: GoldRun | None = None,
    rubric_reward: RubricReward = "all",
    runner: Runner | None = None,
    cache: VerdictCache | None = None,
) -> AuditResult:
    """Audit one task's verifier (see the module docstring); `gold` reuses a run the filter already made."""
    spec = bundle.spec
    gold = gold or run_gold(task, session_factory)
    initial, final = gold.replay.initial, gold.replay.final
    answer = gold.trajectory.final_answer

    def verdict(state: Snapshot, text: str | None) -> Verdict:
        return judge(task, initial, state, text, rubric_reward, runner, cache)

    gold_verdict = verdict(final, answer)
    if not gold_verdict.passed:
        failed = _failures(gold_verdict)
        check = CheckResult(name="gold", passed=False, detail="the gold run fails" + (f": {failed}" if failed else ""))
        return AuditResult(kept=False, reasons=[_reason(check)], checks=[check])
    checks = [CheckResult(name="gold", passed=True, detail="the gold run passes")]
    probes = build_probes(bundle, task, gold, session_factory)
    names = (*VARIANTS, *ATTACKS)
    every = [p for name in names for p in probes.named(name)]
    judged = judge_each(task, initial, [(p.final, p.answer) for p in every], rubric_reward, runner, cache)
    by_probe = {id(p): v for p, v in zip(every, judged, strict=True)}
    for name in names:
        checks.append(_probe_check(name, probes.named(name), probes.skipped.get(name), lambda p: by_probe[id(p)]))
    again = run_gold(task, session_factory)
    replayed = judge(
        task, again.replay.initial, again.replay.final, again.trajectory.final_answer, rubric_reward, runner
    )
    keys = spec.primary_keys()
    same_state = canonical_state_hash(
        again.replay.final, spec.bookkeeping, since=initial, keys=keys
    ) == canonical_state_hash(final, spec.bookkeeping, since=initial, keys=keys)
    same = (replayed.passed, replayed.score) == (gold_verdict.passed, gold_verdict.score) and same_state
    detail = "" if same else "a fresh replay of the gold gets another verdict or end state"
    checks.append(CheckResult(name="replay", passed=same, detail=detail))
    reasons = [_reason(c) for c in checks if not c.passed]
    return AuditResult(kept=not reasons, reasons=reasons, checks=checks)
