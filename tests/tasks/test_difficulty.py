"""Difficulty presets and knobs, the shortfall report, and the depth summary of a task set."""

from __future__ import annotations

import pytest

from factory.models import Difficulty, Task
from factory.tasks.depth import depth, depth_report
from factory.tasks.difficulty import (
    DIFFICULTY_VARIABLE,
    PRESETS,
    DifficultyError,
    Shortfall,
    knobs_for,
    shortfall_summary,
    shortfalls,
)


def test_presets_only_get_harder_knob_by_knob():
    easy, medium, hard = PRESETS["easy"], PRESETS["medium"], PRESETS["hard"]
    for knob in ("chain_length", "pages", "constraints", "distractors", "recovery"):
        assert getattr(easy, knob) <= getattr(medium, knob) <= getattr(hard, knob), knob
    assert hard.chain_length > medium.chain_length > easy.chain_length
    assert hard.obscured and not easy.obscured


def test_a_knob_is_set_on_top_of_its_preset_and_none_leaves_it(monkeypatch):
    monkeypatch.delenv(DIFFICULTY_VARIABLE, raising=False)
    assert knobs_for() == PRESETS["medium"]
    knobs = knobs_for("easy", pages=4, recovery=None)
    assert (knobs.level, knobs.pages, knobs.chain_length, knobs.recovery) == ("easy", 4, 2, 0)
    lowered = knobs_for("hard", chain_length=3, obscured=False, recovery=0)
    assert lowered == PRESETS["hard"]  # a knob only raises its floor
    assert knobs_for("medium", obscured=True).obscured


def test_the_environment_variable_picks_the_preset_when_none_is_given(monkeypatch):
    monkeypatch.setenv(DIFFICULTY_VARIABLE, "hard")
    assert knobs_for().level == "hard"
    assert knobs_for("easy").level == "easy"
    monkeypatch.setenv(DIFFICULTY_VARIABLE, "brutal")
    with pytest.raises(DifficultyError, match="FACTORY_DIFFICULTY must be one of easy, medium, hard, not 'brutal'"):
        knobs_for()


@pytest.mark.parametrize(
    ("level", "overrides", "message"),
    [
        ("extreme", {}, "level must be one of"),
        ("hard", {"depth": 3}, "unknown difficulty knob"),
        ("hard", {"chain_length": 0}, "bad difficulty knob"),
        ("hard", {"pages": -1}, "bad difficulty knob"),
    ],
)
def test_bad_settings_say_what_is_wrong(level, overrides, message):
    with pytest.raises(DifficultyError, match=message):
        knobs_for(level, **overrides)


def _task(calls: int, kind: str = "graph", **difficulty) -> Task:
    return Task(
        id=f"t{calls}-{kind}",
        env_id="env",
        kind=kind,  # type: ignore[arg-type]
        question="q",
        gold=[],
        gold_calls=calls,
        mutates=calls % 2 == 0,
        needs_pagination=calls > 10,
        difficulty=Difficulty(**difficulty),
    )


def test_shortfalls_name_every_knob_a_task_stays_below():
    hard = knobs_for("hard")
    assert shortfalls(_task(8, pages=1), hard) == [
        "chain_length: 8 of 14 calls",
        "pages: 1 of 3 pages of one listing",
        "constraints: 0 of 2",
        "obscured: records are named",
        "distractors: 0 of 2 near-miss rows",
        "recovery: 0 of 1 refused calls",
    ]
    reached = _task(30, pages=3, constraints=["budget", "supply"], obscured=True, distractors=2, recovery=1)
    assert shortfalls(reached, hard) == []
    assert shortfalls(_task(2), knobs_for("easy")) == []
    summary = shortfall_summary([_task(8, pages=1), _task(9, pages=3), reached], hard)
    assert list(summary) == ["chain_length", "pages", "constraints", "obscured", "distractors", "recovery"]
    assert summary["chain_length"] == Shortfall(tasks=2, example="env: 8 of 14 calls")
    assert summary["pages"].tasks == 1


def test_depth_counts_calls_long_tasks_mutations_and_pagination():
    tasks = [_task(n, "graph" if n < 20 else "program", level="hard") for n in (2, 5, 8, 12, 21, 30, 45)]
    d = depth(tasks)
    assert d.tasks == 7 and d.gold_calls_max == 45 and d.gold_calls_p50 == 12.0
    assert d.gold_calls_mean == round(sum((2, 5, 8, 12, 21, 30, 45)) / 7, 2)
    assert d.share_over_20 == round(3 / 7, 3)
    assert d.share_mutate == round(4 / 7, 3)  # 2, 8, 12, 30
    assert d.share_need_pagination == round(4 / 7, 3)  # 12, 21, 30, 45
    assert d.histogram == {"1-3": 1, "4-6": 1, "7-12": 2, "13-20": 0, "21-40": 2, "41+": 1}
    report = depth_report(tasks)
    assert report.by_kind["graph"].tasks == 4 and report.by_kind["program"].tasks == 3
    assert set(report.by_level) == {"hard"} and report.by_level["hard"] == d
    assert depth([]).tasks == 0


def test_an_empty_synthesis_says_whether_anything_was_generated():
    from factory.tasks.synthesize import TaskSynthesis, nothing_kept

    assert nothing_kept(TaskSynthesis(env_id="e", generated=0)).startswith("no task could be generated")
    assert (
        nothing_kept(TaskSynthesis(env_id="e", generated=3))
        == "no task survived the filter and the audit (3 generated)"
    )
