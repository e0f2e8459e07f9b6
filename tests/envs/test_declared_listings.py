"""A server's tools/list states its interface: the tools built from the real git server's list keep exactly
the parameters it declared (no `limit`/`offset` invented), a listing that declares no paging answers every
row (none hidden behind a page it has no way to ask for), and one that declares only a count shows that many
rows and no next page it could never reach."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factory.envs.build import build_env
from factory.envs.runtime import Environment

REAL = Path(__file__).resolve().parents[2].parent / "shared" / "real" / "mcp" / "mcp-git-tools-list.json"
pytestmark = pytest.mark.skipif(not REAL.is_file(), reason="../shared/real is not here")


@pytest.fixture(scope="module")
def git_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("git") / "env"
    report = build_env(str(REAL), out)
    assert {"git_status", "git_log"} <= set(report.kept_tools), report.reasons
    return out


def test_every_kept_tool_has_the_parameters_the_server_declared(git_env: Path) -> None:
    listed = json.loads(REAL.read_text())
    declared = {t["name"]: t["inputSchema"] for t in listed.get("result", listed)["tools"]}
    spec = json.loads((git_env / "env.json").read_text())
    assert len(spec["tools"]) >= 10
    for tool in spec["tools"]:
        ours, theirs = tool["parameters"], declared[tool["name"]]
        assert set(ours.get("properties", {})) == set(theirs.get("properties", {})), tool["name"]
        assert set(ours.get("required", [])) == set(theirs.get("required", [])), tool["name"]


def test_a_listing_without_paging_answers_every_row_and_one_with_a_count_shows_that_many(git_env: Path) -> None:
    with Environment.open(git_env) as env, env.session() as s:
        tables = s.snapshot().tables
        by_repo: dict[str, int] = {}
        for row in tables["statuses"]:
            by_repo[row["repo_path"]] = by_repo.get(row["repo_path"], 0) + 1
        repo, count = max(by_repo.items(), key=lambda kv: kv[1])
        assert count > 1
        status = s.call("git_status", {"repo_path": repo})
        assert status.ok and len(status.value["items"]) == status.value["total"] == count
        assert status.value["next_offset"] is None
        commits = [r for r in tables["commits"] if r["repo_path"] == tables["commits"][0]["repo_path"]]
        assert len(commits) > 2
        repo = commits[0]["repo_path"]
        log = s.call("git_log", {"repo_path": repo, "max_count": 2})
        assert log.ok and len(log.value["items"]) == 2 and log.value["total"] == len(commits)
        assert log.value["next_offset"] is None  # no parameter could ask for the rows after the count
        log = s.call("git_log", {"repo_path": repo, "max_count": len(commits) + 30})
        assert log.ok and len(log.value["items"]) == log.value["total"] == len(commits)
        assert not s.call("git_log", {"repo_path": repo, "limit": 2}).ok  # not a parameter the server declared


def test_a_listing_without_paging_answers_more_rows_than_a_page(tmp_path: Path) -> None:
    """The seed holds more notes than a default page (10), and `list_notes` declares no way to page."""
    source = tmp_path / "notes.json"
    string = {"type": "string"}
    tools = [
        {"name": "create_note", "inputSchema": {"type": "object", "properties": {"title": string, "body": string}}},
        {"name": "list_notes", "inputSchema": {"type": "object", "properties": {}}},
    ]
    source.write_text(json.dumps({"tools": [{**t, "description": t["name"].replace("_", " ")} for t in tools]}))
    report = build_env(str(source), tmp_path / "env")
    assert "list_notes" in report.kept_tools, report.reasons
    with Environment.open(tmp_path / "env") as env, env.session() as s:
        rows = s.snapshot().tables["notes"]
        assert len(rows) > 10
        listed = s.call("list_notes", {})
        assert listed.ok and listed.value["total"] == len(rows) and listed.value["next_offset"] is None
        assert sorted(r["id"] for r in listed.value["items"]) == sorted(r["id"] for r in rows)
