"""The rollout engine: episodes of a policy on an environment's tasks, judged by each task's verifier.

Locally, one `Environment.open` per call; every episode gets its own session, and a thread pool runs many at
once (tool code runs in the sandbox's processes, so threads only wait). The Ray backend
(`factory.agents.ray_backend`) runs the same episodes in actors that each hold the environment, on this
machine or a cluster, and gives the same rows. The verdict comes from the task's own verifier
(`factory.verify.scoring.judge`) on the episode session's initial and final states, which this engine holds
and the policy never touches but through `session.call`. Environment faults (a crash, a timeout: a result's
`env_error`) are recorded apart from the errors tools return to the agent on purpose, and a rollout that met
one, or whose policy raised, is no measurement of the policy: pass rates leave it out.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
from pydantic import Field

from factory.agents.policies import Episode, EpisodeResult, Policy
from factory.envs.runtime import Environment
from factory.models import Rollout, Task, ToolCall, ToolResult, Trajectory
from factory.sandbox import SandboxPool
from factory.store import dir_content_hash, hash_value, read_parquet, write_parquet
from factory.verify.code import Runner
from factory.verify.rubric import RubricReward
from factory.verify.scoring import gold_trajectory, judge, rubric_reward_setting

Pool = Literal["too_easy", "learnable", "too_hard"]
Backend = Literal["local", "ray"]


class RolloutRow(Rollout):
    """A rollout as the engine records it: the trajectory's id and seed, the errors the agent met (apart from
    `env_errors`), whether the policy itself failed, and the seconds spent in tool calls."""

    id: str
    seed: int = 0
    sample: int = 0  # which of a task's k rollouts
    agent_errors: list[str] = Field(default_factory=list)
    error: str | None = None  # the policy raised (an unreachable model endpoint): not a measurement of its skill
    env_s: float = 0.0

    @property
    def counted(self) -> bool:
        """Whether this rollout measures the policy (no environment fault, no policy failure)."""
        return not self.env_errors and self.error is None


JSON_COLUMNS = ("messages", "tool_calls", "verdict", "env_errors", "agent_errors")
SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("task_id", pa.string()),
        ("env_id", pa.string()),
        ("policy_id", pa.string()),
        ("round", pa.int64()),
        ("seed", pa.int64()),
        ("sample", pa.int64()),
        ("messages", pa.string()),
        ("tool_calls", pa.string()),
        ("final_answer", pa.string()),
        ("reward", pa.float64()),
        ("verdict", pa.string()),
        ("env_errors", pa.string()),
        ("agent_errors", pa.string()),
        ("error", pa.string()),
        ("turns", pa.int64()),
        ("wall_s", pa.float64()),
        ("env_s", pa.float64()),
    ]
)


def task_hash(task: Task) -> str:
    return hash_value(task.model_dump(mode="json"))


def episode_seed(seed: int, task: Task, sample: int) -> int:
    """The seed of one episode: fixed by the run's seed, the task and the sample, whatever thread runs it."""
    return int(hash_value(["episode", seed, task.id, sample])[:12], 16)


def rollouts_key(
    bundle_path: str | Path,
    tasks: Sequence[Task],
    policy: Policy,
    seed: int,
    *,
    samples: int = 1,
    round: int = 0,
    rubric_reward: str | None = None,
) -> str:
    """The content address of a `run_rollouts` call: the same key means the same rollouts, so a caller holding
    a table under this key need not run them again."""
    return hash_value(
        {
            "policy": policy.identity(),
            "tasks": [task_hash(t) for t in tasks],
            "seed": seed,
            "bundle": dir_content_hash(Path(bundle_path)),
            "samples": samples,
            "round": round,
            "rubric_reward": rubric_reward_setting(rubric_reward),
        }
    )


def fault(call: ToolCall, result: ToolResult) -> str:
    """A failed call as the rollouts table records it: `tool: code: message`."""
    error = result.error
    return f"{call.tool}: {error.code}: {error.message}" if error else f"{call.tool}: failed"


def run_episode(
    env: Environment,
    task: Task,
    gold: Trajectory | None,
    policy: Policy,
    seed: int,
    sample: int,
    round: int,
    reward_rule: RubricReward,
    runner: Runner | None,
) -> RolloutRow:
    """One episode in a fresh session, judged by the task's verifier (both backends run this)."""
    executed: list[tuple[ToolCall, ToolResult]] = []
    started = time.perf_counter()
    with env.session() as session:

        def call(c: ToolCall) -> ToolResult:
            result = session.call(c.tool, dict(c.args))
            executed.append((c, result))
            return result

        initial = session.snapshot()
        episode = Episode(
            question=task.question, tools=env.spec.tools, seed=episode_seed(seed, task, sample), gold=gold
        )
        error = None
        try:
            out = policy.run(episode, call)
        except Exception as e:  # the policy's own failure (an endpoint down) is recorded, never the batch's end
            out, error = EpisodeResult(), f"{type(e).__name__}: {e}"
        final = session.snapshot()
    wall = time.perf_counter() - started
    verdict = judge(task, initial, final, out.final_answer, reward_rule, runner)
    return RolloutRow(
        id=hash_value(["rollout", policy.policy_id, task_hash(task), seed, sample, round])[:16],
        task_id=task.id,
        env_id=task.env_id,
        policy_id=policy.policy_id,
        round=round,
        seed=episode.seed,
        sample=sample,
        messages=out.messages,
        tool_calls=[c for c, _ in executed],
        final_answer=out.final_answer,
        reward=verdict.score,
        verdict=verdict,
        env_errors=[fault(c, r) for c, r in executed if not r.ok and r.env_error],
        agent_errors=[fault(c, r) for c, r in executed if not r.ok and not r.env_error],
        error=error,
        turns=out.turns,
        wall_s=wall,
        env_s=sum(r.wall_ms for _, r in executed) / 1000,
    )


def run_rollouts(
    bundle_path: str | Path,
    tasks: Sequence[Task],
    policy: Policy,
    seed: int,
    *,
    workers: int = 4,
    samples: int = 1,
    round: int = 0,
    rubric_reward: str | None = None,
    pool: SandboxPool | None = None,
    backend: Backend = "local",
    ray_address: str | None = None,
) -> list[RolloutRow]:
    """`samples` episodes of `policy` on each task, `workers` at a time; rows in task order, then sample order.
    A policy that reads the gold gets each task's gold as a trajectory (a program task's gold is run once in a
    fresh session to get its calls). `backend="ray"` runs them in Ray actors (each opens its own sandbox pool,
    so `pool` is the local backend's only; `ray_address`, else FACTORY_RAY_ADDRESS, names a cluster, else a
    local Ray is started) and gives the same rows."""
    if workers < 1 or samples < 1:
        raise ValueError(f"workers and samples must be at least 1 (got workers={workers}, samples={samples})")
    if backend not in ("local", "ray"):
        raise ValueError(f"rollout backend must be 'local' or 'ray', not {backend!r}")
    reward_rule = rubric_reward_setting(rubric_reward)
    if backend == "ray":
        from factory.agents.ray_backend import run_rollouts_ray  # ray is optional: imported only when asked for

        return run_rollouts_ray(
            bundle_path,
            tasks,
            policy,
            seed,
            workers=workers,
            samples=samples,
            round=round,
            reward_rule=reward_rule,
            address=ray_address,
        )
    runner = pool.run_function if pool else None
    with Environment.open(bundle_path, pool=pool) as env, ThreadPoolExecutor(max_workers=workers) as threads:
        golds: list[Trajectory | None] = [None] * len(tasks)
        if policy.needs_gold:
            golds = list(threads.map(lambda t: gold_trajectory(t, env.session)[0], tasks))
        jobs = [(task, gold, k) for task, gold in zip(tasks, golds, strict=True) for k in range(samples)]
        return list(
            threads.map(lambda j: run_episode(env, j[0], j[1], policy, seed, j[2], round, reward_rule, runner), jobs)
        )


# --- the rollouts table ----------------------------------------------------------------------


def _row(rollout: RolloutRow) -> dict[str, Any]:
    data = rollout.model_dump(mode="json")
    return {
        name: json.dumps(data[name], ensure_ascii=False, sort_keys=True) if name in JSON_COLUMNS else data[name]
        for name in SCHEMA.names
    }


def write_rollouts(rows: Sequence[RolloutRow], path: str | Path) -> str:
    """Write the rollouts table atomically (one flat schema, nested values as JSON text); returns its hash."""
    return write_parquet([_row(r) for r in rows], SCHEMA, path)


def read_rollouts(path: str | Path) -> list[RolloutRow]:
    """Read a rollouts table back; a file that is not one raises ValueError naming what is wrong."""
    rows = read_parquet(path, SCHEMA, "rollouts table")
    try:
        return [
            RolloutRow.model_validate({k: json.loads(v) if k in JSON_COLUMNS else v for k, v in row.items()})
            for row in rows
        ]
    except (ValueError, TypeError) as e:
        raise ValueError(f"{path}: malformed rollout row ({e})") from e


# --- pass-rate profiling ---------------------------------------------------------------------


def pass_rates(rollouts: Sequence[RolloutRow]) -> dict[str, float]:
    """Each task's share of passed rollouts over its counted ones (environment faults and policy failures left
    out); a task with no counted rollout has no rate."""
    runs: dict[str, list[bool]] = {}
    for r in rollouts:
        if r.counted:
            runs.setdefault(r.task_id, []).append(bool(r.verdict and r.verdict.passed))
    return {task: sum(passed) / len(passed) for task, passed in runs.items()}


def pool_tasks(rates: dict[str, float]) -> dict[str, Pool]:
    """Tasks pooled by pass rate: always passed (too easy), never passed (too hard), or in between (learnable:
    the ones that carry a learning signal under group-relative RL)."""
    return {
        task: "too_easy" if rate >= 1.0 else "too_hard" if rate <= 0.0 else "learnable" for task, rate in rates.items()
    }
