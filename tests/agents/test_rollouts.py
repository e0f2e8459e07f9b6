"""The rollout engine, locally: concurrent episodes judged by the task's verifier, the parquet table, content keys,
environment faults kept apart from agent errors, and pass-rate pooling; and what the Ray backend needs that no
Ray is needed to check (tests/agents/test_ray_rollouts.py runs it on a local Ray).
"""

from __future__ import annotations

import pickle
import re
import shutil
import sys
from pathlib import Path

import pytest

from factory.agents.policies import POLICIES, CallTool, Episode, EpisodeResult, Policy, make_policy
from factory.agents.ray_backend import RAY_ADDRESS_ENV, bundle_files, connect
from factory.agents.rollouts import (
    RolloutRow,
    pass_rates,
    pool_tasks,
    read_rollouts,
    rollouts_key,
    run_rollouts,
    write_rollouts,
)
from factory.models import Task, ToolCall, Verdict
from factory.store import HASH_FILE
from factory.tasks.difficulty import knobs_for
from factory.tasks.synthesize import synthesize_tasks
from tests.builders import copy_bundle


@pytest.fixture(scope="module")
def shop_tasks(shop_bundle) -> list[Task]:
    return synthesize_tasks(shop_bundle, n=4, seed=0, knobs=knobs_for("easy", recovery=1, pages=2)).tasks


def _stable(rows: list[RolloutRow]) -> list[dict]:
    """Rows without their timings, which no two runs share."""
    return [r.model_dump(exclude={"wall_s", "env_s"}) for r in rows]


def test_rows_follow_task_then_sample_order_and_are_the_same_whatever_the_workers(shop_bundle, shop_tasks):
    policy = make_policy("random")
    many = run_rollouts(shop_bundle, shop_tasks, policy, seed=3, workers=4, samples=2)
    one = run_rollouts(shop_bundle, shop_tasks, policy, seed=3, workers=1, samples=2)
    assert [(r.task_id, r.sample) for r in many] == [(t.id, k) for t in shop_tasks for k in (0, 1)]
    assert _stable(many) == _stable(one)
    assert len({r.id for r in many}) == len(many), "every trajectory has its own id"
    assert len({r.seed for r in many}) == len(many), "every episode has its own seed"
    for r in many:
        assert r.policy_id == policy.policy_id and r.env_id == shop_tasks[0].env_id and r.wall_s > 0
        assert r.turns == len(r.tool_calls) + 1 and r.verdict is not None and r.reward == r.verdict.score


def test_parquet_round_trip_keeps_every_field(shop_bundle, shop_tasks, tmp_path):
    rows = run_rollouts(shop_bundle, shop_tasks, make_policy("oracle"), seed=0, round=2)
    rows += run_rollouts(shop_bundle, shop_tasks, make_policy("noop"), seed=0, round=2)
    path = tmp_path / "rollouts.parquet"
    digest = write_rollouts(rows, path)
    assert read_rollouts(path) == rows
    assert write_rollouts(rows, tmp_path / "again.parquet") == digest, "the same rows make the same bytes"
    assert {r.round for r in rows} == {2} and any(r.agent_errors for r in rows), "refused gold calls are recorded"


def test_reading_something_else_names_the_file(tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_text("not parquet")
    with pytest.raises(ValueError, match=r"bad.parquet: not a parquet rollouts table"):
        read_rollouts(bad)
    from factory.tasks.table import write_tasks

    tasks_file = tmp_path / "tasks.parquet"
    write_tasks([], tasks_file)
    with pytest.raises(ValueError, match=r"tasks.parquet: not a rollouts table \(missing columns"):
        read_rollouts(tasks_file)


def test_the_key_changes_with_policy_tasks_seed_and_bundle(shop_bundle, shop_tasks, tmp_path):
    oracle = make_policy("oracle")
    key = rollouts_key(shop_bundle, shop_tasks, oracle, 0)
    assert rollouts_key(shop_bundle, list(shop_tasks), make_policy("oracle"), 0) == key
    changed = shop_tasks[0].model_copy(update={"question": shop_tasks[0].question + " Quickly."})
    other_bundle = copy_bundle(shop_bundle, tmp_path / "shop")
    (other_bundle / HASH_FILE).unlink()
    (other_bundle / "tools.py").write_text((other_bundle / "tools.py").read_text() + "\n# changed\n")
    others = [
        rollouts_key(shop_bundle, shop_tasks, make_policy("oracle", max_turns=9), 0),
        rollouts_key(shop_bundle, shop_tasks, make_policy("noop"), 0),
        rollouts_key(shop_bundle, [changed, *shop_tasks[1:]], oracle, 0),
        rollouts_key(shop_bundle, shop_tasks[1:], oracle, 0),
        rollouts_key(shop_bundle, shop_tasks, oracle, 1),
        rollouts_key(shop_bundle, shop_tasks, oracle, 0, samples=2),
        rollouts_key(other_bundle, shop_tasks, oracle, 0),
    ]
    assert key not in others and len(set(others)) == len(others)


class CrashThenBadId(Policy):
    """Calls a tool that kills its sandbox process (an environment fault), then asks for a product that does not
    exist (an error the agent made)."""

    name = "crash-then-bad-id"

    def run(self, episode: Episode, call: CallTool) -> EpisodeResult:
        made = [ToolCall(tool="get_customer", args={"customer_id": "cus_0001"})]
        made.append(ToolCall(tool="get_product", args={"product_id": "pro_9999"}))
        for c in made:
            call(c)
        return EpisodeResult(final_answer="none", tool_calls=made, turns=3)


class Raises(Policy):
    name = "raises"

    def run(self, episode: Episode, call: CallTool) -> EpisodeResult:
        raise ConnectionError("the model endpoint is down")


def test_environment_errors_are_kept_apart_from_agent_errors(shop_bundle, shop_tasks, tmp_path):
    bundle = copy_bundle(shop_bundle, tmp_path / "crashing")
    tools = bundle / "tools.py"
    source = tools.read_text()
    head = "def get_customer(state, customer_id=None):\n"
    assert head in source
    tools.write_text(source.replace(head, head + "    import os\n    os._exit(3)\n", 1))
    shutil.rmtree(bundle / "__pycache__", ignore_errors=True)
    [row] = run_rollouts(bundle, shop_tasks[:1], CrashThenBadId(), seed=0)
    assert len(row.env_errors) == 1 and row.env_errors[0].startswith("get_customer: worker_crashed"), row.env_errors
    assert len(row.agent_errors) == 1 and row.agent_errors[0].startswith("get_product: not_found"), row.agent_errors
    assert not row.counted and pass_rates([row]) == {}, "an environment fault never counts against the policy"
    [failed] = run_rollouts(shop_bundle, shop_tasks[:1], Raises(), seed=0)
    assert failed.error == "ConnectionError: the model endpoint is down" and not failed.counted
    assert failed.tool_calls == [] and failed.reward == 0.0


def _row(task_id: str, passed: bool, sample: int, **update) -> RolloutRow:
    verdict = Verdict(passed=passed, score=float(passed))
    row = RolloutRow(id=f"{task_id}-{sample}", task_id=task_id, env_id="e", policy_id="p", sample=sample)
    return row.model_copy(update={"verdict": verdict, "reward": verdict.score, **update})


def test_pass_rates_over_k_rollouts_pool_the_tasks():
    rows = [_row("easy", True, k) for k in range(3)]
    rows += [_row("mixed", k < 1, k) for k in range(3)]
    rows += [_row("hard", False, k) for k in range(3)]
    rows += [_row("faulty", True, 0), _row("faulty", False, 1, env_errors=["get: timeout: ran past 5s"])]
    rates = pass_rates(rows)
    assert rates == {"easy": 1.0, "mixed": pytest.approx(1 / 3), "hard": 0.0, "faulty": 1.0}
    assert pool_tasks(rates) == {"easy": "too_easy", "mixed": "learnable", "hard": "too_hard", "faulty": "too_easy"}


def test_profiling_real_rollouts(shop_bundle, shop_tasks):
    oracle = pass_rates(run_rollouts(shop_bundle, shop_tasks, make_policy("oracle"), seed=0, samples=2))
    assert oracle == {t.id: 1.0 for t in shop_tasks}
    noop = pool_tasks(pass_rates(run_rollouts(shop_bundle, shop_tasks, make_policy("noop"), seed=0, samples=2)))
    assert all(noop[t.id] == "too_hard" for t in shop_tasks if t.mutates)


def test_bad_arguments_are_refused(shop_bundle, shop_tasks):
    with pytest.raises(ValueError, match="workers and samples must be at least 1"):
        run_rollouts(shop_bundle, shop_tasks, make_policy("noop"), seed=0, workers=0)
    with pytest.raises(ValueError, match="rubric reward must be"):
        run_rollouts(Path(shop_bundle), shop_tasks, make_policy("noop"), seed=0, rubric_reward="most")
    with pytest.raises(ValueError, match="rollout backend must be 'local' or 'ray', not 'dask'"):
        run_rollouts(shop_bundle, shop_tasks, make_policy("noop"), seed=0, backend="dask")  # type: ignore[arg-type]


# --- the Ray backend without Ray (tests/agents/test_ray_rollouts.py runs it on a local Ray) -----------------


def test_the_ray_backend_without_ray_says_how_to_install_it(shop_bundle, shop_tasks, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails as if it were not installed
    with pytest.raises(RuntimeError, match=re.escape("needs ray, which is not installed: pip install -e '.[train]'")):
        run_rollouts(shop_bundle, shop_tasks, make_policy("oracle"), seed=0, backend="ray")
    assert len(run_rollouts(shop_bundle, shop_tasks[:1], make_policy("oracle"), seed=0)) == 1, "local needs no ray"


class FakeRay:
    """Records how Ray would be started."""

    def __init__(self):
        self.inits: list[dict] = []

    def is_initialized(self) -> bool:
        return bool(self.inits)

    def init(self, **options) -> None:
        self.inits.append(options)


@pytest.mark.parametrize(
    ("argument", "env", "address"),
    [
        (None, None, None),
        (None, "ray://head:10001", "ray://head:10001"),
        ("ray://b:10001", "ray://head:10001", "ray://b:10001"),
    ],
)
def test_ray_joins_the_named_cluster_else_starts_locally_once(monkeypatch, argument, env, address):
    fake = FakeRay()
    monkeypatch.setitem(sys.modules, "ray", fake)
    if env is None:
        monkeypatch.delenv(RAY_ADDRESS_ENV, raising=False)
    else:
        monkeypatch.setenv(RAY_ADDRESS_ENV, env)
    assert connect(argument) is fake and connect(argument) is fake
    [options] = fake.inits  # a started session is reused
    assert options["address"] == address
    assert options.get("include_dashboard", True) is (address is not None), "no dashboard for a local Ray"


def test_the_bundle_travels_as_its_files(shop_bundle, tmp_path):
    bundle = copy_bundle(shop_bundle, tmp_path / "shop")
    (bundle / "__pycache__").mkdir(exist_ok=True)
    (bundle / "__pycache__" / "tools.cpython-311.pyc").write_bytes(b"stale")
    (bundle / "state" / "deep").mkdir(parents=True)
    (bundle / "state" / "deep" / "a.json").write_text("{}")
    files = bundle_files(bundle)
    top = {p.name for p in shop_bundle.iterdir() if p.is_file()}
    assert "tools.py" in top and set(files) == top | {"state/deep/a.json"}, "every file, caches left out"
    assert files["seed.sqlite"] == (shop_bundle / "seed.sqlite").read_bytes()


def test_every_registered_policy_can_be_shipped_to_an_actor():
    for name, cls in POLICIES.items():
        policy = cls(settings={"api_key": "sk-test"}) if name == "llm" else make_policy(name)
        back = pickle.loads(pickle.dumps(policy))
        assert type(back) is cls and back.policy_id == policy.policy_id and back.config == policy.config
