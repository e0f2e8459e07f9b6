"""Import the tasks of Agent-World release environments (the format of its `environment_mix/` and question files).

`environment_mix/questions/<id>.json` is `{"env_id", "name", "tasks": [...]}` (a bare list or one question is
read too); each question has `task`, `reference_answer`, `grading_rubric {success_criteria[],
verified_tool_chain[{tool, args}]}`. Each becomes a graph task whose
gold is the verified chain and whose rubric is built offline from what can be checked mechanically:
- state checks from the chain's effect, replayed in a fresh session of the imported bundle (rows created,
  fields changed, rows deleted; bookkeeping columns left out), and an end_state check that nothing else
  changes (a read-only chain: nothing at all);
- answer checks for the values of the reference answer that the chain actually produced (ids, names,
  numbers, dates), preferring those a success criterion names, whose text becomes the check's description;
  their competitors are what another row or a near miss would give (the column's other values, a count's
  neighbours), less what the question or the reference answer states.
Free-text criteria that name no value are left to an LLM judge (a later stage). A value the question itself
states is never an answer check (an answer that echoes the question must not pass). A chain that fails on
replay drops its question before the filter, with `chain_fails_on_release_data: ...` when the released tool
refused or crashed on the released data, and `import_error: ...` when our import is why (the tool was not
kept, or our binding or argument check refused it). The rest go through the same filter and audit as ours.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from factory.envs.bundle import Bundle
from factory.envs.importers import function_name
from factory.models import Difficulty, EnvSpec, Lineage, RubricCheck, Task, ToolCall
from factory.pipeline.code_versions import cached_code_version
from factory.pipeline.registry import TASKS
from factory.tasks.end_state import end_state_check
from factory.tasks.filter import Solver
from factory.tasks.programs.verifier import competitors
from factory.tasks.synthesize import TaskSynthesis, curate_tasks
from factory.verify.answers import answer_contains
from factory.verify.scoring import SessionFactory, environment_session_factory, replay_calls
from factory.verify.state import ColumnFilter, StateDiff, state_diff

MAX_ANSWER_CHECKS = 4


class GradingRubric(BaseModel):
    model_config = ConfigDict(extra="ignore")

    success_criteria: list[str] = Field(default_factory=list)
    verified_tool_chain: list[ToolCall] = Field(default_factory=list)


class AgentWorldQuestion(BaseModel):
    """One released question; keys the release adds beyond these are ignored."""

    model_config = ConfigDict(extra="ignore")

    task: str
    reference_answer: Any = None
    grading_rubric: GradingRubric = Field(default_factory=GradingRubric)


def questions_path(env_dir: str | Path) -> Path:
    """Where the release keeps an environment's questions: `environment_mix/questions/<id>.json`."""
    env_dir = Path(env_dir)
    return env_dir.parent / "questions" / f"{env_dir.name}.json"


def load_questions(path: str | Path) -> list[AgentWorldQuestion]:
    """Read a questions file as released, `{"env_id", "name", "tasks": [...]}`; one question object, a list
    of them, or `{"questions": [...]}` are read too."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    for key in ("tasks", "questions"):
        if isinstance(data, dict) and isinstance(data.get(key), list):
            data = data[key]
            break
    items = data if isinstance(data, list) else [data]
    return [AgentWorldQuestion.model_validate(item) for item in items]


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    if isinstance(value, list):
        return [x for v in value for x in _leaves(v)]
    return [value]


def state_checks(diff: StateDiff, bookkeeping: list[str]) -> list[RubricCheck]:
    """What the chain did to the state, as rubric checks (rows matched by their key)."""
    cols = ColumnFilter(bookkeeping)
    checks: list[RubricCheck] = []
    for table, d in sorted(diff.tables.items()):
        for row in d.added:
            where = {k: v for k, v in row.items() if not cols.ignored(table, k) and not isinstance(v, dict | list)}
            if where:  # a keyed object's one "row" holds only objects: nothing to match it by
                checks.append(RubricCheck(kind="row_exists", table=table, where=where))
        if d.key is None:
            for row in d.removed:
                checks.append(RubricCheck(kind="row_absent", table=table, where=row))
            continue
        for change in d.changed:
            for f, value in sorted(change.after.items()):
                checks.append(
                    RubricCheck(kind="field_equals", table=table, where={d.key: change.key}, field=f, value=value)
                )
        for row in d.removed:
            checks.append(RubricCheck(kind="row_absent", table=table, where={d.key: row.get(d.key)}))
    return checks


def answer_checks(reference: str, produced: list[Any], criteria: list[str], question: str = "") -> list[RubricCheck]:
    """Values the chain produced that the reference answer states and the question does not (echoing the
    question must not pass); those a criterion names come first."""
    seen: set[str] = set()
    candidates: list[tuple[bool, Any, str]] = []
    for value in produced:
        if isinstance(value, bool) or value is None or (isinstance(value, str) and len(value.strip()) < 2):
            continue
        mark = json.dumps(value)
        if mark in seen or not answer_contains(reference, value) or (question and answer_contains(question, value)):
            continue
        seen.add(mark)
        criterion = next((c for c in criteria if answer_contains(c, value)), "")
        candidates.append((bool(criterion), value, criterion))
    named = [c for c in candidates if c[0]]
    chosen = (named or candidates)[:MAX_ANSWER_CHECKS]
    return [
        RubricCheck(kind="answer_contains", value=v, description=c or f"the answer states {v}") for _, v, c in chosen
    ]


def question_task(spec: EnvSpec, q: AgentWorldQuestion, session_factory: SessionFactory, origin: str) -> Task:
    """A released question as a Task; its rubric comes from replaying the verified chain once."""
    chain = [ToolCall(tool=function_name(c.tool), args=c.args) for c in q.grading_rubric.verified_tool_chain]
    replay = replay_calls(session_factory, chain)
    diff = state_diff(replay.initial, replay.final, spec.bookkeeping, keys=spec.primary_keys())
    produced = [leaf for r in replay.results if r.ok for leaf in _leaves(r.value)]
    produced += [leaf for c in chain for leaf in _leaves(c.args)]
    reference = q.reference_answer if isinstance(q.reference_answer, str) else json.dumps(q.reference_answer)
    answers = answer_checks(reference, produced, q.grading_rubric.success_criteria, q.task)
    tables = sorted(set(replay.initial.tables) | set(replay.final.tables))
    rows = {t: [*replay.initial.tables.get(t, []), *replay.final.tables.get(t, [])] for t in tables}
    for check in answers:
        near = competitors(check.value, rows)
        check.competitors = [c for c in near if not any(answer_contains(text, c) for text in (q.task, reference))]
    rubric = [*state_checks(diff, spec.bookkeeping), *answers, end_state_check(spec, replay.initial, replay.final)]
    mutating = {t.name for t in spec.tools if t.mutates}
    return Task(
        id="",
        env_id=spec.id,
        kind="graph",
        question=q.task,
        answer=q.reference_answer,
        gold=chain,
        rubric=rubric,
        difficulty=Difficulty(chain_length=len(chain)),
        capabilities=["agent-world"],
        mutates=any(c.tool in mutating for c in chain),
        lineage=Lineage(
            stage=TASKS.name,
            code_version=cached_code_version(__name__),
            inputs={"questions": origin},
            generator="import",
        ),
    )


# Codes our side produces: the runtime's argument check, a tool the gate did not keep, the sandbox.
_IMPORT_CODES = {"unknown_tool", "invalid_arguments", "session_closed", "timeout", "worker_crashed", "resource_limit"}


def chain_failure(spec: EnvSpec, chain: list[ToolCall], results: list[Any], dropped: dict[str, str]) -> str | None:
    """Why a verified chain does not replay, or None: `import_error: ...` when our import is the cause,
    `chain_fails_on_release_data: ...` when the released tool refuses or crashes on the released data."""
    for i, (call, r) in enumerate(zip(chain, results, strict=False), 1):
        if r.ok:
            continue
        err = r.error
        code = err.code if err is not None else "error"
        message = err.message if err is not None else ""
        where = f"call {i} {call.tool}"
        if call.tool in dropped:
            return f"import_error: {where}: the tool was not kept ({dropped[call.tool]})"
        if code in _IMPORT_CODES or r.env_error:
            return f"import_error: {where}: {code}: {message}"
        return f"chain_fails_on_release_data: {where}: {code}: {message}"
    if len(results) < len(chain):
        return f"import_error: call {len(results) + 1} {chain[len(results)].tool}: not replayed"
    return None


def import_agent_world_tasks(
    bundle_dir: str | Path,
    questions_file: str | Path,
    *,
    seed: int = 0,
    solver: Solver | None = None,
    rubric_reward: str | None = None,
) -> TaskSynthesis:
    """Import the questions of one release environment (already imported as a bundle): a question whose
    chain does not replay is dropped with the reason; the rest go through the filter and the audit."""
    from factory.store import hash_file
    from factory.tasks.synthesize import DroppedTask, reason_code

    started = time.perf_counter()
    bundle = Bundle.open(bundle_dir)
    spec = bundle.spec
    report = bundle.report()
    dropped_tools = {
        name: "; ".join(tr.failures[:1]) or "dropped by the gate"
        for name, tr in (report.tools.items() if report is not None else [])
        if not tr.kept
    }
    questions = load_questions(questions_file)
    env, session_factory = environment_session_factory(bundle)
    with env:
        origin = hash_file(Path(questions_file))
        tasks: list[Task] = []
        failed: list[DroppedTask] = []
        for q in questions:
            chain = [ToolCall(tool=function_name(c.tool), args=c.args) for c in q.grading_rubric.verified_tool_chain]
            why = chain_failure(spec, chain, replay_calls(session_factory, chain).results, dropped_tools)
            if why is None:
                tasks.append(question_task(spec, q, session_factory, origin))
            else:
                failed.append(DroppedTask(id="", kind="graph", question=q.task, reason=why, reasons=[why]))
        result = curate_tasks(
            bundle, tasks, session_factory, seed=seed, solver=solver, rubric_reward=rubric_reward, started=started
        )
    dropped = [*failed, *result.dropped]
    summary: dict[str, int] = {}
    for d in dropped:
        summary[reason_code(d.reason)] = summary.get(reason_code(d.reason), 0) + 1
    summary["kept"] = len(result.tasks)
    return result.model_copy(
        update={
            "dropped": dropped,
            "generated": len(questions),
            "yield_rate": len(result.tasks) / len(questions) if questions else 0.0,
            "audit_summary": dict(sorted(summary.items())),
            "seconds": time.perf_counter() - started,
        }
    )
