"""Finished tools: the typed operation, parameters normalized to the contract, `mutates` and output.

The contract with the code generator: a row is named by `<entity>_id`, pages by `limit`/`offset`,
a search's text by `query`, a range filter by `min_<field>`/`max_<field>`, a transfer's ends by
`from_<entity>_id`/`to_<entity>_id`; a transition says which states it may start from.
"""

from __future__ import annotations

import re
from typing import Any

from factory.envs.entities.classify import Plan
from factory.envs.entities.outputs import output_schema
from factory.envs.entities.params import find_key
from factory.envs.toolkit.common import DEFAULT_LIMIT, MAX_LIMIT
from factory.lexicon import (
    FORWARD_VERBS,
    FULFILLED_STATES,
    LIFECYCLE,
    NOT_ARCHIVABLE,
    NOT_CLOSABLE,
    PAGING_DROP,
    PAGING_LIMIT,
    QUERY_NAMES,
    REVOKING_VERBS,
    TERMINAL_STATES,
    TRANSITIONS,
)
from factory.models import EntitySpec, JsonSchema, ToolOperation, ToolSpec

_RANK = {s: i for i, s in enumerate(LIFECYCLE)}
_LIMIT = {
    "type": "integer",
    "minimum": 1,
    "maximum": MAX_LIMIT,
    "default": DEFAULT_LIMIT,
    "description": "Maximum number of results to return.",
}
_OFFSET = {"type": "integer", "minimum": 0, "default": 0, "description": "Results to skip."}


def from_values(verb: str, to_value: str, enum: list[str]) -> list[str]:
    """States a transition may start from: explicit sources for reversing verbs, else the live states."""
    others = [s for s in enum if s != to_value]
    explicit = TRANSITIONS.get(verb, ((), None))[1]
    if explicit:
        hits = [s for s in others if s in explicit]
        return hits or others
    if verb == "archive":
        out = [s for s in others if s not in NOT_ARCHIVABLE]
    elif verb == "close":
        out = [s for s in others if s not in NOT_CLOSABLE]
    else:
        out = [s for s in others if s not in TERMINAL_STATES]
        if verb in REVOKING_VERBS:
            out = [s for s in out if s not in FULFILLED_STATES]
        if verb in FORWARD_VERBS and to_value in _RANK:
            out = [s for s in out if _RANK.get(s, -1) < _RANK[to_value]]
    return out or others


def _key_schema(entity: str, old: JsonSchema | None) -> JsonSchema:
    desc = (old or {}).get("description") or f"ID of the {entity.replace('_', ' ')}."
    return {"type": "string", "description": desc}


class _Params:
    """A tool's parameters while they are renamed to the contract."""

    def __init__(self, entity: str, props: dict[str, JsonSchema], required: list[str]):
        self.entity = entity
        self.props = dict(props)
        self.required = list(required)

    def rename(self, old: str, new: str) -> None:
        """`old` becomes `new` in place (order kept); a renamed key gets the key's schema."""
        if old == new or old not in self.props:
            return
        self.props = {
            (new if k == old else k): (_key_schema(self.entity, v) if k == old else v) for k, v in self.props.items()
        }
        self.required = [new if r == old else r for r in self.required]

    def require(self, name: str, first: bool = False) -> None:
        if name in self.required:
            return
        if first:
            self.required.insert(0, name)
        else:
            self.required.append(name)

    def paged(self, fields: set[str]) -> None:
        """`limit`/`offset` paging; range filters as `min_<field>`/`max_<field>`."""
        for name in list(self.props):
            if name in PAGING_DROP:
                self.props.pop(name)
            elif name in PAGING_LIMIT and name != "limit" and "limit" not in self.props:
                self.rename(name, "limit")
        for name in list(self.props):
            m = re.match(r"^(.+)_(min|max)$", name)
            if m and m.group(1) in fields:
                self.rename(name, f"{m.group(2)}_{m.group(1)}")
            m = re.match(r"^(.+)_(after|before|since|until)$", name)
            if m and f"{m.group(1)}_at" in fields:
                bound = "min" if m.group(2) in ("after", "since") else "max"
                self.rename(name, f"{bound}_{m.group(1)}_at")
        self.props["limit"] = dict(_LIMIT)
        self.props["offset"] = dict(_OFFSET)
        self.required = [r for r in self.required if r in self.props and r not in ("limit", "offset")]


def _unmapped(tool: ToolSpec, reason: str) -> tuple[ToolSpec, str]:
    return tool.model_copy(update={"operation": None}), reason


def finish_tool(p: Plan, entities: dict[str, EntitySpec]) -> tuple[ToolSpec, str]:
    """The finished tool, and why it has no operation (empty when it has one)."""
    tool = p.spec
    if tool.operation is not None:
        known = entities.get(tool.operation.entity)
        if known is None:
            return tool, ""
        out = output_schema(tool.operation, known, tool.parameters, documented=tool.output)
        mutates = tool.operation.kind in ("create", "update", "delete", "action")
        return tool.model_copy(update={"output": out, "mutates": mutates}), ""
    entity = entities.get(p.entity or "")
    if p.kind is None or entity is None:
        return _unmapped(tool, p.reason or (f"entity {p.entity!r} is unknown" if p.entity else "not mapped"))
    params = _Params(entity.name, p.props, p.required)
    field_names = {f.name for f in entity.fields}
    key = f"{entity.name}_id"
    op_fields: dict[str, Any] = {}
    if p.kind in ("get", "update", "delete") or (p.kind == "action" and p.action != "transfer"):
        found = find_key(entity.name, params.props)
        if found is None:
            return _unmapped(tool, f"no parameter names the {entity.name} ({key})")
        params.rename(found, key)
        params.props[key] = _key_schema(entity.name, params.props[key])
        params.require(key, first=True)
    if p.kind == "create":
        params.props.pop("id", None)
        params.props.pop(key, None)
        params.required = [r for r in params.required if r in params.props]
        if not any(n in field_names for n in params.props):
            return _unmapped(tool, "create tool has no parameter naming a field")
    if p.kind in ("list", "search"):
        params.paged(field_names)
    if p.kind == "search":
        qname = next((n for n in params.props if n in QUERY_NAMES), None)
        if qname:
            params.rename(qname, "query")
        described = (params.props.get("query") or {}).get("description") or "Text."
        params.props["query"] = {"type": "string", "description": described}
        params.require("query", first=True)
    if p.kind == "action":
        op_fields.update(action=p.action, field=p.field)
        if p.action in ("increment", "decrement", "transfer"):
            op_fields["amount_param"] = p.amount_param
            if p.amount_param:
                params.require(p.amount_param)
        if p.action == "transfer" and p.transfer_params:
            params.rename(p.transfer_params[0], f"from_{key}")
            params.rename(p.transfer_params[1], f"to_{key}")
            params.require(f"from_{key}")
            params.require(f"to_{key}")
        if p.action == "transition":
            f_names = {f.name: f for f in entity.fields}
            enum = f_names[p.field].enum or [] if p.field in f_names else []
            to_value = next((c for c in p.to_candidates if c in enum), None)
            if to_value is None:
                return _unmapped(tool, "no status value for this transition")
            op_fields.update(to_value=to_value, from_values=from_values(p.verb or "", to_value, enum))
    op = ToolOperation(kind=p.kind, entity=entity.name, **op_fields)
    schema = {k: v for k, v in tool.parameters.items() if k not in ("properties", "required")}
    schema.setdefault("type", "object")
    schema["properties"] = params.props
    if params.required:
        schema["required"] = list(dict.fromkeys(params.required))
    return tool.model_copy(
        update={
            "operation": op,
            "parameters": schema,
            "mutates": p.kind in ("create", "update", "delete", "action"),
            "output": output_schema(op, entity, schema, documented=tool.output),
        }
    ), ""
