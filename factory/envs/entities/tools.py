"""Finished tools: the typed operation, parameters normalized to the contract, `mutates` and output.

The contract with the code generator: a row is named by `<entity>_id`, pages by `limit`/`offset`,
a search's text by `query`, a range filter by `min_<field>`/`max_<field>`, a transfer's ends by
`from_<entity>_id`/`to_<entity>_id`; a transition says which states it may start from. A batch tool
(`create_entities(entities=[...])`) keeps its declared parameters: its operation names the array and the
field its scalar items name rows by (`delete_entities(entityNames=[...])` -> `name`). A tool whose
document gave it an operation keeps its parameters, paging ones included (outputs.paging_style), and so
does a listing an MCP server declared (no paging invented); a list/search parameter the generated code
does not apply says so in its description.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from factory.envs.entities.classify import Plan
from factory.envs.entities.outputs import output_schema, query_param, record_schema, unapplied_params
from factory.envs.entities.params import base_type, find_key, list_edit_keys
from factory.envs.interface import declared_names
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
from factory.naming import singular, snake_case

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
    """A tool's parameters while they are renamed to the contract, and the name each had as declared."""

    def __init__(self, entity: str, props: dict[str, JsonSchema], required: list[str], declared: JsonSchema):
        self.entity = entity
        self.props = dict(props)
        self.required = list(required)
        self.declared: dict[str, str] = {}  # contract name -> declared name (normalize_props: first spelling wins)
        for name in declared.get("properties") or {}:
            self.declared.setdefault(snake_case(name) or name, name)

    def rename(self, old: str, new: str) -> None:
        """`old` becomes `new` in place (order kept); a renamed key gets the key's schema."""
        if old == new or old not in self.props:
            return
        if old in self.declared:
            self.declared[new] = self.declared.pop(old)
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


UNAPPLIED_NOTE = "This environment does not apply this parameter."


def noted_unapplied(op: ToolOperation, entity: EntitySpec, params: JsonSchema) -> JsonSchema:
    """`params` where each parameter of a list/search tool that the generated code does not apply (no
    paging, query, field or range filter) says so in its description, so none is ignored silently."""
    props = params.get("properties")
    if op.kind not in ("list", "search") or op.batch_param or not isinstance(props, dict):
        return params
    unapplied = [p for p in unapplied_params(entity, op.kind, props) if isinstance(props[p], dict)]
    if not unapplied:
        return params
    noted = dict(props)
    for p in unapplied:
        described = str(noted[p].get("description") or "").strip()
        if not described.endswith(UNAPPLIED_NOTE):
            noted[p] = {**noted[p], "description": f"{described} {UNAPPLIED_NOTE}".strip()}
    return {**params, "properties": noted}


def _unmapped(tool: ToolSpec, reason: str) -> tuple[ToolSpec, str]:
    return tool.model_copy(update={"operation": None}), reason


def cascaded(description: str, entity: EntitySpec, entities: list[EntitySpec]) -> list[str] | None:
    """The tables pointing at `entity` whose rows a delete takes along, as its description says: "delete
    multiple entities and their associated relations", "delete a project along with its tasks"."""
    text = description.lower()
    found = []
    for other in entities:
        points = any((f.references or "").partition(".")[0] in (entity.name, entity.table) for f in other.fields)
        names = "|".join(re.escape(n.replace("_", " ")) for n in (other.table, other.name))
        if points and re.search(
            rf"\b(?:and|along with|together with|including) (?:all )?(?:of )?(?:its |their |the )?"
            rf"(?:associated |related |attached |dependent )?(?:{names})\b",
            text,
        ):
            found.append(other.table)
    return sorted(found) or None


def finish_tool(p: Plan, entities: dict[str, EntitySpec], declared: bool = False) -> tuple[ToolSpec, str]:
    """The finished tool, and why it has no operation (empty when it has one); a delete says which tables'
    rows it takes along (`cascaded`)."""
    tool, why = _finish_tool(p, entities, declared)
    op = tool.operation
    entity = entities.get(op.entity) if op is not None else None
    if op is None or op.kind != "delete" or entity is None:
        return tool, why
    cascade = cascaded(tool.description, entity, list(entities.values()))
    return tool.model_copy(update={"operation": op.model_copy(update={"cascade": cascade})}), why


def _finish_tool(p: Plan, entities: dict[str, EntitySpec], declared: bool = False) -> tuple[ToolSpec, str]:
    """The finished tool, and why it has no operation (empty when it has one).

    `declared`: the source states the interface (an MCP server's tools/list), so a listing keeps its own
    paging, filter and query parameters (none invented: without paging it answers every row); a catalog
    topic's listings get the contract's `limit`/`offset`, `min_`/`max_` ranges and `query`."""
    tool = p.spec
    if tool.operation is not None:
        known = entities.get(tool.operation.entity)
        if known is None:
            return tool, ""
        op = tool.operation
        out = (
            batch_output(op, known, tool.parameters)
            if op.batch_param
            else output_schema(op, known, tool.parameters, documented=tool.output)
        )
        mutates = tool.operation.kind in ("create", "update", "delete", "action")
        params = noted_unapplied(op, known, tool.parameters)
        return tool.model_copy(update={"output": out, "mutates": mutates, "parameters": params}), ""
    entity = entities.get(p.entity or "")
    if p.kind is None or entity is None:
        return _unmapped(tool, p.reason or (f"entity {p.entity!r} is unknown" if p.entity else "not mapped"))
    if p.batch_param and (p.kind in ("create", "delete", "get") or p.action in ("append", "remove")):
        return _finish_batch(p, entity)
    params = _Params(entity.name, p.props, p.required, tool.parameters)
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
    if p.kind in ("list", "search") and not declared:
        params.paged(field_names)
    if p.kind == "search" and not (declared and query_param(params.props)):
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
    schema = noted_unapplied(op, entity, schema)
    return tool.model_copy(
        update={
            "operation": op,
            "parameters": schema,
            "declared_names": declared_names(schema, params.declared) if declared else None,
            "mutates": p.kind in ("create", "update", "delete", "action"),
            "output": output_schema(op, entity, schema, documented=tool.output),
        }
    ), ""


def _batch_key_field(batch: str, items: JsonSchema, entity: EntitySpec) -> tuple[str | None, str]:
    """The field scalar items name their rows by: `entity_names` of `entity` -> `name`; the primary key for ids.

    Returns (field or None for the primary key, why there is none: empty when there is one).
    """
    if base_type(items) == "object":
        return None, ""
    name = singular(batch)
    name = name.removeprefix(f"{entity.name}_")
    if name in ("id", f"{entity.name}_id", entity.primary_key):
        return None, ""
    if name in {f.name for f in entity.fields}:
        return name, ""
    return None, f"the items of {batch} name no field of {entity.name}"


def batch_output(op: ToolOperation, entity: EntitySpec, params: JsonSchema) -> JsonSchema:
    """What a batch tool returns (see ToolOperation): the rows it made, read or edited, or the items it deleted."""
    if op.kind == "delete":
        given = copy.deepcopy(((params.get("properties") or {}).get(op.batch_param or "")) or {})
        props = {"deleted": {"type": "boolean"}, op.batch_param or "": given}
        return {"type": "object", "properties": props, "required": list(props)}
    rows = {"type": "array", "items": record_schema(entity)}
    return {"type": "object", "properties": {entity.table: rows}, "required": [entity.table]}


def _finish_batch(p: Plan, entity: EntitySpec) -> tuple[ToolSpec, str]:
    """A batch tool keeps its declared parameters; its operation names the array and how items name rows."""
    tool = p.spec
    declared = tool.parameters.get("properties") or {}
    batch = next((k for k in declared if (snake_case(k) or k) == p.batch_param), None)
    items = (declared.get(batch) or {}).get("items") if batch else None
    if batch is None or not isinstance(items, dict):
        return _unmapped(tool, "no array parameter holds the batch's items")
    if p.kind == "action":  # a list field edited on the rows the items name
        keys = list_edit_keys(entity.name, {f.name for f in entity.fields}, items)
        if keys is None or p.field not in {f.name for f in entity.fields if f.format == "list"}:
            return _unmapped(tool, f"the items of {batch} name no {entity.name} and values of its {p.field}")
        op = ToolOperation(
            kind="action", entity=entity.name, action=p.action, field=p.field, batch_param=batch, key_field=keys[2]
        )
        return tool.model_copy(update={"operation": op, "mutates": True, "output": batch_output(op, entity, {})}), ""
    key_field, why = _batch_key_field(p.batch_param or "", items, entity)
    if why:
        return _unmapped(tool, why)
    if p.kind == "create" and base_type(items) != "object":
        return _unmapped(tool, "a batch create needs items that are objects")
    op = ToolOperation(kind=p.kind or "get", entity=entity.name, batch_param=batch, key_field=key_field)
    mutates = p.kind != "get"
    return tool.model_copy(
        update={"operation": op, "mutates": mutates, "output": batch_output(op, entity, tool.parameters)}
    ), ""
