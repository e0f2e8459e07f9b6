"""MCP sources: a server's `tools/list` result, and the official registry's `server.json`.

A `tools/list` result is the ground truth of what a server offers. A registry `server.json`
(schema https://static.modelcontextprotocol.io/schemas/.../server.schema.json) describes how to
install or reach a server and usually lists no tools; some publishers embed them (top-level
`tools` or under `_meta["io.modelcontextprotocol.registry/publisher-provided"]`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from factory.lexicon import READ_VERBS
from factory.models import ToolSpec, Topic
from factory.naming import slugify, snake_case, title_from_slug
from factory.topics.documents import SourceError

PUBLISHER_META = "io.modelcontextprotocol.registry/publisher-provided"
# The boolean hints of MCP ToolAnnotations (spec 2025-03-26 on); entity inference reads them.
HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def verb_mutates(name: str) -> bool:
    """Whether a tool name reads as a state change: `create_issue` yes, `list_issues` / `issues_summary` no."""
    words = snake_case(name).split("_")
    if words[-1] in ("summary", "stats", "statistics", "count", "report"):
        return False
    return words[0] not in READ_VERBS


def tool_from_mcp(raw: Any, path: str | Path, where: str) -> ToolSpec:
    """One MCP Tool object -> ToolSpec; `mutates` from annotations when the server gives hints.

    The annotations are kept as declared: inference lets them outrank what the name suggests.
    """
    if not isinstance(raw, dict):
        raise SourceError(path, f"{where}: a tool must be an object, not {type(raw).__name__}")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise SourceError(path, f"{where}: tool has no name")
    schema = raw.get("inputSchema")
    if schema is None:
        raise SourceError(path, f"{where}: tool {name!r} has no inputSchema")
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        raise SourceError(path, f"{where}: tool {name!r} inputSchema must be a JSON schema of type object")
    schema = {"type": "object", **schema}
    schema.setdefault("properties", {})
    if not isinstance(schema["properties"], dict):
        raise SourceError(path, f"{where}: tool {name!r} inputSchema.properties must be an object")
    output = raw.get("outputSchema")
    if output is not None and not isinstance(output, dict):
        raise SourceError(path, f"{where}: tool {name!r} outputSchema must be an object")
    annotations = raw.get("annotations") or {}
    if not isinstance(annotations, dict):
        raise SourceError(path, f"{where}: tool {name!r} annotations must be an object")
    for hint in HINTS:
        if hint in annotations and not isinstance(annotations[hint], bool):
            raise SourceError(path, f"{where}: tool {name!r} annotation {hint} must be true or false")
    if annotations.get("readOnlyHint") is True:
        mutates = False
    elif annotations.get("destructiveHint") is True or annotations.get("readOnlyHint") is False:
        mutates = True
    else:
        mutates = verb_mutates(name)
    description = raw.get("description") or annotations.get("title") or raw.get("title") or name
    return ToolSpec(
        name=name,
        description=str(description),
        parameters=schema,
        output=output,
        mutates=mutates,
        annotations=dict(annotations) or None,
    )


def _tools(raw_tools: Any, path: str | Path, where: str) -> list[ToolSpec]:
    if not isinstance(raw_tools, list):
        raise SourceError(path, f"{where} must be a list of tools")
    tools = [tool_from_mcp(t, path, f"{where}[{i}]") for i, t in enumerate(raw_tools)]
    seen: set[str] = set()
    for t in tools:
        if t.name in seen:
            raise SourceError(path, f"{where}: tool name {t.name!r} appears twice")
        seen.add(t.name)
    if not tools:
        raise SourceError(path, f"{where} is empty: a topic needs at least one tool")
    return tools


def topics_from_tools_list(data: Any, path: str | Path) -> list[Topic]:
    """A `tools/list` result (bare, in a JSON-RPC envelope, or a bare list of tools) -> one topic.

    The result does not name its server; the id comes from `serverInfo` when a dump includes the
    initialize result, else from the file name.
    """
    if isinstance(data, dict) and "jsonrpc" in data:
        if "error" in data:
            err = data["error"] if isinstance(data["error"], dict) else {"message": data["error"]}
            raise SourceError(path, f"JSON-RPC error response, not a tools/list result: {err.get('message')}")
        data = data.get("result")
        if not isinstance(data, dict):
            raise SourceError(path, "JSON-RPC envelope without a result object")
    if isinstance(data, list):
        data = {"tools": data}
    if not isinstance(data, dict) or "tools" not in data:
        raise SourceError(path, "not an MCP tools/list result: no 'tools' key")
    tools = _tools(data["tools"], path, "tools")
    info = data.get("serverInfo") if isinstance(data.get("serverInfo"), dict) else {}
    base = str(info.get("name") or Path(path).name.split(".")[0])
    topic_id = slugify(base.rpartition("/")[2])
    title = str(info.get("title") or title_from_slug(topic_id))
    description = data.get("instructions") or data.get("description")
    if not description:
        names = ", ".join(t.name for t in tools[:8]) + (", ..." if len(tools) > 8 else "")
        description = f"The {title} MCP server: {names}."
    return [Topic(id=topic_id, title=title, description=str(description), source="mcp", tools=tools, origin=str(path))]


def _embedded_tools(server: dict[str, Any]) -> tuple[Any, str] | None:
    """Tool objects embedded in a server.json: top-level `tools`, or anywhere in the publisher metadata."""
    if "tools" in server:
        return server["tools"], "tools"
    meta = server.get("_meta")
    stack: list[tuple[Any, str, int]] = [(meta, "_meta", 0)] if isinstance(meta, dict) else []
    found_names: tuple[Any, str] | None = None
    while stack:
        node, where, depth = stack.pop(0)
        if not isinstance(node, dict) or depth > 4:
            continue
        for key in sorted(node):
            value = node[key]
            sub = f"{where}[{key!r}]"
            if key == "tools" and isinstance(value, list):
                if value and all(isinstance(t, dict) for t in value):
                    return value, sub
                found_names = found_names or (value, sub)
            elif isinstance(value, dict):
                stack.append((value, sub, depth + 1))
    return found_names


def _server_topic(server: dict[str, Any], path: str | Path, where: str) -> Topic:
    name = server.get("name")
    if not isinstance(name, str) or not name:
        raise SourceError(path, f"{where}: server.json has no 'name'")
    embedded = _embedded_tools(server)
    if embedded is None:
        raise SourceError(
            path,
            f"{where}: describes the MCP server {name!r} but lists no tools; "
            "the server's tools/list result is needed to build an environment",
        )
    raw_tools, tools_where = embedded
    if isinstance(raw_tools, list) and raw_tools and not any(isinstance(t, dict) for t in raw_tools):
        raise SourceError(
            path,
            f"{where}: server {name!r} lists only tool names ({', '.join(map(str, raw_tools[:5]))}) without "
            "input schemas; the server's tools/list result is needed",
        )
    tools = _tools(raw_tools, path, f"{where}.{tools_where}")
    topic_id = slugify(name.rpartition("/")[2])
    return Topic(
        id=topic_id,
        title=str(server.get("title") or title_from_slug(topic_id)),
        description=str(server.get("description") or f"The {name} MCP server."),
        source="mcp-registry",
        tools=tools,
        origin=str(path),
    )


def topics_from_server_json(data: Any, path: str | Path) -> list[Topic]:
    """A registry `server.json`, a registry API entry `{"server": ...}` or a listing `{"servers": [...]}`."""
    if isinstance(data, dict) and isinstance(data.get("servers"), list):
        entries = [(e.get("server", e) if isinstance(e, dict) else e) for e in data["servers"]]
        topics, problems = [], []
        for i, server in enumerate(entries):
            if not isinstance(server, dict):
                raise SourceError(path, f"servers[{i}] is not an object")
            try:
                topics.append(_server_topic(server, path, f"servers[{i}]"))
            except SourceError as e:
                problems.append(e.problem)
        if not topics:
            raise SourceError(path, "no server in the listing embeds tools: " + "; ".join(problems[:3]))
        return topics
    if isinstance(data, dict) and isinstance(data.get("server"), dict):
        data = data["server"]
    if not isinstance(data, dict):
        raise SourceError(path, "a server.json must be a JSON object")
    return [_server_topic(data, path, "server")]
