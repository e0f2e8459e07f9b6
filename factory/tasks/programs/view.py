"""The environment as the program families see it: its spec, its seed rows, and the tools that read them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from factory.models import EntitySpec, EnvSpec, FieldSpec, ToolSpec
from factory.tasks.difficulty import Knobs
from factory.tasks.phrasing import humanize

PAGE_SIZE = 100  # the gold programs' page size, unless the tool allows less

Rows = list[dict[str, Any]]


def words(name: str) -> str:
    """A table or field name as a question says it: "purchase_orders" -> "purchase orders", "created_at" ->
    "creation time" (never the raw column)."""
    return humanize(name)


def as_number(value: Any) -> float | None:
    """A JSON number as a float; None for anything else, booleans included."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass
class EnvView:
    """An environment's spec and seed state, with the lookups the families need."""

    spec: EnvSpec
    seed: dict[str, Rows]
    knobs: Knobs = field(default_factory=Knobs)  # the difficulty the families propose for

    def rows(self, entity: EntitySpec) -> Rows:
        return self.seed.get(entity.table, [])

    def entity(self, name: str) -> EntitySpec | None:
        for e in self.spec.entities:
            if name in (e.name, e.table):
                return e
        return None

    def tools_of(self, entity: EntitySpec, kind: str) -> list[ToolSpec]:
        return [
            t
            for t in self.spec.tools
            if t.operation is not None
            and t.operation.kind == kind
            and t.operation.entity in (entity.name, entity.table)
        ]

    def list_tool(self, entity: EntitySpec) -> ToolSpec | None:
        """A list tool that pages with limit/offset and needs no argument."""
        for t in self.tools_of(entity, "list"):
            props = t.parameters.get("properties") or {}
            if "offset" in props and "limit" in props and not t.parameters.get("required"):
                return t
        return None

    def get_tool(self, entity: EntitySpec) -> ToolSpec | None:
        key = f"{entity.name}_id"
        for t in self.tools_of(entity, "get"):
            if key in (t.parameters.get("properties") or {}):
                return t
        return None

    def listable(self) -> list[tuple[EntitySpec, ToolSpec]]:
        out = []
        for e in self.spec.entities:
            t = self.list_tool(e)
            if t is not None and self.rows(e):
                out.append((e, t))
        return out


def page_size(tool: ToolSpec) -> int:
    """The page size a gold program asks `tool` for: PAGE_SIZE, or the tool's maximum when that is lower."""
    limit = (tool.parameters.get("properties") or {}).get("limit") or {}
    maximum = limit.get("maximum") if isinstance(limit, dict) else None
    return int(min(PAGE_SIZE, maximum)) if isinstance(maximum, int | float) and maximum >= 1 else PAGE_SIZE


def default_page(tool: ToolSpec) -> int:
    """The page size `tool` returns when the caller gives no limit."""
    limit = (tool.parameters.get("properties") or {}).get("limit") or {}
    value = limit.get("default") if isinstance(limit, dict) else None
    return int(value) if isinstance(value, int) and value >= 1 else 20


def numeric_fields(e: EntitySpec) -> list[FieldSpec]:
    """The fields worth aggregating: numbers that are not keys."""
    return [
        f
        for f in e.fields
        if f.type in ("integer", "number") and not f.primary_key and not f.references and not f.name.endswith("_id")
    ]
