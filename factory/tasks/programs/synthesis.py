"""Synthesis: run each draft's gold in a fresh session and keep the drafts whose gold makes a task.

A task has one right answer only if its question has one reading: before a draft is kept, the readings its
words leave open (a row on the threshold counted, voided rows left out, the list tool's own range filter) run
as gold programs too, and a draft that any of them answers differently is dropped with that reading.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Any

from factory.envs.bundle import Bundle
from factory.envs.runtime import ProgramRun, Session
from factory.models import Lineage, Task, ToolSpec
from factory.pipeline.registry import TASKS
from factory.store import hash_value
from factory.tasks.difficulty import Knobs
from factory.tasks.programs.conditions import Selection, StatusRule
from factory.tasks.programs.draft import Draft
from factory.tasks.programs.registry import FAMILIES, FAMILY_MARK
from factory.tasks.programs.verifier import expected_changes, verifier_source
from factory.tasks.programs.view import EnvView, Rows, scoped_listings, shown_rows, words

SHORT_STREAK = 2  # a family whose tasks fall short of chain_length this many times in a row waits its turn
SessionFactory = Callable[[], AbstractContextManager[Session]]
Changes = dict[str, dict[str, Any]]


@dataclass(frozen=True)
class DroppedDraft:
    """A draft that made no task, and why."""

    family: str
    question: str
    reason: str


def names_a_tool(question: str, tools: list[ToolSpec]) -> bool:
    """Questions describe goals, never calls: one that names a tool is not used."""
    return any(re.search(rf"\b{re.escape(t.name)}\b", question) for t in tools)


def _unacceptable(draft: Draft, answer: Any, changes: Changes) -> str | None:
    """Why a gold run is worth no task: no real answer, or a state change where the task asks for none (or
    none where it asks for one)."""
    if answer is None or answer == [] or answer == {}:
        return "trivial: the gold answers nothing"
    if isinstance(answer, float) and not math.isfinite(answer):
        return "trivial: the gold's answer is not a finite number"
    if bool(changes) != draft.mutates:
        return "mutation: the gold writes nothing" if draft.mutates else "mutation: a read-only task's gold writes"
    return None


def _run(program: str, view: EnvView, session_factory: SessionFactory) -> tuple[ProgramRun, Changes]:
    """`program` run in a fresh session: what it did, and what it wrote to the seed state."""
    with session_factory() as session:
        run = session.run_program(program)
        final = session.snapshot().tables
    return run, expected_changes(view.spec, view.seed, final)


def _status_reason(rule: StatusRule) -> str:
    return f"ambiguous: answer changes if {rule.things} {rule.which()} {'count' if rule.counted else 'do not count'}"


def _open_readings(sel: Selection, rows: Rows, question: str) -> Iterator[tuple[str, Selection]]:
    """Other readings of one selection the question's words allow, each with the reason it would give to drop."""
    cond = sel.condition
    inclusive = cond.inclusive() if cond is not None else None
    if cond is not None and inclusive is not None:
        other = replace(sel, condition=inclusive)
        boundary = [str(r.get(sel.entity.primary_key)) for r in rows if other.test(r) and not sel.test(r)]
        if boundary:  # the rows either reading picks are the same otherwise: so is the answer
            sit = "row " + boundary[0] + " sits" if len(boundary) == 1 else f"rows {', '.join(boundary[:3])} sit"
            yield f"ambiguous: boundary {sit} on the threshold {cond.value}", other
    filters = cond.tool_filter(sel.tool) if cond is not None else None
    if filters:
        said = ", ".join(f"{k}={v!r}" for k, v in filters.items())
        yield f"ambiguous: the list tool's own filter ({said}) gives another answer", replace(sel, via_tool=True)
    if sel.status is not None and sel.status.phrase() not in question:
        yield _status_reason(sel.status.flipped()), replace(sel, status=sel.status.flipped())
    states = sel.unruled(rows) if sel.status is None else ()
    if states:
        rule = StatusRule(words(sel.entity.table), states, counted=False)
        yield _status_reason(rule), replace(sel, status=rule)


def other_readings(draft: Draft, view: EnvView) -> list[tuple[str, str]]:
    """(reason, gold program) of each reading the question leaves open and the seed data could tell apart."""
    if draft.write is None:
        return []
    out = []
    for i, sel in enumerate(draft.selections):
        for reason, other in _open_readings(sel, view.rows(sel.entity), draft.question):
            out.append((reason, draft.write((*draft.selections[:i], other, *draft.selections[i + 1 :]))))
    return out


def ambiguity(
    draft: Draft, view: EnvView, session_factory: SessionFactory, answer: Any, changes: Changes
) -> str | None:
    """The first open reading whose gold gives another answer or other writes than the draft's, as a drop reason."""
    for reason, source in other_readings(draft, view):
        run, wrote = _run(source, view, session_factory)
        if run.error is None and (run.answer, wrote) != (answer, changes):
            return reason
    return None


FIRST_PAGE = '''

class _FirstPage:
    """The tools, but every listing ends after its first page."""

    def __init__(self, tools, lists):
        self._tools, self._lists = tools, lists

    def __getattr__(self, name):
        fn = getattr(self._tools, name)
        if name not in self._lists:
            return fn

        def first(**args):
            page = fn(**args)
            if isinstance(page, dict) and "items" in page:
                page = dict(page, next_offset=None)
            return page

        return first


def solve(tools):
    return _solve_every_page(_FirstPage(tools, LISTS))
'''


def first_page_program(source: str, tools: list[ToolSpec]) -> str:
    """`source` run with list tools that return only their first page: `solve` renamed and wrapped."""
    lists = sorted(t.name for t in tools if t.operation is not None and t.operation.kind in ("list", "search"))
    renamed = re.sub(r"^def solve\(", "def _solve_every_page(", source, count=1, flags=re.M)
    return renamed + f"\n\nLISTS = {set(lists)!r}\n" + FIRST_PAGE


def needs_pagination(
    draft: Draft, view: EnvView, session_factory: SessionFactory, answer: Any, changes: Changes
) -> bool:
    """Whether one page of each listing cannot answer it: the first-page run fails, answers or writes otherwise."""
    run, wrote = _run(first_page_program(draft.program, view.spec.tools), view, session_factory)
    return run.error is not None or (run.answer, wrote) != (answer, changes)


COUNTED = '''

class _Counted:
    """The tools, counting the calls the environment refuses (a result with an "error")."""

    def __init__(self, tools):
        self._tools, self.refused = tools, 0

    def __getattr__(self, name):
        fn = getattr(self._tools, name)

        def call(**args):
            result = fn(**args)
            if isinstance(result, dict) and "error" in result:
                self.refused += 1
            return result

        return call


def solve(tools):
    counted = _Counted(tools)
    return {"answer": _solve_counted(counted), "refused": counted.refused}
'''


def counted_program(source: str) -> str:
    """`source` run so that it answers {"answer": its answer, "refused": the calls the environment refused}."""
    return re.sub(r"^def solve\(", "def _solve_counted(", source, count=1, flags=re.M) + COUNTED


def _run_counted(program: str, view: EnvView, session_factory: SessionFactory) -> tuple[ProgramRun, Changes, int]:
    """`program` run as `_run` does, with the number of its calls the environment refused (the recovery it met)."""
    run, changes = _run(counted_program(program), view, session_factory)
    if run.error is not None or not isinstance(run.answer, dict):
        return run, changes, 0
    return run.model_copy(update={"answer": run.answer.get("answer")}), changes, int(run.answer.get("refused") or 0)


def realize(draft: Draft, bundle: Bundle, view: EnvView, session_factory: SessionFactory) -> Task | str:
    """Run the draft's gold in a fresh session and turn it into a Task; or say why it makes none.

    The task's `difficulty.recovery` is what the gold run met: the calls the environment refused, counted from
    their results (never the draft's intent), and a task whose gold met any has the capability "recovery"."""
    spec, seed = view.spec, view.seed
    if names_a_tool(draft.question, spec.tools):
        return "names a tool: questions describe goals, never calls"
    run, changes, refused = _run_counted(draft.program, view, session_factory)
    if run.error is not None:
        return f"gold failed: {run.error}"
    reason = _unacceptable(draft, run.answer, changes) or ambiguity(draft, view, session_factory, run.answer, changes)
    if reason is not None:
        return reason
    paginates = needs_pagination(draft, view, session_factory, run.answer, changes)
    task_id = f"{spec.id}{FAMILY_MARK}{draft.family}-{hash_value([draft.question, draft.program])[:10]}"
    tools_used = {c.tool for c in run.calls}
    paged = Counter(c.tool for c in run.calls if "offset" in c.args)
    pages = max(paged.values(), default=1)
    difficulty = draft.difficulty.model_copy(
        update={
            "chain_length": max(draft.difficulty.chain_length, len(tools_used)),
            "pages": pages,
            "recovery": refused,
        }
    )
    capabilities = list(draft.capabilities)
    if refused and "recovery" not in capabilities:
        capabilities.append("recovery")
    if paginates and "pagination" not in capabilities:
        capabilities.append("pagination")
    return Task(
        id=task_id,
        env_id=spec.id,
        kind="program",
        question=draft.question,
        answer=run.answer,
        gold=draft.program,
        verifier=verifier_source(task_id, spec, run.answer, changes, seed),
        difficulty=difficulty,
        capabilities=capabilities,
        mutates=draft.mutates,
        gold_calls=len(run.calls),
        needs_pagination=paginates,
        lineage=Lineage(
            stage=TASKS.name,
            code_version=TASKS.code_version,
            inputs={"bundle": bundle.content_hash},
        ),
    )


def synthesize_program_tasks(
    bundle: Bundle,
    session_factory: SessionFactory,
    rng: random.Random,
    n: int,
    dropped: list[DroppedDraft] | None = None,
    knobs: Knobs | None = None,
    misses: Counter[str] | None = None,
) -> list[Task]:
    """Up to `n` program tasks on one environment, spread over the families that apply to it.

    Families take turns (in an order drawn from `rng`); each proposes instances on the seed state, and an
    instance becomes a task only when its gold program runs cleanly, gives a non-trivial answer, and no other
    reading of its question answers differently. The drafts that made no task go to `dropped`, with why, and
    are counted in `misses` by the kind of reason.
    """
    if n <= 0:
        return []
    knobs = knobs or Knobs()
    spec = bundle.spec
    with session_factory() as session:
        seed = session.snapshot().tables
        view = EnvView(spec=spec, seed=seed, knobs=knobs)
        view.shown = shown_rows(view, session)
        view.scoped = scoped_listings(view)
    names = list(FAMILIES)
    rng.shuffle(names)
    queues = {name: iter(FAMILIES[name](view, random.Random(rng.random()))) for name in names}
    tasks: list[Task] = []
    short: list[Task] = []  # tasks below the chain_length knob: used only when nothing longer is left
    parked: dict[str, Iterator[Draft]] = {}  # families whose last tasks all fell short
    streak: Counter[str] = Counter()
    seen: set[str] = set()
    while len(tasks) < n and (queues or parked):
        if not queues:  # only short tasks are left to make: take those the families already made first
            if len(tasks) + len(short) >= n:
                break
            queues, parked = parked, {}
        for name in list(queues):
            if len(tasks) >= n:
                break
            draft = next(queues[name], None)
            if draft is None:
                del queues[name]
                continue
            if draft.program in seen:
                continue
            seen.add(draft.program)
            task = realize(draft, bundle, view, session_factory)
            if isinstance(task, str):
                if misses is not None:
                    misses[f"program: {task.split(':', 1)[0]}"] += 1
                if dropped is not None:
                    dropped.append(DroppedDraft(draft.family, draft.question, task))
                continue
            if task.gold_calls >= knobs.chain_length:
                tasks.append(task)
                streak[name] = 0
                continue
            short.append(task)
            streak[name] += 1
            if streak[name] >= SHORT_STREAK and name in queues:
                parked[name] = queues.pop(name)
    short.sort(key=lambda t: -t.gold_calls)
    return tasks + short[: n - len(tasks)]
