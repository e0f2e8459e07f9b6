"""Agent-World release questions imported as tasks, through the same filter and audit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factory.envs.bundle import Bundle
from factory.envs.importers import import_agent_world
from factory.models import ToolCall
from factory.tasks.agent_world import (
    answer_checks,
    import_agent_world_tasks,
    load_questions,
    question_task,
    questions_path,
)
from factory.tasks.filter import value_keys
from factory.verify.rubric import rubric_verdict
from factory.verify.scoring import environment_session_factory, replay_calls

FIXTURES = Path(__file__).parent.parent / "fixtures"
RELEASE = FIXTURES / "agent_world" / "environment_mix"
QUESTIONS = RELEASE / "questions"  # the release layout: environment_mix/questions/<id>.json


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    out = tmp_path_factory.mktemp("aw-tasks") / "library"
    assert import_agent_world(RELEASE / "0731001", out).kept
    return out


def test_library_questions_keep_the_sound_ones_and_say_why_the_rest_went(library):
    result = import_agent_world_tasks(library, QUESTIONS / "0731001.json")
    assert result.env_id == "agent-world-0731001"
    assert result.generated == 5 and len(result.tasks) == 3
    assert result.audit_summary == {"chain_fails_on_release_data": 1, "kept": 3, "ungrounded_write": 1}
    reasons = {d.question.split(" ")[0]: d.reason for d in result.dropped}
    assert reasons["Ada"].startswith("ungrounded_write: call 1 return_book: loan_id='L0002'")
    assert reasons["Lend"] == (
        "chain_fails_on_release_data: call 1 checkout_book: invalid_transition: member M003 is suspended"
    )


def test_a_checkout_question_gets_state_and_answer_checks(library):
    result = import_agent_world_tasks(library, QUESTIONS / "0731001.json")
    checkout = next(t for t in result.tasks if t.question.startswith("Ada Okafor"))
    assert checkout.kind == "graph" and checkout.mutates
    assert [(c.tool, c.args) for c in checkout.gold] == [
        ("search_books", {"query": "Persuasion"}),
        ("checkout_book", {"member_id": "M001", "book_id": "B006"}),
    ]
    kinds = {(c.kind, c.table, c.field) for c in checkout.rubric}
    assert ("field_equals", "books", "available_copies") in kinds
    assert ("row_exists", "loans", None) in kinds
    stated = {c.value for c in checkout.rubric if c.kind == "answer_contains"}
    assert {"L0006", "2025-03-15"} <= stated
    read_only = next(t for t in result.tasks if t.question.startswith("Which books"))
    assert not read_only.mutates
    assert {"The Left Hand of Darkness", "Beloved", 2} <= {c.value for c in read_only.rubric if c.kind != "end_state"}


def test_imported_tasks_check_the_whole_end_state(library):
    spec = Bundle.open(library).spec
    extra = ToolCall(tool="checkout_book", args={"member_id": "M001", "book_id": "B002"})
    env, session_factory = environment_session_factory(library)
    with env:
        tasks = [question_task(spec, q, session_factory, "") for q in load_questions(QUESTIONS / "0731001.json")]
        checkout = next(t for t in tasks if t.question.startswith("Ada Okafor"))
        read_only = next(t for t in tasks if t.question.startswith("Which books"))
        near = {c.value: c.competitors for c in [*checkout.rubric, *read_only.rubric] if c.kind == "answer_contains"}
        assert {"L0001", "L0005"} <= set(near["L0006"]) and "L0006" not in near["L0006"]
        assert {1, 3} <= set(near[2]) and 2 not in near[2]
        assert "The Left Hand of Darkness" not in near["Beloved"]  # the reference answer states it too
        for task in (checkout, read_only):
            (end_state,) = [c for c in task.rubric if c.kind == "end_state"]
            assert bool(end_state.value["tables"]) == task.mutates
            assert isinstance(task.gold, list) and isinstance(task.answer, str)
            gold = replay_calls(session_factory, task.gold)
            assert rubric_verdict(task.rubric, gold.initial, gold.final, task.answer).passed
            more = replay_calls(session_factory, [*task.gold, extra])
            assert more.results[-1].ok  # the extra loan went through, and only the end_state check sees it
            verdict = rubric_verdict(task.rubric, more.initial, more.final, task.answer)
            assert [c.name for c in verdict.checks if not c.passed] == [end_state.description], task.question


def test_a_broken_released_tool_drops_its_question(tmp_path):
    out = tmp_path / "recipes"
    import_agent_world(RELEASE / "0822002", out)
    result = import_agent_world_tasks(out, QUESTIONS / "0822002.json")
    assert result.audit_summary == {"chain_fails_on_release_data": 1, "kept": 2}
    # rate_recipe's released code raises NameError: the chain fails on the release's own code too, so the question
    # is dropped as the release's failure, not as a broken import.
    reason = result.dropped[0].reason
    assert reason.startswith("chain_fails_on_release_data: call 1 rate_recipe: tool_exception: NameError")
    pantry = next(t for t in result.tasks if t.mutates)
    row = next(c for c in pantry.rubric if c.kind == "row_exists")
    assert row.where is not None and "updated_at" not in row.where  # clock-stamped bookkeeping is not compared


def test_question_files_in_every_release_shape(tmp_path):
    one = {"task": "t", "reference_answer": "r", "grading_rubric": {"success_criteria": [], "verified_tool_chain": []}}
    released = {"env_id": "0000001", "name": "X", "tasks": [one, one]}
    for i, data in enumerate([released, one, [one, one], {"questions": [one]}]):
        path = tmp_path / f"{i}.json"
        path.write_text(json.dumps(data))
        assert [q.task for q in load_questions(path)] == ["t"] * (2 if i in (0, 2) else 1)
    assert len(load_questions(QUESTIONS / "0731001.json")) == 5  # the fixtures are in the released shape
    assert questions_path(RELEASE / "0731001") == RELEASE / "questions" / "0731001.json"


def test_answer_checks_prefer_values_a_criterion_names():
    checks = answer_checks(
        "Loan L0006, due 2025-03-15, 1 copy left.", ["L0006", "2025-03-15", 1], ["due on 2025-03-15"]
    )
    assert [(c.value, c.description) for c in checks] == [("2025-03-15", "due on 2025-03-15")]


def test_answer_checks_skip_a_name_the_question_gives_run_together():
    reference = "Jay Rivera (jayrivera.bsky.social) has 1840 followers."
    question = "Who is jayrivera.bsky.social and how many followers do they have?"
    checks = answer_checks(reference, ["Jay Rivera", 1840], [], question=question)
    assert [c.value for c in checks] == [1840]
    plain = answer_checks(reference, ["Jay Rivera", 1840], [], question="Who is jr1?")
    assert "Jay Rivera" in [c.value for c in plain]  # a handle that does not spell it gives nothing away


def test_a_criterion_s_step_references_name_no_value():
    reference = json.dumps({"data": [{"id": "L0006", "count": 0}], "total": 3})
    criteria = ["Step 0 returns loan L0006 in data[0] for the id $1.data.0.id", "Call 3 confirms it"]
    checks = answer_checks(reference, ["L0006", 0, 3], criteria)
    assert [c.value for c in checks] == ["L0006"]  # not 0 ("Step 0", "data[0]") nor 3 ("Call 3")


def test_every_telling_value_a_criterion_names_is_checked_and_a_write_asks_only_those():
    rows = {
        "employees": [
            {"name": "Dana Whitlock", "dept": "Sales"},
            {"name": "Ravi Menon", "dept": "Ops"},
            {"name": "Priya Shah", "dept": "Legal"},
        ],
        "requests": [{"id": "TO-3"}, {"id": "TO-4"}, {"id": "TO-5"}],
    }
    reference = "Pending: TO-3 (Dana Whitlock, Sales), TO-4 (Ravi Menon, Ops); 2 requests"
    produced = ["TO-3", "TO-4", "Dana Whitlock", "Ravi Menon", "Sales", "Ops", 2]
    criteria = ["The answer names Dana Whitlock (Sales) and Ravi Menon (Ops)", "TO-3 and TO-4 are listed"]
    values = [c.value for c in answer_checks(reference, produced, criteria, rows=rows)]
    assert set(values) == {"TO-3", "TO-4", "Dana Whitlock", "Ravi Menon", "Sales", "Ops"}  # six, not four
    # criteria that name nothing: a read falls back on the reference's values, a write is judged by its effect
    assert answer_checks(reference, produced, ["It works"], rows=rows)
    assert answer_checks(reference, produced, ["It works"], rows=rows, any_value=False) == []


def test_a_read_whose_checks_come_from_its_first_calls_also_checks_its_last_call():
    """Geocode, then directions: the start coordinates a criterion names came from the geocode, so an answer made
    after the first call passed. One value only the directions answer with is checked too."""
    rows = {"routes": [{"distance_m": 266.5, "duration_s": 19}, {"distance_m": 1204.0, "duration_s": 95}]}
    reference = json.dumps({"start": [-122.08406, 37.42202], "summary": {"distance_m": 266.5, "duration_s": 19}})
    produced = [-122.08406, 37.42202, 266.5, 19]
    criteria = ["Step 1 returns a route whose start is [-122.08406, 37.42202]"]
    last = value_keys([266.5, 19])  # what the directions alone answer with
    checks = answer_checks(reference, produced, criteria, rows=rows, last=last)
    assert [c.value for c in checks] == [-122.08406, 37.42202, 266.5]
    assert 1204.0 in checks[-1].competitors  # the other route's distance
    # a check from the last call already; a write (its effect shows the last call); no value of the last call
    assert [c.value for c in answer_checks(reference, produced, ["It gives 266.5 m"], rows=rows, last=last)] == [266.5]
    write = answer_checks(reference, produced, criteria, rows=rows, any_value=False, last=last)
    assert [c.value for c in write] == [-122.08406, 37.42202]
    assert len(answer_checks(reference, produced[:2], criteria, rows=rows, last=last)) == 2


def test_a_value_one_check_asks_for_is_no_competitor_of_another():
    """ "the URLs of the issue and of the commit": stating the issue's URL is no hedge on the commit's; a third
    URL still is."""
    urls = ["https://gh.example/issues/214", "https://gh.example/commit/8f3c", "https://gh.example/commit/77aa"]
    rows = {"items": [{"source_url": u} for u in urls]}
    asked = [(urls[0], "the issue URL"), (urls[1], "the fix commit's URL")]
    checks = answer_checks("{}", [], [], "Give me the URLs.", rows, asked=asked)
    assert [c.value for c in checks] == urls[:2]
    assert [c.competitors for c in checks] == [[urls[2]], [urls[2]]]
