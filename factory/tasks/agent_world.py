"""Import the tasks of Agent-World release environments (the format of its `environment_mix/` and question files).

`environment_mix/questions/<id>.json` is `{"env_id", "name", "tasks": [...]}` (a bare list or one question is
read too); each question has `task`, `reference_answer`, `grading_rubric {success_criteria[],
verified_tool_chain[{tool, args}]}`. Each becomes a graph task whose
gold is the verified chain and whose rubric is built offline from what can be checked mechanically:
- state checks from the chain's effect, replayed in a fresh session of the imported bundle (rows created,
  fields changed, rows deleted; bookkeeping columns left out), and an end_state check that nothing else
  changes (a read-only chain: nothing at all);
- answer checks for the values of the reference answer that the chain actually produced (ids, names,
  numbers, dates), preferring those a success criterion names, whose text becomes the check's description,
  and those with competitors: what another record (nested ones too) or a near miss would give (the column's
  other values, a count's neighbours), less what the question or the reference answer states. A write whose
  reference states nothing the chain reproduces is judged by its effect alone (no answer);
- answer checks for the facts a criterion names by field and the question asks for (a commit's `source_url`
  for "the URLs", see factory/tasks/criteria.py), stated by the reference or not: the gold answer adds them.
Free-text criteria that name no value are left to an LLM judge (a later stage). A value the question itself
states is never an answer check (an answer that echoes the question must not pass). A chain that fails on
replay drops its question before the filter, with `chain_fails_on_release_data: ...` when the released tool
refused or crashed on the released data, and `import_error: ...` when our import is why (our binding or
argument check refused it, or the gate dropped a tool the chain needs although the chain runs with it). A
chain that needs a dropped tool is run again with every released tool bound (`release_replay`) to tell the
two apart. A chain that replays but answers otherwise than a success criterion says (status "failed" where
it wants "succeeded") is dropped as `criterion_contradicted: ...`. The rest go through the same filter and audit as
ours.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from factory.envs.bundle import Bundle
from factory.envs.importers import CHECKPOINT_SUFFIX, KEY_FIELD, function_name, sampling_records
from factory.models import Difficulty, EnvSpec, Lineage, RubricCheck, Task, ToolCall
from factory.pipeline.code_versions import cached_code_version
from factory.pipeline.registry import TASKS
from factory.tasks.choices import path_fields, solver_choices
from factory.tasks.criteria import asked_facts, contradicted, question_gives, stated_facts
from factory.tasks.end_state import end_state_check
from factory.tasks.filter import Solver, checked_values, value_key, value_keys
from factory.tasks.lookups import with_lookups
from factory.tasks.programs.verifier import competitors
from factory.tasks.synthesize import TaskSynthesis, curate_tasks
from factory.verify.answers import answer_contains
from factory.verify.scoring import (
    Replay,
    SessionFactory,
    environment_session_factory,
    replay_calls,
    replay_writes,
)
from factory.verify.state import ColumnFilter, StateDiff, json_leaves, state_diff

MAX_ANSWER_CHECKS = 6
_ID = re.compile(r"^((?:[A-Za-z]+_)*)([A-Za-z0-9_-]{8,})$")  # an id: word prefixes (`oso_pol_`), its drawn part
_HEX = re.compile(r"[0-9a-f]{16,}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# A criterion's references to the chain ("Step 0 returns...", "$1.data.0.id", "call 2", "data[0]") name no value.
_STEP_REFS = re.compile(r"\b(?:steps?|calls?)\s*#?\d+\b|\$\d+(?:\.[\w\[\]-]+)*|\[\d+\]", re.IGNORECASE)


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


def state_checks(diff: StateDiff, bookkeeping: list[str], question: str = "") -> list[RubricCheck]:
    """What the chain did to the state, as rubric checks (rows matched by their key). An added row is found
    by its content: the id a create draws depends on the calls before it (one more read, another id), so it
    counts only where the question states it."""
    cols = ColumnFilter(bookkeeping)
    checks: list[RubricCheck] = []
    for table, d in sorted(diff.tables.items()):
        for row in d.added:
            where = {
                k: v
                for k, v in row.items()
                if not cols.ignored(table, k)
                and not isinstance(v, dict | list)
                and (k != d.key or answer_contains(question, v))
            }
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


def answer_checks(
    reference: str,
    produced: list[Any],
    criteria: list[str],
    question: str = "",
    rows: dict[str, list[dict[str, Any]]] | None = None,
    any_value: bool = True,
    asked: list[tuple[Any, str]] | None = None,
    last: set[tuple[str, Any]] | None = None,
) -> list[RubricCheck]:
    """Values the chain produced that the reference answer states and the question does not (echoing the
    question must not pass): those a criterion names (its references to chain steps aside) that another record
    would answer differently, else, with `any_value` (a read's answer is all it has), the others that would, else
    the named ones, else any; at most MAX_ANSWER_CHECKS. A write whose criteria name no value is judged by its
    effect. The `asked` facts (value, criterion) come first, stated by the reference or not (see
    factory/tasks/criteria.py). With the state's `rows`, each check gets
    its competitors (what another record would give, less what the question or the reference states), and
    values that have some come first: a tag every record carries tells no answer from another. A read whose
    checks all come from its first calls gets one of the `last` values, those only its last call answers with,
    a number first: the start of a route the geocode gave does not show that the directions were computed."""
    seen: set[str] = {json.dumps(value) for value, _ in asked or []}
    facts = [RubricCheck(kind="answer_contains", value=value, description=c) for value, c in asked or []]
    candidates: list[RubricCheck] = []
    named: set[int] = set()
    for value in produced:
        if isinstance(value, bool) or value is None or (isinstance(value, str) and len(value.strip()) < 2):
            continue
        mark = json.dumps(value)
        if mark in seen or not answer_contains(reference, value) or question_gives(question, value):
            continue
        seen.add(mark)
        criterion = next((c for c in criteria if answer_contains(_STEP_REFS.sub(" ", c), value)), "")
        if criterion:
            named.add(len(candidates))
        candidates.append(
            RubricCheck(kind="answer_contains", value=value, description=criterion or f"the answer states {value}")
        )
    if rows is not None:
        for check in [*facts, *candidates]:
            near = competitors(check.value, rows)
            check.competitors = [c for c in near if not any(answer_contains(t, c) for t in (question, reference))]
    said = [c for i, c in enumerate(candidates) if i in named]
    telling = [c for c in said if rows is None or c.competitors]  # a tag every record carries tells nothing
    others = [c for i, c in enumerate(candidates) if i not in named and c.competitors]
    # a read falls back on the reference's other values only when nothing it asks for is known
    tiers = [telling, others, said, candidates] if any_value and not facts else [telling, said]
    checks = [*facts, *next((tier for tier in tiers if tier), [])][:MAX_ANSWER_CHECKS]
    if any_value and not facts and last and not any(value_key(c.value) in last for c in checks):
        # what it computed (a distance) before what names its request (an endpoint's path)
        ends = sorted((c for c in candidates if value_key(c.value) in last), key=lambda c: isinstance(c.value, str))
        end = next((c for c in ends if c.competitors), ends[0] if ends else None)
        checks = [*checks[: MAX_ANSWER_CHECKS - 1], end] if end is not None else checks
    required = {value_key(c.value) for c in checks} - {None}  # what one check asks for competes with no other
    for c in checks:
        c.competitors = [x for x in c.competitors if value_key(x) not in required]
    return checks


def _outputs(results: list[Any]) -> list[Any]:
    """The chain's outputs in order, None where a call failed."""
    return [r.value if r.ok else None for r in results]


def _record_lists(initial: dict[str, list[Any]], final: dict[str, list[Any]]) -> dict[str, list[dict[str, Any]]]:
    """The records of both states by the list that holds them, nested lists too: the competitors of an
    employee's name in a `world.json` keyed by system are the other employees' names, not the other systems'.
    A record the chain changed counts once, as it ends: "from 14 to 9 days" states its before-value, no other
    record's."""
    out: dict[str, list[dict[str, Any]]] = {}
    ends = {(name, _identity(r)) for name, r in sampling_records(final)}
    for name, record in sampling_records(initial):
        if _identity(record) is None or (name, _identity(record)) not in ends:
            out.setdefault(name, []).append(record)
    for name, record in sampling_records(final):
        out.setdefault(name, []).append(record)
    return out


def _identity(record: dict[str, Any]) -> str | None:
    key = record.get("id", record.get(KEY_FIELD))
    return json.dumps(key) if key is not None else None


def _id_shape(value: str) -> tuple[str, int] | None:
    """What ids of one kind share: their prefix and length (`oso_pol_` and 20 of `oso_pol_MNT42YZ45Q01KZ7W3RC5`;
    a bare hex id's length); None for text that is no generated id."""
    m = _ID.match(value)
    if m is None:
        return None
    prefix, rest = m.groups()
    if not re.search(r"\d", rest) or (not prefix and not _HEX.fullmatch(rest)):
        return None
    return prefix, len(rest)


def rebind_created_ids(session_factory: SessionFactory, chain: list[ToolCall], question: str) -> list[ToolCall]:
    """The chain with each id that an earlier call created in the release's original run (one the released data
    does not hold, nor the question states) replaced by the id the same call creates here: the released
    `deploy_policy(policy_id=...)` after `create_policy` names the policy that run made, which no replay has."""
    out: list[ToolCall] = []
    with session_factory() as session:
        held = {v for v in json_leaves(session.snapshot().tables) if isinstance(v, str)}
        created: dict[tuple[str, int], str] = {}  # id shape -> the latest id of it a call answered with, new here
        for call in chain:
            args = {
                k: created.get(p, v)
                if isinstance(v, str) and v not in held and v not in question and (p := _id_shape(v))
                else v
                for k, v in call.args.items()
            }
            out.append(ToolCall(tool=call.tool, args=args))
            result = session.call(call.tool, dict(args))
            for v in json_leaves(result.value) if result.ok else ():
                if isinstance(v, str) and v not in held and (p := _id_shape(v)):
                    created[p] = v
    return out


def _with_facts(reference: Any, facts: list[Any]) -> Any:
    if not facts:
        return reference
    text = reference if isinstance(reference, str) else json.dumps(reference)
    return "\n".join([text, *(str(f) for f in facts)])


def question_task(
    spec: EnvSpec,
    q: AgentWorldQuestion,
    session_factory: SessionFactory,
    origin: str,
    chain: list[ToolCall] | None = None,
) -> Task:
    """A released question as a Task; its rubric comes from replaying the verified chain (or `chain`, the one
    rebound to this replay's ids) once. Fields and outputs that the solver's own choices decide (its words for a
    reason, a new table's key name: factory/tasks/choices.py) are left out of its checks, as bookkeeping is."""
    if chain is None:
        chain = [ToolCall(tool=function_name(c.tool), args=c.args) for c in q.grading_rubric.verified_tool_chain]
    replay = replay_calls(session_factory, chain)
    diff = state_diff(replay.initial, replay.final, spec.bookkeeping, keys=spec.primary_keys())
    # by effect: a fetch that refreshes an index on some arguments only writes where the end state shows it
    mutates = bool(diff.tables)
    rebind = partial(rebind_created_ids, session_factory, question=q.task)
    choices = solver_choices(spec, session_factory, chain, replay, q.task, rebind)
    drawn = path_fields(spec, session_factory, chain, replay, rebind)
    if choices.fields or drawn:
        spec = spec.model_copy(update={"bookkeeping": [*spec.bookkeeping, *choices.fields, *drawn]})
        diff = state_diff(replay.initial, replay.final, spec.bookkeeping, keys=spec.primary_keys())
    produced = [leaf for r in replay.results if r.ok for leaf in json_leaves(r.value)]
    produced += [leaf for c in chain for leaf in json_leaves(c.args)]
    produced = [v for v in produced if value_key(v) not in choices.outputs]
    reference = q.reference_answer if isinstance(q.reference_answer, str) else json.dumps(q.reference_answer)
    rows = _record_lists(replay.initial.tables, replay.final.tables)
    criteria = q.grading_rubric.success_criteria
    outputs = _outputs(replay.results)
    asked: list[tuple[Any, str]] = []  # what the criteria ask for first, then what the question asks for
    named = asked_facts(criteria, chain, outputs, q.task)
    # a value every record shares ("[REDACTED]") tells no answer from another
    stated = [(v, c) for v, c in stated_facts(reference, chain, outputs, q.task, criteria) if competitors(v, rows)]
    for v, c in [*named, *stated]:
        if value_key(v) not in choices.outputs and all(repr(v) != repr(w) for w, _ in asked):
            asked.append((v, c))
    earlier = {k for v in [*outputs[:-1], *(c.args for c in chain), [c.tool for c in chain]] for k in value_keys(v)}
    last = value_keys(outputs[-1]) - earlier if outputs else set()
    answers = answer_checks(reference, produced, criteria, q.task, rows, not mutates, asked, last)
    unstated = [value for value, _ in asked if not answer_contains(reference, value)]
    rubric = [
        *state_checks(diff, spec.bookkeeping, q.task),
        *answers,
        end_state_check(spec, replay.initial, replay.final),
    ]
    return Task(
        id="",
        env_id=spec.id,
        kind="graph",
        question=q.task,
        # A write whose reply states nothing the chain reproduces (a post's ts from the original run) asks for
        # its effect only: with the reference as its answer, any reply that makes the writes "passes" an attack.
        # The gold answer states the asked facts the reference leaves out (the release's is often the last output).
        answer=_with_facts(q.reference_answer, unstated) if answers or not mutates else None,
        gold=chain,
        rubric=rubric,
        difficulty=Difficulty(chain_length=len(chain)),
        capabilities=["agent-world"],
        mutates=mutates,
        lineage=Lineage(
            stage=TASKS.name,
            code_version=cached_code_version(__name__),
            inputs={"questions": origin},
            generator="import",
        ),
    )


_CREDENTIAL = re.compile(r"key|token|secret|password|auth", re.IGNORECASE)


def _record_ids(tables: dict[str, list[Any]]) -> set[tuple[str, Any]]:
    """The text ids the data's records hold (`id`, `<x>_id`): what a call passes to find a record, not to set
    it (numbers are left out: a small one is some record's id by chance)."""
    return {
        k
        for rows in tables.values()
        for row in rows
        if isinstance(row, dict)
        for f, v in row.items()
        if (f == "id" or f.endswith("_id") or f == KEY_FIELD) and isinstance(v, str) and (k := value_key(v))
    }


def _changed_rows(spec: EnvSpec, replay: Replay) -> set[tuple[str, Any]]:
    """Every value of the rows the run changed: the path a fetch names finds the row whose change is checked."""
    out: set[tuple[str, Any]] = set()
    for table, d in state_diff(replay.initial, replay.final, spec.bookkeeping, keys=spec.primary_keys()).tables.items():
        changed = {json.dumps(c.key, default=str) for c in d.changed}
        for row in replay.final.tables.get(table, []):
            if d.key is not None and json.dumps(row.get(d.key), default=str) in changed:
                out |= value_keys(row)
    return out


def unverifiable(spec: EnvSpec, task: Task, session_factory: SessionFactory) -> str | None:
    """Why no check can see what the question asks a write for, or None: the article's status and title that
    only a request log keeps, a row limit that leaves no trace, the attributes of an entry whose column a free
    choice hides. A verifier that ignores them pays a draft article as well as the published one the question
    wants. The ids of the data's records and credentials, which a call passes to find its record, are not asked
    for this way."""
    if isinstance(task.gold, str):
        return None
    replay, writes = replay_writes(session_factory, task.gold, spec.bookkeeping, spec.primary_keys())
    checked = checked_values(task) | _record_ids(replay.initial.tables) | _changed_rows(spec, replay)
    asked = (
        (i, call, name, leaf)
        for i, (call, wrote) in enumerate(zip(task.gold, writes, strict=True))
        if wrote
        for name, value in call.args.items()
        if not _CREDENTIAL.search(name)
        for leaf in json_leaves(value)
    )
    for i, call, name, leaf in asked:
        k = value_key(leaf)
        if k is None or k in checked or (isinstance(leaf, str) and len(leaf) < 3):
            continue
        if answer_contains(task.question, leaf):
            return (
                f"unverifiable: call {i + 1} {call.tool}: {name}={leaf!r}, which the question asks for, "
                "lands in no check"
            )
    return None


# Codes our side produces: the runtime's argument check, a tool the gate did not keep, the sandbox.
_IMPORT_CODES = {"unknown_tool", "invalid_arguments", "session_closed", "timeout", "worker_crashed", "resource_limit"}


def chain_failure(
    spec: EnvSpec,
    chain: list[ToolCall],
    results: list[Any],
    dropped: dict[str, str],
    released: list[Any] | None = None,
) -> str | None:
    """Why a verified chain does not replay, or None: `import_error: ...` when our import is the cause,
    `chain_fails_on_release_data: ...` when the released tool refuses or crashes on the released data.

    `released` is the chain run with the tools the gate dropped bound too (`release_replay`): a chain that
    needs a dropped tool fails on the release's data when that run fails too (the tool crashes there, or its
    source does not compile), and is our import's fault when that run succeeds."""
    for i, (call, r) in enumerate(zip(chain, results, strict=False), 1):
        if r.ok:
            continue
        err = r.error
        code = err.code if err is not None else "error"
        message = err.message if err is not None else ""
        where = f"call {i} {call.tool}"
        if call.tool in dropped:
            return _dropped_tool_failure(chain, released, where, dropped[call.tool])
        if code in _IMPORT_CODES or r.env_error:
            return f"import_error: {where}: {code}: {message}"
        return f"chain_fails_on_release_data: {where}: {code}: {message}"
    if len(results) < len(chain):
        return f"import_error: call {len(results) + 1} {chain[len(results)].tool}: not replayed"
    return None


def _dropped_tool_failure(chain: list[ToolCall], released: list[Any] | None, where: str, gate: str) -> str:
    failing = next(((i, r) for i, r in enumerate(released or [], 1) if not r.ok), None)
    if released is None or (failing is None and len(released) == len(chain)):
        return f"import_error: {where}: the tool was not kept ({gate})"
    if failing is None:
        return f"import_error: call {len(released) + 1} {chain[len(released)].tool}: not replayed"
    i, r = failing
    code = r.error.code if r.error is not None else "error"
    message = r.error.message if r.error is not None else ""
    if code == "not_implemented":  # not in tools.py: its released source does not compile or bind
        return f"chain_fails_on_release_data: call {i} {chain[i - 1].tool}: the released implementation: {gate}"
    if code in _IMPORT_CODES or r.env_error:
        return f"import_error: call {i} {chain[i - 1].tool}: {code}: {message}"
    return f"chain_fails_on_release_data: call {i} {chain[i - 1].tool}: {code}: {message}"


def release_replay(bundle: Bundle, checkpoint: Path, chains: list[list[ToolCall]]) -> list[list[Any]]:
    """Each chain run in a fresh session of the bundle with every released tool bound, those the gate dropped
    included (their schemas from the release's checkpoint): what the release's own code does with the chain
    on the release's data. Run in the sandbox like any tool call, on a scratch copy of the bundle."""
    from factory.envs.bundle import ENV_JSON
    from factory.envs.importers import released_tools
    from factory.envs.runtime import Environment
    from factory.store import write_json_atomic

    spec = bundle.spec
    kept = {t.name for t in spec.tools}
    extra = [t for t in released_tools(checkpoint) if t.name not in kept]
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "bundle"
        shutil.copytree(bundle.path, copy)
        write_json_atomic(copy / ENV_JSON, spec.model_copy(update={"tools": [*spec.tools, *extra]}))
        with Environment.open(copy) as env:
            return [replay_calls(env.session, chain).results for chain in chains]


def _released_runs(
    bundle: Bundle, questions_file: Path, chains: list[list[ToolCall]], ours: list[list[Any]], dropped: dict[str, str]
) -> list[list[Any] | None]:
    """`release_replay` of the chains that met a dropped tool (None for the others, and for all when the
    release's checkpoint is not beside its questions)."""
    checkpoint = questions_file.parent.parent / f"{questions_file.stem}{CHECKPOINT_SUFFIX}"
    need = [
        i
        for i, (chain, results) in enumerate(zip(chains, ours, strict=True))
        if any(not r.ok and c.tool in dropped for c, r in zip(chain, results, strict=False))
    ]
    out: list[list[Any] | None] = [None] * len(chains)
    if need and checkpoint.is_file():
        for i, results in zip(need, release_replay(bundle, checkpoint, [chains[i] for i in need]), strict=True):
            out[i] = results
    return out


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
    chains = [
        [ToolCall(tool=function_name(c.tool), args=c.args) for c in q.grading_rubric.verified_tool_chain]
        for q in questions
    ]
    env, session_factory = environment_session_factory(bundle)
    with env:
        origin = hash_file(Path(questions_file))
        tasks: list[Task] = []
        failed: list[DroppedTask] = []
        chains = [
            rebind_created_ids(session_factory, chain, q.task) for q, chain in zip(questions, chains, strict=True)
        ]
        ours = [replay_calls(session_factory, chain).results for chain in chains]
        released = _released_runs(bundle, Path(questions_file), chains, ours, dropped_tools)
        for q, chain, results, rel in zip(questions, chains, ours, released, strict=True):
            why = chain_failure(spec, chain, results, dropped_tools, rel)
            if why is None and (wrong := contradicted(q.grading_rubric.success_criteria, chain, _outputs(results))):
                why = f"criterion_contradicted: {wrong}"
            if why is None:
                rebind = partial(rebind_created_ids, session_factory, question=q.task)
                gold = with_lookups(spec, session_factory, chain, q.task, rebind)
                task = question_task(spec, q, session_factory, origin, gold)
                why = unverifiable(spec, task, session_factory)
            if why is None:
                tasks.append(task)
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
