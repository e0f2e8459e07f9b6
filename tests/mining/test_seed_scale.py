"""The seed scale: from an argument or $FACTORY_SEED_SCALE (read when a run starts), validated, and an
input of the mined-datasets stage, so changing it rebuilds."""

from __future__ import annotations

from pathlib import Path

import pytest

from factory.mining.datasets import SCALE_ENV, draft_environment, seed_scale
from factory.pipeline.artifacts import load_dataset
from factory.pipeline.build import mined_datasets as stage
from factory.store import Store
from factory.topics import get_topic


def test_explicit_scale_wins_and_env_var_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SCALE_ENV, raising=False)
    assert seed_scale() == 1.0
    monkeypatch.setenv(SCALE_ENV, "2.5")
    assert seed_scale() == 2.5
    assert seed_scale(0.5) == 0.5
    monkeypatch.setenv(SCALE_ENV, " ")
    assert seed_scale() == 1.0


@pytest.mark.parametrize("raw", ["0", "-1", "lots", "nan", "inf"])
def test_bad_env_values_name_the_variable(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv(SCALE_ENV, raw)
    with pytest.raises(ValueError, match=SCALE_ENV):
        seed_scale()


@pytest.mark.parametrize("bad", [0, -2.0, float("nan")])
def test_bad_arguments_name_the_argument(bad: float) -> None:
    with pytest.raises(ValueError, match="--scale"):
        seed_scale(bad, what="--scale")
    with pytest.raises(ValueError, match="scale"):
        draft_environment(get_topic("online-shop"), scale=bad)


def test_scale_multiplies_the_rows() -> None:
    topic = get_topic("online-shop")
    spec, rows = draft_environment(topic)
    big_spec, big = draft_environment(topic, scale=2.0)
    assert big_spec.scale == 2.0 and spec.scale == 1.0
    for table, r in rows.items():
        assert len(big[table]) >= len(r)
    assert sum(map(len, big.values())) > 1.5 * sum(map(len, rows.values()))


def _mine(store: Store, monkeypatch: pytest.MonkeyPatch, **kw):
    topic = get_topic("online-shop")
    path = topic.taxonomy_hint
    monkeypatch.setattr(stage, "topics_in_category", lambda s, c: [(topic, path)])
    monkeypatch.setattr(stage, "taxonomy_hash", lambda s: "t")
    monkeypatch.setattr(stage, "topics_hash", lambda s: "t")
    return stage.mine_datasets(store, "commerce", **kw)


def test_stage_reads_the_env_var_and_rebuilds_when_the_scale_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(tmp_path)
    monkeypatch.delenv(SCALE_ENV, raising=False)
    first = _mine(store, monkeypatch)
    assert first.rebuilt == ["online-shop"]
    assert _mine(store, monkeypatch).reused == ["online-shop"]
    small = sum(map(len, load_dataset(store, "commerce", "online-shop")[1].values()))
    monkeypatch.setenv(SCALE_ENV, "2")
    again = _mine(store, monkeypatch)
    assert again.rebuilt == ["online-shop"]
    spec, rows = load_dataset(store, "commerce", "online-shop")
    assert spec.scale == 2.0 and sum(map(len, rows.values())) > small
    assert _mine(store, monkeypatch, scale=2.0).reused == ["online-shop"]  # same scale from the config
    monkeypatch.setenv(SCALE_ENV, "-1")
    with pytest.raises(ValueError, match=SCALE_ENV):
        _mine(store, monkeypatch)
