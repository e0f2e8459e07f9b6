"""The environment as the program families see it: its spec, its seed rows, and the tools that read them."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from factory.models import EntitySpec, EnvSpec, FieldSpec, ToolSpec
from factory.store import canonical_json
from factory.tasks.difficulty import Knobs
from factory.tasks.phrasing import humanize

if TYPE_CHECKING:
    from factory.envs.runtime import Session

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
    shown: dict[str, Rows] = field(default_factory=dict)  # entity -> the rows its one-page listing returns

    def rows(self, entity: EntitySpec) -> Rows:
        """The rows a gold program can read: the seed table's, or those its one-page listing returns."""
        return self.shown.get(entity.name, self.seed.get(entity.table, []))

    def scope(self, entity: EntitySpec) -> str:
        """The words that say a question is about the rows a listing returns, when that is not all of them."""
        shown = self.shown.get(entity.name)
        if shown is None or len(shown) >= len(self.seed.get(entity.table, [])):
            return ""
        return f"looking only at the first {len(shown)} {words(entity.table)} listed"

    def entity(self, name: str) -> EntitySpec | None:
        for e in self.spec.entities:
            if name in (e.name, e.table):
                return e
        return None

    def tools_of(self, entity: EntitySpec, kind: str) -> list[ToolSpec]:
        """The tools of one kind on `entity`, in the spec's order."""
        found = {i: t for name in (entity.name, entity.table) for i, t in self._tool_index.get((name, kind), [])}
        return [found[i] for i in sorted(found)]

    @cached_property
    def _tool_index(self) -> dict[tuple[str, str], list[tuple[int, ToolSpec]]]:
        """(operation entity, kind) -> (position, tool): families ask for a few tools of an entity many times."""
        index: dict[tuple[str, str], list[tuple[int, ToolSpec]]] = {}
        for i, t in enumerate(self.spec.tools):
            if t.operation is not None and t.operation.entity is not None:
                index.setdefault((t.operation.entity, t.operation.kind), []).append((i, t))
        return index

    def list_tool(self, entity: EntitySpec) -> ToolSpec | None:
        """A list tool that pages with limit/offset and needs no argument."""
        for t in self.tools_of(entity, "list"):
            props = t.parameters.get("properties") or {}
            if "offset" in props and "limit" in props and not t.parameters.get("required"):
                return t
        return None

    def one_page_tool(self, entity: EntitySpec) -> ToolSpec | None:
        """A list tool that needs no argument but does not page (it returns one page), when none pages."""
        if self.list_tool(entity) is not None:
            return None
        for t in self.tools_of(entity, "list"):
            if "offset" not in (t.parameters.get("properties") or {}) and not t.parameters.get("required"):
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
            t = self.list_tool(e) or (self.one_page_tool(e) if e.name in self.shown else None)
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


def one_page_call(tool: ToolSpec) -> dict[str, Any]:
    """The arguments a gold program reads a one-page listing with: its largest page."""
    return {"limit": page_size(tool)} if "limit" in (tool.parameters.get("properties") or {}) else {}


def shown_rows(view: EnvView, session: Session) -> dict[str, Rows]:
    """Entity -> the seed rows its one-page listing returns (in the listing's order), for every entity whose
    only list tools do not page: a gold program reads those rows and no others."""
    out: dict[str, Rows] = {}
    for e in view.spec.entities:
        tool = view.one_page_tool(e)
        if tool is None:
            continue
        result = session.call(tool.name, one_page_call(tool))
        items = result.value.get("items") if result.ok and isinstance(result.value, dict) else None
        if not isinstance(items, list):
            continue
        seed = {canonical_json(r.get(e.primary_key)): r for r in view.seed.get(e.table, [])}
        keys = [canonical_json(i.get(e.primary_key)) for i in items if isinstance(i, dict)]
        out[e.name] = [seed[k] for k in keys if k in seed]
    return out
