"""`$ref` resolution across files, with shared, budgeted expansion of referenced schemas."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from factory.topics.documents import SourceError, read_document
from factory.topics.openapi.schemas import _flatten_all_of, _main_type

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
