"""Task synthesis for one environment: generate graph-walk and program tasks, then keep only those that
pass the solvability filter and the verifier audit (Agent-World, "task synthesis" + verification).

Task ids are content hashes (environment, kind, question, gold), so the same bundle and seed give the same
ids, and a task that two generators phrase the same way is kept once.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import Field

from factory.envs.bundle import Bundle
from factory.models import Lineage, Model, Task
from factory.pipeline.registry import TASKS
from factory.sandbox import SandboxPool
from factory.store import hash_value
from factory.tasks.difficulty import Knobs, Shortfall, knobs_for, shortfall_summary
from factory.tasks.filter import MIN_SUCCESSES, VALIDATION_RUNS, Solver, filter_task
from factory.verify.audit import audit_task
from factory.verify.code import Runner
from factory.verify.scoring import SessionFactory, VerdictCache, environment_session_factory, rubric_reward_setting

TaskKindChoice = Literal["graph", "program", "both"]
Generate = Callable[[Bundle, SessionFactory, random.Random, int, Knobs, Counter[str]], list[Task]]
REPORTED_MISSES = 3  # the most common reasons an empty run names
NOTHING_TO_TRY = (
    "no family applies (each needs a listing callable without arguments or with only a scope its rows hold, "
    "or a search for a word of their names, whose rows have a field to filter, "
    "rank, count or join on)"
)


class DroppedTask(Model):
    id: str
    kind: str
    question: str
    reason: str  # the first reason; `reasons` has all of them
    reasons: list[str] = Field(default_factory=list)


class TaskSynthesis(Model):
    """What one synthesis run produced and why the rest was dropped."""

    env_id: str
    tasks: list[Task] = Field(default_factory=list)
    dropped: list[DroppedTask] = Field(default_factory=list)
    generated: int = 0
    yield_rate: float = 0.0  # kept / generated
    audit_summary: dict[str, int] = Field(default_factory=dict)  # reason code -> tasks dropped for it; "kept"
    knobs: Knobs = Field(default_factory=Knobs)
    shortfalls: dict[str, Shortfall] = Field(default_factory=dict)  # knob -> kept tasks that stayed below it
    seconds: float = 0.0
    misses: dict[str, int] = Field(default_factory=dict)  # "walk: ..."/"program: ..." -> attempts that made no task


def task_id(task: Task) -> str:
    """A content id: the same environment, kind, question and gold give the same id."""
    gold = task.gold if isinstance(task.gold, str) else [c.model_dump(mode="json") for c in task.gold]
    digest = hash_value({"env": task.env_id, "kind": task.kind, "question": task.question, "gold": gold})
    return f"{task.kind}-{digest[:12]}"


def reason_code(reason: str) -> str:
    return reason.split(":", 1)[0].strip()


def curate_tasks(
    bundle: Bundle,
    tasks: Sequence[Task],
    session_factory: SessionFactory,
    *,
    seed: int = 0,
    solver: Solver | None = None,
    runs: int = VALIDATION_RUNS,
    min_successes: int = MIN_SUCCESSES,
    rubric_reward: str | None = None,
    runner: Runner | None = None,
    started: float | None = None,
    audit: bool = True,
) -> TaskSynthesis:
    """Give tasks content ids and lineage, drop duplicates, then the filter, then (unless `audit` is
    False, when the audit runs as its own stage) the audit."""
    started = time.perf_counter() if started is None else started
    reward = rubric_reward_setting(rubric_reward)
    env_hash = bundle.content_hash
    kept: list[Task] = []
    dropped: list[DroppedTask] = []
    seen: set[str] = set()
    for raw in tasks:
        lineage = raw.lineage or Lineage(stage=TASKS.name, code_version=TASKS.code_version, inputs={"bundle": env_hash})
        task = raw.model_copy(update={"lineage": lineage})
        task = task.model_copy(update={"id": task_id(task)})
        if task.id in seen:
            reasons = ["duplicate: the same question and gold as an earlier task"]
        else:
            seen.add(task.id)
            cache = VerdictCache()
            f = filter_task(
                bundle,
                task,
                session_factory,
                solver=solver,
                runs=runs,
                min_successes=min_successes,
                seed=seed,
                rubric_reward=reward,
                runner=runner,
                cache=cache,
            )
            reasons = f.reasons
            if f.kept and audit:
                reasons = audit_task(
                    bundle, task, session_factory, gold=f.gold, rubric_reward=reward, runner=runner, cache=cache
                ).reasons
        _sort(task, reasons, kept, dropped)
    return _synthesis(bundle, kept, dropped, len(tasks), started)


def _sort(task: Task, reasons: list[str], kept: list[Task], dropped: list[DroppedTask]) -> None:
    """Keep a task with no reasons against it; drop it with its reasons otherwise."""
    if reasons:
        dropped.append(
            DroppedTask(id=task.id, kind=task.kind, question=task.question, reason=reasons[0], reasons=reasons)
        )
    else:
        kept.append(task)


def _synthesis(
    bundle: Bundle, kept: list[Task], dropped: list[DroppedTask], generated: int, started: float
) -> TaskSynthesis:
    summary = Counter(reason_code(d.reason) for d in dropped)
    summary["kept"] = len(kept)
    return TaskSynthesis(
        env_id=bundle.spec.id,
        tasks=kept,
        dropped=dropped,
        generated=generated,
        yield_rate=len(kept) / generated if generated else 0.0,
        audit_summary=dict(sorted(summary.items())),
        seconds=time.perf_counter() - started,
    )


def audit_tasks(
    bundle_dir: str | Path | Bundle,
    tasks: Sequence[Task],
    *,
    rubric_reward: str | None = None,
    pool: SandboxPool | None = None,
) -> TaskSynthesis:
    """The verifier audit alone, over tasks that already passed the filter: the `verifiers` stage."""
    started = time.perf_counter()
    bundle = bundle_dir if isinstance(bundle_dir, Bundle) else Bundle.open(bundle_dir)
    reward = rubric_reward_setting(rubric_reward)
    env, session_factory = environment_session_factory(bundle, pool)
    runner = pool.run_function if pool else None
    kept: list[Task] = []
    dropped: list[DroppedTask] = []
    with env:
        for task in tasks:
            verdict = audit_task(bundle, task, session_factory, rubric_reward=reward, runner=runner)
            _sort(task, verdict.reasons, kept, dropped)
    return _synthesis(bundle, kept, dropped, len(tasks), started)


def _graph_generator(
    bundle: Bundle, session_factory: SessionFactory, rng: random.Random, n: int, knobs: Knobs, misses: Counter[str]
) -> list[Task]:
    from factory.graphs import build_tool_graph
    from factory.tasks.walks import synthesize_graph_tasks

    return synthesize_graph_tasks(bundle, session_factory, build_tool_graph(bundle.spec), rng, n, knobs, misses)


def _program_generator(
    bundle: Bundle, session_factory: SessionFactory, rng: random.Random, n: int, knobs: Knobs, misses: Counter[str]
) -> list[Task]:
    from factory.tasks.programs import synthesize_program_tasks

    return synthesize_program_tasks(bundle, session_factory, rng, n, knobs=knobs, misses=misses)


GENERATORS: dict[str, Generate] = {"graph": _graph_generator, "program": _program_generator}


def synthesize_tasks(
    bundle_dir: str | Path | Bundle,
    *,
    n: int = 20,
    seed: int = 0,
    kind: TaskKindChoice = "both",
    solver: Solver | None = None,
    rubric_reward: str | None = None,
    audit: bool = True,
    pool: SandboxPool | None = None,
    knobs: Knobs | None = None,
) -> TaskSynthesis:
    """Generate about `n` tasks of `kind` (`both`: half graph-walk, half program) at the difficulty `knobs`
    (None: the FACTORY_DIFFICULTY preset, else medium) and curate them; tools and verifiers run in `pool`
    (the process's default pool when None). The result counts the kept tasks that fell short of a knob."""
    if kind not in ("graph", "program", "both"):
        raise ValueError(f"kind must be graph, program or both, not {kind!r}")
    knobs = knobs or knobs_for()
    started = time.perf_counter()
    bundle = bundle_dir if isinstance(bundle_dir, Bundle) else Bundle.open(bundle_dir)
    counts = {"graph": n - n // 2, "program": n // 2} if kind == "both" else {kind: n}
    env, session_factory = environment_session_factory(bundle, pool)
    misses: Counter[str] = Counter()
    with env:
        tasks: list[Task] = []
        for k, count in counts.items():
            if count > 0:
                made = GENERATORS[k](bundle, session_factory, random.Random(f"{seed}:{k}"), count, knobs, misses)
                tasks += [_at_level(t, knobs) for t in made]
                if not made and not any(r.startswith(f"{k}: ") for r in misses):
                    misses[f"{k}: {NOTHING_TO_TRY}"] += 1
        result = curate_tasks(
            bundle,
            tasks,
            session_factory,
            seed=seed,
            solver=solver,
            rubric_reward=rubric_reward,
            runner=pool.run_function if pool else None,
            started=started,
            audit=audit,
        )
    return _with_shortfalls(result, knobs).model_copy(update={"misses": dict(misses.most_common())})


def nothing_kept(result: TaskSynthesis) -> str:
    """Why a synthesis run kept no task: none could be generated at all, or every generated one was dropped."""
    if not result.generated:
        return f"no task could be generated: {_attempts(result.misses)}"
    return f"no task survived the filter and the audit ({result.generated} generated)"


def _attempts(misses: dict[str, int]) -> str:
    """How many walks and program drafts were tried, and the commonest reasons each made no task."""
    parts = []
    for kind, noun in (("walk", "walks"), ("program", "program drafts")):
        mine = {r.split(": ", 1)[1]: c for r, c in misses.items() if r.startswith(f"{kind}: ")}
        if not mine:
            continue
        if NOTHING_TO_TRY in mine:
            parts.append(f"no {noun} to try: {NOTHING_TO_TRY}")
            continue
        top = sorted(mine.items(), key=lambda kv: (-kv[1], kv[0]))[:REPORTED_MISSES]
        said = "; ".join(f"{r} ({c})" for r, c in top)
        parts.append(f"{sum(mine.values())} {noun} attempted, none kept (most often: {said})")
    return "; ".join(parts) or "nothing was attempted"


def _at_level(task: Task, knobs: Knobs) -> Task:
    return task.model_copy(update={"difficulty": task.difficulty.model_copy(update={"level": knobs.level})})


def _with_shortfalls(result: TaskSynthesis, knobs: Knobs) -> TaskSynthesis:
    """`result` with how many kept tasks stayed below each knob, and an example of each."""
    return result.model_copy(update={"knobs": knobs, "shortfalls": shortfall_summary(result.tasks, knobs)})
