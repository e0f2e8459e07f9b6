"""The multi-step families (cascade, notify, branch, recovery) on catalog bundles, the difficulty knobs on
program tasks, and needs_pagination measured by a first-page run of the gold."""

from __future__ import annotations

import random
import re
import statistics

import pytest

from factory.envs.bundle import Bundle
from factory.envs.runtime import Environment
from factory.models import Difficulty, Task
from factory.tasks.difficulty import knobs_for
from factory.tasks.programs import EnvView, family_of, realize, synthesize_program_tasks
from factory.tasks.programs.draft import Draft, program
from factory.tasks.programs.synthesis import first_page_program
from factory.verify.code import check_verifier_source, run_code_verifier

ENVS = ("issue-tracker", "clinic-appointments")
ACTS = {"cascade", "notify", "branch", "recovery"}


@pytest.fixture(scope="module")
def envs(catalog_bundles):
    opened = {}
    for topic in ENVS:
        path = catalog_bundles.kept(topic)
        opened[topic] = (Bundle.open(path), Environment.open(path))
    yield opened
    for _, env in opened.values():
        env.close()


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
