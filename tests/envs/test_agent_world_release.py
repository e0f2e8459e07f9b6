"""The Agent-World release as published (fixture 0904003, modelled on real release files): keyed-object and
single-state collections, array / free-text / credential parameters, a tool named `exec`, a read tool that
logs every lookup, both error shapes, a clock-dependent cache, L1/L2/L3 taxonomy and the wrapped question file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmarks.agent_world_release import release_replays
from factory.cli import app
from factory.envs.bundle import Bundle
from factory.envs.importers import call_effect, clock_instant, import_agent_world, mutation_by_effect
from factory.envs.runtime import Environment
from factory.models import ToolCall, ToolSpec
from factory.tasks.agent_world import import_agent_world_tasks, load_questions, questions_path
from factory.tasks.filter import judge
from factory.verify.scoring import environment_session_factory, replay_calls

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
    assert "lookups.+" in spec.bookkeeping  # what a read appends is bookkeeping, found by effect, not by name
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
    assert set(lines) == {"0731001", "0822002", "0904003", "1015004", "1120005", "1203006"}
    # rate_recipe's released code raises NameError: the gate drops it, and its question fails on the release's
    # data (the release's own code fails it too), not because of our import
    assert "4/6" in lines["0822002"] and "chain_fails_on_release_data 1" in lines["0822002"]
    assert "chain_fails_on_release_data 1" in lines["0904003"]
    assert "import_error" not in r.output
    assert "kept: 6/6 environments" in r.output
    saved = json.loads((out / "0904003.questions.json").read_text())
    assert saved["generated"] == 5 and (out / "0904003.tasks.parquet").is_file()
    assert not (out / "0904003" / "tasks.parquet").exists()  # the bundle stays as its tasks' lineage names it


# --- keyed objects of nested records (1015004) and a single state object (1120005) --------------------------

HR = MIX / "1015004"
DESK_STATE = MIX / "1120005"


@pytest.fixture(scope="module")
def hr(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("aw-release") / "hr"
    import_agent_world(HR, out)
    return out


@pytest.fixture(scope="module")
def quotes(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("aw-release") / "quotes"
    import_agent_world(DESK_STATE, out)
    return out


def test_keyed_and_single_objects_snapshot_as_rows_by_key(hr: Path, quotes: Path) -> None:
    with Environment.open(hr) as env, env.session() as s:
        world = s.snapshot().tables["world"]
        assert [r["__key__"] for r in world] == ["bamboohr", "gmail", "slack"]
        assert s.call("bamboohr_decide_time_off", {"request_id": "TO-3", "decision": "approved"}).ok
        after = {r["__key__"]: r for r in s.snapshot().tables["world"]}
        assert after["gmail"] == next(r for r in world if r["__key__"] == "gmail")  # one record changed alone
        assert next(e for e in after["bamboohr"]["employees"] if e["id"] == "E-101")["pto_balance_days"] == 9
    with Environment.open(quotes) as env, env.session() as s:
        assert s.snapshot().tables["desk_state"][0]["__key__"] == "desk_state"
    assert {e.table: e.primary_key for e in Bundle.open(hr).spec.entities} == {"world": "__key__"}


def test_arguments_come_from_nested_records_and_the_data_s_own_keys(hr: Path, quotes: Path) -> None:
    args = {c.tool: c.args for c in Bundle.open(hr).tests()}
    assert args["bamboohr_get_employee"] == {"employee_id": "E-101"}  # world["bamboohr"]["employees"]
    assert args["slack_add_reaction"]["message_ts"] == "1772612000.000100"  # a message's `ts`
    assert args["slack_add_reaction"]["channel_id"] == "C_HR"
    spec = Bundle.open(quotes).spec
    assert {c.tool: c.args for c in Bundle.open(quotes).tests()}["get_hist_data"]["api_key"] == "ak_live_7d41c2"
    # every tool appends to tool_calls.json: the reads stay reads, the log is bookkeeping
    assert {t.name: t.mutates for t in spec.tools} == {
        "get_time_info": False,
        "get_hist_data": False,
        "get_realtime_data": False,
        "add_to_watchlist": True,
        "set_price_alert": True,
    }
    assert "tool_calls.+" in spec.bookkeeping
    nested = {"w": {"slack": {"messages": [{"ts": "1772612000.000100", "internal_date": 1700000000000}]}}}
    assert clock_instant(nested) == "2026-03-04T08:13:20"  # epoch stamps in nested records set the clock


def test_ids_and_stamps_drawn_in_a_call_replay_the_same(hr: Path) -> None:
    args = {"channel_id": "C_HR", "text": "Heads up"}
    with Environment.open(hr) as env:
        posts = []
        for _ in range(2):
            with env.session() as s:
                posts.append(s.call("slack_post_message", args).value)
                second = s.call("slack_post_message", args).value
        assert posts[0] == posts[1] and posts[0]["ts"] == "1772612000.000000"  # the data's clock
        assert second["message"]["id"] != posts[0]["message"]["id"]  # the state changed: a new id


def test_keyed_writes_and_state_object_writes_are_kept(hr: Path, quotes: Path) -> None:
    result = import_agent_world_tasks(hr, questions_path(HR))
    kept = {t.question.split(" ")[0]: t for t in result.tasks}
    dana = kept["Dana"]
    fields = {(c.table, json.dumps(c.where), c.field) for c in dana.rubric if c.kind == "field_equals"}
    assert ("world", '{"__key__": "bamboohr"}', "time_off_requests") in fields
    post = kept["Post"]
    assert post.mutates and post.answer is None  # the reply's ts came from the original run: effect only
    reasons = {d.question.split(" ")[0]: d.reason for d in result.dropped}
    # the ts was generated during the original run: the release's own code fails the chain on its data too
    assert reasons["React"] == "chain_fails_on_release_data: call 1 slack_add_reaction: error: message_not_found"
    result = import_agent_world_tasks(quotes, questions_path(DESK_STATE))
    watch = next(t for t in result.tasks if t.question.startswith("Put Moutai"))
    checks = {c.field: c.value for c in watch.rubric if c.kind == "field_equals"}
    assert checks["watchlist"] == ["000001", "600519"] and checks["alerts"] == {"600519": 1550}
    assert all(c.where == {"__key__": "desk_state"} for c in watch.rubric if c.kind == "field_equals")
    assert not any(d.reason.startswith("import_error") for d in result.dropped)


def test_every_chain_the_release_replays_ours_replays(tmp_path: Path) -> None:
    for env_dir in sorted(p for p in MIX.iterdir() if p.is_dir() and p.name != "questions"):
        theirs = release_replays(MIX, env_dir.name, tmp_path)  # the release's own code, on its data
        import_agent_world(env_dir, tmp_path / env_dir.name)
        result = import_agent_world_tasks(tmp_path / env_dir.name, questions_path(env_dir))
        failed = {d.question for d in result.dropped if d.reason.startswith(("chain_fails", "import_error"))}
        questions = [q.task for q in load_questions(questions_path(env_dir))]
        ours = [q not in failed for q in questions]
        assert all(o for t, o in zip(theirs, ours, strict=True) if t), env_dir.name


# --- camelCase tools, stamped reads, a read that refreshes a cache, prose a solver words (1203006) -------------

GATEWAY = MIX / "1203006"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("aw-release") / "gateway"
    assert import_agent_world(GATEWAY, out).kept
    return out


def test_camel_case_reads_that_log_and_stamp_the_key_stay_reads(gateway: Path) -> None:
    spec = Bundle.open(gateway).spec
    # every tool saves api_keys.json (last_used_at) and appends to request_logs.json; getFileContents also
    # refreshes the index when given a ref it has not indexed (the chain's call does): it writes
    assert {t.name: t.mutates for t in spec.tools} == {
        "searchFiles": False,
        "getFileContents": True,
        "listItems": False,
        "cancelJob": True,
        "listJobs": False,
        "startJob": True,
        "upsertFileTags": True,
        "getJob": False,
        "findFile": False,
    }
    assert "request_logs.*" in spec.bookkeeping and "api_keys.last_used_at" in spec.bookkeeping
    args = {c.tool: c.args for c in Bundle.open(gateway).tests()}
    # a `collection` parameter is filled from the records' `collection_name`: the tool gets a test and is kept
    assert args["listItems"]["collection"] in ("articles", "customers")
    # `type` of startJob: a job's `job_type`, not a file's `content_type`
    assert args["startJob"]["type"] in ("reindex", "full_sync", "prune")
    # an array of objects: one object from a record that holds every property its items require
    assert args["upsertFileTags"]["tags"] == [{"path": "docs/caching.md", "label": "needs-review"}]
    # a bare `id` of getJob is a job's; an `apiKey` stored only hashed is given as its record's id (active first)
    assert args["getJob"] == {"id": "hcs_job_1", "apiKey": "hcs_key_01"}
    # `file`, described as "its path in the repository": a record's `path`
    assert args["findFile"] == {"file": "README.md"}
    # the job ids break the declared id pattern (the released code never checks it): it is not enforced; the
    # key ids hold theirs, which stays
    props = next(t for t in spec.tools if t.name == "getJob").parameters["properties"]
    assert "pattern" not in props["id"] and props["apiKey"]["pattern"] == "^hcs_key_[0-9]{2}$"
    report = Bundle.open(gateway).report()
    assert report is not None and sorted(report.kept_tools) == sorted(t.name for t in spec.tools)


def _verdict(task, session_factory, calls: list[ToolCall], answer: str | None) -> list[str]:
    replay = replay_calls(session_factory, calls)
    verdict = judge(task, replay.initial, replay.final, answer, "all", None, None)
    return [c.name for c in verdict.checks if not c.passed]


def test_questions_judged_by_effect_and_prose_left_to_the_solver(gateway: Path) -> None:
    result = import_agent_world_tasks(gateway, questions_path(GATEWAY))
    assert result.generated == 5 and not result.dropped, [d.reason for d in result.dropped]
    kept = {t.gold[-1].tool: t for t in result.tasks}
    assert not kept["searchFiles"].mutates and not kept["listItems"].mutates
    # fetching at a ref refreshes the index: the read-named tool wrote, so the task is judged by that effect
    fetch = kept["getFileContents"]
    assert fetch.mutates
    assert ("file_index", "blob_sha", "9f8e7d6c") in [(c.table, c.field, c.value) for c in fetch.rubric]
    cancel = kept["cancelJob"]
    assert not any(c.field == "error_message" for c in cancel.rubric)
    [end] = [c for c in cancel.rubric if c.kind == "end_state"]
    assert "jobs.error_message" in end.value["ignore"]
    env, session_factory = environment_session_factory(Bundle.open(gateway))
    with env:
        gold = list(cancel.gold)
        assert _verdict(cancel, session_factory, gold, cancel.answer) == []
        own_words = [
            *gold[:-1],
            gold[-1].model_copy(update={"args": {**gold[-1].args, "cancelReason": "Stuck; stop it."}}),
        ]
        assert _verdict(cancel, session_factory, own_words, cancel.answer) == []
        assert _verdict(cancel, session_factory, gold[:-1], cancel.answer)  # nothing cancelled
        other = gold[-1].model_copy(update={"args": {**gold[-1].args, "job_id": "hcs_job_3"}})
        assert _verdict(cancel, session_factory, [*gold[:-1], other], cancel.answer)  # the queued job instead
        # the answer of a write may say what a value was before: that is no other record's value
        refreshed = "Refreshed src/sync/fetcher.py: blob 9f8e7d6c, new size 1210 bytes (was 900)."
        assert _verdict(fetch, session_factory, list(fetch.gold), refreshed) == []
        assert _verdict(fetch, session_factory, list(fetch.gold), "blob 9f8e7d6c, 1210 or 1211 bytes")  # a hedge


def test_an_id_the_original_run_created_is_the_one_this_replay_creates(gateway: Path) -> None:
    result = import_agent_world_tasks(gateway, questions_path(GATEWAY))
    [prune] = [t for t in result.tasks if t.question.startswith("Queue a prune job")]
    start, get = prune.gold
    assert get.args["id"] != "hcs_job_5be2c0a9"  # the released chain's id, made by the original run
    env, session_factory = environment_session_factory(Bundle.open(gateway))
    with env:
        runs = [
            replay_calls(session_factory, [ToolCall(tool="listJobs", args={"workspace_id": "hcs_ws_01"}), start])
            for _ in range(2)
        ]
        # os.urandom and a perf_counter latency in the log draw the same in every replay: the same id, the same state
        ids = [r.results[-1].value["data"]["id"] for r in runs]
        assert ids[0] == ids[1] and runs[0].final.tables == runs[1].final.tables
        assert replay_calls(session_factory, [start]).results[0].value["data"]["id"] == get.args["id"]
        assert _verdict(prune, session_factory, list(prune.gold), "It is queued.") == []


def test_the_released_code_judges_what_is_inside_its_arguments(gateway: Path) -> None:
    """The schema says at least 2 tags, each only path and label; the released code takes one tag with a note
    (verified chains pass such calls), so the runtime checks the top level alone: names, required, types."""
    assert Bundle.open(gateway).spec.argument_check == "top_level"
    tag = {"path": "README.md", "label": "docs", "note": "seen in review"}
    with Environment.open(gateway) as env, env.session() as s:
        assert s.call("upsertFileTags", {"workspace_id": "hcs_ws_01", "tags": [tag]}).ok
        assert s.call("upsertFileTags", {"workspace_id": "hcs_ws_01", "tags": "README.md"}).error.code == (
            "invalid_arguments"
        )
        assert s.call("upsertFileTags", {"workspace_id": "hcs_ws_01", "tagz": [tag]}).error.code == (
            "invalid_arguments"
        )


def _gateway_with(tmp_path: Path, tool: dict, questions: list[dict] | None = None) -> Path:
    """A copy of the gateway release environment with one more released tool (and `questions` of its own):
    the environment directory, laid out as in the release's environment_mix/."""
    env_dir = tmp_path / "environment_mix" / GATEWAY.name
    shutil.copytree(GATEWAY, env_dir)
    checkpoint = json.loads((MIX / f"{GATEWAY.name}_step4_checkpoint.json").read_text())
    checkpoint["data"]["ToolDesignAgent"]["tool_schemas"].append(tool)
    (env_dir.parent / f"{GATEWAY.name}_step4_checkpoint.json").write_text(json.dumps(checkpoint))
    if questions is not None:
        (env_dir.parent / "questions").mkdir()
        (env_dir.parent / "questions" / f"{GATEWAY.name}.json").write_text(json.dumps({"tasks": questions}))
    return env_dir


def _object(**properties: dict) -> dict:
    return {"type": "object", "properties": properties, "required": list(properties)}


COMPARE = """def compareRevisions(base_ref, head_ref, **_extra):
    import json, os
    _DB = os.environ.get("MCP_DB_DIR") or "/app/database"
    def _load(n):
        with open(os.path.join(_DB, n), encoding="utf-8") as f: return json.load(f)
    revisions = _load("revisions.json")
    base = next((r for r in revisions if r["ref"] == base_ref), None)
    head = next((r for r in revisions if r["ref"] == head_ref), None)
    if base is None or head is None or base_ref == head_ref:
        return {"error": {"code": "NOT_FOUND", "message": "two known refs, please"}}
    logs = _load("request_logs.json")
    logs.append({"id": "hrl_cmp_" + str(len(logs)), "tool_name": "compareRevisions", "status": "succeeded"})
    with open(os.path.join(_DB, "request_logs.json"), "w", encoding="utf-8") as f: json.dump(logs, f)
    return {"base": base["path"], "head": head["path"], "size_change": head["size_bytes"] - base["size_bytes"]}
"""


def test_a_read_the_data_cannot_call_is_probed_with_the_released_chains_arguments(tmp_path: Path) -> None:
    """Two refs no record field is named after: every call built from the data alone is refused, so only the
    source (it writes a request log) would judge the tool, a write. The verified chains of the questions call
    it as the release did; that call only logs, so it is a read."""
    tool = {
        "name": "compareRevisions",
        "description": "Compare two revisions of the index; every request is logged.",
        "parameters": _object(base_ref={"type": "string"}, head_ref={"type": "string"}),
        "implementation": COMPARE,
    }
    env_dir = _gateway_with(tmp_path, tool)
    without = import_agent_world(env_dir, tmp_path / "without")
    assert "compareRevisions" in without.kept_tools
    assert Bundle.open(tmp_path / "without").spec.tool("compareRevisions").mutates
    chain = [{"tool": "compareRevisions", "args": {"base_ref": "beef0042", "head_ref": "c0ffee12"}}]
    question = {"task": "How much larger is c0ffee12 than beef0042?", "reference_answer": "-838"}
    question["grading_rubric"] = {"success_criteria": [], "verified_tool_chain": chain}
    (env_dir.parent / "questions").mkdir()
    (env_dir.parent / "questions" / f"{GATEWAY.name}.json").write_text(json.dumps({"tasks": [question]}))
    import_agent_world(env_dir, tmp_path / "with")
    spec = Bundle.open(tmp_path / "with").spec
    assert not spec.tool("compareRevisions").mutates
    assert "questions" in spec.lineage.inputs  # the judgement depends on them: a changed file rebuilds


JOB_STATUS = """def getJobStatus(workspace_id, job_id, **_extra):
    import json, os
    _DB = os.environ.get("MCP_DB_DIR") or "/app/database"
    def _load(n):
        with open(os.path.join(_DB, n), encoding="utf-8") as f: return json.load(f)
    def _save(n, d):
        with open(os.path.join(_DB, n), "w", encoding="utf-8") as f: json.dump(d, f)
    jobs = _load("jobs.json")
    job = next((j for j in jobs if j["id"] == job_id and j["workspace_id"] == workspace_id), None)
    if job is None:
        return {"error": {"code": "NOT_FOUND", "message": "no such job"}}
    jobs.append({"id": "hcs_job_audit_" + str(len(jobs)), "workspace_id": workspace_id, "job_type": "status_check",
                 "status": "succeeded", "error_code": None, "error_message": None})
    _save("jobs.json", jobs)
    keys = _load("api_keys.json")
    keys[0]["requests_used"] += 1
    _save("api_keys.json", keys)
    return {"data": {"id": job["id"], "status": job["status"]}}
"""


def test_a_metered_read_is_a_read_and_an_extra_one_fails_no_task(tmp_path: Path) -> None:
    """As in a real release environment (a search quota): every status check adds its own audit record to the
    jobs a cancel changes, and counts against the key's quota. Its records and the counter are bookkeeping,
    so a solver that checks once more than the verified chain still passes, and the cancel is still judged."""
    status = {"tool": "getJobStatus", "args": {"workspace_id": "hcs_ws_01", "job_id": "hcs_job_1"}}
    cancel = {
        "tool": "cancelJob",
        "args": {"workspace_id": "hcs_ws_01", "job_id": "hcs_job_1", "cancelReason": "Stuck."},
    }
    question = {
        "task": "Job hcs_job_1 of workspace hcs_ws_01 is stuck: cancel it and confirm its status.",
        "reference_answer": "hcs_job_1 is cancelled.",
        "grading_rubric": {"success_criteria": [], "verified_tool_chain": [status, cancel, status]},
    }
    tool = {
        "name": "getJobStatus",
        "description": "Get the status of a job; every check is recorded and counts against the quota.",
        "parameters": _object(workspace_id={"type": "string"}, job_id={"type": "string"}),
        "implementation": JOB_STATUS,
    }
    env_dir = _gateway_with(tmp_path, tool, [question])
    keys = json.loads((env_dir / "api_keys.json").read_text())
    (env_dir / "api_keys.json").write_text(json.dumps([{**k, "requests_used": 3} for k in keys]))
    out = tmp_path / "bundle"
    assert "getJobStatus" in import_agent_world(env_dir, out).kept_tools
    spec = Bundle.open(out).spec
    assert not spec.tool("getJobStatus").mutates and spec.tool("cancelJob").mutates
    assert {"jobs.+", "api_keys.requests_used"} <= set(spec.bookkeeping)
    result = import_agent_world_tasks(out, questions_path(env_dir))
    assert not result.dropped, [d.reason for d in result.dropped]
    [task] = result.tasks
    check, stop = (ToolCall(tool=c["tool"], args=c["args"]) for c in (status, cancel))
    env, session_factory = environment_session_factory(Bundle.open(out))
    with env:
        answer = "Cancelled: hcs_job_1 is cancelled."
        assert _verdict(task, session_factory, list(task.gold), answer) == []
        assert _verdict(task, session_factory, [check, check, stop, check, check], answer) == []
        assert _verdict(task, session_factory, [check, check], answer)  # nothing cancelled
        other = stop.model_copy(update={"args": {**stop.args, "job_id": "hcs_job_3"}})
        assert _verdict(task, session_factory, [check, other, check], answer)  # the queued job instead


def test_only_a_read_s_counter_is_metering() -> None:
    """A read that moves a number up by one meters its own use; a like that does is the write it is."""
    counter = {"keys": [{"id": "k1", "requests_used": 3}]}
    moved = {"keys": [{"id": "k1", "requests_used": 4}]}
    effect = call_effect(counter, moved)
    assert effect.counters == ["keys.requests_used"] and effect.appended_only and effect.grown == []
    read = ToolSpec(name="get_quota", description="Show the key's quota.", mutates=True)
    assert mutation_by_effect(read, effect, []) == (False, ["keys.requests_used"])
    like = ToolSpec(name="like_post", description="Like a post.", mutates=True)
    likes = call_effect({"posts": [{"id": "p1", "likes": 9}]}, {"posts": [{"id": "p1", "likes": 10}]})
    assert mutation_by_effect(like, likes, []) == (True, [])
    # a read that also changes a record's other fields writes
    touched = call_effect(counter, {"keys": [{"id": "k1", "requests_used": 4, "status": "revoked"}]})
    assert not touched.appended_only and mutation_by_effect(read, touched, []) == (True, [])


QUOTA = """def setQuota(workspace_id, daily_requests, plan, **_extra):
    import json, os
    _DB = os.environ.get("MCP_DB_DIR") or "/app/database"
    with open(os.path.join(_DB, "workspaces.json"), encoding="utf-8") as f: workspaces = json.load(f)
    ws = next((w for w in workspaces if w["id"] == workspace_id), None)
    if ws is None:
        return {"error": {"code": "NOT_FOUND", "message": "no such workspace"}}
    if plan not in ("starter", "scale"):
        return {"error": {"code": "VALIDATION_ERROR", "message": "plan must be starter or scale"}}
    ws.update({"daily_requests": daily_requests, "burst": daily_requests * 2, "plan": plan, "quota": "enforced"})
    with open(os.path.join(_DB, "workspaces.json"), "w", encoding="utf-8") as f: json.dump(workspaces, f)
    return {"data": {"id": ws["id"], "daily_requests": daily_requests, "burst": ws["burst"], "quota": "enforced"}}
"""


def test_a_number_the_question_leaves_open_is_the_solver_s_and_a_constrained_one_is_not(tmp_path: Path) -> None:
    """The chain picks 5000 requests a day, which the question leaves open: a solver that picks 8000 passes too,
    and what the number decides (the burst, twice it) is not checked either; the enforced quota is. The plan it
    picks ("scale") can only be one of two, so changing it breaks the chain: no choice, the question is dropped."""

    def question(task: str, plan: str) -> dict:
        call = {"tool": "setQuota", "args": {"workspace_id": "hcs_ws_01", "daily_requests": 5000, "plan": plan}}
        rubric = {"success_criteria": [], "verified_tool_chain": [call]}
        return {"task": task, "reference_answer": "The quota is enforced.", "grading_rubric": rubric}

    open_number = question("Put workspace hcs_ws_01 on the scale plan with a daily request quota.", "scale")
    open_plan = question("Give workspace hcs_ws_01 a daily quota of 5000 requests on a paid plan.", "scale")
    # a number the question spells out, or gives in another unit, is no choice
    spelled = question("Put workspace hcs_ws_01 on the scale plan with five thousand requests a day.", "scale")
    per_second = question("Put workspace hcs_ws_01 on the scale plan, 5 requests a second, by the day.", "scale")
    tool = {
        "name": "setQuota",
        "description": "Set a workspace's daily request quota and its plan.",
        "parameters": _object(
            workspace_id={"type": "string"}, daily_requests={"type": "integer"}, plan={"type": "string"}
        ),
        "implementation": QUOTA,
    }
    env_dir = _gateway_with(tmp_path, tool, [open_number, open_plan, spelled, per_second])
    out = tmp_path / "bundle"
    import_agent_world(env_dir, out)
    result = import_agent_world_tasks(out, questions_path(env_dir))
    [task] = result.tasks
    assert task.question == open_number["task"]
    dropped = {d.question: d.reason for d in result.dropped}
    assert "ungrounded_write" in dropped[open_plan["task"]] and "plan=" in dropped[open_plan["task"]]
    for q in (spelled, per_second):
        assert "ungrounded_write" in dropped[q["task"]] and "daily_requests=5000" in dropped[q["task"]]
    [end] = [c for c in task.rubric if c.kind == "end_state"]
    assert {"workspaces.daily_requests", "workspaces.burst"} <= set(end.value["ignore"])
    assert "workspaces.quota" not in end.value["ignore"] and "workspaces.plan" not in end.value["ignore"]
    [gold] = task.gold
    env, session_factory = environment_session_factory(Bundle.open(out))
    with env:
        own = gold.model_copy(update={"args": {**gold.args, "daily_requests": 8000}})
        assert _verdict(task, session_factory, [own], "Done: 8000 a day, enforced.") == []
        starter = gold.model_copy(update={"args": {**gold.args, "plan": "starter"}})
        assert _verdict(task, session_factory, [starter], "Done.")  # the plan the question names is held
        assert _verdict(task, session_factory, [], "Done.")


def test_a_chain_that_writes_an_id_it_never_looked_up_gets_the_read_a_solver_needs(gateway: Path, tmp_path: Path):
    """The chain cancels hcs_job_1 without listing the jobs: the question names the workspace, not the job. The
    read a solver makes (the jobs of the workspace the chain passes) is put before the cancel, so the question
    is kept, with a gold that a solver can follow."""
    cancel = {"workspace_id": "hcs_ws_01", "job_id": "hcs_job_1", "cancelReason": "Stuck for hours."}
    question = {
        "task": "The reindex job of workspace hcs_ws_01 is stuck running: cancel it.",
        "reference_answer": "Cancelled.",
        "grading_rubric": {"success_criteria": [], "verified_tool_chain": [{"tool": "cancelJob", "args": cancel}]},
    }
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps({"tasks": [question]}))
    result = import_agent_world_tasks(gateway, questions)
    assert not result.dropped, [d.reason for d in result.dropped]
    [task] = result.tasks
    lookup, stop = task.gold
    assert lookup.tool in ("listJobs", "getJob") and Bundle.open(gateway).spec.tool(lookup.tool).mutates is False
    assert set(lookup.args.values()) <= {"hcs_ws_01", "hcs_key_01"}  # grounded: what the question gives
    assert stop.tool == "cancelJob" and stop.args["job_id"] == "hcs_job_1"


EXPORT = """def exportReport(workspace_id, **_extra):
    import json, os, uuid
    _DB = os.environ.get("MCP_DB_DIR") or "/app/database"
    def _load(n):
        try:
            with open(os.path.join(_DB, n), encoding="utf-8") as f: return json.load(f)
        except FileNotFoundError: return []
    def _save(n, d):
        with open(os.path.join(_DB, n), "w", encoding="utf-8") as f: json.dump(d, f)
    report = {"id": "hcs_rep_" + uuid.uuid4().hex[:12], "workspace_id": workspace_id, "status": "ready"}
    reports = _load("jobs.json")
    reports.append({**report, "job_type": "export", "error_code": None, "error_message": None, "report": report["id"]})
    _save("jobs.json", reports)
    return {"data": report}
"""


def test_an_id_drawn_after_the_solver_s_own_calls_is_not_held_to_the_chain_s(tmp_path: Path) -> None:
    """The export job names the report id it draws: one more read before it draws another. The field goes
    unchecked (found by replaying the chain after one more read), the job itself is checked."""
    question = {
        "task": "Export a report of workspace hcs_ws_01 and tell me its status.",
        "reference_answer": "ready",
        "grading_rubric": {
            "success_criteria": [],
            "verified_tool_chain": [
                {"tool": "listJobs", "args": {"workspace_id": "hcs_ws_01"}},
                {"tool": "exportReport", "args": {"workspace_id": "hcs_ws_01"}},
            ],
        },
    }
    tool = {
        "name": "exportReport",
        "description": "Export a report of the workspace.",
        "parameters": _object(workspace_id={"type": "string"}),
        "implementation": EXPORT,
    }
    env_dir = _gateway_with(tmp_path, tool, [question])
    out = tmp_path / "bundle"
    import_agent_world(env_dir, out)
    result = import_agent_world_tasks(out, questions_path(env_dir))
    assert not result.dropped, [d.reason for d in result.dropped]
    [task] = result.tasks
    [end] = [c for c in task.rubric if c.kind == "end_state"]
    assert "jobs.report" in end.value["ignore"] and "jobs.job_type" not in end.value["ignore"]
    listing, export = task.gold
    env, session_factory = environment_session_factory(Bundle.open(out))
    with env:
        assert _verdict(task, session_factory, [listing, listing, export], "ready") == []
        assert _verdict(task, session_factory, [listing], "ready")  # nothing exported


NOTE = """def publishNote(workspace_id, title, status, **_extra):
    import json, os
    _DB = os.environ.get("MCP_DB_DIR") or "/app/database"
    def _load(n):
        with open(os.path.join(_DB, n), encoding="utf-8") as f: return json.load(f)
    def _save(n, d):
        with open(os.path.join(_DB, n), "w", encoding="utf-8") as f: json.dump(d, f)
    items = _load("items.json")
    items.append({"id": "hcs_note_" + str(len(items)), "workspace_id": workspace_id, "collection_name": "notes",
                  "title": "", "status": "present"})
    _save("items.json", items)
    logs = _load("request_logs.json")
    logs.append({"id": "hrl_note", "tool_name": "publishNote", "payload": {"title": title, "status": status}})
    _save("request_logs.json", logs)
    return {"data": {"id": items[-1]["id"]}}
"""


def test_a_question_whose_asked_values_land_in_no_check_is_dropped(tmp_path: Path) -> None:
    """The note's title and status are kept only in the request log (bookkeeping): a verifier of the note that
    exists would pay a draft with another title as well, so the question is dropped, and says why."""
    publish = {"tool": "publishNote", "args": {"workspace_id": "hcs_ws_01", "title": "Weekly digest", "status": "live"}}
    question = {
        "task": "In workspace hcs_ws_01, publish a note titled 'Weekly digest' with status live.",
        "reference_answer": "Published.",
        "grading_rubric": {"success_criteria": [], "verified_tool_chain": [publish]},
    }
    tool = {
        "name": "publishNote",
        "description": "Publish a note in the workspace.",
        "parameters": _object(workspace_id={"type": "string"}, title={"type": "string"}, status={"type": "string"}),
        "implementation": NOTE,
    }
    env_dir = _gateway_with(tmp_path, tool, [question])
    out = tmp_path / "bundle"
    import_agent_world(env_dir, out)
    result = import_agent_world_tasks(out, questions_path(env_dir))
    [dropped] = result.dropped
    assert dropped.reason.startswith("unverifiable: call 1 publishNote: title='Weekly digest'"), dropped.reason
