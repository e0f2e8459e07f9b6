"""Synthesis: run each draft's gold in a fresh session and keep the drafts whose gold makes a task."""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from factory.envs.bundle import Bundle
from factory.envs.runtime import Session
from factory.models import EnvSpec, Lineage, Task, ToolSpec
from factory.pipeline.registry import TASKS
from factory.store import hash_value
from factory.tasks.programs.draft import Draft
from factory.tasks.programs.registry import FAMILIES, FAMILY_MARK
from factory.tasks.programs.verifier import expected_changes, verifier_source
from factory.tasks.programs.view import EnvView, Rows

SessionFactory = Callable[[], AbstractContextManager[Session]]


def names_a_tool(question: str, tools: list[ToolSpec]) -> bool:
    """Questions describe goals, never calls: one that names a tool is not used."""
    return any(re.search(rf"\b{re.escape(t.name)}\b", question) for t in tools)


def _acceptable(draft: Draft, answer: Any, changes: dict[str, dict[str, Any]]) -> bool:
    """A gold run worth a task: a real answer, and a state change exactly when the task asks for one."""
    if answer is None or answer == [] or answer == {}:
        return False
    if isinstance(answer, float) and not math.isfinite(answer):
        return False
    return bool(changes) == draft.mutates


def realize(
    draft: Draft, bundle: Bundle, spec: EnvSpec, seed: dict[str, Rows], session_factory: SessionFactory
) -> Task | None:
    """Run the draft's gold in a fresh session and turn it into a Task; None when the gold fails or says nothing."""
    if names_a_tool(draft.question, spec.tools):
        return None
    with session_factory() as session:
        run = session.run_program(draft.program)
        if run.error is not None:
            return None
        final = session.snapshot().tables
    changes = expected_changes(spec, seed, final)
    if not _acceptable(draft, run.answer, changes):
        return None
    task_id = f"{spec.id}{FAMILY_MARK}{draft.family}-{hash_value([draft.question, draft.program])[:10]}"
    tools_used = {c.tool for c in run.calls}
    pages = sum(1 for c in run.calls if "offset" in c.args)
    difficulty = draft.difficulty.model_copy(
        update={"chain_length": max(draft.difficulty.chain_length, len(tools_used))}
    )
    capabilities = list(draft.capabilities)
    if pages > len({c.tool for c in run.calls if "offset" in c.args}) and "pagination" not in capabilities:
        capabilities.append("pagination")
        difficulty = difficulty.model_copy(update={"pagination": True})
    return Task(
        id=task_id,
        env_id=spec.id,
        kind="program",
        question=draft.question,
        answer=run.answer,
        gold=draft.program,
        verifier=verifier_source(task_id, spec, run.answer, changes),
        difficulty=difficulty,
        capabilities=capabilities,
        mutates=draft.mutates,
        lineage=Lineage(
            stage=TASKS.name,
            code_version=TASKS.code_version,
            inputs={"bundle": bundle.content_hash},
        ),
    )


def synthesize_program_tasks(bundle: Bundle, session_factory: SessionFactory, rng: random.Random, n: int) -> list[Task]:
    """Up to `n` program tasks on one environment, spread over the families that apply to it.

    Families take turns (in an order drawn from `rng`); each proposes instances on the seed state, and an
    instance becomes a task only when its gold program runs cleanly and gives a non-trivial answer.
    """
    if n <= 0:
        return []
    spec = bundle.spec
    with session_factory() as session:
        seed = session.snapshot().tables
    view = EnvView(spec=spec, seed=seed)
    names = list(FAMILIES)
    rng.shuffle(names)
    queues = {name: iter(FAMILIES[name](view, random.Random(rng.random()))) for name in names}
    tasks: list[Task] = []
    seen: set[str] = set()
    while queues and len(tasks) < n:
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
            task = realize(draft, bundle, spec, seed, session_factory)
            if task is not None:
                tasks.append(task)
    return tasks
