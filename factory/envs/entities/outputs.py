"""Output schemas: the columns a tool's own output names, and the output every operation returns.

A tool that says what it returns (an MCP `outputSchema`) tells inference columns no parameter
names; the record may sit in a page (`items`), a bare array or an envelope (`{"order": {...}}`).
Once mapped, every tool's output is its entity's record with the real column names, so the tool
graph can see which output feeds which parameter.
"""

from __future__ import annotations

from factory.envs.entities.classify import Plan
from factory.envs.entities.params import base_type
from factory.lexicon import PAGE_FIELDS, RESPONSE_FIELDS
from factory.models import EntitySpec, FieldSpec, JsonSchema, ToolOperation
from factory.naming import plural, snake_case


def _output_record(schema: JsonSchema, entity: str) -> JsonSchema | None:
    """The schema of the row inside a tool's output: the output itself, the `items` of a page or a bare
    array, or the record in an envelope like `{"order": {...}, "error": null}`; None when there is none."""
    if base_type(schema) == "array":
        inner = schema.get("items")
        return inner if isinstance(inner, dict) and isinstance(inner.get("properties"), dict) else None
    props = schema.get("properties")
    if not isinstance(props, dict):
        return None
    for key in ("items", "results", "data", "records", plural(entity)):
        sub = props.get(key)
        if isinstance(sub, dict) and base_type(sub) == "array":
            return _output_record(sub, entity)
    others = [k for k in props if snake_case(k) not in RESPONSE_FIELDS | PAGE_FIELDS]
    if len(others) == 1 and others[0] in (entity, "data", "result", "record", "item"):
        sub = props[others[0]]
        if isinstance(sub, dict) and isinstance(sub.get("properties"), dict):
            return sub
    return schema


def output_fields(p: Plan) -> list[tuple[str, JsonSchema, bool]]:
    """Columns of the record a tool says it returns (a known output schema), without the row's own key
    and without the fields of the response around it (total, next_offset, error...)."""
    out = p.spec.output
    if not isinstance(out, dict) or not p.entity or p.kind in ("delete", "aggregate") or p.action == "transfer":
        return []
    record = _output_record(out, p.entity)
    if record is None or (p.kind in ("list", "search") and record is out):
        return []
    required = set(record.get("required") or [])
    key = f"{p.entity}_id"
    return [
        (snake_case(name), schema, name in required)
        for name, schema in record["properties"].items()
        if isinstance(schema, dict) and snake_case(name) not in (key, "id") and snake_case(name) not in RESPONSE_FIELDS
    ]


def field_schema(f: FieldSpec) -> JsonSchema:
    """JSON schema of one column's values."""
    base: JsonSchema
    if f.type in ("date", "datetime"):
        base = {"type": "string", "format": "date" if f.type == "date" else "date-time"}
    else:
        base = {"type": f.type}
        if f.format and f.type == "string" and f.format in ("email", "uri", "url", "uuid"):
            base["format"] = "uri" if f.format == "url" else f.format
    if f.enum:
        base["enum"] = list(f.enum)
    if f.minimum is not None:
        base["minimum"] = f.minimum
    if f.maximum is not None:
        base["maximum"] = f.maximum
    if f.references:
        base["x-references"] = f.references
    if f.description:
        base["description"] = f.description
    return base


def record_schema(entity: EntitySpec) -> JsonSchema:
    """The output of get/create/update: one row with its real column names (`id` is the primary key)."""
    props: dict[str, JsonSchema] = {}
    for f in entity.fields:
        s = field_schema(f)
        if not (f.required or f.primary_key):
            s["type"] = [s["type"], "null"]
        props[f.name] = s
    required = [f.name for f in entity.fields if f.required or f.primary_key]
    return {"type": "object", "title": entity.name, "x-entity": entity.name, "properties": props, "required": required}


def page_schema(entity: EntitySpec) -> JsonSchema:
    """The output of list/search: a page of records and the offset of the next one."""
    return {
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": record_schema(entity)},
            "total": {"type": "integer"},
            "next_offset": {"type": ["integer", "null"]},
        },
        "required": ["items", "total", "next_offset"],
    }


def output_schema(op: ToolOperation, entity: EntitySpec) -> JsonSchema:
    """The JSON schema of a successful result of `op` (see ToolOperation's docstring)."""
    if op.kind in ("list", "search"):
        return page_schema(entity)
    if op.kind == "delete":
        key = f"{entity.name}_id"
        return {
            "type": "object",
            "properties": {"deleted": {"type": "boolean"}, key: {"type": "string"}},
            "required": ["deleted", key],
        }
    if op.kind == "aggregate":
        stats = {k: {"type": ["number", "null"]} for k in ("sum", "avg", "min", "max")}
        return {
            "type": "object",
            "properties": {
                "count": {"type": "integer"},
                **stats,
                "groups": {"type": "array", "items": {"type": "object", "properties": {"count": {"type": "integer"}}}},
            },
        }
    if op.kind == "action" and op.action == "transfer":
        return {
            "type": "object",
            "properties": {"from": record_schema(entity), "to": record_schema(entity), "amount": {"type": "number"}},
            "required": ["from", "to"],
        }
    return record_schema(entity)
