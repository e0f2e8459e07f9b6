"""The issue's depth targets on catalog environments, both kinds together, after the filter and the audit:
at the hard preset the gold makes at least 12 calls on average and more than a quarter of tasks exceed 20; at
the default (medium) at least 6 on average; a knob set on top of a preset never makes tasks shorter."""

from __future__ import annotations

import statistics

import pytest

from factory.tasks.depth import depth
from factory.tasks.difficulty import knobs_for
from factory.tasks.synthesize import synthesize_tasks

TOPICS = ("online-shop", "procurement", "retail-banking")
N = 8


@pytest.fixture(scope="module")
def made(catalog_bundles):
    """Kept tasks per preset over the topics."""
    out = {}
    for level in ("easy", "medium", "hard"):
        tasks = []
        for topic in TOPICS:
            tasks += synthesize_tasks(catalog_bundles.kept(topic), n=N, seed=0, knobs=knobs_for(level)).tasks
        out[level] = tasks
    return out


@pytest.mark.slow
def test_hard_and_default_sets_meet_the_depth_targets(made):
    hard, medium = depth(made["hard"]), depth(made["medium"])
    assert hard.tasks >= len(TOPICS) * N * 0.7, "most generated tasks survive the filter and the audit"
    assert hard.gold_calls_mean >= 12, hard
    assert hard.share_over_20 >= 0.25, hard
    assert medium.gold_calls_mean >= 6, medium
    for kind in ("graph", "program"):
        assert any(t.kind == kind for t in made["hard"]), kind


@pytest.mark.slow
def test_each_task_records_what_its_gold_does(made):
    for level, tasks in made.items():
        for t in tasks:
            assert t.difficulty.level == level
            calls = len(t.gold) if isinstance(t.gold, list) else None
            assert t.gold_calls >= 1 and (calls is None or t.gold_calls == calls), t.id
            if t.needs_pagination:
                assert t.difficulty.pages >= 2, t.id


@pytest.mark.slow
def test_presets_get_longer_and_page_more(made):
    means = [statistics.mean(t.gold_calls for t in made[level]) for level in ("easy", "medium", "hard")]
    assert means == sorted(means) and means[0] < means[2], means
    paging = [statistics.mean(t.difficulty.pages for t in made[level]) for level in ("easy", "medium", "hard")]
    assert paging[0] <= paging[2], paging


@pytest.mark.slow
def test_a_knob_on_top_of_a_preset_never_shortens_tasks(catalog_bundles):
    bundle = catalog_bundles.kept("online-shop")
    plain = synthesize_tasks(bundle, n=6, seed=1, knobs=knobs_for("easy")).tasks
    longer = synthesize_tasks(bundle, n=6, seed=1, knobs=knobs_for("easy", chain_length=12)).tasks
    paged = synthesize_tasks(bundle, n=6, seed=1, knobs=knobs_for("easy", pages=3)).tasks
    assert statistics.mean(t.gold_calls for t in longer) > statistics.mean(t.gold_calls for t in plain)
    assert statistics.mean(t.difficulty.pages for t in paged) > statistics.mean(t.difficulty.pages for t in plain)
    assert all(t.gold_calls >= min(u.gold_calls for u in plain) for t in longer)
