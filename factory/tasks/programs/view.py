"""The environment as the program families see it: its spec, its seed rows, and the tools that read them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from factory.envs.entities.outputs import paging_style
from factory.envs.toolkit.common import DEFAULT_LIMIT
from factory.models import EntitySpec, EnvSpec, FieldSpec, ToolSpec
from factory.store import canonical_json
from factory.tasks.difficulty import Knobs
from factory.tasks.phrasing import humanize, value_text

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
    scoped: dict[str, Scope] = field(default_factory=dict)  # entity -> the one scope its rows are read in

    def rows(self, entity: EntitySpec) -> Rows:
        """The rows a gold program can read: the seed table's, those its one-page listing returns, or those of
        the one scope its listing is read in."""
        if (scope := self.scoped.get(entity.name)) is not None:
            return scope.rows
        return self.shown.get(entity.name, self.seed.get(entity.table, []))

    def scope_args(self, entity: EntitySpec) -> tuple[tuple[str, Any], ...]:
        """The arguments that scope `entity`'s listing (git's `repo_path`); none for a listing of every row."""
        scope = self.scoped.get(entity.name)
        return tuple(sorted(scope.args.items())) if scope is not None else ()

    def scope(self, entity: EntitySpec) -> str:
        """The words that say a question is about the rows a listing returns, when that is not all of them."""
        if (scope := self.scoped.get(entity.name)) is not None:
            return scope.words
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

    def scoped_tool(self, entity: EntitySpec) -> ToolSpec | None:
        """The tool that reads `entity` in its one scope (`scoped`)."""
        scope = self.scoped.get(entity.name)
        return scope.tool if scope is not None else None

    def listable(self) -> list[tuple[EntitySpec, ToolSpec]]:
        out = []
        for e in self.spec.entities:
            t = self.list_tool(e) or (self.one_page_tool(e) if e.name in self.shown else self.scoped_tool(e))
            if t is not None and self.rows(e):
                out.append((e, t))
        return out


def _size_param(tool: ToolSpec) -> tuple[str | None, dict[str, Any]]:
    """The parameter that sets `tool`'s page size (`limit`, or a declared `max_count`), and its schema."""
    props = tool.parameters.get("properties") or {}
    size = paging_style(props).size
    schema = props.get(size) if size else None
    return size, schema if isinstance(schema, dict) else {}


def page_size(tool: ToolSpec) -> int:
    """The page size a gold program asks `tool` for: PAGE_SIZE, or the tool's maximum when that is lower."""
    maximum = _size_param(tool)[1].get("maximum")
    return int(min(PAGE_SIZE, maximum)) if isinstance(maximum, int | float) and maximum >= 1 else PAGE_SIZE


def default_page(tool: ToolSpec) -> int:
    """The page size `tool` returns when the caller gives none (the generated code's DEFAULT_LIMIT when its size
    has no default); a tool that declares no paging answers every row (factory.envs.entities.outputs.Paging), so
    no page of it ever ends early."""
    if paging_style(tool.parameters.get("properties") or {}).unpaged:
        return EVERY_ROW
    value = _size_param(tool)[1].get("default")
    return int(value) if isinstance(value, int) and value >= 1 else DEFAULT_LIMIT


def numeric_fields(e: EntitySpec) -> list[FieldSpec]:
    """The fields worth aggregating: numbers that are not keys."""
    return [
        f
        for f in e.fields
        if f.type in ("integer", "number") and not f.primary_key and not f.references and not f.name.endswith("_id")
    ]


def one_page_call(tool: ToolSpec) -> dict[str, Any]:
    """The arguments a gold program reads a one-page listing with: its largest page."""
    size = _size_param(tool)[0]
    return {size: page_size(tool)} if size else {}


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


EVERY_ROW = 1 << 30  # the "page size" of a listing that declares no paging
SCOPE_MIN_ROWS = 3  # a scope a program reads has at least this many rows, to filter and aggregate over
SEARCH_MIN_ROWS = 2  # a search term a program reads finds at least this many rows (and not every row)


@dataclass(frozen=True)
class Scope:
    """The one part of an entity's rows a program reads, when its only reading tool needs arguments: the
    tool, those arguments, the rows they give and the words that say so."""

    tool: ToolSpec
    args: dict[str, Any]
    rows: Rows
    words: str


def scoped_listings(view: EnvView) -> dict[str, Scope]:
    """Entity -> the scope a program reads it in, for every entity without a listing of all its rows:
    a listing whose required arguments are text fields of its rows (git's `repo_path`; a pull request's
    repository and owner name), in the seed's fullest scope (all on one page, when the tool does not page);
    else a search whose only required argument is its query, for a word of the rows' labels."""
    out: dict[str, Scope] = {}
    for e in view.spec.entities:
        if view.list_tool(e) is not None or view.one_page_tool(e) is not None:
            continue
        scope = _listing_scope(view, e) or _search_scope(view, e)
        if scope is not None:
            out[e.name] = scope
    return out


def _listing_scope(view: EnvView, e: EntitySpec) -> Scope | None:
    rows = view.seed.get(e.table, [])
    fields = {f.name: f for f in e.fields}
    for t in view.tools_of(e, "list"):
        need = t.parameters.get("required") or []
        plain = [fields.get(p) for p in need]
        if not need or any(f is None or f.primary_key or f.type != "string" for f in plain):
            continue
        if not rows or any(not all(isinstance(r.get(p), str) and r[p] for p in need) for r in rows):
            continue
        counts: dict[tuple[Any, ...], int] = {}
        for r in rows:
            key = tuple(r[p] for p in need)
            counts[key] = counts.get(key, 0) + 1
        key, n = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        pages = "offset" in (t.parameters.get("properties") or {})
        if n >= SCOPE_MIN_ROWS and (pages or n <= default_page(t)):  # one page shows the whole scope
            args = dict(zip(need, key, strict=True))
            said = " and ".join(f"with {words(p)} {value_text(v)}" for p, v in args.items())
            return Scope(t, args, [r for r in rows if tuple(r[p] for p in need) == key], said)
    return None


def _search_scope(view: EnvView, e: EntitySpec) -> Scope | None:
    """A search (a case-insensitive substring over the rows' text fields) for the word of the rows' labels
    that finds the most rows short of all, when it finds them through the label alone (the words name it)."""
    rows = view.seed.get(e.table, [])
    texts = [f.name for f in e.fields if f.type == "string" and not (f.primary_key or f.references or f.enum)]
    label = next((n for n in ("name", "title", *texts) if n in texts), None)
    if label is None or not rows:
        return None
    for t in view.tools_of(e, "search"):
        props = t.parameters.get("properties") or {}
        if (t.parameters.get("required") or []) != ["query"] or not ("offset" in props or default_page(t) == EVERY_ROW):
            continue  # the program must see every hit: through its pages, or all at once
        spelled: dict[str, str] = {}  # a word, casefolded -> as the first label spells it
        for r in rows:
            for w in re.findall(r"[A-Za-z]{3,}", str(r.get(label) or "")):
                spelled.setdefault(w.casefold(), w)
        fits = []
        for w, said in spelled.items():
            hits = [r for r in rows if any(w in str(r.get(n) or "").casefold() for n in texts)]
            if SEARCH_MIN_ROWS <= len(hits) < len(rows) and hits == [
                r for r in rows if w in str(r.get(label) or "").casefold()
            ]:
                fits.append((said, hits))
        if fits:
            w, hits = min(fits, key=lambda wh: (-len(wh[1]), wh[0].casefold()))
            return Scope(t, {"query": w}, hits, f"whose {words(label)} contains {value_text(w)}")
    return None
