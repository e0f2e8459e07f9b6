"""The Ray backend of the rollout engine: episodes run in Ray actors, each holding the environment opened on a
sandbox pool of its own, so one run spreads over the cores of this machine or the nodes of a cluster.

An actor runs the local engine's own episode (`run_episode`), with the same episode seeds and row ids, so the
same policy, tasks and seed give the same trajectories whichever backend runs them: the backend is no part of
`rollouts_key`. The bundle travels to the actors as its files (a cluster's nodes need not share a filesystem
with the caller); the factory package must be importable on every node. Ray is an optional dependency (the
`train` extra), imported only when this backend is asked for.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from factory.agents.policies import Policy
from factory.agents.rollouts import RolloutRow, run_episode, run_rollouts
from factory.envs.runtime import Environment
from factory.models import Model, Task, Trajectory
from factory.sandbox import open_pool
from factory.verify.rubric import RubricReward
from factory.verify.scoring import gold_trajectory

if TYPE_CHECKING:
    from types import ModuleType

RAY_ADDRESS_ENV = "FACTORY_RAY_ADDRESS"
INSTALL_HINT = "pip install -e '.[train]' (or make install-train)"


def import_ray() -> ModuleType:
    """The ray module, or a RuntimeError that says how to install it."""
    try:
        import ray
    except ImportError as e:
        raise RuntimeError(f"the ray rollout backend needs ray, which is not installed: {INSTALL_HINT}") from e
    return ray


def connect(address: str | None = None) -> ModuleType:
    """Ray, ready: a session this process already started is reused; otherwise the cluster at `address` (else
    FACTORY_RAY_ADDRESS) is joined, or with neither a local Ray is started on this machine's CPUs."""
    ray = import_ray()
    if not ray.is_initialized():
        address = address or os.environ.get(RAY_ADDRESS_ENV) or None
        local: dict[str, Any] = {} if address else {"include_dashboard": False}
        ray.init(address=address, log_to_driver=False, configure_logging=False, **local)
    return ray


def bundle_files(path: str | Path) -> dict[str, bytes]:
    """A bundle's files by relative path (compiled caches left out): what an actor on any node rebuilds it from."""
    root = Path(path)
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.relative_to(root).parts
    }


class EpisodeActor:
    """One environment, rebuilt from the bundle's files and opened on the actor's own sandbox pool, running up
    to `threads` episodes at once (Ray's `max_concurrency`; tool code runs in the pool's processes). It opens
    in `open`, not in the constructor, so a bundle that does not load raises its own EnvironmentLoadError to
    the caller rather than Ray's actor-died error."""

    def __init__(
        self, files: dict[str, bytes], threads: int, policy: Policy, seed: int, round: int, reward_rule: RubricReward
    ):
        self.dir = Path(tempfile.mkdtemp(prefix="factory-rollout-bundle-"))
        for name, data in files.items():
            target = self.dir / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        self.pool = open_pool(size=threads)
        self.env: Environment | None = None
        self.policy, self.seed, self.round, self.reward_rule = policy, seed, round, reward_rule

    def open(self) -> None:
        self.env = Environment.open(self.dir, pool=self.pool)

    def _opened(self) -> Environment:
        if self.env is None:
            raise RuntimeError("the actor's environment is not open")
        return self.env

    def gold(self, task: Task) -> Trajectory:
        return gold_trajectory(task, self._opened().session)[0]

    def episode(self, task: Task, gold: Trajectory | None, sample: int) -> RolloutRow:
        return run_episode(
            self._opened(),
            task,
            gold,
            self.policy,
            self.seed,
            sample,
            self.round,
            self.reward_rule,
            self.pool.run_function,
        )

    def close(self) -> None:
        if self.env is not None:
            self.env.close()
        self.pool.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def run_rollouts_ray(
    bundle_path: str | Path,
    tasks: Sequence[Task],
    policy: Policy,
    seed: int,
    *,
    workers: int,
    samples: int,
    round: int,
    reward_rule: RubricReward,
    address: str | None = None,
) -> list[RolloutRow]:
    """`run_rollouts` on Ray: `workers` episodes at a time over as many actors as Ray has CPUs for (one CPU
    each, the episodes shared round-robin); a gold-reading policy's golds are computed in the actors too, each
    episode waiting only for its own task's gold. Rows in task order, then sample order."""
    ray = connect(address)
    jobs = [(i, k) for i in range(len(tasks)) for k in range(samples)]
    if not jobs:
        return []
    concurrent = min(workers, len(jobs))
    actors_n = max(1, min(concurrent, int(ray.cluster_resources().get("CPU", 1))))
    threads = math.ceil(concurrent / actors_n)
    remote = ray.remote(num_cpus=1, max_concurrency=threads)(EpisodeActor)
    files = ray.put(bundle_files(bundle_path))
    actors = [remote.remote(files, threads, policy, seed, round, reward_rule) for _ in range(actors_n)]
    try:
        ray.get([a.open.remote() for a in actors])  # every actor's environment loads before any episode starts
        golds = [actors[i % actors_n].gold.remote(t) if policy.needs_gold else None for i, t in enumerate(tasks)]
        refs = [actors[j % actors_n].episode.remote(tasks[i], golds[i], k) for j, (i, k) in enumerate(jobs)]
        return list(ray.get(refs))
    finally:
        with contextlib.suppress(ray.exceptions.RayError):  # an actor that died has nothing left to close
            ray.get([a.close.remote() for a in actors])
        for a in actors:
            ray.kill(a)


class RolloutSpeed(Model):
    """One timed `run_rollouts` call: episodes per second of wall time, and the share of the episodes' own time
    spent in tool calls (the rest is the policy, the snapshots, the verdict and the session's set-up)."""

    backend: Literal["local", "ray"]
    workers: int
    episodes: int
    wall_s: float
    episodes_per_s: float
    env_share: float


def episodes_per_second(
    bundle_path: str | Path,
    tasks: Sequence[Task],
    policy: Policy,
    *,
    backend: Literal["local", "ray"] = "local",
    workers: int = 4,
    samples: int = 1,
    seed: int = 0,
    ray_address: str | None = None,
) -> RolloutSpeed:
    """Time one rollout run (Ray is started before the clock; the actors' start-up is part of the run)."""
    if backend == "ray":
        connect(ray_address)
    started = time.perf_counter()
    rows = run_rollouts(
        bundle_path, tasks, policy, seed, workers=workers, samples=samples, backend=backend, ray_address=ray_address
    )
    wall = time.perf_counter() - started
    episode_s = sum(r.wall_s for r in rows)
    return RolloutSpeed(
        backend=backend,
        workers=workers,
        episodes=len(rows),
        wall_s=round(wall, 3),
        episodes_per_s=round(len(rows) / wall, 2) if wall > 0 else 0.0,
        env_share=round(sum(r.env_s for r in rows) / episode_s, 3) if episode_s > 0 else 0.0,
    )
