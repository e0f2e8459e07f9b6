"""Environment splits: arena per category, a seed-independent held-out set, training for the rest."""

from __future__ import annotations

from collections import Counter

import pytest

from factory.evolve.splits import assign_splits, default_heldout


def world(sizes: dict[str, int]) -> dict[str, list[str]]:
    return {c: [f"{c}-env-{i:02d}" for i in range(n)] for c, n in sizes.items()}


def test_every_env_gets_one_split_and_arena_is_five_per_category():
    envs = world({"commerce": 20, "finance": 12, "travel": 8})
    splits = assign_splits(envs, seed=7)
    assert set(splits) == {e for v in envs.values() for e in v}
    for category, members in envs.items():
        counts = Counter(splits[e] for e in members)
        assert counts["arena"] == 5, category
        assert counts["heldout"] == max(1, round(len(members) * 0.1))
        assert counts["train"] == len(members) - 5 - counts["heldout"]


def test_heldout_does_not_depend_on_the_seed_and_arena_does():
    envs = world({"commerce": 30, "finance": 30})
    a, b = assign_splits(envs, seed=1), assign_splits(envs, seed=2)
    held = {e for e, s in a.items() if s == "heldout"}
    assert held == {e for e, s in b.items() if s == "heldout"} == default_heldout(envs)
    assert {e for e, s in a.items() if s == "arena"} != {e for e, s in b.items() if s == "arena"}
    assert assign_splits(envs, seed=1) == a


def test_small_categories_keep_a_training_env():
    splits = assign_splits(world({"one": 1, "two": 2, "three": 3}), seed=0)
    assert splits["one-env-00"] == "train"
    assert Counter(splits[f"two-env-{i:02d}"] for i in range(2)) == {"arena": 1, "train": 1}
    assert Counter(splits[f"three-env-{i:02d}"] for i in range(3)) == {"heldout": 1, "arena": 1, "train": 1}


def test_configured_heldout_and_arena_size():
    envs = world({"commerce": 10})
    splits = assign_splits(envs, seed=3, arena_per_category=2, heldout=["commerce-env-04"])
    assert [e for e, s in splits.items() if s == "heldout"] == ["commerce-env-04"]
    assert Counter(splits.values()) == {"arena": 2, "heldout": 1, "train": 7}
    with pytest.raises(ValueError, match="not in any category: nope"):
        assign_splits(envs, heldout=["nope"])
