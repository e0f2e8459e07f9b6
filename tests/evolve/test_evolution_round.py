"""The evolution loop as Dagster runs it: arena rollouts per category, the diagnosis, the sensors and schedule,
targeted tasks for the weak categories only, rounds numbered and kept, and `factory evolve` from the shell."""

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pyarrow.parquet as pq
import pytest

from assets.definitions import defs
from assets.evolve import (
    arena_complete,
    arena_round_sensor,
    nightly_evolution,
    targeted_run_requests,
    targeted_tasks_sensor,
)
from factory.agents.rollouts import pass_rates, read_rollouts
from factory.pipeline.evolve.diagnoses import load_diagnosis, round_history
from factory.pipeline.evolve.rollouts import ARENA_TASKS_PARQUET, FINAL_EVAL_PARQUET, ROLLOUTS_PARQUET
from factory.pipeline.evolve.rounds import kept_rounds, round_dir
from factory.pipeline.evolve.targeted import PROFILE_PARQUET, TARGETED_JSON, TargetedRecord, category_targeted
from factory.pipeline.registry import ROLLOUTS, TARGETED_TASKS
from factory.pipeline.runner import load_manifest
from factory.store import Store, hash_dir, read_json
from factory.tasks.table import read_tasks
from resources import SandboxResource, StoreResource

# commerce: one held-out, one arena and one training environment; messaging: one arena and one training
TOPICS = ["online-shop", "marketplace", "food-delivery", "team-chat", "email-inbox"]
ALL_ASSETS = list(defs.assets or [])
BUILD = ["mined_datasets", "databases", "tool_code", "tool_tests", "tool_graphs", "tasks", "verifiers"]
ROOT = Path(__file__).resolve().parents[2]


def _resources(home: Path) -> dict:
    return {"store": StoreResource(home=str(home)), "sandbox": SandboxResource()}


def _run(instance, home: Path, selection: list[str], partition: str | None = None, config: dict | None = None):
    result = dg.materialize(
        ALL_ASSETS,
        instance=instance,
        resources=_resources(home),
        selection=selection,
        partition_key=partition,
        run_config=config or {},
    )
    assert result.success
    return result


def _arena(round: int, policy: str = "first-page") -> dict:
    return {"ops": {"rollouts": {"config": {"round": round, "policy": policy}}}}


def _version(instance, asset: str, partition: str | None = None) -> str | None:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition] if partition else None),
        limit=1,
    ).records
    return records[0].asset_materialization.tags["dagster/data_version"] if records else None


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Two categories built, then round 1 of the arena with `first-page` in both, diagnosed."""
    home = tmp_path_factory.mktemp("evolve")
    (home / "test-instance").mkdir()
    with dg.instance_for_test(temp_dir=str(home / "test-instance")) as instance:
        topics = {"ops": {"topics": {"config": {"sources": [], "include": TOPICS}}}}
        _run(instance, home, ["topics", "taxonomy"], config=topics)
        categories = sorted(instance.get_dynamic_partitions("category"))
        for c in categories:
            _run(instance, home, BUILD, c, {"ops": {"tasks": {"config": {"n": 6}}}})
        for c in categories:
            _run(instance, home, ["rollouts"], c, _arena(1))
        _run(instance, home, ["diagnoses"])
        yield home, instance, categories


@pytest.mark.slow
def test_the_arena_rolls_out_fresh_tasks_on_held_out_environments_only(world):
    home, _, categories = world
    store = Store(home)
    assert categories == ["commerce", "messaging"]
    for category in categories:
        manifest = load_manifest(store, ROLLOUTS, category)
        assert manifest is not None and manifest.lineage.round == 1
        for env_id in manifest.kept:
            verified = read_tasks(store.artifact_dir("verifiers", category) / env_id / "tasks.parquet")
            if {t.split for t in verified} == {"heldout"}:
                continue
            assert {t.split for t in verified} == {"arena"}, "only arena environments play in the arena"
            arena = read_tasks(store.artifact_dir("rollouts", category) / env_id / ARENA_TASKS_PARQUET)
            assert arena and {t.id for t in arena}.isdisjoint({t.id for t in verified}), "tasks are fresh"
            assert all(t.origin.round == 1 and t.split == "arena" for t in arena)
            rows = read_rollouts(store.artifact_dir("rollouts", category) / env_id / ROLLOUTS_PARQUET)
            assert len(rows) == 2 * len(arena), "two samples per task"
            assert all(r.round == 1 and r.policy_id.startswith("first-page:") for r in rows)


@pytest.mark.slow
def test_held_out_environments_play_a_fixed_final_evaluation_that_no_diagnosis_reads(world):
    home, _, _ = world
    store = Store(home)
    manifest = load_manifest(store, ROLLOUTS, "commerce")
    [heldout] = [e for e in manifest.kept if "final_eval_episodes" in manifest.envs[e].counts]
    d = store.artifact_dir("rollouts", "commerce") / heldout
    assert not (d / ARENA_TASKS_PARQUET).exists()
    verified = read_tasks(store.artifact_dir("verifiers", "commerce") / heldout / "tasks.parquet")
    assert {t.split for t in verified} == {"heldout"}
    rows = read_rollouts(d / FINAL_EVAL_PARQUET)
    fixed = sorted(t.id for t in verified)[:8]
    assert sorted({r.task_id for r in rows}) == fixed, "the final evaluation is the same tasks every round"
    record = load_diagnosis(store)
    assert heldout not in record.diagnosis.failure_rate_by_env
    assert not {r.id for r in rows} & set(record.diagnosis.excluded)


@pytest.mark.slow
def test_the_diagnosis_names_pagination_and_the_sensor_requests_only_targeted_categories(world):
    home, instance, categories = world
    record = load_diagnosis(Store(home))
    assert record.round == 1 and record.categories == categories
    failing = {c.capability for c in record.failure_table if c.failures}
    assert record.diagnosis.guidelines and {g.capability for g in record.diagnosis.guidelines} <= failing
    assert record.targeted_categories == sorted({g.category for g in record.diagnosis.guidelines})
    assert any(c.capability == "pagination" and c.failure_rate > 0 for c in record.failure_table)
    event = instance.get_latest_materialization_event(dg.AssetKey("diagnoses"))
    meta = event.asset_materialization.metadata
    assert meta["round"].value == 1 and "failures_by_category_and_capability" in meta and "rounds" in meta
    with (
        dg.build_sensor_context(instance=instance, definitions=defs) as context,
        dg.partition_loading_context(dynamic_partitions_store=instance),
    ):
        requests = targeted_tasks_sensor.evaluate_tick(context).run_requests
    assert sorted(r.partition_key for r in requests) == record.targeted_categories
    assert [r.partition_key for r in targeted_run_requests(event)] == record.targeted_categories


@pytest.mark.slow
def test_a_round_for_one_category_retargets_only_it_and_keeps_the_rest(world):
    home, instance, categories = world
    store = Store(home)
    assert load_diagnosis(store).targeted_categories == categories, "first-page is weak in both"
    for c in categories:
        _run(instance, home, ["targeted_tasks"], c)
        [env_id] = load_manifest(store, TARGETED_TASKS, c).kept
        tasks = read_tasks(store.artifact_dir("targeted_tasks", c) / env_id / "tasks.parquet")
        assert tasks and all(t.origin.round == 1 and t.origin.guideline_id for t in tasks)
        assert all(t.lineage and t.lineage.guideline_id == t.origin.guideline_id for t in tasks)
        [guideline] = [g for g in load_diagnosis(store).diagnosis.guidelines if g.env_id == env_id]
        arena = read_tasks(store.artifact_dir("rollouts", c) / env_id / ARENA_TASKS_PARQUET)
        share = {
            k: sum(guideline.capability in t.capabilities for t in ts) / len(ts)
            for k, ts in [("targeted", tasks), ("arena", arena)]
        }
        assert share["targeted"] >= share["arena"], f"targeted at {guideline.capability}: {share}"
        profile = read_rollouts(store.artifact_dir("targeted_tasks", c) / env_id / PROFILE_PARQUET)
        assert sorted(r.task_id for r in profile) == sorted(t.id for t in tasks for _ in range(2)), "profiled twice"
        assert all(r.policy_id.startswith("first-page:") for r in profile), "by the round's own policy"
    changed, other = categories
    other_files = hash_dir(store.artifact_dir("targeted_tasks", other))
    other_version = _version(instance, "targeted_tasks", other)

    assert arena_complete(store) is None, "round 1 is diagnosed"
    _run(instance, home, ["rollouts"], changed, _arena(2))
    assert arena_complete(store) is None, "round 2 is not complete: one category is still at round 1"
    _run(instance, home, ["diagnoses"])
    record = load_diagnosis(store)
    assert record.round == 2 and record.categories == [changed] and record.stale_categories == [other]
    round_1 = round_history(store)[0]
    targeted_before = {g.capability for g in round_1.diagnosis.guidelines}
    for skill in record.skills:
        if skill.capability in targeted_before:
            assert skill.first_targeted == 1, "a skill targeted in round 1 is an old skill in round 2"
            before = round_1.diagnosis.by_capability[skill.capability].failure_rate
            assert skill.failure_rate_when_targeted == before
        else:
            assert skill.first_targeted is None and skill.failure_rate_when_targeted is None
    assert {s.capability for s in record.skills} == set(record.diagnosis.by_capability)
    event = instance.get_latest_materialization_event(dg.AssetKey("diagnoses"))
    requests = targeted_run_requests(event)
    assert [r.partition_key for r in requests] == [changed]
    _run(instance, home, ["targeted_tasks"], changed)
    assert hash_dir(store.artifact_dir("targeted_tasks", other)) == other_files
    assert _version(instance, "targeted_tasks", other) == other_version
    assert kept_rounds(store) == [1, 2] and [r.round for r in round_history(store)] == [1, 2]
    assert (round_dir(store, 1) / "targeted_tasks" / other).is_dir(), "round 1's targeted tasks are kept"


@pytest.mark.slow
def test_complete_rounds_are_diagnosed_and_the_schedule_starts_the_next(world):
    home, instance, categories = world
    with dg.build_sensor_context(instance=instance, resources=_resources(home), definitions=defs) as context:
        result = arena_round_sensor.evaluate_tick(context)
    store = Store(home)
    complete = arena_complete(store)
    assert [r.run_key for r in result.run_requests] == ([f"diagnose:round-{complete}"] if complete else [])
    with (
        dg.build_schedule_context(
            instance=instance, resources=_resources(home), repository_def=defs.get_repository_def()
        ) as context,
        dg.partition_loading_context(dynamic_partitions_store=instance),
    ):
        requests = nightly_evolution.evaluate_tick(context).run_requests
    assert sorted(r.partition_key for r in requests) == categories
    rounds = {r.run_config["ops"]["rollouts"]["config"]["round"] for r in requests}
    assert len(rounds) == 1 and rounds.pop() > max(kept_rounds(store))


@pytest.mark.slow
def test_training_takes_the_targeted_tasks_and_records_that_nothing_was_launched_without_a_gpu(world, monkeypatch):
    pytest.importorskip("verl", reason="the train extra is not installed")
    from training.inputs import store_rollouts

    home, instance, categories = world
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr("training.launch.visible_gpus", lambda: 0)
    result = _run(instance, home, ["training_dataset", "policy_checkpoint"])
    meta = {
        e.materialization.asset_key.to_user_string(): e.materialization.metadata
        for e in result.get_asset_materialization_events()
    }
    store = Store(home)
    targeted = {t.id for c in categories for t in category_targeted(store, c)}
    rows = pq.read_table(meta["training_dataset"]["dataset"].value).to_pylist()
    exported = {r["extra_info"]["task_id"] for r in rows}
    rates = pass_rates(store_rollouts(store))
    unlearnable = {t for t in targeted if rates.get(t) in (0.0, 1.0)}
    assert targeted and targeted - unlearnable <= exported, "learnable targeted tasks are trained on"
    assert not unlearnable & exported, "tasks the policy always or never solves are left out"
    dropped = meta["training_dataset"]["dropped_too_easy"].value + meta["training_dataset"]["dropped_too_hard"].value
    assert dropped >= len(unlearnable)
    assert meta["policy_checkpoint"]["launched"].value is False
    assert meta["policy_checkpoint"]["status"].value.startswith("not launched")


@pytest.mark.slow
def test_factory_evolve_runs_a_round_and_reuses_it_when_nothing_changed(tmp_path):
    home = tmp_path / "home"
    env = dict(os.environ, FACTORY_HOME=str(home), FACTORY_TOPICS=",".join(TOPICS[:2]), FACTORY_TASKS_PER_ENV="6")
    factory = str(Path(sys.executable).parent / "factory")

    def evolve(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [factory, "evolve", *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
        )

    before = evolve()
    assert before.returncode == 2 and "run `factory run` first" in before.stderr
    built = subprocess.run([factory, "run"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert "evolution round 1" in built.stdout
    bad = evolve("--policy", "nobody")
    assert bad.returncode == 2 and "unknown policy 'nobody'" in bad.stderr

    first = evolve("--control", "random")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    line = json.loads(first.stdout.strip().splitlines()[-1])
    assert set(line) >= {"round", "weak_categories", "gaps", "targeted_tasks", "rematerialized_partitions"}
    assert line["round"] == 2
    assert all(set(g) == {"capability", "env_id"} for g in line["gaps"])
    store = Store(home)
    for category in line["rematerialized_partitions"]:
        for env_id in load_manifest(store, TARGETED_TASKS, category).kept:
            d = store.artifact_dir("targeted_tasks", category) / env_id
            record = TargetedRecord.model_validate(read_json(d / TARGETED_JSON))
            assert record.control == "random" and record.round == 2
            assert all(t.origin.guideline_id is None for t in read_tasks(d / "tasks.parquet")), "control: no guideline"

    rollouts_before = hash_dir(store.artifacts / "rollouts")
    again = evolve("--round", "2", "--control", "random")
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads(again.stdout.strip().splitlines()[-1]) == line
    assert hash_dir(store.artifacts / "rollouts") == rollouts_before, "an unchanged round is reused"
