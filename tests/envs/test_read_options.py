"""A read's option with a default value (`git_diff(context_lines=3)`) that no write or output names is no column:
the tool keeps it as declared (name, type, default), says it does not apply it, and a call that leaves it out
is not filtered by its default. A `null` default (pydantic's optional parameter) and an option that a write
names too still filter; the gate's cases expect a field's declared default to filter, as the tool states."""

from __future__ import annotations

import json
from pathlib import Path

from factory.envs.build import build_env
from factory.envs.entities import infer_entities
from factory.envs.entities.tools import UNAPPLIED_NOTE
from factory.envs.runtime import Environment
from factory.models import ToolSpec, Topic

S = {"type": "string"}
NULLABLE = {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Since"}
CONTEXT = {"default": 3, "title": "Context Lines", "type": "integer"}
MAX_COUNT = {"default": 10, "title": "Max Count", "type": "integer"}
OPEN = {"type": "string", "enum": ["open", "closed"], "default": "open"}


def _tool(name: str, props: dict, required: list[str]) -> dict:
    return {
        "name": name,
        "description": f"{name} tool",
        "inputSchema": {"type": "object", "properties": props, "required": required},
    }


TOOLS = [
    _tool("list_diffs", {"repo_path": S, "context_lines": CONTEXT}, ["repo_path"]),
    _tool("create_commit", {"repo_path": S, "message": S}, ["repo_path", "message"]),
    _tool("list_commits", {"repo_path": S, "max_count": MAX_COUNT, "since": NULLABLE}, ["repo_path"]),
    _tool("create_ticket", {"title": S, "status": {"type": "string", "enum": ["open", "closed"]}}, ["title"]),
    _tool("list_tickets", {"status": OPEN}, []),
]


def _topic() -> Topic:
    specs = [ToolSpec(name=t["name"], description=t["description"], parameters=t["inputSchema"]) for t in TOOLS]
    return Topic(id="repo", title="repo", description="repo", source="mcp", tools=specs)


def test_an_option_with_a_default_is_no_column_and_says_it_does_not_filter():
    entities, tools = infer_entities(_topic())
    fields = {e.name: {f.name for f in e.fields} for e in entities}
    assert fields["diff"] == {"id", "repo_path"}
    assert "count" not in fields["commit"]  # `max_count=10` bounds no column
    assert "since" in fields["commit"]  # a null default filters nothing when left out: still a column
    assert "status" in fields["ticket"]  # a create names it: a column, and its filter applies
    by_name = {t.name: t for t in tools}
    for name in ("list_diffs", "list_commits", "list_tickets"):  # the interface as declared, nothing invented
        declared = next(t for t in TOOLS if t["name"] == name)["inputSchema"]
        params = by_name[name].parameters
        assert params.get("required", []) == declared["required"] and set(params["properties"]) == set(
            declared["properties"]
        )
    schema = by_name["list_diffs"].parameters["properties"]["context_lines"]
    assert {k: v for k, v in schema.items() if k != "description"} == CONTEXT
    assert schema["description"] == UNAPPLIED_NOTE
    applied = (("list_commits", "since"), ("list_tickets", "status"), ("list_diffs", "repo_path"))
    for name, param in (*applied, ("list_commits", "max_count")):  # `max_count` is the page size
        assert UNAPPLIED_NOTE not in str(by_name[name].parameters["properties"][param].get("description", ""))


def test_a_call_without_the_option_is_not_filtered_by_its_default(tmp_path: Path):
    source = tmp_path / "repo.json"
    source.write_text(json.dumps({"tools": TOOLS}))
    report = build_env(str(source), tmp_path / "env")
    assert {"list_diffs", "list_commits", "list_tickets"} <= set(report.kept_tools), report.reasons
    with Environment.open(tmp_path / "env") as env, env.session() as s:
        tables = s.snapshot().tables
        repo = tables["diffs"][0]["repo_path"]
        expected = sorted(r["id"] for r in tables["diffs"] if r["repo_path"] == repo)
        for args in ({}, {"context_lines": 3}, {"context_lines": 7}):
            result = s.call("list_diffs", {"repo_path": repo, **args})  # no paging declared: every row
            assert result.ok, result.error
            assert sorted(r["id"] for r in result.value["items"]) == expected, args
        tickets = tables["tickets"]
        open_ids = sorted(r["id"] for r in tickets if r["status"] == "open")
        assert 0 < len(open_ids) < len(tickets)
        for args in ({}, {"status": "open"}):  # a field's declared default filters, as the tool states
            listed = s.call("list_tickets", args)
            assert sorted(r["id"] for r in listed.value["items"]) == open_ids, args
