"""Precompiled JSON-schema checks for tool arguments, run in the parent before anything reaches a worker.

A schema is compiled once per tool into nested closures, so a call pays a few dict look-ups, not a
schema walk. Covered: type (and lists of types), properties, required, additionalProperties (false at
the top level unless the schema allows more), enum, const, numeric bounds, string and array sizes,
pattern, items, anyOf/oneOf/allOf. An optional property given as null counts as not given (clients and LLM
policies send null for what they leave out). Every string is capped, so a 10 MB argument never leaves the
parent, and every number is finite: JSON parsers read `1e999` and `Infinity` as inf, which passes `minimum: 0`,
lands in the state and comes back as a value no JSON client can read.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

Check = Callable[[Any, str], str | None]  # (value, argument path) -> problem or None

_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and math.isfinite(v)),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _type_name(v: Any) -> str:
    if isinstance(v, float) and not math.isfinite(v):
        return f"the non-finite number {v}"
    for name in ("boolean", "integer", "number", "string", "array", "object", "null"):
        if _TYPES[name](v):
            return name
    return type(v).__name__


def _json_like(max_chars: int) -> Check:
    """Values with no schema: any JSON value, strings still capped."""

    def check(v: Any, path: str) -> str | None:
        if isinstance(v, str):
            return (
                f"argument {path!r} is a string of {len(v)} characters (limit {max_chars})"
                if len(v) > max_chars
                else None
            )
        if isinstance(v, float):
            return None if math.isfinite(v) else _not_finite(v, path)
        if v is None or isinstance(v, bool | int):
            return None
        if isinstance(v, list):
            for i, item in enumerate(v):
                if problem := check(item, f"{path}[{i}]"):
                    return problem
            return None
        if isinstance(v, dict):
            for k, item in v.items():
                if not isinstance(k, str):
                    return f"argument {path!r} has a non-string key"
                if problem := check(item, f"{path}.{k}"):
                    return problem
            return None
        return f"argument {path!r} is not a JSON value ({type(v).__name__})"

    return check


def _not_finite(v: float, path: str) -> str:
    return f"argument {path!r} must be a finite number, got {v}"


def _finite_check(v: Any, path: str) -> str | None:
    """Where no type is declared: the type checks refuse non-finite numbers, this stands in for them."""
    return _not_finite(v, path) if isinstance(v, float) and not math.isfinite(v) else None


def _compile(schema: Any, max_chars: int, top: bool) -> Check:
    if not isinstance(schema, dict) or not schema:
        return _json_like(max_chars)
    checks: list[Check] = []
    types = schema.get("type")
    names = [] if types is None else [types] if isinstance(types, str) else list(types)
    preds = [_TYPES[n] for n in names if n in _TYPES]
    if preds:
        checks.append(_type_check(preds, " or ".join(names)))
    else:
        checks.append(_finite_check)
    if "enum" in schema:
        allowed = list(schema["enum"])

        def check_enum(v: Any, path: str) -> str | None:
            if any(v == a and type(v) is type(a) for a in allowed):
                return None
            return f"argument {path!r} must be one of {allowed}, got {v!r}"[:500]

        checks.append(check_enum)
    if "const" in schema:
        const = schema["const"]
        checks.append(lambda v, path: None if v == const else f"argument {path!r} must be {const!r}")
    checks.extend(_bounds(schema))
    if not preds or "string" in names:  # a type check without "string" already refuses strings
        checks.append(_string_check(schema, max_chars))
    if "items" in schema or "minItems" in schema or "maxItems" in schema or "array" in names:
        checks.append(_array_check(schema, max_chars))
    if "properties" in schema or "required" in schema or top or "additionalProperties" in schema or "object" in names:
        checks.append(_object_check(schema, max_chars, top))
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            alts = [_compile(s, max_chars, False) for s in schema[key]]

            def check_any(v: Any, path: str, alts: list[Check] = alts) -> str | None:
                problems = [a(v, path) for a in alts]
                return None if any(p is None for p in problems) else problems[0]

            checks.append(check_any)
    if isinstance(schema.get("allOf"), list):
        checks.extend(_compile(s, max_chars, False) for s in schema["allOf"])
    if not any(k in schema for k in ("type", "items", "properties")):
        checks.append(_json_like(max_chars))

    if len(checks) == 1:
        return checks[0]

    def check_all(v: Any, path: str) -> str | None:
        for c in checks:
            if problem := c(v, path):
                return problem
        return None

    return check_all


def _type_check(preds: list[Callable[[Any], bool]], expected: str) -> Check:
    if len(preds) == 1:
        (pred,) = preds

        def check_one(v: Any, path: str) -> str | None:
            return None if pred(v) else f"argument {path!r} must be {expected}, got {_type_name(v)}"

        return check_one

    def check_type(v: Any, path: str) -> str | None:
        for p in preds:
            if p(v):
                return None
        return f"argument {path!r} must be {expected}, got {_type_name(v)}"

    return check_type


def _bounds(schema: dict) -> list[Check]:
    out: list[Check] = []
    num = _TYPES["number"]
    for key, bad, word in (
        ("minimum", lambda v, b: v < b, ">="),
        ("maximum", lambda v, b: v > b, "<="),
        ("exclusiveMinimum", lambda v, b: v <= b, ">"),
        ("exclusiveMaximum", lambda v, b: v >= b, "<"),
    ):
        bound = schema.get(key)
        if isinstance(bound, int | float) and not isinstance(bound, bool):

            def check(v: Any, path: str, bound: float = bound, bad: Any = bad, word: str = word) -> str | None:
                if num(v) and bad(v, bound):
                    return f"argument {path!r} must be {word} {bound}, got {v}"
                return None

            out.append(check)
    return out


def _string_check(schema: dict, max_chars: int) -> Check:
    lo = int(schema.get("minLength", 0))
    hi = min(int(schema.get("maxLength", max_chars)), max_chars)
    pattern = re.compile(schema["pattern"]) if isinstance(schema.get("pattern"), str) else None

    def check(v: Any, path: str) -> str | None:
        if not isinstance(v, str):
            return None
        if len(v) > hi:
            return f"argument {path!r} is a string of {len(v)} characters (limit {hi})"
        if len(v) < lo:
            return f"argument {path!r} must have at least {lo} characters"
        if pattern is not None and not pattern.search(v):
            return f"argument {path!r} does not match the pattern {pattern.pattern!r}"
        return None

    return check


def _array_check(schema: dict, max_chars: int) -> Check:
    item = _compile(schema.get("items"), max_chars, False)
    lo = schema.get("minItems")
    hi = schema.get("maxItems")

    def check(v: Any, path: str) -> str | None:
        if not isinstance(v, list):
            return None
        if lo is not None and len(v) < lo:
            return f"argument {path!r} must have at least {lo} items"
        if hi is not None and len(v) > hi:
            return f"argument {path!r} must have at most {hi} items"
        for i, x in enumerate(v):
            if problem := item(x, f"{path}[{i}]"):
                return problem
        return None

    return check


def _object_check(schema: dict, max_chars: int, top: bool) -> Check:
    props = {k: _compile(s, max_chars, False) for k, s in (schema.get("properties") or {}).items()}
    required = [r for r in schema.get("required") or [] if isinstance(r, str)]
    extra = schema.get("additionalProperties", not top)
    extra_check = _compile(extra, max_chars, False) if isinstance(extra, dict) else _json_like(max_chars)

    def check(v: Any, path: str) -> str | None:
        if not isinstance(v, dict):
            return None
        for r in required:
            if r not in v:
                return f"missing required argument {_join(path, r)!r}"
        for k, x in v.items():
            sub = props.get(k)
            if sub is None:
                if extra is False:
                    return f"unexpected argument {_join(path, k)!r}"
                sub = extra_check
            elif x is None and k not in required:
                continue  # an optional property sent as null is one left out (as LLM policies and clients send it)
            if problem := sub(x, f"{path}.{k}" if path else str(k)):
                return problem
        return None

    return check


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def top_level(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with each parameter reduced to its type: what is inside an argument is not checked, beyond
    what every value is held to (strings capped, numbers finite)."""

    def shallow(prop: Any) -> dict[str, Any]:
        types = prop.get("type") if isinstance(prop, dict) else None
        if types is None:
            return {}
        names = [types] if isinstance(types, str) else list(types)
        out: dict[str, Any] = {"type": types}
        if "array" in names:
            out["items"] = {}
        if "object" in names:
            out["additionalProperties"] = {}
        return out

    props = schema.get("properties") or {}
    return {**schema, "properties": {k: shallow(v) for k, v in props.items()}}


def compile_schema(
    schema: dict[str, Any] | None, max_string_chars: int = 1 << 20, top_level_only: bool = False
) -> Callable[[Any], str | None]:
    """Compile a tool's parameter schema; the result returns None for valid arguments, else what is wrong.
    `top_level_only` checks the parameters' names, required set and types alone (see `top_level`)."""
    schema = schema or {"type": "object", "properties": {}}
    check = _compile(top_level(schema) if top_level_only else schema, max_string_chars, True)

    def validate(args: Any) -> str | None:
        if not isinstance(args, dict):
            return f"arguments must be an object, got {_type_name(args)}"
        return check(args, "")

    return validate
