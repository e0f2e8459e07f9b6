"""The benchmark harness at tiny sizes: it runs end to end and writes its JSON. No speed targets asserted here."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from benchmarks.__main__ import BENCHMARKS, main
from benchmarks.awm_baseline.database import dump_seed_sql, rebuild_database
from benchmarks.measure import memory_of, pinned_to_one_core, process_tree
from benchmarks.runtime_bench import read_probe, replicate_rows
from factory.envs.bundle import SCHEMA_SQL, Bundle
from factory.envs.state import build_seed_db, read_sqlite_state

REQUIRED_KEYS = {
    "calls_per_s",
    "raw_sqlite_calls_per_s",
    "baseline_calls_per_s",
    "ratio_vs_baseline",
    "reset_ms",
    "baseline_reset_ms",
    "reset_ratio_vs_baseline",
    "rss_mb_1000_sessions",
    "first_call_ms",
    "baseline_start_ms",
}


@pytest.fixture
def shop(shop_bundle: Path) -> Path:
    return shop_bundle


def test_quick_run_writes_every_key(tmp_path: Path) -> None:
    assert main(["runtime", "--quick", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "runtime.json").read_text())
    assert data.keys() >= REQUIRED_KEYS
    for key in REQUIRED_KEYS:
        assert isinstance(data[key], int | float) and data[key] > 0, key
    assert data["ratio_vs_baseline"] == pytest.approx(data["calls_per_s"] / data["baseline_calls_per_s"], rel=0.01)
    assert data["machine"]["cpu_count"] == os.cpu_count() and data["machine"]["python"]
    assert data["sessions_failed_calls"] == 0
    assert set(data["targets"]) >= {"calls_per_s", "reset_ms", "memory_1000_sessions", "first_call_ms"}
    assert all(isinstance(t["pass"], bool) for t in data["targets"].values())
    assert json.loads(data["baseline_answer"]) == data["answer"]  # both designs answered the same call the same way
    assert not list(tmp_path.glob("*.tmp"))


def test_registry_has_the_runtime_benchmark() -> None:
    assert "runtime" in BENCHMARKS
    with pytest.raises(SystemExit):
        main(["no-such-benchmark"])


def test_baseline_rebuild_holds_the_seed_rows(shop: Path, tmp_path: Path) -> None:
    bundle = Bundle.open(shop)
    db = tmp_path / "env.db"
    rebuild_database(db, (shop / SCHEMA_SQL).read_text(), dump_seed_sql(bundle.seed_bytes()))
    rebuild_database(db, (shop / SCHEMA_SQL).read_text(), dump_seed_sql(bundle.seed_bytes()))  # twice: a reset
    rebuilt = read_sqlite_state(db.read_bytes(), bundle.spec.entities)
    assert rebuilt == read_sqlite_state(bundle.seed_bytes(), bundle.spec.entities)
    assert sum(len(rows) for rows in rebuilt.values()) > 0


def test_replicated_rows_keep_keys_unique_and_references_valid(shop: Path) -> None:
    spec = Bundle.open(shop).spec
    base = read_sqlite_state(Bundle.open(shop).seed_bytes(), spec.entities)
    rows = replicate_rows(spec.entities, base, 3)
    image = build_seed_db(spec.entities, rows)  # raises on duplicate keys, unique values or dangling foreign keys
    conn = sqlite3.connect(":memory:")
    conn.deserialize(image)
    for e in spec.entities:
        assert conn.execute(f'SELECT COUNT(*) FROM "{e.table}"').fetchone()[0] == 3 * len(base[e.table])


def test_read_probe_names_a_get_tool_and_an_existing_key(shop: Path) -> None:
    probe = read_probe(shop)
    assert probe.tool.startswith("get_")
    conn = sqlite3.connect(":memory:")
    conn.deserialize(Bundle.open(shop).seed_bytes())
    assert len(conn.execute(probe.sql, probe.params).fetchall()) == 1


def test_memory_and_pinning_helpers() -> None:
    before = os.sched_getaffinity(0)
    with pinned_to_one_core() as core:
        assert os.sched_getaffinity(0) == {core}
    assert os.sched_getaffinity(0) == before
    mine = memory_of(process_tree())
    assert mine.processes >= 1 and mine.rss_mb > 1 and 0 < mine.pss_mb <= mine.rss_mb + 1


def test_tasks_benchmark_quick_writes_throughput(tmp_path):
    from benchmarks.__main__ import main

    assert main(["tasks", "--quick", "--out", str(tmp_path)]) == 0
    import json

    data = json.loads((tmp_path / "tasks.json").read_text())
    assert set(data["levels"]) == {"easy", "medium", "hard"}
    for level in data["levels"].values():
        for key in ("tasks_synthesized_per_s", "tasks_audited_per_s", "tasks_generated", "tasks_kept", "per_env"):
            assert key in level
        assert level["tasks_generated"] > 0
        assert level["per_env"]["online-shop"]["generated"] == level["tasks_generated"]
        assert {"gold_calls_mean", "gold_calls_p50", "gold_calls_p90", "share_over_20"} <= set(level["depth"])
        assert level["depth"]["tasks"] == level["tasks_kept"]


def test_reward_integrity_quick_writes_shares_per_attack_variant_and_kind(tmp_path, monkeypatch):
    from benchmarks import reward_integrity
    from factory.verify.attacks import ATTACKS, VARIANTS

    monkeypatch.setattr(reward_integrity, "QUICK_TOPICS", ["online-shop"])
    assert main(["reward_integrity", "--quick", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "reward_integrity.json").read_text())
    assert data["environments"] == 1 and data["per_env"]["online-shop"]["generated"] == data["tasks_generated"] > 0
    assert set(data["by_kind"]) == {"graph", "program"}
    for summary in [data["overall"], *data["by_kind"].values()]:
        assert set(summary["attacks"]) <= set(ATTACKS) and set(summary["variants"]) <= set(VARIANTS)
        for e in [*summary["attacks"].values(), *summary["variants"].values(), summary["variants_overall"]]:
            assert 0 <= e["passed"] <= e["built"] and 0.0 <= e["share"] <= 1.0
    assert data["overall"]["attacks"]["attack_noop"]["built"] == data["tasks_kept"]
    assert set(data["targets"]) == {*ATTACKS, "variants", "every_environment_measured"}
    assert all(isinstance(t["pass"], bool) for t in data["targets"].values())
    assert data["machine"]["python"] and data["method"]


def test_real_inputs_quick_measures_each_input(tmp_path):
    from benchmarks import real_inputs

    if not real_inputs.REAL.is_dir():
        pytest.skip("../shared/real is not here")
    assert main(["real_inputs", "--quick", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "real_inputs.json").read_text())
    assert set(data["per_input"]) == set(real_inputs.QUICK)
    for row in data["per_input"].values():
        assert row["operations"] >= row["tools_kept"] >= 1
        assert row["build_seconds"] > 0 and row["build_peak_mb"] > 10
        assert set(row["tasks_kept"]) == {"graph", "program"}


def test_agent_world_quick_measures_a_mix_the_release_s_way_and_ours(tmp_path, monkeypatch):
    from benchmarks import agent_world_release

    monkeypatch.delenv("AGENT_WORLD_MIX", raising=False)
    assert main(["agent_world", "--quick", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "agent_world.json").read_text())
    assert data["mix"] == str(agent_world_release.FIXTURE_MIX)
    assert len(data["per_environment"]) == 2
    for row in data["per_environment"].values():
        assert row["kept"] and row["tools_declared"] >= row["tools_kept"] >= 1
        assert row["questions"] >= row["release_replays"] >= row["ours_replays"] >= 0
    assert sum(r["release_replays"] for r in data["per_environment"].values()) >= 1  # something to compare


def test_evolve_quick_times_rollouts_and_both_rounds(tmp_path):
    from benchmarks import evolve_bench

    assert main(["evolve", "--quick", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "evolve.json").read_text())
    assert data["categories"] == ["commerce", "messaging"]
    local = data["rollouts"]["local"]
    assert set(local["per_env"]) == set(evolve_bench.QUICK_TOPICS)
    assert local["episodes"] == sum(e["episodes"] for e in local["per_env"].values()) > 0
    assert local["episodes_per_s"] > 0 and 0 < local["env_share"] < 1
    assert local["env_share"] + local["orchestration_share"] == pytest.approx(1.0, abs=0.002)
    rounds = data["rounds"]
    assert (rounds["n_categories"], rounds["k_categories"]) == (2, 1)
    [full], [targeted] = rounds["full"], rounds["targeted"]
    assert full["categories"] == data["categories"] and targeted["categories"] == rounds["targeted_subset"]
    assert full["round"] != targeted["round"], "each measurement is a round of its own"
    assert {s for s in targeted["stages_s"] if s.startswith("rollouts/")} == {"rollouts/commerce"}
    for r in (full, targeted):
        assert set(r["targeted_categories"]) <= set(r["categories"])
        assert {s for s in r["stages_s"] if s.startswith("targeted_tasks/")} == {
            f"targeted_tasks/{c}" for c in r["targeted_categories"]
        }
    assert sum(full["stages_s"].values()) <= full["wall_s"] + 0.01  # each stage rounded to ms
    assert rounds["ratio"] == pytest.approx(targeted["wall_s"] / full["wall_s"], abs=0.001)
    assert rounds["bound"] == pytest.approx(0.5 + evolve_bench.TARGET_MARGIN)
    assert data["targets"] == {} and data["machine"]["python"] and data["method"]
