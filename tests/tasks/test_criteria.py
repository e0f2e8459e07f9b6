"""Facts a released question asks for by field: the reference answer alone leaves them unchecked."""

from __future__ import annotations

import json
from pathlib import Path
from unittest.mock import ANY

from factory.envs.bundle import Bundle
from factory.envs.importers import import_agent_world
from factory.models import ToolCall
from factory.tasks.agent_world import import_agent_world_tasks
from factory.tasks.criteria import asked_facts, contradicted, question_gives, stated_facts
from factory.tasks.filter import judge
from factory.verify.scoring import environment_session_factory, replay_calls

RELEASE = Path(__file__).parent.parent / "fixtures" / "agent_world" / "environment_mix"

ISSUES = {"items": [{"issue_number": 214, "source_url": "https://gh.example/issues/214", "status": "open"}]}
COMMITS = {
    "items": [
        {"id": "c1", "commit_sha": "8f3c2a1b", "source_url": "https://gh.example/commit/8f3c2a1b", "kind": "commit"},
        {"id": "c2", "commit_sha": "77aa01ff", "source_url": "https://gh.example/commit/77aa01ff", "kind": "commit"},
    ]
}
CHAIN = [ToolCall(tool="searchIssues", args={}), ToolCall(tool="getCommitHistory", args={})]


def test_a_field_the_criterion_names_and_the_question_asks_for_is_a_fact():
    question = "Find the open issue and the fix commit; include the GitHub URLs and the commit SHA."
    criteria = [
        "Step 0 returns an open issue (e.g., issue_number 214) with a non-null source_url.",
        "Step 1 returns commits with commit_sha and source_url; the fix is 8f3c2a1b.",
    ]
    facts = asked_facts(criteria, CHAIN, [ISSUES, COMMITS], question)
    # the issue's url (one record); the fix commit's sha and url (the record the criterion names), not c2's;
    # never the issue number (the question asks for no number), ids or statuses
    assert [v for v, _ in facts] == ["https://gh.example/issues/214", "8f3c2a1b", "https://gh.example/commit/8f3c2a1b"]
    assert facts[0][1] == criteria[0]


def test_steps_count_from_one_when_no_criterion_says_step_0_and_tools_name_steps_too():
    question = "Which commit fixed it? I need its URL."
    one_based = asked_facts(["Step 2 returns the source_url of commit 77aa01ff."], CHAIN, [ISSUES, COMMITS], question)
    assert [v for v, _ in one_based] == ["https://gh.example/commit/77aa01ff"]
    by_tool = asked_facts(["The searchIssues result gives its source_url"], CHAIN, [ISSUES, COMMITS], question)
    assert [v for v, _ in by_tool] == ["https://gh.example/issues/214"]


def test_what_is_not_asked_for_is_no_fact():
    criteria = ["getCommitHistory returns commits with commit_sha and source_url."]
    # "blob_sha differs" asks for no sha; several commits and none named: which one is not known
    assert asked_facts(criteria, CHAIN, [ISSUES, COMMITS], "Confirm the index updates when blob_sha differs.") == []
    assert asked_facts(criteria, CHAIN, [ISSUES, COMMITS], "Give me the commit SHA and URL.") == []
    # a value the question states, a failed step, a step out of range
    stated = "Give me the URL of https://gh.example/issues/214."
    assert asked_facts(["Step 0 returns its source_url"], CHAIN, [ISSUES, COMMITS], stated) == []
    assert asked_facts(["Step 0 returns its source_url"], CHAIN, [None, COMMITS], "the URL?") == []
    assert asked_facts(["Step 7 returns its source_url"], CHAIN, [ISSUES, COMMITS], "the URL?") == []


def test_a_read_whose_reference_is_its_last_output_still_checks_the_asked_facts(tmp_path):
    bundle = tmp_path / "gateway"
    assert import_agent_world(RELEASE / "1203006", bundle).kept
    question = {
        "task": "In workspace hcs_ws_01, which file mentions conditional requests? I need its blob SHA.",
        "reference_answer": json.dumps({"total": 1}),  # the release's reference is often the last output
        "grading_rubric": {
            "success_criteria": ["Step 0 returns one file and its blob_sha."],
            "verified_tool_chain": [
                {"tool": "searchFiles", "args": {"workspace_id": "hcs_ws_01", "query": "conditional requests"}}
            ],
        },
    }
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps({"env_id": "1203006", "name": "x", "tasks": [question]}))
    result = import_agent_world_tasks(bundle, questions)
    assert len(result.tasks) == 1, result.dropped
    task = result.tasks[0]
    assert "d4e5f6a7" in task.answer  # the gold answer states the fact the reference leaves out
    env, session_factory = environment_session_factory(Bundle.open(bundle))
    with env:
        run = replay_calls(session_factory, task.gold)
        for answer, passes in [
            ("src/sync/fetcher.py, blob d4e5f6a7", True),
            ("1", False),  # the reference's only value: it passed before
            ("src/sync/fetcher.py", False),
            ("", False),
        ]:
            assert judge(task, run.initial, run.final, answer, "all", None, None).passed is passes, answer


BARS = {
    "tool": "get_hist_data",
    "data": [
        {"date": "2026-08-04", "close": 11.09, "SMA": 11.09},
        {"date": "2026-08-05", "close": 11.35, "SMA": 11.22},
    ],
}


def test_a_field_the_question_asks_for_by_name_and_the_reference_states_is_a_fact():
    """ "with a 3-day SMA": no criterion names the SMA, the question does and the reference states its values."""
    question = "Give me the last 2 daily closes of 000001 with a 3-day SMA, 2 bars."
    chain = [ToolCall(tool="get_hist_data", args={"symbol": "000001", "count": 2})]
    reference = json.dumps(BARS)
    criteria = ["The closes 11.09 and 11.35 are reported"]
    facts = stated_facts(reference, chain, [BARS], question, criteria)
    assert sorted(v for v, _ in facts) == [11.09, 11.22, 11.35]
    assert dict((v, c) for v, c in facts)[11.35] == criteria[0]  # a criterion that names it describes it
    assert dict((v, c) for v, c in facts)[11.22] == "the answer states the SMA 11.22"
    # a field the question names only in part (a date is "a day"), or not at all, is no fact; nor is what the chain
    # passed (the count of bars it asked for), nor a value the reference leaves out
    closes = stated_facts(reference, chain, [BARS], "Give me the last 2 daily closes.", [])
    assert sorted(closes) == [(11.09, ANY), (11.35, ANY)]
    assert stated_facts(json.dumps({"close": 11.35}), chain, [BARS], question, []) == [(11.35, ANY)]
    counted = {"count": 2, **BARS}
    assert 2 not in [v for v, _ in stated_facts(json.dumps(counted), chain, [counted], question + " count", [])]


FAILED = {"operation": {"id": "op_2", "status": "failed", "error_code": "validation_invalid_locations"}}
SUCCEEDED = {"operation": {"id": "op_1", "status": "succeeded"}}
ROUTE = [ToolCall(tool="geocode_address", args={}), ToolCall(tool="get_directions", args={})]


def test_a_step_that_answers_otherwise_than_its_criterion_says_contradicts_it():
    """The released chain lost the coordinates it was to pass on: the provider refused them in a result that is
    no error shape, and the reference answer is that failure."""
    wants = ['Step 2 returns an operation with status = "succeeded".']  # counted from 1: no criterion says step 0
    assert contradicted(wants, ROUTE, [SUCCEEDED, FAILED]) == (
        "call 2 get_directions: status is 'failed' where a criterion wants 'succeeded'"
    )
    assert contradicted(wants, ROUTE, [SUCCEEDED, SUCCEEDED]) is None
    # a criterion about every call, in the other spellings a criterion uses
    every = ["Each tool call persists an operation record with status='succeeded'."]
    assert contradicted(every, ROUTE, [FAILED, SUCCEEDED]).startswith("call 1 geocode_address: status is 'failed'")
    assert contradicted(["Step 2 returns it with status: succeeded"], ROUTE, [SUCCEEDED, FAILED]) is not None


def test_what_a_criterion_leaves_open_contradicts_nothing():
    jobs = {"data": [{"id": "j1", "status": "running"}, {"id": "j2", "status": "queued"}]}
    chain = [ToolCall(tool="listJobs", args={})]
    # one record of the list reads the word or part of the words; British spelling; a field no output has; no step
    assert contradicted(["Step 0 lists a job with status = queued"], chain, [jobs]) is None
    assert contradicted(['Step 0 lists a job with status = "queued or running"'], chain, [jobs]) is None
    assert contradicted(['Step 0 returns status "cancelled"'], chain, [{"status": "canceled"}]) is None
    assert contradicted(["Step 0 returns tier = gold"], chain, [jobs]) is None
    assert contradicted(['The job ends with status = "done"'], chain, [jobs]) is None
    # a criterion that opens with another subject than its step; prose after "is"
    later = ['The job queued in step 1 is returned by the final list with status == "done"']
    assert contradicted(later, chain, [jobs]) is None
    assert contradicted(["Step 1 returns a job whose id = the one queued"], chain, [jobs]) is None


def test_an_imported_question_whose_replay_contradicts_a_criterion_is_dropped_with_that_reason(tmp_path):
    bundle = tmp_path / "gateway"
    assert import_agent_world(RELEASE / "1203006", bundle).kept
    chain = [{"tool": "listJobs", "args": {"workspace_id": "hcs_ws_01", "status": "running"}}]
    question = {
        "task": "Which reindex job of workspace hcs_ws_01 is running?",
        "reference_answer": json.dumps({"data": [{"id": "hcs_job_1"}]}),
        "grading_rubric": {
            "success_criteria": ['Step 0 lists a job with status = "succeeded".'],
            "verified_tool_chain": chain,
        },
    }
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps({"env_id": "1203006", "name": "x", "tasks": [question]}))
    result = import_agent_world_tasks(bundle, questions)
    assert result.tasks == []
    assert result.dropped[0].reason == (
        "criterion_contradicted: call 1 listJobs: status is 'running' where a criterion wants 'succeeded'"
    )


def test_a_name_the_question_gives_run_together_is_given():
    question = "Look up the Bluesky account jayrivera.bsky.social and tell me its display name."
    for value, given in [
        ("Jay Rivera", True),  # the handle spells it
        ("jayrivera.bsky.social", True),
        ("Jay Riviera", False),
        ("Rivera", False),  # one word: a name the handle contains is not the whole of it
        ("J R", False),  # too short to tell
        (42, False),
    ]:
        assert question_gives(question, value) is given, value
    chain = [ToolCall(tool="get_profile", args={"actor": "jayrivera.bsky.social"})]
    outputs = [{"handle": "jayrivera.bsky.social", "display_name": "Jay Rivera", "follower_count": 1840}]
    criteria = ["Step 1 returns the profile's display_name and follower_count"]
    asked = question.replace("display name", "display name and follower count")
    assert [v for v, _ in asked_facts(criteria, chain, outputs, asked)] == [1840]  # not the name the handle gives
    assert [v for v, _ in asked_facts(criteria, chain, outputs, asked.replace("jayrivera", "jr1"))] == [
        "Jay Rivera",
        1840,
    ]
