"""Topic sources and the taxonomy: the bundled catalog, MCP tools/list results, MCP registry
server.json files and OpenAPI 3.0/3.1 documents, each read into `factory.models.Topic`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from factory.models import Topic
from factory.topics.bundled import get_topic, load_catalog
from factory.topics.documents import SourceError, read_document
from factory.topics.mcp import topics_from_server_json, topics_from_tools_list
from factory.topics.openapi import topics_from_openapi
from factory.topics.taxonomy import TaxonomyConfig, build_taxonomy

__all__ = [
    "SourceError",
    "TaxonomyConfig",
    "build_taxonomy",
    "detect_format",
    "get_topic",
    "load_catalog",
    "load_source",
]

SourceFormat = str  # "openapi" | "mcp-tools-list" | "mcp-server-json"


def detect_format(data: Any, path: str | Path) -> SourceFormat:
    """Which kind of source a parsed document is, from its content alone."""
    if isinstance(data, list):
        if data and all(isinstance(t, dict) and "name" in t and "inputSchema" in t for t in data):
            return "mcp-tools-list"
        raise SourceError(path, "a JSON list that is not a list of MCP tools (each needs name and inputSchema)")
    if not isinstance(data, dict):
        raise SourceError(path, f"expected a JSON or YAML object, found {type(data).__name__}")
    if "openapi" in data:
        return "openapi"
    if "swagger" in data:
        raise SourceError(path, f"Swagger {data.get('swagger')} is not read; convert it to OpenAPI 3 first")
    if "jsonrpc" in data or ("tools" in data and not ({"name", "packages", "remotes"} & data.keys())):
        return "mcp-tools-list"
    if "server" in data or "servers" in data or ("name" in data and ({"packages", "remotes", "version"} & data.keys())):
        return "mcp-server-json"
    keys = ", ".join(sorted(map(str, data))[:8]) or "none"
    raise SourceError(
        path, f"not an MCP tools/list result, MCP registry server.json or OpenAPI 3 document (top-level keys: {keys})"
    )


def load_source(path: str | Path) -> list[Topic]:
    """Read topics from a source file; the format is detected from the content."""
    data = read_document(path)
    kind = detect_format(data, path)
    if kind == "openapi":
        return topics_from_openapi(data, path)
    if kind == "mcp-tools-list":
        return topics_from_tools_list(data, path)
    return topics_from_server_json(data, path)
