"""The verifier audit: a blocking gate on every kept task (README, "Tasks and verifiers").

A verifier is only as good as what it rejects. For each task:
- `gold_passes`: the gold run passes;
- `noop_fails`: doing nothing and answering nothing fails;
- `answer_only_fails` (mutation tasks): stating the gold answer without acting fails;
- `mutants_fail`: at least `MIN_MUTANTS` final states built from the gold run's state diff fail — a written
  row dropped, a written value changed, the write applied twice, the write made to another record (read-only
  tasks: wrong answers instead);
- `replay_stable`: the gold replayed in a fresh session gets the same verdict and end state.
A verifier that accepts anything fails `noop_fails`; one that reads only the answer fails the mutants.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from typing import Any

from pydantic import Field

from factory.envs.bundle import Bundle
from factory.models import CheckResult, EnvSpec, Model, Snapshot, Task
from factory.verify.code import Runner
from factory.verify.rubric import RubricReward
from factory.verify.scoring import GoldRun, SessionFactory, VerdictCache, judge, run_gold
from factory.verify.state import ColumnFilter, StateDiff, canonical_state_hash, normalize_value, state_diff

MIN_MUTANTS = 3
OTHER_RECORDS = 2  # "write made to another record" variants per written row


class AuditResult(Model):
    kept: bool
    reasons: list[str] = Field(default_factory=list)
    checks: list[CheckResult] = Field(default_factory=list)


class Mutant(Model):
    """A wrong final state: what was done to the gold's final state, and the tables after it."""

    kind: str  # dropped | changed | twice | other_record | wrong_answer
    detail: str
    tables: dict[str, list[dict[str, Any]]]


def primary_keys(spec: EnvSpec) -> dict[str, str]:
    return {e.table: e.primary_key for e in spec.entities}


def _same(a: Any, b: Any) -> bool:
    return json.dumps(normalize_value(a), sort_keys=True) == json.dumps(normalize_value(b), sort_keys=True)


def _key_of(rows: list[dict[str, Any]], key: str | None, value: Any) -> int | None:
    for i, r in enumerate(rows):
        if key is not None and _same(r.get(key), value):
            return i
    return None


def perturb(value: Any, column_values: list[Any]) -> Any:
    """A different value of the same type: another value of the column if there is one (a realistic
    mistake: the wrong status, the wrong customer), else a shifted number or a marked string."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    for other in column_values:
        if isinstance(other, type(value)) and json.dumps(normalize_value(other)) != json.dumps(normalize_value(value)):
            return other
    if isinstance(value, str):
        return f"{value} (altered)" if value else "altered"
    return None if value is not None else "altered"


def _fresh_key(rows: list[dict[str, Any]], key: str, like: Any) -> Any:
    if isinstance(like, int) and not isinstance(like, bool):
        return max([r[key] for r in rows if isinstance(r.get(key), int)] + [0]) + 1
    return f"{like}-copy"


def _written_fields(row: dict[str, Any], key: str | None, cols: ColumnFilter, table: str) -> list[str]:
    return [f for f, v in row.items() if f != key and v is not None and not cols.ignored(table, f)]


def build_mutants(
    initial: Snapshot,
    final: Snapshot,
    diff: StateDiff,
    bookkeeping: list[str],
    keys: dict[str, str],
    per_row: int = 3,
) -> Iterator[Mutant]:
    """Wrong final states derived from what the gold wrote (see the module docstring)."""
    cols = ColumnFilter(bookkeeping)
    base = final.tables

    def variant(kind: str, detail: str, table: str, edit: Any) -> Mutant:
        tables = copy.deepcopy(base)
        edit(tables[table])
        return Mutant(kind=kind, detail=f"{table}: {detail}", tables=tables)

    for table, d in sorted(diff.tables.items()):
        rows = base.get(table, [])
        key = d.key
        column = lambda f, rows=rows: [r.get(f) for r in rows]  # noqa: E731
        for added in d.added[:per_row]:
            i = _key_of(rows, key, added.get(key)) if key else None
            if i is None:
                continue
            row = rows[i]
            yield variant("dropped", f"created row {row.get(key)} removed", table, lambda t, i=i: t.pop(i))
            for f in _written_fields(row, key, cols, table)[:per_row]:
                new = perturb(row[f], column(f))
                yield variant(
                    "changed",
                    f"{f} of created row {row.get(key)} = {new!r}",
                    table,
                    lambda t, i=i, f=f, v=new: t[i].update({f: v}),
                )
            dup = {**row, key: _fresh_key(rows, key, row.get(key))}
            yield variant("twice", f"created row {row.get(key)} created again", table, lambda t, r=dup: t.append(r))
        for change in d.changed[:per_row]:
            i = _key_of(rows, key, change.key)
            if i is None:
                continue
            yield variant(
                "dropped", f"update of {change.key} undone", table, lambda t, i=i, c=change: t[i].update(c.before)
            )
            for f, after in list(change.after.items())[:per_row]:
                new = perturb(after, [change.before.get(f), *column(f)])
                yield variant(
                    "changed", f"{f} of {change.key} = {new!r}", table, lambda t, i=i, f=f, v=new: t[i].update({f: v})
                )
                before = change.before.get(f)
                if isinstance(after, int | float) and isinstance(before, int | float) and not isinstance(after, bool):
                    again = after + (after - before)
                    yield variant(
                        "twice",
                        f"{f} of {change.key} changed twice",
                        table,
                        lambda t, i=i, f=f, v=again: t[i].update({f: v}),
                    )
            touched = {json.dumps(normalize_value(c.key)) for c in d.changed}
            others = [j for j, r in enumerate(rows) if json.dumps(normalize_value(r.get(key))) not in touched]
            for j in others[:OTHER_RECORDS]:

                def elsewhere(t: list[dict[str, Any]], i: int = i, j: int = j, c: Any = change) -> None:
                    t[i].update(c.before)
                    t[j].update(c.after)

                yield variant("other_record", f"update of {change.key} made to {rows[j].get(key)}", table, elsewhere)
        for removed in d.removed[:per_row]:
            original = next(
                (r for r in initial.tables.get(table, []) if key and _same(r.get(key), removed.get(key))),
                removed,
            )
            yield variant("dropped", f"deletion of {removed.get(key)} undone", table, lambda t, r=original: t.append(r))
            for j in range(min(OTHER_RECORDS, len(rows))):

                def instead(t: list[dict[str, Any]], j: int = j, r: dict[str, Any] = original) -> None:
                    t.pop(j)
                    t.append(r)

                yield variant(
                    "other_record", f"{rows[j].get(key)} deleted instead of {removed.get(key)}", table, instead
                )
            if rows:
                yield variant("twice", f"{rows[0].get(key)} deleted as well", table, lambda t: t.pop(0))


def wrong_answers(answer: Any) -> list[str]:
    """Answers that state something else: every leaf value perturbed, and no answer at all."""

    def alter(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: alter(x) for k, x in v.items()}
        if isinstance(v, list):
            return [alter(x) for x in v] if v else ["nothing"]
        if isinstance(v, str):
            return v[::-1] + " zq" if v else "zq"
        return perturb(v, [])

    parsed = answer
    if isinstance(answer, str):
        try:
            parsed = json.loads(answer)
        except json.JSONDecodeError:
            parsed = answer
    altered = alter(parsed)
    text = altered if isinstance(altered, str) else json.dumps(altered, sort_keys=True)
    return [text, "I could not find it."]


def _check(name: str, ok: bool, failure: str) -> CheckResult:
    """A check of the audit; its detail says what went wrong when it failed."""
    return CheckResult(name=name, passed=ok, detail="" if ok else failure)


def audit_task(
    bundle: Bundle,
    task: Task,
    session_factory: SessionFactory,
    *,
    gold: GoldRun | None = None,
    rubric_reward: RubricReward = "all",
    runner: Runner | None = None,
    min_mutants: int = MIN_MUTANTS,
    cache: VerdictCache | None = None,
) -> AuditResult:
    """Audit one task's verifier (see the module docstring); `gold` reuses a run the filter already made."""
    spec = bundle.spec
    gold = gold or run_gold(task, session_factory)
    initial, final = gold.replay.initial, gold.replay.final
    answer = gold.trajectory.final_answer

    def verdict(state: Snapshot, text: str | None) -> Any:
        return judge(task, initial, state, text, rubric_reward, runner, cache)

    gold_verdict = verdict(final, answer)
    failed = "; ".join(c.detail or c.name for c in gold_verdict.checks if not c.passed)
    checks = [_check("gold_passes", gold_verdict.passed, f"the gold run fails: {failed}")]
    checks.append(
        _check("noop_fails", not verdict(initial, None).passed, "the verifier accepts a run that does nothing")
    )
    if task.mutates:
        answer_only = verdict(initial, answer).passed
        checks.append(
            _check("answer_only_fails", not answer_only, "the verifier accepts the answer without the writes")
        )
        checks.append(_mutants_check(spec, initial, final, lambda state: verdict(state, answer).passed, min_mutants))
    else:
        accepted = [w for w in wrong_answers(answer) if verdict(final, w).passed]
        checks.append(_check("wrong_answers_fail", not accepted, "the verifier accepts: " + "; ".join(accepted)))
    again = run_gold(task, session_factory)
    replayed = judge(
        task, again.replay.initial, again.replay.final, again.trajectory.final_answer, rubric_reward, runner
    )
    same_state = canonical_state_hash(again.replay.final, spec.bookkeeping) == canonical_state_hash(
        final, spec.bookkeeping
    )
    same = (replayed.passed, replayed.score) == (gold_verdict.passed, gold_verdict.score) and same_state
    checks.append(_check("replay_stable", same, "a fresh replay of the gold gets another verdict or end state"))
    reasons = [f"{c.name}: {c.detail}" for c in checks if not c.passed]
    return AuditResult(kept=not reasons, reasons=reasons, checks=checks)


def _mutants_check(
    spec: EnvSpec, initial: Snapshot, final: Snapshot, accepts: Callable[[Snapshot], bool], min_mutants: int
) -> CheckResult:
    """Judge every mutant that differs from the gold's end state in what matters; at least `min_mutants` must fail."""
    keys = primary_keys(spec)
    diff = state_diff(initial, final, spec.bookkeeping, keys=keys)
    gold_hash = canonical_state_hash(final, spec.bookkeeping)
    accepted: list[str] = []
    rejected = 0
    for m in build_mutants(initial, final, diff, spec.bookkeeping, keys):
        state = Snapshot(tables=m.tables)
        if canonical_state_hash(state, spec.bookkeeping) == gold_hash:
            continue
        if accepts(state):
            accepted.append(f"{m.kind} ({m.detail})")
        else:
            rejected += 1
    failure = f"only {rejected} mutated end states rejected (need {min_mutants})"
    if accepted:
        failure += "; accepted: " + "; ".join(accepted[:5])
    return _check("mutants_fail", rejected >= min_mutants, failure)
