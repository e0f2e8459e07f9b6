"""OpenAPI 3.0 / 3.1 documents -> a topic with typed entities and tools whose operations are known.

Component schemas that are resources (they have an id, or an endpoint returns them) become
EntitySpecs; each operation becomes a tool named from its operationId (snake_case) or from its
method and path, with path, query and body parameters merged into one JSON schema, and a
ToolOperation read from the method and the operation's place in the resource tree of the paths
(`paths.py`): the collection's entity is the component its endpoints return, else the one its
literals or item parameter name, else an entity made from its schemas.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from factory.lexicon import (
    DECREMENT_VERBS,
    DEFAULT_INITIAL_STATE,
    INCREMENT_VERBS,
    MONEY_WORDS,
    TERMINAL_STATES,
    TRANSITIONS,
    UNDOING_VERBS,
    VERB_FIELDS,
)
from factory.models import EntitySpec, FieldSpec, ToolOperation, ToolSpec, Topic
from factory.naming import format_id, plural, slugify, snake_case
from factory.topics.documents import SourceError, read_document
from factory.topics.openapi import paths

HTTP_METHODS = ("get", "post", "put", "patch", "delete")
MAX_DEPTH = 12  # nested `$ref` expansions
MAX_NODES = 10_000  # nodes (objects, lists, values) in one inlined schema
_DROP_KEYS = {"example", "examples", "xml", "discriminator", "externalDocs", "nullable"}


@dataclass
class _Ref:
    """A resolved `$ref`: the node, the file it lives in, and a canonical key for cycle checks."""

    node: Any
    base: Path
    key: str


@dataclass
class _Resolver:
    path: Path
    docs: dict[Path, Any] = field(default_factory=dict)
    _memo: dict[str, tuple[Any, int]] = field(default_factory=dict)
    _busy: list[str] = field(default_factory=list)

    def lookup(self, ref: str, base: Path) -> _Ref:
        if not isinstance(ref, str):
            raise SourceError(self.path, f"$ref must be a string, not {ref!r}")
        file_part, _, pointer = ref.partition("#")
        if file_part.startswith(("http://", "https://")):
            raise SourceError(self.path, f"$ref {ref!r} points to a remote document; only local files are read")
        target = (base.parent / file_part).resolve() if file_part else base
        if target not in self.docs:
            try:
                self.docs[target] = read_document(target)
            except SourceError as e:
                raise SourceError(
                    self.path, f"$ref {ref!r} points to a file that cannot be read: {e.problem}"
                ) from None
        node = self.docs[target]
        for raw in [p for p in pointer.split("/") if p]:
            part = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise SourceError(self.path, f"$ref {ref!r} points nowhere (no {part!r})")
        return _Ref(node, target, f"{target}#{pointer}")

    def deref(self, node: Any, base: Path) -> tuple[Any, Path]:
        """Follow a chain of `$ref`s at the top of `node` (parameters, bodies, responses)."""
        seen: set[str] = set()
        while isinstance(node, dict) and "$ref" in node:
            r = self.lookup(node["$ref"], base)
            if r.key in seen:
                raise SourceError(self.path, f"$ref {node['$ref']!r} refers to itself")
            seen.add(r.key)
            node, base = r.node, r.base
        return node, base

    def inline(self, schema: Any, base: Path) -> Any:
        """A schema with every `$ref` replaced by its target, at most MAX_NODES nodes in all.

        Each referenced schema is expanded once and the expansion shared (callers must not mutate it);
        a reference met again while it is being expanded (a cycle), met deeper than MAX_DEPTH, or whose
        expansion no longer fits in the node budget becomes a shallow stand-in."""
        return self._inline(schema, base, [MAX_NODES])

    def _inline(self, schema: Any, base: Path, room: list[int]) -> Any:
        room[0] -= 1
        if isinstance(schema, list):
            return [self._inline(s, base, room) for s in schema]
        if not isinstance(schema, dict):
            return schema
        if "$ref" in schema:
            r = self.lookup(schema["$ref"], base)
            resolved = self._expand(r, room)
            extra = {k: v for k, v in schema.items() if k != "$ref" and k not in _DROP_KEYS and not k.startswith("x-")}
            return {**resolved, **extra} if isinstance(resolved, dict) and extra else resolved
        out: dict[str, Any] = {}
        for k, v in schema.items():
            if k in _DROP_KEYS or (k.startswith("x-") and _has_ref(v)):
                continue
            if k == "properties" and isinstance(v, dict):
                room[0] -= 1
                out[k] = {pk: self._inline(pv, base, room) for pk, pv in v.items()}
            elif isinstance(v, dict | list):
                out[k] = self._inline(v, base, room)
            else:
                room[0] -= 1
                out[k] = v
        if schema.get("nullable") is True and isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
        return _flatten_all_of(out)

    def _expand(self, r: _Ref, room: list[int]) -> Any:
        """The shared expansion of a referenced schema, or its stand-in where it would recurse or not fit."""
        if r.key in self._busy or len(self._busy) >= MAX_DEPTH:
            room[0] -= 3
            return _stand_in(r, "recursive reference")
        if r.key not in self._memo:
            self._busy.append(r.key)
            own = [MAX_NODES]
            try:
                value = self._inline(r.node, r.base, own)
            finally:
                self._busy.pop()
            self._memo[r.key] = (value, MAX_NODES - own[0])
        value, size = self._memo[r.key]
        if size > room[0]:
            room[0] -= 3
            return _stand_in(r, "large schema")
        room[0] -= size
        return value

    def object_props(self, schema: Any, base: Path, stack: tuple[str, ...] = ()) -> tuple[dict[str, Any], set[str]]:
        """Properties (left raw, refs intact) and required names of an object schema, through `$ref` and allOf."""
        props: dict[str, Any] = {}
        required: set[str] = set()
        if not isinstance(schema, dict) or len(stack) > MAX_DEPTH:
            return props, required
        if "$ref" in schema:
            r = self.lookup(schema["$ref"], base)
            if r.key in stack:
                return props, required
            return self.object_props(r.node, r.base, (*stack, r.key))
        for part in schema.get("allOf") or []:
            p, req = self.object_props(part, base, stack)
            props.update(p)
            required |= req
        props.update({k: (v, base) for k, v in (schema.get("properties") or {}).items()})
        required |= set(schema.get("required") or [])
        return props, required

    def merged_props(self, schema: Any, base: Path) -> tuple[dict[str, Any], set[str]]:
        """Like object_props; a oneOf/anyOf (a discriminated union) gives the union of its variants' properties,
        required where every variant requires them."""
        props, required = self.object_props(schema, base)
        if props:
            return props, required
        node, nbase = self.deref(schema, base)
        variants = (node.get("oneOf") or node.get("anyOf")) if isinstance(node, dict) else None
        if not isinstance(variants, list):
            return props, required
        reqs: list[set[str]] = []
        for v in variants:
            p, r = self.object_props(v, nbase)
            for k, val in p.items():
                props.setdefault(k, val)
            reqs.append(r)
        return props, set.intersection(*reqs) if reqs else set()


def _has_ref(value: Any) -> bool:
    if isinstance(value, dict):
        return "$ref" in value or any(_has_ref(v) for v in value.values())
    return isinstance(value, list) and any(_has_ref(v) for v in value)


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


def _copy(value: Any) -> Any:
    """A copy of a JSON value, so that no expansion shared by the resolver leaves it."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _stand_in(r: _Ref, why: str) -> dict[str, Any]:
    """A shallow schema in place of a referenced one that is not expanded."""
    name = r.key.rpartition("/")[2]
    t = _main_type(r.node) if isinstance(r.node, dict) else None
    return {"type": t or "object", "description": f"A {name} ({why}, not expanded)."}


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
        out["properties"] = {snake_case(k): _snake_properties(v) for k, v in schema["properties"].items()}
    if isinstance(schema.get("required"), list):
        out["required"] = [snake_case(str(r)) for r in schema["required"]]
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


@dataclass
class _Op:
    method: str
    path: str
    op: dict[str, Any]
    params: list[dict[str, Any]]
    base: Path


class _OpenAPIReader:
    def __init__(self, doc: dict[str, Any], path: Path) -> None:
        self.doc = doc
        self.path = path
        self.resolver = _Resolver(path, {path.resolve(): doc})
        self.base = path.resolve()
        self._components: set[str] = set()  # component names that are entities

    # --- document -------------------------------------------------------------------------

    def check(self) -> None:
        version = str(self.doc.get("openapi", ""))
        if not re.match(r"^3\.[01]\.\d+", version):
            raise SourceError(self.path, f"unsupported OpenAPI version {version!r}; 3.0.x and 3.1.x are read")
        info = self.doc.get("info")
        if not isinstance(info, dict) or not info.get("title"):
            raise SourceError(self.path, "OpenAPI document without info.title")
        paths = self.doc.get("paths")
        if not isinstance(paths, dict) or not paths:
            raise SourceError(self.path, "OpenAPI document without paths: it describes no callable operations")

    def operations(self) -> list[_Op]:
        ops = []
        for p, raw_item in self.doc["paths"].items():
            item, base = self.resolver.deref(raw_item, self.base)
            if not isinstance(item, dict):
                raise SourceError(self.path, f"paths[{p!r}] is not an object")
            shared = item.get("parameters") or []
            for method in HTTP_METHODS:
                op = item.get(method)
                if op is None:
                    continue
                if not isinstance(op, dict):
                    raise SourceError(self.path, f"paths[{p!r}].{method} is not an object")
                merged: dict[tuple[str, str], dict[str, Any]] = {}
                for raw in [*shared, *(op.get("parameters") or [])]:
                    param, _ = self.resolver.deref(raw, base)
                    if not isinstance(param, dict) or "name" not in param or "in" not in param:
                        raise SourceError(self.path, f"{method.upper()} {p}: a parameter needs 'name' and 'in'")
                    merged[(param["in"], param["name"])] = param
                ops.append(_Op(method, p, op, list(merged.values()), base))
        if not ops:
            raise SourceError(self.path, "OpenAPI paths define no operations (get/post/put/patch/delete)")
        return ops

    # --- entities -------------------------------------------------------------------------

    def _response_schema(self, op: _Op) -> Any:
        responses = op.op.get("responses") or {}
        for code in sorted(str(c) for c in responses):
            if code.startswith("2"):
                resp, _ = self.resolver.deref(
                    responses.get(code, responses.get(int(code) if code.isdigit() else code)), op.base
                )
                if isinstance(resp, dict) and (schema := _json_content(resp.get("content"))) is not None:
                    return schema
        return None

    def _body_schema(self, op: _Op) -> tuple[Any, bool]:
        body, _ = self.resolver.deref(op.op.get("requestBody"), op.base)
        if not isinstance(body, dict):
            return None, False
        return _json_content(body.get("content")), bool(body.get("required"))

    def entities(self, ops: list[_Op]) -> dict[str, tuple[str, EntitySpec]]:
        """Component name -> (entity name, EntitySpec) for every resource schema."""
        schemas = (self.doc.get("components") or {}).get("schemas") or {}
        responses = [(self._response_schema(op), op.base) for op in ops]
        resources = {n for schema, _ in responses for n in (_ref_name(schema),) if n} | {
            n for schema, base in responses if schema is not None for n in self._listing(schema, base)[1]
        }
        chosen: dict[str, tuple[dict[str, Any], set[str]]] = {}
        for name, raw in schemas.items():
            props, required = self.resolver.merged_props(raw, self.base)
            if not props:
                continue
            own_id = f"{snake_case(name)}_id"
            has_id = any(snake_case(k) in ("id", own_id) for k in props)
            wraps_list = any(
                isinstance(v, dict) and v.get("type") == "array" and _ref_name(v) for v, _ in props.values()
            )
            if has_id or (name in resources and not wraps_list):
                chosen[name] = (props, required)
        names = {n: snake_case(n) for n in chosen}
        pks = {}
        for n, (props, _) in chosen.items():
            keys = [snake_case(k) for k in props]
            pks[n] = "id" if "id" in keys else (f"{names[n]}_id" if f"{names[n]}_id" in keys else "id")
        by_entity = {names[n]: n for n in chosen}
        out = {}
        for n, (props, required) in chosen.items():
            fields = _merge_fields(
                [self._field(k, v, b, k in required, names[n], pks[n], by_entity, pks) for k, (v, b) in props.items()]
            )
            if not any(f.primary_key for f in fields):
                fields.insert(0, FieldSpec(name=pks[n], primary_key=True, unique=True, required=True))
            fields.sort(key=lambda f: not f.primary_key)
            desc = (schemas[n].get("description") if isinstance(schemas[n], dict) else None) or ""
            out[n] = (
                names[n],
                EntitySpec(name=names[n], table=plural(names[n]), fields=fields, primary_key=pks[n], description=desc),
            )
        return out

    def _field(
        self,
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
        schema = self.resolver.inline(raw, base)
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
        t, fmt = _main_type(schema), schema.get("format")
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

    # --- routes ---------------------------------------------------------------------------

    def _listing(self, schema: Any, base: Path) -> tuple[bool, list[str]]:
        """Whether a response is many rows (an array, or an object wrapping one array of rows), and the
        components it names (the rows', a union's variants)."""
        node, nbase = self.resolver.deref(schema, base)
        if not isinstance(node, dict):
            return False, []
        if _main_type(node) == "array":
            return True, self._refs(node.get("items"), nbase)
        props, _ = self.resolver.object_props(node, nbase)
        arrays = [(v, b) for v, b in props.values() if isinstance(v, dict) and _main_type(v) == "array"]
        if len(arrays) == 1 and "id" not in props and len(props) <= _WRAPPER_PROPS:
            items, ibase = arrays[0][0].get("items"), arrays[0][1]
            if self.resolver.object_props(items, ibase)[0]:
                return True, self._refs(items, ibase)
        if len(props) == 1:
            [(inner, ibase)] = props.values()
            if _ref_name(inner) and isinstance(inner, dict) and "$ref" in inner:
                return False, self._refs(inner, ibase)
        return False, self._refs(schema, base)

    def _refs(self, schema: Any, base: Path, depth: int = 0) -> list[str]:
        """Component names a schema stands for: its own `$ref`, else the variants of its oneOf/anyOf."""
        if not isinstance(schema, dict) or depth > 3:
            return []
        name = _ref_name(schema)
        if name:
            return [name]
        node, nbase = self.resolver.deref(schema, base)
        out: list[str] = []
        for v in (node.get("oneOf") or node.get("anyOf") or []) if isinstance(node, dict) else []:
            out += self._refs(v, nbase, depth + 1)
        return out

    def _evidence(self, op: _Op) -> tuple[bool, list[str]]:
        """Whether an operation answers with many rows, and the components its response and body name."""
        response = self._response_schema(op)
        many, refs = self._listing(response, op.base) if response is not None else (False, [])
        body = self._body_schema(op)[0]
        return many, refs + (self._refs(body, op.base) if body is not None else [])

    # --- tools ----------------------------------------------------------------------------

    def tools(self, ops: list[_Op], plans: list[_Plan], entities: dict[str, EntitySpec]) -> list[ToolSpec]:
        tools: list[ToolSpec] = []
        used: set[str] = set()
        for op, plan in zip(ops, plans, strict=True):
            entity = entities.get(plan.entity or "")
            params = self._parameters(op, plan.renames, set(self._components))
            if plan.shape == "single" and entity is not None:
                params = _single_key(params, entity)
            operation = _operation(op, plan, entity, params)
            segments = [s for s in op.path.split("/") if s]
            name = (
                snake_case(op.op["operationId"])
                if op.op.get("operationId")
                else self._derived_name(op, segments, operation)
            )
            base_name, n = name, 2
            while name in used:
                name, n = f"{base_name}_{n}", n + 1
            used.add(name)
            summary = op.op.get("summary") or ""
            detail = op.op.get("description") or ""
            description = " ".join(x.strip().rstrip(".") + "." for x in (summary, detail) if x and x.strip())
            output = self._response_schema(op)
            tools.append(
                ToolSpec(
                    name=name,
                    description=description or f"{op.method.upper()} {op.path}",
                    parameters=params,
                    output=_snake_properties(self.resolver.inline(output, op.base))
                    if isinstance(output, dict)
                    else None,
                    mutates=op.method != "get",
                    operation=operation,
                )
            )
        return tools

    def _derived_name(self, op: _Op, segments: list[str], operation: ToolOperation | None) -> str:
        if operation is not None:
            if operation.kind in ("list", "search"):
                return f"{operation.kind}_{plural(operation.entity)}"
            if operation.kind == "action":
                return f"{snake_case(segments[-1])}_{operation.entity}"
            if operation.kind == "aggregate":
                return f"{plural(operation.entity)}_summary"
            return f"{operation.kind}_{operation.entity}"
        words = [snake_case(s.strip("{}")) for s in segments]
        return "_".join([op.method, *[w for w in words if w]])

    def _parameters(self, op: _Op, renames: dict[str, str], components: set[str]) -> dict[str, Any]:
        """One JSON schema over path, query and body parameters; path params are required, the item's is
        renamed to `<entity>_id` (and a parent's to `<parent>_id`); a nested entity in a body becomes its `<x>_id`."""
        props: dict[str, Any] = {}
        required: list[str] = []
        for param in op.params:
            where = param.get("in")
            if where not in ("path", "query"):
                continue
            raw_name = str(param["name"])
            name = renames.get(raw_name, snake_case(raw_name)) if where == "path" else snake_case(raw_name)
            if name in props and where == "query":
                continue
            schema = self.resolver.inline(param.get("schema") or {"type": "string"}, op.base)
            schema = dict(schema) if isinstance(schema, dict) else {"type": "string"}
            if param.get("description") and "description" not in schema:
                schema["description"] = str(param["description"])
            props[name] = schema
            if where == "path" or param.get("required"):
                required.append(name)
        body, body_required = self._body_schema(op)
        if body is not None:
            body_props, body_req = self.resolver.merged_props(body, op.base)
            if body_props:
                for raw_name, (raw, base) in body_props.items():
                    name = snake_case(raw_name)
                    schema = self.resolver.inline(raw, base)
                    ref = _ref_name(raw) if isinstance(raw, dict) and "$ref" in raw else None
                    if ref in components and _main_type(schema) == "object":
                        name, schema = f"{name}_id", {"type": "string", "description": f"ID of the {snake_case(ref)}."}
                    if name in props or (isinstance(schema, dict) and schema.get("readOnly")):
                        continue
                    props[name] = (
                        {k: v for k, v in schema.items() if k != "writeOnly"} if isinstance(schema, dict) else {}
                    )
                    if raw_name in body_req and body_required:
                        required.append(name)
            else:
                props["body"] = self.resolver.inline(body, op.base)
                if body_required:
                    required.append("body")
        out: dict[str, Any] = {"type": "object", "properties": _copy(props)}
        if required:
            out["required"] = list(dict.fromkeys(required))
        return out


@dataclass
class _Plan:
    """What the resource tree says an operation does: its entity, its shape, and how its path params are named.

    shape: "item" (one row, named by `<entity>_id`), "single" (the one row of an API-wide singleton, its key
    optional), "many" (list or create over a collection), "verb" (a verb on a whole collection: only a transfer
    between two of its rows is one), or None (no operation: a bulk write, a relationship's (un)assignment)."""

    entity: str | None = None
    shape: str | None = None
    verb: str | None = None
    searchy: bool = False
    renames: dict[str, str] = field(default_factory=dict)


class _Tree:
    """The paths' resource tree: each collection key's entity, from the components its operations return
    (then its names, then a new entity made from its schemas), and each operation's plan on it."""

    def __init__(self, reader: _OpenAPIReader, ops: list[_Op], entities: dict[str, tuple[str, EntitySpec]]):
        self.reader = reader
        self.entities = entities
        self.by_name = {e: n for n, (e, _) in entities.items()}
        self.collections = paths.collection_keys([o.path for o in ops])
        self.at: dict[str, list[tuple[_Op, bool, list[str]]]] = {}
        for op in ops:
            many, refs = reader._evidence(op)
            self.at.setdefault(paths.shape_key(op.path), []).append((op, many, refs))
        self._resolved: dict[str, str | None] = {}
        self.singletons: set[str] = set()  # entities the API keeps one row of
        self.depth: dict[str, int] = {}  # entity -> params before its shallowest collection
        self.made: dict[str, EntitySpec] = {}
        self.made_at: dict[str, str] = {}  # made entity -> the key it was made for
        self.extra: dict[str, dict[str, FieldSpec]] = {}  # entity -> fields the paths add (parents, states)

    # --- entities of keys -----------------------------------------------------------------

    def _votes(self, keys: list[str], many_only: bool = False) -> Counter[str]:
        votes: Counter[str] = Counter()
        for key in keys:
            for op, many, refs in self.at.get(key, []):
                if op.method == "delete" or (many_only and op.method == "get" and not many):
                    continue
                for r in dict.fromkeys(refs):
                    if r in self.entities:
                        votes[r] += 2 if op.method == "get" else 1
        return votes

    def _item_keys(self, key: str) -> list[str]:
        return [k for k in self.at if k.startswith(key + "/{}") and not k[len(key) + 3 :].replace("/{}", "")]

    def entity_of(self, key: str, node: paths.Node | None, sub: tuple[str, ...], parent: str | None) -> str:
        """The entity of a collection (or singleton) key; a new one when no component and no name fits."""
        if key in self._resolved:
            return self._resolved[key] or ""
        votes = self._votes([key], many_only=key in self.collections) + self._votes(self._item_keys(key))
        from_lits, from_param = paths.name_candidates(node, sub, parent)
        name = None
        if votes:
            named = {c: v for c, v in votes.items() if self.entities[c][0] in (*from_lits, *from_param)}
            pool = named or votes  # a component the path names wins over richer views of it (BrandWithEmbedded)
            name = self.entities[max(pool, key=lambda c: pool[c])][0]
        if name is None:
            name = next((c for c in from_lits if c in self.by_name or c in self.made), None)
        if name is None:
            name = next((c for c in from_param if c in self.by_name), None)
        if name is None and (from_lits or from_param):
            name = self._make(key, [*from_lits, *from_param][0], parent)
        self._resolved[key] = name
        if name and (key in self.at or self._item_keys(key)):
            self.depth[name] = min(self.depth.get(name, key.count("{}")), key.count("{}"))
        return name or ""

    def singleton_of(self, key: str) -> str | None:
        """The entity a sub-path of an item names when it is a resource of its own (its GET or write returns one)."""
        votes = self._votes([key])
        if not votes:
            return None
        return self.entities[votes.most_common(1)[0][0]][0]

    def _make(self, key: str, name: str, parent: str | None) -> str | None:
        """A new entity for a collection no component describes, with the fields its schemas show."""
        if parent and name in self.made and self.made_at[name] != key:
            name = f"{parent}_{name}"
        tables = {spec.table: e for e, spec in self.entities.values()} | {m.table: n for n, m in self.made.items()}
        if name in self.made or plural(name) in tables:
            return tables.get(plural(name), name)
        props: dict[str, Any] = {}
        required: set[str] = set()
        value: FieldSpec | None = None
        for k in [key, *self._item_keys(key)]:
            for op, _, _ in self.at.get(k, []):
                for schema in (self.reader._response_schema(op), self.reader._body_schema(op)[0]):
                    if schema is None:
                        continue
                    many, _ = self.reader._listing(schema, op.base)
                    node, nbase = self.reader.resolver.deref(schema, op.base)
                    if many and isinstance(node, dict) and _main_type(node) == "array":
                        schema, nbase = node.get("items"), nbase
                    p, r = self.reader.resolver.merged_props(schema, nbase)
                    for pk, pv in p.items():
                        props.setdefault(pk, pv)
                    required |= r
                    inlined = self.reader.resolver.inline(schema, op.base)
                    if not p and value is None and isinstance(inlined, dict) and _main_type(inlined) in _SCALARS:
                        value = FieldSpec(name="value", description=str(inlined.get("description") or ""))
        if not props and value is None and key not in self.collections:
            return None  # no field and no row addressed: a map of counts, a file, an empty answer
        pk = "id" if any(snake_case(k) == "id" for k in props) else f"{name}_id"
        by_entity = {e: c for c, (e, _) in self.entities.items()}
        pks = {c: spec.primary_key for c, (_, spec) in self.entities.items()}
        fields = [self.reader._field(k, v, b, k in required, name, pk, by_entity, pks) for k, (v, b) in props.items()]
        fields = [f for f in _merge_fields(fields) if not f.primary_key]
        fields.insert(0, FieldSpec(name=pk, primary_key=True, unique=True, required=True))
        if value is not None:
            fields.append(value)
        desc = f"Rows of /{key} (no component schema describes them; fields from its requests and responses)."
        self.made[name] = EntitySpec(name=name, table=plural(name), fields=fields, primary_key=pk, description=desc)
        self.made_at[name] = key
        return name

    def _add_field(self, entity: str, name: str, references: str | None) -> None:
        self.extra.setdefault(entity, {}).setdefault(
            name, FieldSpec(name=name, references=references, description="A path parameter of its endpoints.")
        )

    # --- plans ----------------------------------------------------------------------------

    def plan(self, op: _Op) -> _Plan:
        """An operation's plan: an item path acts on its row, a collection lists or creates, literals under an
        item are a sub-collection, a singleton of the item, or a part of the item itself."""
        r = paths.route(op.path, op.method, self.collections)
        names: list[str] = []  # the entity of each node of the route
        renames: dict[str, str] = {}
        for i, node in enumerate(r.nodes):
            parent = names[-1] if names else None
            names.append(self.entity_of(node.key, node, (), parent))
            if i < len(r.nodes) - 1 and names[-1]:
                renames[node.params[-1]] = f"{names[-1]}_id"
        searchy = self._searchy(op, r)
        if not r.sub and not r.nodes:
            return self._root(op)
        if not r.sub:
            return self._on_node(op, r, names, renames, searchy)
        key = r.sub_key()
        parent = names[-1] if names else None
        gets = [m for o, m, _ in self.at.get(key, []) if o.method == "get"]
        many = any(gets)
        if not r.nodes and key not in self.collections and not searchy and gets and not many:
            return self._single(op, r, key)
        if not r.nodes and not r.verb and len(r.sub) > 1 and op.method != "get" and not gets:
            head = "/".join(r.sub[:-1])
            heads = [m for o, m, _ in self.at.get(head, []) if o.method == "get"]
            if head not in self.collections and heads and not any(heads):  # a write named under a singleton
                return self._single(op, paths.Route((), r.sub[:-1], snake_case(r.sub[-1])), head)
        if key in self.collections or not r.nodes or many or (searchy and op.method in ("get", "post")):
            entity = self.entity_of(key, None, r.sub, parent)
            if r.node is not None and entity and parent:
                renames[r.node.params[-1]] = f"{parent}_id"
            return self._on_collection(op, r, entity, renames, searchy)
        own = self.singleton_of(key)
        if own and own != parent:
            renames[r.node.params[-1]] = f"{own}_id"
            return _Plan(own, "item", r.verb, searchy, self._scoped(own, r, renames, key=r.node.params[-1]))
        if not parent:
            return _Plan()
        renames[r.node.params[-1]] = f"{parent}_id"
        if op.method == "delete":
            return _Plan()  # removes a part of the row (a logo, a token set), not the row
        verb = r.verb or (None if op.method == "get" else "update")
        return _Plan(parent, "item", verb, searchy, self._scoped(parent, r, renames, key=r.node.params[-1]))

    def _root(self, op: _Op) -> _Plan:
        """The API's root (`GET /`): a listing of the component it returns, when that is an entity."""
        name = _ref_name(self.reader._response_schema(op)) if op.method == "get" else None
        if name not in self.entities:
            return _Plan()
        return _Plan(self.entities[name][0], "many")

    def _single(self, op: _Op, r: paths.Route, key: str) -> _Plan:
        """A singleton of the whole API (`/org/captcha`): one row, read, replaced or deleted without a path key."""
        entity = self.entity_of(key, None, r.sub, None)
        if not entity:
            return _Plan()
        self.singletons.add(entity)
        verb = r.verb or ("update" if op.method == "post" else None)
        return _Plan(entity, "single", verb, self._searchy(op, r), {})

    def prepare(self, ops: list[_Op]) -> None:
        """Resolve every collection of every path first, so that each entity's home (its shallowest collection)
        is known before a nested path is read as a relationship to it."""
        for op in ops:
            parent: str | None = None
            for node in paths.route(op.path, op.method, self.collections).nodes:
                parent = self.entity_of(node.key, node, (), parent) or None

    def _related(self, entity: str, key: str) -> bool:
        """Whether a nested collection lists rows that live in a shallower collection (a group's users): a write
        on it (un)assigns a row rather than creating, replacing or deleting one."""
        return self.depth.get(entity, 0) < key.count("{}")

    def _on_node(self, op: _Op, r: paths.Route, names: list[str], renames: dict[str, str], searchy: bool) -> _Plan:
        """A path ending in an item (`/xs/{id}`, `/xs/{id}/lifecycle/activate`)."""
        entity, node = names[-1], r.nodes[-1]
        if not entity:
            return _Plan()
        many = any(m for o, m, _ in self.at.get(paths.shape_key(op.path), []) if o.method == "get")
        if many and not r.verb:
            if op.method not in ("get", "post"):
                return _Plan()
            if len(r.nodes) > 1 and names[-2]:
                renames[r.nodes[-2].params[-1]] = f"{names[-2]}_id"
            return _Plan(entity, "many", None, searchy, self._scoped(entity, r, renames, key=None))
        if op.method != "get" and not r.verb and self._related(entity, node.key):
            return _Plan()
        renames[node.params[-1]] = f"{entity}_id"
        return _Plan(entity, "item", r.verb, searchy, self._scoped(entity, r, renames, key=node.params[-1]))

    def _on_collection(self, op: _Op, r: paths.Route, entity: str, renames: dict[str, str], searchy: bool) -> _Plan:
        if not entity:
            return _Plan()
        if r.verb and not searchy:
            return _Plan(entity, "verb", r.verb, searchy, self._scoped(entity, r, renames, key=None))
        if op.method != "get" and not searchy and self._related(entity, paths.shape_key(op.path)):
            return _Plan()
        return _Plan(entity, "many", None, searchy, self._scoped(entity, r, renames, key=None))

    def _scoped(self, entity: str, r: paths.Route, renames: dict[str, str], key: str | None) -> dict[str, str]:
        """Renames for the path params, one name each (the key's first), each one not the key becoming a field
        of the entity (a parent reference, a scope such as an account)."""
        out = {key: renames[key]} if key in renames else {}
        used = set(out.values())
        for node in r.nodes:
            for p in node.params:
                if p == key:
                    continue
                name = renames.get(p, snake_case(p))
                if name in used:
                    name = snake_case(p)
                n = 2
                while name in used:
                    name, n = f"{snake_case(p)}_{n}", n + 1
                used.add(name)
                out[p] = name
                ref = name[:-3] if name.endswith("_id") and name[:-3] in self._names() else None
                self._add_field(entity, name, f"{ref}.{self._pk(ref)}" if ref and ref != entity else None)
        return out

    def _names(self) -> set[str]:
        return set(self.by_name) | set(self.made)

    def _pk(self, entity: str) -> str:
        if entity in self.made:
            return self.made[entity].primary_key
        return self.entities[self.by_name[entity]][1].primary_key

    def _searchy(self, op: _Op, r: paths.Route) -> bool:
        """A documented search: a `q`/`query`/`search` parameter, or a path or verb saying search."""
        names = {snake_case(str(p.get("name"))) for p in op.params}
        words = [snake_case(w) for w in (*r.sub, r.verb or "", str(op.op.get("operationId") or ""))]
        return bool(names & {"q", "query", "search"}) or any("search" in w for w in words)

    def states(self, plans: list[_Plan], entities: dict[str, EntitySpec]) -> None:
        """Entities acted on by lifecycle verbs but with no enum status get the states those verbs imply."""
        verbs: dict[str, list[str]] = {}
        for p in plans:
            if p.entity and p.verb in TRANSITIONS and TRANSITIONS[p.verb][0]:
                verbs.setdefault(p.entity, []).append(p.verb)
        for entity, vs in verbs.items():
            spec = entities.get(entity)
            if spec is None or any(f.enum for f in spec.fields if f.name in ("status", "state")):
                continue
            states = [TRANSITIONS[v][0][0] for v in vs]
            for v in vs:
                sources = TRANSITIONS[v][1]
                states.append(sources[0] if sources else DEFAULT_INITIAL_STATE)
            enum = list(dict.fromkeys(s.upper() for s in states))
            desc = f"State implied by the {', '.join(sorted(set(vs)))} endpoints (the document gives no status enum)."
            old = next((f for f in spec.fields if f.name == "status"), None)
            status = (old or FieldSpec(name="status")).model_copy(
                update={"enum": enum, "type": "string", "format": None, "description": desc}
            )
            fields = [status if f.name == "status" else f for f in spec.fields]
            entities[entity] = spec.model_copy(update={"fields": fields if old else [*fields, status]})


_SCALARS = ("string", "integer", "number", "boolean")
_WRAPPER_PROPS = 4  # an object of one array of rows and a few paging fields is a page of rows


def _operation(op: _Op, plan: _Plan, entity: EntitySpec | None, params: dict[str, Any]) -> ToolOperation | None:
    """The operation of a planned tool: the method on its shape, a verb as an action on the row."""
    if entity is None or plan.shape is None:
        return None
    e, m = entity.name, op.method
    if plan.shape == "many":
        if m == "get":
            return ToolOperation(kind="search" if plan.searchy else "list", entity=e)
        if m == "post":
            return ToolOperation(kind="search" if plan.searchy else "create", entity=e)
        return None
    if plan.shape == "verb":
        action = _action(plan.verb or "", entity, params) if m != "get" else None
        return action if action is not None and action.action == "transfer" else None
    if plan.verb and m in ("post", "put", "patch"):
        action = _action(plan.verb, entity, params) if plan.verb != "update" else None
        return action or ToolOperation(kind="update", entity=e)
    kind = {"get": "get", "put": "update", "patch": "update", "post": "update", "delete": "delete"}[m]
    return ToolOperation(kind=kind, entity=e)


def _single_key(params: dict[str, Any], entity: EntitySpec) -> dict[str, Any]:
    """The key parameter of a singleton's tool: optional, naming by default the one row the service keeps."""
    pk = next(f for f in entity.fields if f.primary_key)
    first: str | int = 1 if pk.type == "integer" else format_id(entity.id_prefix or f"{entity.name}_", 1)
    key = {
        "type": "integer" if pk.type == "integer" else "string",
        "description": f"ID of the {entity.name.replace('_', ' ')}; the service keeps one, the default.",
        "default": first,
    }
    return {**params, "properties": {f"{entity.name}_id": key, **params["properties"]}}


def _amount_param(params: dict[str, Any]) -> str | None:
    numeric = [
        k
        for k, v in params["properties"].items()
        if isinstance(v, dict) and _main_type(v) in ("integer", "number") and not k.endswith("_id")
    ]
    for preferred in ("amount", "quantity", "count", "units"):
        if preferred in numeric:
            return preferred
    return numeric[0] if numeric else None


def _action(verb: str, entity: EntitySpec, params: dict[str, Any]) -> ToolOperation | None:
    """The business action a `POST /<things>/{id}/<verb>` endpoint performs on its entity."""
    e = entity.name
    fields = {f.name: f for f in entity.fields}
    amount = _amount_param(params)
    if verb == "transfer" and amount:
        target = "balance" if "balance" in fields else next((f for f in fields if f in ("stock", "quantity")), None)
        if target:
            return ToolOperation(kind="action", entity=e, action="transfer", field=target, amount_param=amount)
    for verbs, action in ((INCREMENT_VERBS, "increment"), (DECREMENT_VERBS, "decrement")):
        if verb in verbs and amount:
            named = VERB_FIELDS.get(verb)
            target = named if named in fields else None
            target = target or next((f for f in ("stock", "quantity", "balance") if f in fields), None)
            if target:
                return ToolOperation(kind="action", entity=e, action=action, field=target, amount_param=amount)
    status = next((f for f in entity.fields if f.enum and f.name in ("status", "state")), None)
    if status is None:
        status = next((f for f in entity.fields if f.enum), None)
    if status is None or not status.enum:
        return None
    targets = TRANSITIONS[verb][0] if verb in TRANSITIONS else ()
    candidates = targets or (verb + "d" if verb.endswith("e") else verb + "ed",)
    to_value = next((v for v in status.enum if v.lower() in candidates), None)
    if to_value is None:
        return None
    sources = TRANSITIONS[verb][1] if verb in UNDOING_VERBS else None
    if to_value.lower() in ("open", "reopened"):
        from_values = [v for v in status.enum if v.lower() in TERMINAL_STATES]
    elif sources and any(v.lower() in sources for v in status.enum):
        from_values = [v for v in status.enum if v.lower() in sources]
    else:
        from_values = [v for v in status.enum if v != to_value and v.lower() not in TERMINAL_STATES]
    return ToolOperation(
        kind="action",
        entity=e,
        action="transition",
        field=status.name,
        to_value=to_value,
        from_values=from_values or None,
    )


def _created_fields(entity: EntitySpec, params: dict[str, Any]) -> EntitySpec:
    """An entity whose create names none of its fields (an upload, a token request) keeps what it is
    created with: each parameter becomes a field, so the row records it."""
    have = {f.name for f in entity.fields}
    given = {k: v for k, v in params.items() if k not in ("id", "body", f"{entity.name}_id")}
    if not given or have & set(given):
        return entity
    added = []
    for name, schema in given.items():
        t = _main_type(schema) if isinstance(schema, dict) else None
        spec: dict[str, Any] = {"name": name, "description": str((schema or {}).get("description") or "")}
        if t in ("integer", "number", "boolean"):
            spec["type"] = t
        elif t in ("array", "object"):
            spec["format"] = "json"
        added.append(FieldSpec(**spec))
    return entity.model_copy(update={"fields": [*entity.fields, *added]})


def _acyclic(entities: dict[str, EntitySpec]) -> dict[str, EntitySpec]:
    """The entities with each foreign key that closes a cycle kept as a plain column: a database needs every
    parent created before its children, and a parent reference read from a path can point back up."""
    state: dict[str, int] = {}  # 1 = visiting, 2 = done
    out = dict(entities)

    def visit(name: str) -> None:
        state[name] = 1
        fields = []
        for f in out[name].fields:
            parent = f.references.split(".", 1)[0] if f.references else None
            if parent and parent != name and parent in out:
                if state.get(parent) == 1:
                    f = f.model_copy(update={"references": None})
                elif state.get(parent) is None:
                    visit(parent)
            fields.append(f)
        out[name] = out[name].model_copy(update={"fields": fields})
        state[name] = 2

    for name in entities:
        if name not in state:
            visit(name)
    return out


def topics_from_openapi(doc: Any, path: str | Path) -> list[Topic]:
    """One topic per OpenAPI document."""
    p = Path(path)
    if not isinstance(doc, dict):
        raise SourceError(p, "an OpenAPI document must be an object")
    reader = _OpenAPIReader(doc, p)
    reader.check()
    ops = reader.operations()
    components = reader.entities(ops)
    reader._components = set(components)
    tree = _Tree(reader, ops, components)
    tree.prepare(ops)
    plans = [tree.plan(op) for op in ops]
    entities = {e: spec for e, spec in components.values()}
    entities.update({n: spec for n, spec in tree.made.items() if n not in entities})
    for name, extra in tree.extra.items():
        spec = entities.get(name)
        if spec is not None:
            have = {f.name for f in spec.fields}
            added = [f for n, f in extra.items() if n not in have]
            entities[name] = spec.model_copy(update={"fields": [*spec.fields, *added]})
    tree.states(plans, entities)
    for op, plan in zip(ops, plans, strict=True):
        if plan.shape == "many" and op.method == "post" and not plan.searchy and plan.entity in entities:
            params = reader._parameters(op, plan.renames, reader._components)["properties"]
            entities[plan.entity] = _created_fields(entities[plan.entity], params)
    for name in tree.singletons & set(entities):
        entities[name] = entities[name].model_copy(update={"id_prefix": f"{name}_"})
    entities = _acyclic(entities)
    tools = reader.tools(ops, plans, entities)
    info = doc["info"]
    title = str(info["title"])
    return [
        Topic(
            id=slugify(title),
            title=title,
            description=str(info.get("description") or info.get("summary") or title).strip(),
            source="openapi",
            tools=tools,
            entities=list(entities.values()),
            origin=str(path),
        )
    ]
