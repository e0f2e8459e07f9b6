"""Output schemas: the columns a tool's own output names, and the output every operation returns.

A tool that says what it returns (an MCP `outputSchema`, an OpenAPI response) tells inference columns
no parameter names; the record may sit in a page (`items`), a bare array or an envelope
(`{"order": {...}}`). Once mapped, a tool's output schema is derived from its entity and operation, so it
says exactly what the generated code returns (our rows, pages and delete results, not the document's
nested objects): the gate checks every result against it, and clients validate against it. The
document still lends its property descriptions and numeric formats where a column keeps its type.
"""

from __future__ import annotations

from typing import NamedTuple

from factory.envs.entities.classify import Plan
from factory.envs.entities.params import base_type
from factory.lexicon import PAGE_FIELDS, RESPONSE_FIELDS
from factory.models import EntitySpec, FieldSpec, JsonSchema, ToolOperation
from factory.naming import plural, snake_case

ORDERED_TYPES = ("integer", "number", "date", "datetime")
CONTROL_PARAMS = ("limit", "offset", "query", "field", "group_by")  # a search or aggregate filters by none of them
# Paging parameters by role, as snake_case names: the page size, an offset, a page number, a cursor.
_SIZE_NAMES = ("limit", "per_page", "page_size", "max_results", "max_items", "max_count", "count", "size", "top")
_OFFSET_NAMES = ("offset", "skip", "start", "start_index")
_NUMBER_NAMES = ("page", "page_number", "page_num")
_CURSOR_NAMES = ("cursor", "page_token", "next_token", "starting_after", "after", "continuation_token", "marker")
_NEXT = {"offset": "next_offset", "page": "next_page", "cursor": "next_cursor"}
_NEXT_TYPE = {"offset": "integer", "page": "integer", "cursor": "string"}


class Paging(NamedTuple):
    """How a list/search tool pages, read from its parameters: `style` is "offset" (`position` rows to skip),
    "page" (`position` is a page number counted from `first`) or "cursor" (`position` takes the opaque
    `next_cursor` the previous page returned); `size` is the rows-per-page parameter. Without any paging
    parameter (`unpaged`) a tool answers every row at once, offset style with no next page: a tool that
    declares no way to page must not hide rows it has no way to reach."""

    style: str
    size: str | None
    position: str | None
    first: int = 0

    @property
    def params(self) -> tuple[str, ...]:
        return tuple(p for p in (self.size, self.position) if p)

    @property
    def unpaged(self) -> bool:
        return not self.params

    @property
    def count_only(self) -> bool:
        """A count and no position (git's `max_count`): the first rows, no later page to ask for."""
        return self.style == "offset" and self.size is not None and self.position is None

    @property
    def next_key(self) -> str:
        """The result's field that says where the next page starts (null on the last page)."""
        return _NEXT[self.style]


def _typed(prop: object, typ: str) -> bool:
    """Whether a parameter schema admits `typ` (an untyped one admits anything)."""
    types = prop.get("type") if isinstance(prop, dict) else None
    return types is None or typ in ([types] if isinstance(types, str) else types)


def _named(props: dict, names: tuple[str, ...], typ: str) -> str | None:
    """The first parameter (in `names` order) whose snake_case name is one of `names` and admits `typ`."""
    by_name = {snake_case(p) or p: p for p in props if _typed(props[p], typ) and not _dated(props[p])}
    return next((by_name[n] for n in names if n in by_name), None)


def _dated(prop: object) -> bool:
    """A date parameter (`after: 2024-01-01`) bounds a time, it does not page."""
    return isinstance(prop, dict) and prop.get("format") in ("date", "date-time")


def _first_page(prop: object) -> int:
    """1, unless the page parameter's default or minimum says pages count from 0."""
    prop = prop if isinstance(prop, dict) else {}
    return 0 if 0 in (prop.get("default"), prop.get("minimum")) else 1


def paging_style(props: dict) -> Paging:
    """The paging style of a list/search tool with parameters `props` (see Paging)."""
    size = _named(props, _SIZE_NAMES, "integer")
    cursor = _named(props, _CURSOR_NAMES, "string")
    if cursor:
        return Paging("cursor", size, cursor)
    number = _named(props, _NUMBER_NAMES, "integer")
    if number:
        return Paging("page", size, number, _first_page(props[number]))
    return Paging("offset", size, _named(props, _OFFSET_NAMES, "integer"))


def query_param(props: dict) -> str | None:
    """The free-text parameter of a search: `query`, or a common alias (`q`, `search`, `text`, `keyword`, `term`)."""
    return next((p for p in ("query", "q", "search", "text", "keyword", "term") if p in props), None)


def param_field(entity: EntitySpec, param: str) -> FieldSpec | None:
    """The entity field a parameter sets or filters on (`<entity>_id` names the primary key)."""
    by_name = {f.name: f for f in entity.fields}
    if param in by_name:
        return by_name[param]
    if param == f"{entity.name}_id":
        return by_name.get(entity.primary_key)
    return None


_LOWER_SUFFIXES, _UPPER_SUFFIXES = ("_min", "_after", "_since", "_from"), ("_max", "_before", "_until", "_to")


def range_field(entity: EntitySpec, param: str) -> tuple[str, int] | None:
    """(field, 0 for a lower / 1 for an upper bound) of a range filter on an ordered field, named as the
    contract names it (`min_<field>`/`max_<field>`) or as servers declare it (`<field>_min`, and for a
    time `created_after`/`created_before` of `created_at`, `<field>_since`/`<field>_until`)."""
    by_name = {f.name: f for f in entity.fields}

    def ordered(name: str) -> bool:
        return name in by_name and by_name[name].type in ORDERED_TYPES

    for bound, idx in (("min_", 0), ("max_", 1)):
        name = param[len(bound) :]
        if param.startswith(bound) and ordered(name):
            return name, idx
    if ordered(param):
        return None  # a field of its own (`valid_from`): an equality filter
    for suffixes, idx in ((_LOWER_SUFFIXES, 0), (_UPPER_SUFFIXES, 1)):
        for suffix in suffixes:
            stem = param.removesuffix(suffix)
            if stem != param and stem:
                for name in (stem, f"{stem}_at"):
                    if ordered(name):
                        return name, idx
    return None


def unapplied_params(entity: EntitySpec, kind: str, props: dict) -> list[str]:
    """Parameters of a list/search tool the generated code does not apply: no paging, query, field or
    range filter (the code reads them and answers as if they were absent)."""
    applied = set(paging_style(props).params)
    if kind == "search":
        applied.add(query_param(props) or "")
    control = (*CONTROL_PARAMS, query_param(props)) if kind == "search" else ()
    filters = {p for p in props if p not in control and (param_field(entity, p) or range_field(entity, p))}
    return [p for p in props if p not in applied | filters]


def _output_record(schema: JsonSchema, entity: str) -> JsonSchema | None:
    """The schema of the row inside a tool's output: the output itself, the `items` of a page or a bare
    array, or the record in an envelope like `{"order": {...}, "error": null}`; None when there is none."""
    if base_type(schema) == "array":
        inner = schema.get("items")
        return inner if isinstance(inner, dict) and isinstance(inner.get("properties"), dict) else None
    props = schema.get("properties")
    if not isinstance(props, dict):
        return None
    for key in ("items", "results", "data", "records", plural(entity)):
        sub = props.get(key)
        if isinstance(sub, dict) and base_type(sub) == "array":
            return _output_record(sub, entity)
    others = [k for k in props if snake_case(k) not in RESPONSE_FIELDS | PAGE_FIELDS]
    if len(others) == 1 and others[0] in (entity, "data", "result", "record", "item"):
        sub = props[others[0]]
        if isinstance(sub, dict) and isinstance(sub.get("properties"), dict):
            return sub
    return schema


def output_fields(p: Plan) -> list[tuple[str, JsonSchema, bool]]:
    """Columns of the record a tool says it returns (a known output schema), without the row's own key
    and without the fields of the response around it (total, next_offset, error...)."""
    out = p.spec.output
    if not isinstance(out, dict) or not p.entity or p.kind in ("delete", "aggregate"):
        return []
    if p.action in ("transfer", "append", "remove"):  # what moved or was edited, not a row
        return []
    record = _output_record(out, p.entity)
    if record is None or (p.kind in ("list", "search") and record is out):
        return []
    required = set(record.get("required") or [])
    key = f"{p.entity}_id"
    return [
        (snake_case(name), schema, name in required)
        for name, schema in record["properties"].items()
        if isinstance(schema, dict) and snake_case(name) not in (key, "id") and snake_case(name) not in RESPONSE_FIELDS
    ]


def field_schema(f: FieldSpec) -> JsonSchema:
    """JSON schema of one column's values. A `json` column holds any JSON value (the files backend keeps
    what was written, sqlite gives back its text), so it names no type; a `list` column is a list of texts."""
    base: JsonSchema
    if f.format == "json":
        base = {}
    elif f.format == "list":
        base = {"type": "array", "items": {"type": "string"}}
    elif f.type in ("date", "datetime"):
        base = {"type": "string", "format": "date" if f.type == "date" else "date-time"}
    else:
        base = {"type": f.type}
        if f.format and f.type == "string" and f.format in ("email", "uri", "url", "uuid"):
            base["format"] = "uri" if f.format == "url" else f.format
    if f.enum:
        base["enum"] = list(f.enum)
    if f.minimum is not None:
        base["minimum"] = f.minimum
    if f.maximum is not None:
        base["maximum"] = f.maximum
    if f.references:
        base["x-references"] = f.references
    if f.description:
        base["description"] = f.description
    return base


def _nullable(schema: JsonSchema) -> JsonSchema:
    if "type" in schema:
        schema["type"] = [schema["type"], "null"]
    return schema


def _documented(column: JsonSchema, doc: object) -> JsonSchema:
    """`column` with the document's description, and its format for a number, when the document's
    property has the column's type (a nested object that became `<x>_id` or json text does not)."""
    if not isinstance(doc, dict) or "type" not in column or base_type(doc) != column["type"]:
        return column
    if not column.get("description") and isinstance(doc.get("description"), str) and doc["description"]:
        column["description"] = doc["description"]
    if column["type"] in ("integer", "number") and "format" not in column and isinstance(doc.get("format"), str):
        column["format"] = doc["format"]
    return column


def record_schema(entity: EntitySpec, documented: JsonSchema | None = None) -> JsonSchema:
    """The output of get/create/update: one row with its real column names (`id` is the primary key);
    `documented` is the record the tool's document describes, for descriptions and formats."""
    doc_props = (documented or {}).get("properties")
    doc_props = {snake_case(k): v for k, v in doc_props.items()} if isinstance(doc_props, dict) else {}
    props: dict[str, JsonSchema] = {}
    for f in entity.fields:
        s = _documented(field_schema(f), doc_props.get(f.name))
        props[f.name] = s if f.required or f.primary_key else _nullable(s)
    required = [f.name for f in entity.fields if f.required or f.primary_key]
    out: JsonSchema = {"type": "object", "title": entity.name, "x-entity": entity.name}
    description = (documented or {}).get("description")
    if isinstance(description, str) and description:
        out["description"] = description
    return {**out, "properties": props, "required": required}


def page_schema(entity: EntitySpec, documented: JsonSchema | None = None, style: str = "offset") -> JsonSchema:
    """The output of list/search: a page of records and where the next one starts, as the paging `style`
    says (`next_offset`, `next_page` or `next_cursor`; null on the last page)."""
    nxt = _NEXT[style]
    return {
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": record_schema(entity, documented)},
            "total": {"type": "integer"},
            nxt: {"type": [_NEXT_TYPE[style], "null"]},
        },
        "required": ["items", "total", nxt],
    }


def _key_type(entity: EntitySpec) -> str:
    pk = next((f for f in entity.fields if f.name == entity.primary_key), None)
    return "integer" if pk is not None and pk.type == "integer" else "string"


def output_schema(
    op: ToolOperation,
    entity: EntitySpec,
    params: JsonSchema | None = None,
    documented: JsonSchema | None = None,
) -> JsonSchema:
    """The JSON schema of a successful result of `op` (see ToolOperation's docstring), as the generated
    code returns it; `params` is the tool's parameter schema (a delete answers with its key parameter's
    name: `<entity>_id`, else the key column), `documented` the output the tool's document describes
    (descriptions and formats only)."""
    props = (params or {}).get("properties") or {}
    record = _output_record(documented, entity.name) if isinstance(documented, dict) else None
    if op.kind in ("list", "search"):
        return page_schema(entity, record if record is not documented else None, paging_style(props).style)
    if op.kind == "delete":
        key = f"{entity.name}_id" if params is None or f"{entity.name}_id" in props else entity.primary_key
        return {
            "type": "object",
            "properties": {"deleted": {"type": "boolean"}, key: {"type": _key_type(entity)}},
            "required": ["deleted", key],
        }
    if op.kind == "aggregate":
        stats = {k: {"type": ["number", "null"]} for k in ("sum", "avg", "min", "max")}
        return {
            "type": "object",
            "properties": {
                "count": {"type": "integer"},
                **stats,
                "groups": {"type": "array", "items": {"type": "object", "properties": {"count": {"type": "integer"}}}},
            },
        }
    if op.kind == "action" and op.action == "transfer":
        amount = op.amount_param or "amount"
        return {
            "type": "object",
            "properties": {
                "from": record_schema(entity),
                "to": record_schema(entity),
                amount: {"type": "number"},
            },
            "required": ["from", "to"],
        }
    return record_schema(entity, record)
