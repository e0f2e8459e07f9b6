"""The Agent-World release as published (fixture 0904003, modelled on real release files): keyed-object and
single-state collections, array / free-text / credential parameters, a tool named `exec`, a read tool that
logs every lookup, both error shapes, a clock-dependent cache, L1/L2/L3 taxonomy and the wrapped question file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from factory.cli import app
from factory.envs.bundle import Bundle
from factory.envs.importers import clock_instant, import_agent_world
from factory.envs.runtime import Environment
from factory.tasks.agent_world import import_agent_world_tasks, questions_path

MIX = Path(__file__).resolve().parents[1] / "fixtures" / "agent_world" / "environment_mix"
DESK = MIX / "0904003"


@pytest.fixture(scope="module")
def desk(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("aw-release") / "desk"
    assert import_agent_world(DESK, out).kept
    return out


def test_every_tool_is_kept_and_judged_by_its_effect(desk: Path) -> None:
    b = Bundle.open(desk)
    spec = b.spec
    report = b.report()
    assert report is not None and report.reasons == []
    # every tool defines a `_save` helper; only add_note changes anything but the lookup log
    assert {t.name: t.mutates for t in spec.tools} == {
        "search_papers": False,
        "filter_by_tags": False,
        "get_paper": False,
        "get_author": False,
        "add_note": True,
        "exec": False,
    }
    assert "lookups.*" in spec.bookkeeping  # appended by a read: bookkeeping, found by effect, not by name
    assert spec.taxonomy is not None
    assert (spec.taxonomy.l1, spec.taxonomy.l2, spec.taxonomy.l3) == (
        "research-academia",
        "literature-search",
        "paper-indexing",
    )


def test_generated_tests_fill_every_parameter_type_from_the_right_collection(desk: Path) -> None:
    args = {c.tool: c.args for c in Bundle.open(desk).tests()}
    assert args["get_paper"] == {"paper_id": "P-101"}  # a key of papers.json, not an author's id
    assert args["get_author"] == {"author_id": "A-7"}
    assert args["filter_by_tags"]["tags"] and all(isinstance(t, str) for t in args["filter_by_tags"]["tags"])
    assert args["search_papers"]["api_key"] and isinstance(args["search_papers"]["query"], str)
    assert args["add_note"]["note"].strip() and args["exec"] == {"command": "trending"}


def test_error_shapes_of_the_release_are_errors_and_the_clock_stands_still(desk: Path) -> None:
    with Environment.open(desk) as env, env.session() as s:
        empty_key = s.call("search_papers", {"query": "Retrieval", "api_key": ""})
        assert not empty_key.ok and empty_key.error.message == "api_key is required"
        missing = s.call("get_paper", {"paper_id": "P-999"})  # {"error": {...}, "paper_id": ...}
        assert not missing.ok and missing.error.code == "NOT_FOUND"
        found = s.call("search_papers", {"query": "Retrieval", "api_key": "sk-1"})
        assert found.ok and found.value["total"] == 2
        # the cache is a day old at most on the data's own clock, however late the test runs
        assert s.call("exec", {"command": "status"}).value == {"fetched_at": "2026-02-20T10:00:00Z", "age_hours": 0.0}
        trending = s.call("exec", {"command": "trending", "limit": 1})
        assert trending.ok and trending.value["data"][0]["paper_id"] == "P-103"
        logged = s.call("get_paper", {"paper_id": "P-103"})
        assert logged.ok and logged.value["data"]["author"] == "Tomas Reyes"
        rows = s.snapshot().tables["lookups"]
        assert rows[-1]["at"] == "2026-02-20T10:00:00"  # stamped by the fixed clock
    assert clock_instant({"x": [{"created_at": "2024-01-01T00:00:00", "expires_at": "2030-01-01T00:00:00"}]}) == (
        "2024-01-01T00:00:00"
    )


def test_questions_are_replayed_and_dropped_with_the_right_reason(desk: Path) -> None:
    result = import_agent_world_tasks(desk, questions_path(DESK))
    assert result.generated == 5
    reasons = {d.question.split(" ")[0]: d.reason for d in result.dropped}
    assert reasons["Fetch"] == "chain_fails_on_release_data: call 1 get_paper: NOT_FOUND: no paper P-7f3a"
    # The answer only echoes the id the question states: no answer check, so it cannot be kept as a read.
    assert reasons["Look"].split(":")[0] in ("already_satisfied", "attack_echo_passes")
    kept = {t.question.split(" ")[0]: t for t in result.tasks}
    trending = kept["What"]
    assert not trending.mutates and trending.gold[0].tool == "exec"
    values = {c.value for c in trending.rubric if c.kind == "answer_contains"}
    assert {"Late Interaction Retrieval at Scale", "Tomas Reyes"} <= values
    assert all(not str(d.reason).startswith("import_error") for d in result.dropped)


def test_cli_imports_a_whole_mix_with_a_summary(tmp_path: Path) -> None:
    out = tmp_path / "mix"
    r = CliRunner().invoke(app, ["import", "agent-world", str(MIX), "--out", str(out)])
    assert r.exit_code == 0, r.output
    lines = {line.split()[0]: line for line in r.output.splitlines() if line[:1].isdigit()}
    assert set(lines) == {"0731001", "0822002", "0904003"}
    assert "4/6" in lines["0822002"] and "import_error 1" in lines["0822002"]
    assert "chain_fails_on_release_data 1" in lines["0904003"]
    assert "kept: 3/3 environments" in r.output
    saved = json.loads((out / "0904003.questions.json").read_text())
    assert saved["generated"] == 5 and (out / "0904003.tasks.parquet").is_file()
    assert not (out / "0904003" / "tasks.parquet").exists()  # the bundle stays as its tasks' lineage names it
