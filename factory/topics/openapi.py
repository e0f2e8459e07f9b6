"""OpenAPI 3.0 / 3.1 documents -> a topic with typed entities and tools whose operations are known.

Component schemas that are resources (they have an id, or an endpoint returns them) become
EntitySpecs; each operation becomes a tool named from its operationId (snake_case) or from its
method and path, with path, query and body parameters merged into one JSON schema, and a
ToolOperation read from the method and the path shape.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from factory.lexicon import (
    DECREMENT_VERBS,
    INCREMENT_VERBS,
    MONEY_WORDS,
    TERMINAL_STATES,
    TRANSITIONS,
    UNDOING_VERBS,
    VERB_FIELDS,
)
from factory.models import EntitySpec, FieldSpec, ToolOperation, ToolSpec, Topic
from factory.naming import plural, singular, slugify, snake_case
from factory.topics.documents import SourceError, read_document

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
        resources = {n for op in ops for n in (_ref_name(self._response_schema(op)),) if n}
        chosen: dict[str, tuple[dict[str, Any], set[str]]] = {}
        for name, raw in schemas.items():
            props, required = self.resolver.object_props(raw, self.base)
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
        spec: dict[str, Any] = {"name": name, "required": required, "description": description}
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
            if isinstance(schema.get(key), int | float) and not isinstance(schema.get(key), bool):
                spec[key] = float(schema[key])
        if name.endswith("_id") and name != pk:
            ref = name[:-3]
            if ref in by_entity:
                spec["references"] = f"{ref}.{pks[by_entity[ref]]}"
        return FieldSpec(**spec)

    # --- tools ----------------------------------------------------------------------------

    def _entity_of(self, op: _Op, segments: list[str], entities: dict[str, tuple[str, EntitySpec]]) -> str | None:
        """Component name of the entity an operation works on: from the path first, then its schemas."""
        by_entity = {e: n for n, (e, _) in entities.items()}
        for seg in reversed(segments):
            if not seg.startswith("{") and singular(snake_case(seg)) in by_entity:
                return by_entity[singular(snake_case(seg))]
        for schema in (self._response_schema(op), self._body_schema(op)[0]):
            name = _ref_name(schema)
            if name in entities:
                return name
        return None

    def _shape(self, segments: list[str], entity: str | None) -> tuple[str, str | None]:
        """Path shape and verb: `/xs` collection, `/xs/{id}` item, `/xs/{id}/verb` action, `/xs/verb` verb."""
        if not segments:
            return "collection", None
        last = segments[-1]
        if last.startswith("{"):
            return "item", None
        if len(segments) == 1 or entity is None or singular(snake_case(last)) == entity:
            return "collection", None
        return ("action" if segments[-2].startswith("{") else "verb"), snake_case(last)

    def tools(self, ops: list[_Op], entities: dict[str, tuple[str, EntitySpec]]) -> list[ToolSpec]:
        tools: list[ToolSpec] = []
        used: set[str] = set()
        for op in ops:
            segments = [s for s in op.path.split("/") if s]
            component = self._entity_of(op, segments, entities)
            entity_name, entity = entities[component] if component else (None, None)
            shape, verb = self._shape(segments, entity_name)
            item_param = segments[-1] if shape == "item" else (segments[-2] if shape == "action" else None)
            params = self._parameters(op, entity_name, item_param, set(entities))
            operation = self._operation(op, shape, verb, entity, params)
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

    def _parameters(self, op: _Op, entity: str | None, item_param: str | None, components: set[str]) -> dict[str, Any]:
        """One JSON schema over path, query and body parameters; a nested entity in a body becomes its `<x>_id`."""
        props: dict[str, Any] = {}
        required: list[str] = []
        for param in op.params:
            where = param.get("in")
            if where not in ("path", "query"):
                continue
            raw_name = str(param["name"])
            name = f"{entity}_id" if entity and item_param == "{" + raw_name + "}" else snake_case(raw_name)
            schema = self.resolver.inline(param.get("schema") or {"type": "string"}, op.base)
            schema = dict(schema) if isinstance(schema, dict) else {"type": "string"}
            if param.get("description") and "description" not in schema:
                schema["description"] = str(param["description"])
            props[name] = schema
            if where == "path" or param.get("required"):
                required.append(name)
        body, body_required = self._body_schema(op)
        if body is not None:
            body_props, body_req = self.resolver.object_props(body, op.base)
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

    def _operation(
        self, op: _Op, shape: str, verb: str | None, entity: EntitySpec | None, params: dict[str, Any]
    ) -> ToolOperation | None:
        if entity is None:
            return None
        e, m = entity.name, op.method
        if shape == "item":
            kind = {"get": "get", "put": "update", "patch": "update", "post": "update", "delete": "delete"}[m]
            return ToolOperation(kind=kind, entity=e)
        searchy = "q" in params["properties"] or "query" in params["properties"] or "search" in (verb or "")
        if shape in ("collection", "verb") and (m == "get" or (m == "post" and searchy)):
            return ToolOperation(kind="search" if searchy else "list", entity=e)
        if shape == "collection" and m == "post":
            return ToolOperation(kind="create", entity=e)
        if shape in ("action", "verb") and verb and m in ("post", "put", "patch"):
            return _action(verb, entity, params)
        return None


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


def topics_from_openapi(doc: Any, path: str | Path) -> list[Topic]:
    """One topic per OpenAPI document."""
    p = Path(path)
    if not isinstance(doc, dict):
        raise SourceError(p, "an OpenAPI document must be an object")
    reader = _OpenAPIReader(doc, p)
    reader.check()
    ops = reader.operations()
    entities = reader.entities(ops)
    tools = reader.tools(ops, entities)
    info = doc["info"]
    title = str(info["title"])
    return [
        Topic(
            id=slugify(title),
            title=title,
            description=str(info.get("description") or info.get("summary") or title).strip(),
            source="openapi",
            tools=tools,
            entities=[spec for _, spec in entities.values()],
            origin=str(path),
        )
    ]
