"""The Dagster graph end to end on a small catalog: lineage, partition isolation, reuse, gates."""

from pathlib import Path

import dagster as dg
import pytest

from assets.definitions import defs
from factory.pipeline.registry import CATEGORY_GROUPS, STAGES, stage
from factory.pipeline.runner import load_manifest
from factory.store import Store, hash_dir
from factory.tasks.difficulty import KNOBS
from factory.tasks.table import read_tasks
from resources import SandboxResource, StoreResource

TOPICS = ["online-shop", "team-chat"]  # two categories: commerce and messaging
PARTITIONED = [s.name for s in STAGES if s.partitioned and s.group in CATEGORY_GROUPS]  # evolve: tests/evolve
ALL_ASSETS = list(defs.assets or [])
SMALL_TASKS = {"ops": {"tasks": {"config": {"n": 6, "seed": 0}}}}


def _instance(home: Path):
    (home / "dagster").mkdir(parents=True, exist_ok=True)
    return dg.instance_for_test(temp_dir=str(home / "dagster"))


def _resources(home: Path) -> dict:
    return {"store": StoreResource(home=str(home)), "sandbox": SandboxResource()}


def _discover(instance: dg.DagsterInstance, home: Path, topics: list[str]) -> list[str]:
    config = {"ops": {"topics": {"config": {"sources": [], "include": topics}}}}
    result = dg.materialize(
        ALL_ASSETS, instance=instance, resources=_resources(home), selection=["topics", "taxonomy"], run_config=config
    )
    assert result.success
    return sorted(instance.get_dynamic_partitions("category"))


def _materialize(instance, home: Path, category: str, selection=PARTITIONED, run_config=SMALL_TASKS, **kw):
    return dg.materialize(
        ALL_ASSETS,
        instance=instance,
        resources=_resources(home),
        selection=selection,
        partition_key=category,
        run_config=run_config,
        **kw,
    )


def _data_versions(result: dg.ExecuteInProcessResult) -> dict[str, str]:
    out = {}
    for event in result.get_asset_materialization_events():
        m = event.materialization
        out[m.asset_key.to_user_string()] = m.tags["dagster/data_version"]
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The whole graph materialized for two categories, in a private FACTORY_HOME and Dagster instance."""
    home = tmp_path_factory.mktemp("world")
    with _instance(home) as instance:
        categories = _discover(instance, home, TOPICS)
        runs = {c: _materialize(instance, home, c) for c in categories}
        yield home, instance, categories, runs


@pytest.mark.slow
def test_whole_graph_materializes_with_gates_passing(world):
    home, _, categories, runs = world
    assert categories == ["commerce", "messaging"]
    store = Store(home)
    for category, result in runs.items():
        assert result.success
        assert {c.check_name: c.passed for c in result.get_asset_check_evaluations()} == {
            "tool_test_gate": True,
            "verifier_audit": True,
        }
        assert set(_data_versions(result)) == set(PARTITIONED)
        verifiers = load_manifest(store, stage("verifiers"), category)
        assert verifiers and verifiers.kept
        for env_id in verifiers.kept:
            kept = read_tasks(store.artifact_dir("verifiers", category) / env_id / "tasks.parquet")
            assert kept and all(t.split in ("train", "arena", "heldout") for t in kept)


@pytest.mark.slow
def test_artifact_lineage_matches_the_dagster_graph(world):
    home, _, categories, _ = world
    store = Store(home)
    graph = defs.resolve_asset_graph()
    for name in PARTITIONED:
        parents = {k.to_user_string() for k in graph.get(dg.AssetKey(name)).parent_keys}
        manifest = load_manifest(store, stage(name), categories[0])
        assert manifest is not None
        assert set(manifest.lineage.inputs) == parents, name


@pytest.mark.slow
def test_unchanged_rerun_reuses_everything_and_keeps_data_versions(world):
    home, instance, categories, runs = world
    category = categories[0]
    before = hash_dir(Store(home).artifacts / "tasks" / category)
    again = _materialize(instance, home, category)
    assert again.success
    assert _data_versions(again) == _data_versions(runs[category])
    for event in again.get_asset_materialization_events():
        assert event.materialization.metadata["rebuilt"].value == 0
    assert hash_dir(Store(home).artifacts / "tasks" / category) == before


@pytest.mark.slow
def test_one_category_touches_only_its_own_partitions(world):
    home, instance, categories, runs = world
    changed, other = categories
    store = Store(home)
    other_files = {a: hash_dir(store.artifact_dir(a, other)) for a in PARTITIONED}
    config = {"ops": {**SMALL_TASKS["ops"], "mined_datasets": {"config": {"seed": 1, "backend": "sqlite"}}}}
    result = _materialize(instance, home, changed, run_config=config)
    assert result.success
    assert _data_versions(result)["mined_datasets"] != _data_versions(runs[changed])["mined_datasets"]
    assert {a: hash_dir(store.artifact_dir(a, other)) for a in PARTITIONED} == other_files
    expected = _data_versions(runs[other])
    for a in PARTITIONED:
        latest = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey(a), asset_partitions=[other]), limit=1
        ).records
        assert latest and latest[0].asset_materialization.tags["dagster/data_version"] == expected[a], a


def _metadata(result: dg.ExecuteInProcessResult, asset: str) -> dict:
    return next(
        e.materialization.metadata
        for e in result.get_asset_materialization_events()
        if e.materialization.asset_key.to_user_string() == asset
    )


@pytest.mark.slow
def test_tasks_metadata_shows_depth_per_kind_and_level(world):
    _, _, categories, runs = world
    for asset in ("tasks", "verifiers"):
        metadata = _metadata(runs[categories[0]], asset)
        rows = {r.data["group"]: r.data for r in metadata["depth"].value.records}
        assert {"all", "kind=graph", "kind=program", "level=medium"} <= set(rows), asset
        assert rows["all"]["gold_calls_mean"] == metadata["gold_calls_mean"].value > 1
        assert sum(v for k, v in rows["all"].items() if k.startswith("calls ")) == rows["all"]["tasks"]
        for share in ("share_mutate", "share_need_pagination", "share_over_20_calls"):
            assert 0 <= metadata[share].value <= 1
    tasks_metadata = _metadata(runs[categories[0]], "tasks")
    assert tasks_metadata["total_distinct_templates"].value >= 1
    assert tasks_metadata["total_raw_field_names"].value == 0
    assert tasks_metadata["total_undefined_references"].value == 0
    (row,) = [r.data for r in tasks_metadata["per_environment"].value.records]
    assert {"distinct_templates", "raw_field_names", "undefined_references"} <= set(row)
    assert tasks_metadata["difficulty"].value["level"] == "medium"
    for short in tasks_metadata["fell_short_by_knob"].value.records:
        assert short.data["knob"] in KNOBS and short.data["tasks_below_it"] >= 1
        assert short.data["example"].startswith(row["environment"] + ": ")


@pytest.mark.slow
def test_difficulty_in_the_tasks_config_rebuilds_the_tasks_at_that_level(world):
    home, instance, categories, _ = world
    category = categories[-1]
    selection = ["tasks"]
    easy = {"ops": {"tasks": {"config": {"n": 4, "seed": 0, "difficulty": "easy"}}}}
    result = _materialize(instance, home, category, selection=selection, run_config=easy)
    assert result.success and _metadata(result, "tasks")["rebuilt"].value >= 1
    store = Store(home)
    manifest = load_manifest(store, stage("tasks"), category)
    assert manifest is not None
    for env_id in manifest.kept:
        made = read_tasks(store.artifact_dir("tasks", category) / env_id / "candidates.parquet")
        assert made and all(t.difficulty.level == "easy" for t in made)
    bad = {"ops": {"tasks": {"config": {"difficulty": "brutal"}}}}
    failed = _materialize(instance, home, category, selection=selection, run_config=bad, raise_on_error=False)
    assert not failed.success
    (failure,) = [e for e in failed.all_events if e.is_failure and e.step_key == "tasks"]
    assert "tasks config: level must be one of easy, medium, hard" in str(failure.event_specific_data)


@pytest.mark.slow
def test_planted_broken_environment_is_dropped_and_the_gate_fails_only_when_nothing_passes(tmp_path):
    home = tmp_path / "broken"
    with _instance(home) as instance:
        (category,) = _discover(instance, home, ["online-shop", "marketplace"])
        built = _materialize(
            instance, home, category, selection=["mined_datasets", "databases", "tool_code"], run_config=None
        )
        assert built.success
        code_dir = Store(home).artifact_dir("tool_code", category)
        (code_dir / "marketplace" / "tools.py").write_text("def list_products(state:\n")
        gated = _materialize(instance, home, category, selection=["tool_tests", "tool_graphs"], run_config=None)
        assert gated.success, "one broken environment does not stop the category"
        (check,) = gated.get_asset_check_evaluations()
        assert check.passed
        metadata = next(
            e.materialization.metadata
            for e in gated.get_asset_materialization_events()
            if e.materialization.asset_key.to_user_string() == "tool_tests"
        )
        rows = {r.data["environment"]: r.data for r in metadata["per_environment"].value.records}
        assert not rows["marketplace"]["kept"] and "does not load" in rows["marketplace"]["reason"]
        assert rows["online-shop"]["kept"] and rows["online-shop"]["reason"] == ""
        assert metadata["dagster/row_count"].value == rows["online-shop"]["tests"] + (rows["marketplace"]["tests"] or 0)

        (code_dir / "online-shop" / "tools.py").write_text("raise SystemExit(3)\n")
        failed = _materialize(
            instance, home, category, selection=["tool_tests", "tool_graphs"], run_config=None, raise_on_error=False
        )
        assert not failed.success
        (check,) = failed.get_asset_check_evaluations()
        assert not check.passed, "the blocking gate fails when no environment passes"
        materialized = {e.materialization.asset_key.to_user_string() for e in failed.get_asset_materialization_events()}
        assert "tool_graphs" not in materialized, "the blocking check stops downstream assets"


def test_assets_jobs_and_code_versions_come_from_the_registry():
    graph = defs.resolve_asset_graph()
    assert {k.to_user_string() for k in graph.get_all_asset_keys()} == {s.name for s in STAGES}
    for s in STAGES:
        node = graph.get(dg.AssetKey(s.name))
        assert node.code_version == s.code_version and node.group_name == s.group, s.name
        assert node.is_partitioned == s.partitioned, s.name
    for group in ("discovery", "build", "tasks"):
        job = defs.resolve_job_def(f"{group}_job")
        assert {k.to_user_string() for k in job.asset_layer.selected_asset_keys} == {
            s.name for s in STAGES if s.group == group
        }
    for s in STAGES:
        if s.group == "evolve":  # partitioned and unpartitioned stages mixed: a job per stage
            job = defs.resolve_job_def(f"{s.name}_job")
            assert {k.to_user_string() for k in job.asset_layer.selected_asset_keys} == {s.name}
