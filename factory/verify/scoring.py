"""Score a trajectory: replay its tool calls in a fresh session, then run the task's verifier.

The score never trusts what the agent saw: the calls are re-executed from the seed state, the initial
and final snapshots are taken here, and the verifier judges those. Rubric verifiers are trusted data and
run in this process; code verifiers are generated source and run in the sandbox.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from factory.envs.bundle import Bundle
from factory.models import Snapshot, Task, ToolCall, ToolResult, Trajectory, Verdict
from factory.sandbox import SandboxPool
from factory.store import hash_value
from factory.verify.code import Runner, run_code_verifier_each
from factory.verify.rubric import RubricReward, rubric_verdict
from factory.verify.state import exact_state_hash, state_diff

RUBRIC_REWARD_ENV = "FACTORY_RUBRIC_REWARD"


class SessionLike(Protocol):
    """What scoring needs of a runtime session (factory.envs.runtime.Session)."""

    def call(self, tool: str, args: dict[str, Any] | None = None) -> ToolResult: ...

    def snapshot(self) -> Snapshot: ...

    def run_program(self, source: str, entry: str = "solve", timeout_s: float = 10.0) -> Any: ...


SessionFactory = Callable[[], AbstractContextManager[SessionLike]]


def rubric_reward_setting(value: str | None = None) -> RubricReward:
    """The rubric reward rule: the argument, else FACTORY_RUBRIC_REWARD, else `all`."""
    chosen = (value or os.environ.get(RUBRIC_REWARD_ENV) or "all").strip().lower()
    if chosen not in ("all", "mean"):
        raise ValueError(f"rubric reward must be 'all' or 'mean', not {chosen!r} (from {RUBRIC_REWARD_ENV})")
    return chosen  # type: ignore[return-value]


def answer_text(value: Any) -> str | None:
    """An answer as the agent would state it: text stays text, anything else becomes its JSON."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


@dataclass
class Replay:
    """A trajectory re-executed in a fresh session: both states and every call's result."""

    initial: Snapshot
    final: Snapshot
    results: list[ToolResult] = field(default_factory=list)

    @property
    def env_errors(self) -> list[str]:
        return [f"{r.error.code}: {r.error.message}" for r in self.results if r.env_error and r.error]


def replay_calls(session_factory: SessionFactory, calls: Sequence[ToolCall]) -> Replay:
    """Run `calls` in order in a new session; a failed call is part of the trajectory, not a reason to stop."""
    with session_factory() as session:
        initial = session.snapshot()
        results = [session.call(c.tool, dict(c.args)) for c in calls]
        final = session.snapshot()
    return Replay(initial=initial, final=final, results=results)


def replay_writes(
    session_factory: SessionFactory, calls: Sequence[ToolCall], bookkeeping: list[str], keys: dict[str, str]
) -> tuple[Replay, list[bool]]:
    """`replay_calls`, with whether each call changed the state (bookkeeping aside): a fetch that refreshes an
    index only when given a ref writes on one call and reads on the next."""
    writes: list[bool] = []
    results: list[ToolResult] = []
    with session_factory() as session:
        initial = before = session.snapshot()
        for c in calls:
            results.append(session.call(c.tool, dict(c.args)))
            after = session.snapshot()
            writes.append(not state_diff(before, after, bookkeeping, keys=keys).empty)
            before = after
    return Replay(initial=initial, final=before, results=results), writes


@dataclass
class GoldRun:
    """The gold executed once in a fresh session, as a trajectory an agent could have produced."""

    trajectory: Trajectory
    replay: Replay
    error: str | None = None  # why the gold did not execute cleanly


def gold_trajectory(task: Task, session_factory: SessionFactory) -> tuple[Trajectory, str | None]:
    """The gold as a trajectory: a graph task's chain with its answer, or what a program task's `solve(tools)`
    called and returned when run in a fresh session (with the program's error, if it failed)."""
    if not isinstance(task.gold, str):
        return Trajectory(tool_calls=task.gold, final_answer=answer_text(task.answer)), None
    with session_factory() as session:
        run = session.run_program(task.gold)
    trajectory = Trajectory(tool_calls=run.calls, final_answer=answer_text(run.answer))
    return trajectory, f"program failed: {run.error}" if run.error else None


def run_gold(task: Task, session_factory: SessionFactory) -> GoldRun:
    """Execute the gold and replay it as a trajectory (what scoring does). An error result in a chain is an
    error unless the task expects exactly that refusal there (`Task.refusals`), and so is an expected refusal
    that does not come; a program that raises is an error (a program may meet an error result on purpose and
    handle it)."""
    trajectory, error = gold_trajectory(task, session_factory)
    replay = replay_calls(session_factory, trajectory.tool_calls)
    if error is None and not isinstance(task.gold, str):
        expected = {r.call: r.code for r in task.refusals}
        failed = []
        for i, (c, r) in enumerate(zip(trajectory.tool_calls, replay.results, strict=True)):
            code = r.error.code if not r.ok and r.error else None
            if code is not None and expected.get(i) != code:
                failed.append(f"call {i + 1} {c.tool}: {code}: {r.error.message if r.error else ''}")
            elif code is None and i in expected:
                failed.append(f"call {i + 1} {c.tool}: expected to be refused with {expected[i]}, it was not")
        error = failed[0] if failed else None
    return GoldRun(trajectory=trajectory, replay=replay, error=error)


class VerdictCache:
    """Code-verifier verdicts of one task by content (states and answer). Verifiers are deterministic by
    contract, so the filter and the audit, which judge the same end state many times, start the sandbox
    once per distinct input. The audit's replay check bypasses it: that one is there to catch a verifier
    that is not deterministic."""

    def __init__(self) -> None:
        self._verdicts: dict[str, Verdict] = {}

    def get(self, key: str) -> Verdict | None:
        return self._verdicts.get(key)

    def put(self, key: str, verdict: Verdict) -> None:
        self._verdicts[key] = verdict


def judge(
    task: Task,
    initial: Snapshot,
    final: Snapshot,
    answer: str | None,
    rubric_reward: RubricReward = "all",
    runner: Runner | None = None,
    cache: VerdictCache | None = None,
) -> Verdict:
    """The task's verdict on two states and an answer. A code verifier (program tasks, or any task that
    carries one) runs in the sandbox and pays 1/0; otherwise the rubric decides with the reward rule."""
    return judge_each(task, initial, [(final, answer)], rubric_reward, runner, cache)[0]


def judge_each(
    task: Task,
    initial: Snapshot,
    cases: Sequence[tuple[Snapshot, str | None]],
    rubric_reward: RubricReward = "all",
    runner: Runner | None = None,
    cache: VerdictCache | None = None,
) -> list[Verdict]:
    """`judge` for many (final state, answer) pairs from one initial state, in order. A code verifier judges
    the ones not in `cache` in as few sandbox calls as it can (factory/verify/code.py)."""
    if not task.verifier:
        return [rubric_verdict(task.rubric, initial, final, answer, reward=rubric_reward) for final, answer in cases]
    keys = [
        hash_value({"v": task.verifier, "i": exact_state_hash(initial), "f": exact_state_hash(final), "a": answer})
        if cache is not None
        else ""
        for final, answer in cases
    ]
    verdicts: list[Verdict | None] = [cache.get(k) if cache is not None else None for k in keys]
    todo = [i for i, v in enumerate(verdicts) if v is None]
    fresh = run_code_verifier_each(task.verifier, initial, [cases[i] for i in todo], runner=runner)
    for i, verdict in zip(todo, fresh, strict=True):
        verdicts[i] = verdict.model_copy(update={"score": 1.0 if verdict.passed else 0.0})
        if cache is not None:
            cache.put(keys[i], verdicts[i])  # type: ignore[arg-type]  # set just above
    return [v for v in verdicts if v is not None]


def environment_session_factory(
    bundle: Bundle | str | Path, pool: SandboxPool | None = None
) -> tuple[Any, SessionFactory]:
    """Open the bundle's runtime (in `pool`, else the process's default pool); returns (environment, its
    session factory). Close the environment after."""
    from factory.envs.runtime import Environment

    path = bundle.path if isinstance(bundle, Bundle) else Path(bundle)
    env = Environment.open(path, pool=pool)
    return env, env.session


def score_trajectory(
    bundle: Bundle | str | Path | None,
    task: Task,
    trajectory: Trajectory,
    session_factory: SessionFactory | None = None,
    rubric_reward: str | None = None,
    runner: Runner | None = None,
) -> Verdict:
    """Replay `trajectory` from the seed state and score it.

    Rubric tasks pay all-or-nothing by default (`rubric_reward="all"`, or FACTORY_RUBRIC_REWARD): a mean
    pays partial credit for work not done (a no-op already satisfies row_absent checks and the checks of
    everything left untouched), which RL learns to exploit. `mean` is there for analysis. Program tasks
    pay 1/0 whatever the setting. Without a `session_factory`, the bundle's runtime is opened for this call.
    """
    reward = rubric_reward_setting(rubric_reward)
    if session_factory is None:
        if bundle is None:
            raise ValueError("score_trajectory needs a bundle or a session factory")
        env, factory = environment_session_factory(bundle)
        with env:
            replay = replay_calls(factory, trajectory.tool_calls)
    else:
        replay = replay_calls(session_factory, trajectory.tool_calls)
    return judge(task, replay.initial, replay.final, trajectory.final_answer, reward, runner)
