"""The Ray backend of the rollout engine, on a local Ray with 2 CPUs: the same rows as the local backend for the
same seed, episodes really run in the actors, the same content key, faults kept apart as locally."""

from __future__ import annotations

import inspect
import json
import os
import shutil
import sys

import pytest

from factory.agents.policies import CallTool, Episode, EpisodeResult, Policy, make_policy
from factory.agents.ray_backend import episodes_per_second
from factory.agents.rollouts import RolloutRow, pass_rates, rollouts_key, run_rollouts
from factory.envs.runtime import EnvironmentLoadError
from factory.models import Task
from factory.tasks.difficulty import knobs_for
from factory.tasks.synthesize import synthesize_tasks
from tests.agents.test_rollouts import CrashThenBadId, Raises
from tests.builders import copy_bundle

ray = pytest.importorskip("ray")

TIMING = {"wall_s", "env_s"}


@pytest.fixture(scope="module", autouse=True)
def ray_session():
    """One local Ray for the whole file (starting one costs seconds). The test policies travel by value: the
    actors cannot import test modules."""
    for module in (CrashThenBadId.__module__, __name__):
        ray.cloudpickle.register_pickle_by_value(sys.modules[module])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def shop_tasks(shop_bundle) -> list[Task]:
    tasks = synthesize_tasks(shop_bundle, n=4, seed=0, knobs=knobs_for("easy", recovery=1, pages=2)).tasks
    assert {isinstance(t.gold, str) for t in tasks} == {True, False}, "both graph and program tasks"
    return tasks


def _without_timing(rows: list[RolloutRow]) -> list[dict]:
    """Rows with their timings left out, everything else as recorded; a timing inside a message is none of
    the engine's business and would fail the comparison."""
    dumped = [r.model_dump(mode="json", exclude=TIMING) for r in rows]
    assert "wall_ms" not in json.dumps([d["messages"] for d in dumped])
    return dumped


@pytest.mark.parametrize("name", ["oracle", "random"])
def test_the_same_trajectories_as_the_local_backend(shop_bundle, shop_tasks, name):
    policy = make_policy(name)
    local = run_rollouts(shop_bundle, shop_tasks, policy, seed=5, samples=2, workers=2)
    remote = run_rollouts(shop_bundle, shop_tasks, policy, seed=5, samples=2, workers=3, backend="ray")
    assert _without_timing(remote) == _without_timing(local)
    assert [(r.task_id, r.sample) for r in remote] == [(t.id, k) for t in shop_tasks for k in (0, 1)]
    assert all(r.wall_s > 0 for r in remote) and sum(r.env_s for r in remote) > 0
    assert all(r.tool_calls for r in remote), "every episode called tools: the comparison saw real trajectories"
    if name == "oracle":
        assert pass_rates(remote) == {t.id: 1.0 for t in shop_tasks}
    else:
        other = run_rollouts(shop_bundle, shop_tasks, policy, seed=6, samples=2)
        assert _without_timing(other) != _without_timing(remote), "another seed, other trajectories"


class WhereAmI(Policy):
    """Answers with the process it ran in: the episodes must run in the actors, not in the caller."""

    name = "where-am-i"

    def run(self, episode: Episode, call: CallTool) -> EpisodeResult:
        return EpisodeResult(final_answer=str(os.getpid()), turns=1)


def test_episodes_run_in_the_actors(shop_bundle, shop_tasks):
    rows = run_rollouts(shop_bundle, shop_tasks, WhereAmI(), seed=0, samples=2, workers=2, backend="ray")
    pids = {r.final_answer for r in rows}
    assert str(os.getpid()) not in pids and len(pids) == 2, "two actors (one per CPU), neither the caller"
    assert run_rollouts(shop_bundle, [], WhereAmI(), seed=0, backend="ray") == []


def test_the_key_does_not_depend_on_the_backend():
    """The key names the rows and both backends give the same rows: it takes every argument of a run but those
    that say how to run it (a new argument that changes the rows must join the key)."""
    key_args = set(inspect.signature(rollouts_key).parameters)
    run_args = set(inspect.signature(run_rollouts).parameters)
    assert run_args - key_args == {"workers", "pool", "backend", "ray_address"}
    assert key_args <= run_args


def test_faults_policy_failures_and_unloadable_bundles_as_locally(shop_bundle, shop_tasks, tmp_path):
    bundle = copy_bundle(shop_bundle, tmp_path / "crashing")
    tools = bundle / "tools.py"
    head = "def get_customer(state, customer_id=None):\n"
    tools.write_text(tools.read_text().replace(head, head + "    import os\n    os._exit(3)\n", 1))
    shutil.rmtree(bundle / "__pycache__", ignore_errors=True)
    [row] = run_rollouts(bundle, shop_tasks[:1], CrashThenBadId(), seed=0, backend="ray")
    assert len(row.env_errors) == 1 and row.env_errors[0].startswith("get_customer: worker_crashed"), row.env_errors
    assert len(row.agent_errors) == 1 and row.agent_errors[0].startswith("get_product: not_found"), row.agent_errors
    [failed] = run_rollouts(shop_bundle, shop_tasks[:1], Raises(), seed=0, backend="ray")
    assert failed.error == "ConnectionError: the model endpoint is down" and not failed.counted
    tools.write_text(tools.read_text() + "\ndef broken(:\n")
    with pytest.raises(EnvironmentLoadError, match=r"tools\.py does not compile"):
        run_rollouts(bundle, shop_tasks, make_policy("oracle"), seed=0, backend="ray")


def test_the_speed_measure(shop_bundle, shop_tasks):
    speed = episodes_per_second(shop_bundle, shop_tasks, make_policy("oracle"), backend="ray", workers=2)
    assert speed.episodes == len(shop_tasks) and speed.episodes_per_s > 0 and 0 < speed.env_share < 1
