"""Entity inference: from a topic's tools to the tables behind them and what each tool does to them.

MCP servers and catalog topics only give tool names, descriptions and JSON-schema parameters; the
environment needs a database. Tools are grouped by the nouns in their names and by their `<x>_id`
parameters: `list_orders`, `get_order(order_id)` and `cancel_order(order_id)` all work on the entity
`order`, whose fields are the parameters of its create/update/list tools. Every entity has the primary
key `id` (a string like "ord_0001"); tools name a row by the parameter `<entity>_id`, and a field
`<other>_id` is a foreign key to `other.id`. Each tool gets a typed `ToolOperation` (the contract with
the code generator, see factory/models.py), a correct `mutates` and an output schema whose field
names are the real column names, so the tool graph can see which output feeds which parameter.

The passes, each returning what it settled: `classify` reads each tool alone, `settle_names` maps
nouns onto the entities the tool list confirms, `build_entities` (or `complete_given` for a source
that gives its entities) settles fields, keys, foreign keys, states and rules, and `finish_tool`
normalizes each tool's parameters to the contract.
"""

from __future__ import annotations

from factory.envs.entities.classify import classify, settle_names
from factory.envs.entities.names import parse_tool_name
from factory.envs.entities.settle import build_entities, complete_given
from factory.envs.entities.tools import finish_tool
from factory.models import EntitySpec, ToolSpec, Topic


def _infer(topic: Topic) -> tuple[list[EntitySpec], list[ToolSpec], dict[str, str]]:
    given = list(topic.entities)
    fixed = [e.name for e in given] if given else None
    plans = settle_names([classify(t, set(fixed or [])) for t in topic.tools], fixed)
    entities, plans = complete_given(given, plans) if given else build_entities(plans)
    by_name = {e.name: e for e in entities}
    declared = topic.source in ("mcp", "mcp-registry")  # a server's tools/list states its interface
    finished = [finish_tool(p, by_name, declared) for p in plans]
    tools = [tool for tool, _ in finished]
    reasons = {tool.name: reason or "not mapped" for tool, reason in finished if tool.operation is None}
    return entities, tools, reasons


def infer_entities(topic: Topic) -> tuple[list[EntitySpec], list[ToolSpec]]:
    """Entities of a topic and its tools with operations, `mutates` and outputs filled in.

    Given entities (OpenAPI) are kept; only tools without an operation are mapped. Tools that cannot
    be mapped keep `operation=None` and the builder drops them with a reason (see `unmapped_reasons`).
    """
    entities, tools, _ = _infer(topic)
    return entities, tools


def unmapped_reasons(topic: Topic) -> dict[str, str]:
    """Tool name -> why no operation could be inferred (for the builder's report)."""
    return _infer(topic)[2]


__all__ = ["infer_entities", "parse_tool_name", "unmapped_reasons"]
