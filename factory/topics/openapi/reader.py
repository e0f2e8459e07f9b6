"""The document's operations, its component entities, and the tools (parameters, outputs, names) made from them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from factory.models import EntitySpec, FieldSpec
from factory.naming import plural, snake_case
from factory.topics.documents import SourceError
from factory.topics.openapi.fields import _merge_fields, field_spec
from factory.topics.openapi.refs import _copy, _Resolver
from factory.topics.openapi.schemas import _fit_default, _json_content, _main_type, _ref_name

HTTP_METHODS = ("get", "post", "put", "patch", "delete")
_WRAPPER_PROPS = 4  # an object of one array of rows and a few paging fields is a page of rows


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
                [
                    field_spec(self.resolver, k, v, b, k in required, names[n], pks[n], by_entity, pks)
                    for k, (v, b) in props.items()
                ]
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

    def _parameters(
        self, op: _Op, renames: dict[str, str], components: set[str]
    ) -> tuple[dict[str, Any], dict[str, str]]:
        """One JSON schema over path, query and body parameters, and the name the document gives each one the
        contract renamed (ToolSpec.declared_names). Path params are required, the item's is renamed to
        `<entity>_id` (and a parent's to `<parent>_id`), the rest snake_cased; a nested entity in a body becomes
        its `<x>_id` (a string, no longer the document's object: no declared name)."""
        props: dict[str, Any] = {}
        required: list[str] = []
        declared: dict[str, str] = {}
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
            props[name] = _fit_default(schema)
            declared[name] = raw_name
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
                    own = ref not in components or _main_type(schema) != "object"
                    if not own:
                        name, schema = f"{name}_id", {"type": "string", "description": f"ID of the {snake_case(ref)}."}
                    if name in props or (isinstance(schema, dict) and schema.get("readOnly")):
                        continue
                    if own:
                        declared[name] = raw_name
                    props[name] = (
                        _fit_default({k: v for k, v in schema.items() if k != "writeOnly"})
                        if isinstance(schema, dict)
                        else {}
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
        return out, declared
