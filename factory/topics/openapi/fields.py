"""Schema properties -> entity columns (FieldSpec): types, formats, enums, bounds, patterns and foreign keys."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from factory.lexicon import MONEY_WORDS
from factory.models import EntitySpec, FieldSpec, ToolSpec
from factory.naming import snake_case
from factory.topics.openapi.refs import _Resolver
from factory.topics.openapi.schemas import _main_type, _ref_name, _value_type


def _merge_fields(fields: list[FieldSpec]) -> list[FieldSpec]:
    """One field per name: an embedded object (`user`, read as `user_id`) next to its own `user_id`
    property is one column, the first one met, which takes the other's reference when it has none."""
    by_name: dict[str, FieldSpec] = {}
    for f in fields:
        first = by_name.get(f.name)
        if first is None:
            by_name[f.name] = f
        elif first.references is None and f.references is not None and not first.primary_key:
            by_name[f.name] = first.model_copy(update={"references": f.references})
    return list(by_name.values())


def field_spec(
    resolver: _Resolver,
    prop: str,
    raw: Any,
    base: Path,
    required: bool,
    entity: str,
    pk: str,
    by_entity: dict[str, str],
    pks: dict[str, str],
) -> FieldSpec:
    name = snake_case(prop)
    target = _ref_name(raw) if isinstance(raw, dict) and "$ref" in raw else None
    schema = resolver.inline(raw, base)
    schema = schema if isinstance(schema, dict) else {}
    description = str(schema.get("description") or "")
    if target and snake_case(target) in by_entity and _main_type(schema) == "object":
        ref_entity = snake_case(target)
        return FieldSpec(
            name=f"{name}_id", references=f"{ref_entity}.{pks[target]}", required=required, description=description
        )
    if name == pk:
        return FieldSpec(
            name=name,
            primary_key=True,
            unique=True,
            required=True,
            description=description,
            type="integer" if _main_type(schema) == "integer" else "string",
        )
    server_set = schema.get("readOnly") is True  # required in answers, never given by a caller
    spec: dict[str, Any] = {"name": name, "required": required and not server_set, "description": description}
    t, fmt = _value_type(schema), schema.get("format")
    if t == "string" and fmt == "date":
        spec["type"] = "date"
    elif t == "string" and fmt == "date-time":
        spec["type"] = "datetime"
    elif t in ("integer", "number", "boolean"):
        spec["type"] = t
        if t == "number" and any(w in name for w in MONEY_WORDS):
            spec["format"] = "money"
    elif t in ("array", "object"):
        spec["format"] = "json"
    elif fmt:
        spec["format"] = str(fmt)
    if isinstance(schema.get("enum"), list) and spec.get("type", "string") == "string":
        spec["enum"] = [str(v) for v in schema["enum"] if v is not None]
    for key in ("minimum", "maximum"):
        bound = schema.get(key)
        if spec.get("type") in ("integer", "number") and isinstance(bound, int | float) and bound is not True:
            spec[key] = float(bound)
    if name.endswith("_id") and name != pk:
        ref = name[:-3]
        if ref in by_entity:
            spec["references"] = f"{ref}.{pks[by_entity[ref]]}"
    return FieldSpec(**spec)


def with_parameter_patterns(entities: dict[str, EntitySpec], tools: list[ToolSpec]) -> list[EntitySpec]:
    """Each plain text field that a tool of its entity takes as a parameter with a `pattern` holds values to it
    (Conjur's `account` is `^[^ :]+$`): seed values that break it would be refused as arguments."""
    patterns: dict[tuple[str, str], str] = {}
    for tool in tools:
        if tool.operation is None:
            continue
        for name, schema in (tool.parameters.get("properties") or {}).items():
            pattern = schema.get("pattern") if isinstance(schema, dict) else None
            if isinstance(pattern, str) and _compiles(pattern):
                patterns.setdefault((tool.operation.entity, name), pattern)
    out = []
    for name, spec in entities.items():
        fields = [
            f.model_copy(update={"pattern": patterns[name, f.name]})
            if (name, f.name) in patterns and f.type == "string" and not (f.enum or f.references or f.primary_key)
            else f
            for f in spec.fields
        ]
        out.append(spec.model_copy(update={"fields": fields}))
    return out


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True
