"""The multi-step families (cascade, notify, branch, recovery, reschedule) on catalog bundles, the difficulty knobs on
program tasks, and needs_pagination measured by a first-page run of the gold."""

from __future__ import annotations

import random
import re
import statistics
from datetime import datetime

import pytest

from factory.models import Difficulty, Task
from factory.tasks.difficulty import knobs_for
from factory.tasks.programs import EnvView, family_of, realize, synthesize_program_tasks
from factory.tasks.programs.draft import Draft, program
from factory.tasks.programs.synthesis import first_page_program
from factory.verify.code import check_verifier_source, run_code_verifier
from tests.builders import opened_catalog

ENVS = ("issue-tracker", "clinic-appointments")
ACTS = {"cascade", "notify", "branch", "recovery", "reschedule"}


@pytest.fixture(scope="module")
def envs(catalog_bundles):
    with opened_catalog(catalog_bundles, ENVS) as opened:
        yield opened


@pytest.fixture(scope="module")
def by_level(envs) -> dict[str, dict[str, list[Task]]]:
    out: dict[str, dict[str, list[Task]]] = {}
    for level in ("easy", "hard"):
        out[level] = {
            name: synthesize_program_tasks(b, env.session, random.Random(3), 8, knobs=knobs_for(level))
            for name, (b, env) in envs.items()
        }
    return out


def test_the_act_families_instantiate_and_their_verifiers_hold(envs, by_level):
    seen = set()
    for per_env in by_level.values():
        for name, tasks in per_env.items():
            _, env = envs[name]
            for t in tasks:
                if family_of(t) not in ACTS:
                    continue
                seen.add(family_of(t))
                assert t.verifier and check_verifier_source(t.verifier) == []
                with env.session() as s:
                    initial = s.snapshot()
                    run = s.run_program(str(t.gold))
                    final = s.snapshot()
                assert run.error is None and run.answer == t.answer and len(run.calls) == t.gold_calls
                assert run_code_verifier(t.verifier, initial, final, t.answer).passed, t.id
                assert not run_code_verifier(t.verifier, initial, initial, None).passed  # do nothing
                assert not run_code_verifier(t.verifier, initial, initial, t.answer).passed  # answer only
                assert not run_code_verifier(t.verifier, initial, initial, t.question).passed  # echo
                writes = [(c.tool, tuple(sorted(c.args.items()))) for c in run.calls if "offset" not in c.args]
                assert len(writes) == len(set(writes)), t.id  # nothing written twice
    assert seen == ACTS


def test_questions_read_as_english(by_level):
    for per_env in by_level.values():
        for tasks in per_env.values():
            for t in tasks:
                if family_of(t) not in ACTS:
                    continue
                unquoted = re.sub(r'"[^"]*"', "", t.question)
                assert not re.search(r"\b[a-z]+_[a-z_]+\b", unquoted), t.question  # no raw column names
                assert not re.search(r"\b(record|entry|entries|records)\b", t.question), t.question


def test_recovery_tasks_meet_refusals(envs, by_level):
    found = [t for per_env in by_level.values() for ts in per_env.values() for t in ts if family_of(t) == "recovery"]
    assert found
    for t in found:
        assert t.difficulty.recovery >= 1 and isinstance(t.answer, list) and len(t.answer) == t.difficulty.recovery


def _refused(answer) -> int:
    """The refusals an answer reports: a list of refused ids, or the "refused" ids of a dict answer."""
    if isinstance(answer, list):
        return len(answer)
    return len(answer.get("refused", [])) if isinstance(answer, dict) else 0


def test_the_recovery_knob_reaches_every_multi_step_family(by_level):
    hard = [t for ts in by_level["hard"].values() for t in ts if family_of(t) in ACTS]
    recovering = [t for t in hard if t.difficulty.recovery >= 1]
    assert {family_of(t) for t in recovering} - {"recovery"}  # not only the recovery family meets refusals
    assert len(recovering) >= 0.8 * len(hard)
    for t in recovering:  # counted from the gold run: each refused call is one the answer reports
        assert "recovery" in t.capabilities and t.difficulty.recovery == _refused(t.answer), t.id
    easy = [t for ts in by_level["easy"].values() for t in ts if family_of(t) in {"cascade", "notify", "branch"}]
    assert easy and all(t.difficulty.recovery == 0 and "recovery" not in t.capabilities for t in easy)  # knob off


def test_reschedule_moves_each_booking_to_its_next_free_slot(envs, by_level):
    found = [t for per_env in by_level.values() for t in per_env["clinic-appointments"] if family_of(t) == "reschedule"]
    assert found
    _, env = envs["clinic-appointments"]
    for t in found:
        assert "next free slot" in t.question and not re.search(r"\bvis_\d+", t.question)  # never which are refused
        assert set(t.answer) == {"moved", "refused"} and t.answer["moved"] >= 1
        with env.session() as s:
            before = {r["id"]: r for r in s.snapshot().tables["visits"]}
            s.run_program(str(t.gold))
            after = {r["id"]: r for r in s.snapshot().tables["visits"]}
        moved = [k for k in before if before[k]["starts_at"] != after[k]["starts_at"]]
        assert len(moved) == t.answer["moved"] and not set(moved) & set(t.answer["refused"])
        for k in moved:  # a whole number of days later, at the same time of day
            shift = datetime.fromisoformat(after[k]["starts_at"]) - datetime.fromisoformat(before[k]["starts_at"])
            assert shift.days >= 1 and shift.seconds == 0
        for k in t.answer["refused"]:
            assert before[k]["status"] == "cancelled" and after[k] == before[k]
        held = [(r["doctor_id"], r["starts_at"]) for r in after.values() if r["status"] != "cancelled"]
        assert all(held.count((after[k]["doctor_id"], after[k]["starts_at"])) == 1 for k in moved)


def test_knobs_make_program_tasks_deeper(by_level):
    def mean(level: str, what) -> float:
        return statistics.mean(what(t) for ts in by_level[level].values() for t in ts)

    assert mean("hard", lambda t: t.gold_calls) > mean("easy", lambda t: t.gold_calls)
    floor = knobs_for("hard").pages  # the pages knob: every hard task reads that many pages of one listing
    assert mean("hard", lambda t: t.difficulty.pages >= floor) > mean("easy", lambda t: t.difficulty.pages >= floor)
    assert mean("hard", lambda t: t.needs_pagination) >= mean("easy", lambda t: t.needs_pagination)
    hard = [t for ts in by_level["hard"].values() for t in ts]
    assert statistics.mean(t.gold_calls for t in hard) >= 12
    assert all(t.gold_calls >= knobs_for("hard").chain_length for t in hard)
    assert all(t.difficulty.obscured for t in hard if family_of(t) in ACTS)


def _draft(source: str) -> Draft:
    return Draft(
        family="aggregate",
        question="How many issues are there?",
        program=program(source),
        capabilities=["loops"],
        difficulty=Difficulty(),
    )


def test_needs_pagination_is_true_only_when_one_page_cannot_answer(envs):
    bundle, env = envs["issue-tracker"]
    with env.session() as s:
        view = EnvView(bundle.spec, s.snapshot().tables)
    every = realize(_draft("return len(_all(tools.list_issues, 20))"), bundle, view, env.session)
    first = realize(_draft("return len(tools.list_issues(limit=20, offset=0)['items'])"), bundle, view, env.session)
    assert isinstance(every, Task) and isinstance(first, Task)
    assert every.needs_pagination and every.difficulty.pages > 1
    assert not first.needs_pagination


def test_the_first_page_program_wraps_solve():
    source = first_page_program(program("return 1"), [])
    assert "def _solve_every_page(tools):" in source and source.count("def solve(tools)") == 1
