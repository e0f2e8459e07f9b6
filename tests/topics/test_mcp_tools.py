"""MCP tool lists as real servers publish them: namespace prefixes, annotations and batch tools.

The embedded tools are copied from the reference servers' `tools/list` results (modelcontextprotocol/servers,
src/git and src/memory); the full recorded results in ../shared/real/mcp are used when present.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factory.envs.entities import infer_entities, unmapped_reasons
from factory.envs.entities.classify import classify, settle_names
from factory.envs.entities.names import ToolName, namespace_of, read_tool
from factory.topics import SourceError
from factory.topics.mcp import topics_from_tools_list

REAL = Path(__file__).resolve().parents[2].parent / "shared" / "real" / "mcp"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real is not here")

READ = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
WRITE = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False}
DESTROY = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False}
REPO = {"repo_path": {"title": "Repo Path", "type": "string"}}
NULLABLE = {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}


def git_tool(name: str, description: str, annotations: dict, props: dict | None = None, required=()) -> dict:
    schema = {"properties": {**REPO, **(props or {})}, "required": ["repo_path", *required], "type": "object"}
    return {"name": name, "description": description, "inputSchema": schema, "annotations": annotations}


GIT = {
    "jsonrpc": "2.0",
    "id": 2,
    "result": {
        "tools": [
            git_tool("git_status", "Shows the working tree status", READ),
            git_tool(
                "git_commit", "Records changes to the repository", WRITE, {"message": {"type": "string"}}, ["message"]
            ),
            git_tool("git_reset", "Unstages all staged changes", DESTROY),
            git_tool(
                "git_log",
                "Shows the commit logs",
                READ,
                {"max_count": {"default": 10, "type": "integer"}, "start_timestamp": NULLABLE},
            ),
            git_tool(
                "git_create_branch",
                "Creates a new branch from an optional base branch",
                WRITE,
                {"branch_name": {"type": "string"}, "base_branch": NULLABLE},
                ["branch_name"],
            ),
            git_tool("git_branch", "List Git branches", READ, {"branch_type": {"type": "string"}}, ["branch_type"]),
        ]
    },
}
ENTITY_ITEM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "The name of the entity"},
        "entityType": {"type": "string", "description": "The type of the entity"},
        "observations": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name", "entityType", "observations"],
    "additionalProperties": False,
}


def memory_tool(name: str, description: str, annotations: dict, prop: str, items: dict) -> dict:
    schema = {"type": "object", "properties": {prop: {"type": "array", "items": items}}, "required": [prop]}
    return {"name": name, "description": description, "inputSchema": schema, "annotations": annotations}


MEMORY = {
    "tools": [
        memory_tool(
            "create_entities", "Create multiple new entities in the knowledge graph", WRITE, "entities", ENTITY_ITEM
        ),
        memory_tool("delete_entities", "Delete multiple entities", DESTROY, "entityNames", {"type": "string"}),
        memory_tool(
            "open_nodes", "Open specific nodes in the knowledge graph by their names", READ, "names", {"type": "string"}
        ),
        {
            "name": "search_nodes",
            "description": "Search for nodes in the knowledge graph based on a query",
            "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
            "annotations": READ,
        },
    ]
}


def ops(topic) -> dict[str, tuple[str, str] | None]:
    _, tools = infer_entities(topic)
    return {t.name: (t.operation.kind, t.operation.entity) if t.operation else None for t in tools}


def test_the_namespace_word_is_not_the_verb() -> None:
    assert namespace_of([t["name"] for t in GIT["result"]["tools"]]) == "git"
    assert namespace_of([t["name"] for t in MEMORY["tools"]]) is None
    assert namespace_of(["create_order", "create_refund", "create_invoice"]) is None  # a shared verb
    assert namespace_of(["slack_list_channels", "slack_post_message", "get_users"]) == "slack"


def test_the_description_gives_what_the_name_leaves_out() -> None:
    assert read_tool("git_status", "Shows the working tree status", "git") == ToolName("show", ["status"])
    assert read_tool("git_log", "Shows the commit logs", "git") == ToolName("log", ["commit", "logs"])
    assert read_tool("git_branch", "List Git branches", "git") == ToolName("list", ["branch"])
    assert read_tool("git_checkout", "Switches branches", "git").verb is None
    assert read_tool("deposit", "deposit tool") == ToolName("deposit", [])  # the parameters name the row


def test_git_tools_read_past_the_namespace() -> None:
    [topic] = topics_from_tools_list(GIT, "git.json")
    assert ops(topic) == {
        "git_status": ("list", "status"),
        "git_commit": ("create", "commit"),
        "git_reset": None,
        "git_log": ("list", "commit"),  # `log` would be a create; the server says it only reads
        "git_create_branch": ("create", "branch"),
        "git_branch": ("list", "branch"),
    }
    assert "entity" in unmapped_reasons(topic)["git_reset"]  # a destructive reset of no named row
    _, tools = infer_entities(topic)
    by_name = {t.name: t for t in tools}
    assert by_name["git_log"].annotations == READ and by_name["git_log"].mutates is False
    assert by_name["git_commit"].parameters["required"] == ["repo_path", "message"]


def test_annotations_are_kept_and_checked(tmp_path) -> None:
    [topic] = topics_from_tools_list(MEMORY, "memory.json")
    assert {t.name: t.annotations for t in topic.tools}["delete_entities"] == DESTROY
    assert (
        "annotations"
        not in topics_from_tools_list([{"name": "ping", "inputSchema": {}}], "x.json")[0].tools[0].model_dump()
    )
    bad = {"tools": [{"name": "ping", "inputSchema": {}, "annotations": {"readOnlyHint": "yes"}}]}
    with pytest.raises(SourceError, match="readOnlyHint must be true or false"):
        topics_from_tools_list(bad, "bad.json")


def test_batch_tools_plan_the_single_item_operation() -> None:
    [topic] = topics_from_tools_list(MEMORY, "memory.json")
    plans = {p.spec.name: p for p in settle_names([classify(t, set()) for t in topic.tools], None)}
    assert (plans["create_entities"].kind, plans["create_entities"].entity) == ("create", "entity")
    assert plans["create_entities"].batch_param == "entities"
    assert (plans["delete_entities"].kind, plans["delete_entities"].batch_param) == ("delete", "entity_names")
    assert (plans["open_nodes"].kind, plans["open_nodes"].batch_param) == ("get", "names")  # `open`, read-only
    assert plans["search_nodes"].batch_param is None
    entities, tools = infer_entities(topic)
    fields = {f.name: f.required for f in {e.name: e for e in entities}["entity"].fields}
    assert fields["name"] and fields["entity_type"]  # the items' properties, required as the items say
    create = {t.name: t for t in tools}["create_entities"]
    assert create.operation is not None and create.operation.batch_param == "entities"  # interface kept as declared
    assert create.parameters["properties"]["entities"]["items"] == ENTITY_ITEM


@needs_real
def test_real_git_and_memory_servers() -> None:
    topics = {f: topics_from_tools_list(json.loads((REAL / f).read_text()), REAL / f)[0] for f in REAL.glob("*")}
    git = next(t for f, t in topics.items() if "git" in f.name)
    memory = next(t for f, t in topics.items() if "memory" in f.name)
    git_ops = ops(git)
    assert sum(op is not None for op in git_ops.values()) >= 10, unmapped_reasons(git)
    for topic, found in ((git, git_ops), (memory, ops(memory))):
        for t in topic.tools:
            if (t.annotations or {}).get("readOnlyHint") is True and found[t.name] is not None:
                assert found[t.name][0] in ("list", "get", "search", "aggregate"), t.name
