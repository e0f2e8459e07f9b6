"""A tool's interface as its source declared it, over the contract the generated code speaks.

Inside the factory a tool's parameters follow the contract (`<entity>_id`, snake_case; see
factory.envs.entities.tools); an OpenAPI document or an MCP server may name them otherwise (`id`,
`petId`, `perPage`). `ToolSpec.declared_names` maps each renamed contract name to its declared name, and
an optional parameter the source does not have (a singleton's key) to "": it is not shown, and its default
applies.
Whatever faces a client (MCP tools/list and tools/call, the LLM policy's and verl's tool schemas,
`factory call`) shows the declared names and translates calls back at this one boundary.
"""

from __future__ import annotations

from typing import Any

from factory.models import JsonSchema, ToolSpec


def interface_schema(tool: ToolSpec) -> JsonSchema:
    """The parameter schema a client sees: the contract's, with each parameter under its declared name."""
    names = tool.declared_names
    if not names:
        return tool.parameters
    props = tool.parameters.get("properties") or {}
    shown = {names.get(k, k): v for k, v in props.items() if names.get(k, k)}
    out: JsonSchema = {**tool.parameters, "properties": shown}
    if "required" in tool.parameters:
        out["required"] = [names.get(r, r) for r in tool.parameters["required"] if names.get(r, r)]
    return out


def contract_args(tool: ToolSpec, args: dict[str, Any]) -> dict[str, Any] | str:
    """A client's arguments under the contract's names, or why they are not the tool's interface (a contract
    name the client was never shown, such as `pet_id` where the document says `id`)."""
    names = tool.declared_names
    if not names:
        return args
    hidden = set(names) - set(names.values())
    stray = sorted(k for k in args if k in hidden)
    if stray:
        shown = ", ".join(interface_schema(tool).get("properties") or {})
        return f"unknown parameter {stray[0]!r}; parameters: {shown}"
    contract = {v: k for k, v in names.items() if v}
    return {contract.get(k, k): v for k, v in args.items()}


def declared_names(parameters: JsonSchema, declared: dict[str, str]) -> dict[str, str] | None:
    """`ToolSpec.declared_names` for a finished parameter schema: each parameter's declared name where it
    differs ("" leaves an optional one out), unless a client could then not tell two parameters apart (that
    one keeps its contract name)."""
    props = parameters.get("properties") or {}
    required = set(parameters.get("required") or [])
    out = {k: v for k, v in declared.items() if k in props and v != k and (v or k not in required)}
    while True:
        names = [out.get(k, k) for k in props]
        clashing = [k for k, v in out.items() if v and names.count(v) > 1]
        if not clashing:
            return out or None
        for k in clashing:
            del out[k]
