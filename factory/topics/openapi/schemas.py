"""Plain JSON-schema helpers: the main type of a schema, the component it names, its snake_case view."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from factory.naming import snake_case

_SCALARS = ("string", "integer", "number", "boolean")
_snake = lru_cache(maxsize=None)(snake_case)  # property names repeat across the many schemas of a large document


def _flatten_all_of(schema: dict[str, Any]) -> dict[str, Any]:
    """Merge an allOf of object schemas into one object schema, which consumers can read directly."""
    parts = schema.get("allOf")
    if not isinstance(parts, list) or not all(isinstance(p, dict) and _main_type(p) == "object" for p in parts):
        return schema
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    merged["type"] = "object"
    props: dict[str, Any] = {}
    required: list[str] = []
    for part in parts:
        props.update(part.get("properties") or {})
        required += [r for r in part.get("required") or [] if r not in required]
        for k, v in part.items():
            if k not in ("properties", "required", "type"):
                merged.setdefault(k, v)
    merged["properties"] = {**props, **(schema.get("properties") or {})}
    if required:
        merged["required"] = required
    return merged


def _snake_properties(schema: Any) -> Any:
    """Property names in snake_case, as the environment's records spell them."""
    if isinstance(schema, list):
        return [_snake_properties(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _snake_properties(v) for k, v in schema.items() if k not in ("properties", "required")}
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {_snake(k): _snake_properties(v) for k, v in schema["properties"].items()}
    if isinstance(schema.get("required"), list):
        out["required"] = [_snake(str(r)) for r in schema["required"]]
    return out


def _ref_name(schema: Any) -> str | None:
    """Component name a schema (or the items of an array schema) refers to, if it is a plain `$ref`."""
    if not isinstance(schema, dict):
        return None
    if isinstance(schema.get("$ref"), str) and schema["$ref"].startswith("#/components/schemas/"):
        return schema["$ref"].rpartition("/")[2]
    for key in ("items", "allOf"):
        inner = schema.get(key)
        if isinstance(inner, list) and len(inner) == 1:
            inner = inner[0]
        name = _ref_name(inner)
        if name:
            return name
    return None


def _json_content(content: Any) -> Any:
    if not isinstance(content, dict) or not content:
        return None
    for mime in sorted(content):
        if "json" in mime:
            return (content[mime] or {}).get("schema")
    first = content[sorted(content)[0]]
    return first.get("schema") if isinstance(first, dict) else None


def _main_type(schema: dict[str, Any]) -> str | None:
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), None)
    if t is None and "properties" in schema:
        t = "object"
    if t is None and "enum" in schema:
        t = "string"
    return t


def _value_type(schema: Any) -> str | None:
    """The type a column of this schema holds: its main type, else "object" (one JSON column) for a free-form
    map or a union of objects, arrays or several scalar types; a union with one scalar type (Stripe's expandable
    `string | Customer`) stores that scalar, and an allOf part without a type (a description) counts for none."""
    if not isinstance(schema, dict):
        return None
    t = _main_type(schema)
    if t is not None:
        return t
    if schema.get("additionalProperties") not in (None, False):
        return "object"
    parts = [_value_type(v) for v in schema.get("allOf") or [] if isinstance(v, dict)]
    kinds = {k for k in parts if k is not None}
    kinds |= {_value_type(v) for key in ("oneOf", "anyOf") for v in schema.get(key) or [] if isinstance(v, dict)}
    kinds.discard("null")
    scalars = kinds & set(_SCALARS)
    if len(scalars) == 1:
        return scalars.pop()
    return "object" if kinds else None


_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def _fit_default(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema without a `default` its own type rejects (Okta's integer `priority` defaults to prose):
    generated code would store the prose in an integer column."""
    if "default" not in schema:
        return schema
    value, t = schema["default"], _main_type(schema)
    kinds = _PY_TYPES.get(t or "")
    wrong_bool = isinstance(value, bool) and t in ("integer", "number")
    if kinds is None or (isinstance(value, kinds) and not wrong_bool) or value is None:
        return schema
    return {k: v for k, v in schema.items() if k != "default"}
