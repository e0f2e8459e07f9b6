"""Offline tool test generation: cases whose expectations come from the seed rows, not from the tool code.

For each tool with an operation: success cases (get an existing row, filtered and paginated lists, search,
create/update/delete, aggregates recomputed from the rows, actions) and one case for each error the tool
can return on purpose (not_found, invalid_arguments, invalid_reference, conflict, insufficient_<field>,
invalid_transition). Every case runs in a fresh session, so each expectation is computed from the seed.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from functools import cached_property
from re import _parser
from typing import Any

from factory.envs.codegen import (
    DEFAULT_LIMIT,
    Supply,
    batch_items,
    closed_states,
    consumed_supplies,
    create_defaults,
    delete_referrers,
    find_entity,
    is_non_negative,
    item_fields,
    key_param,
    ledger_entry,
    ledger_of,
    param_field,
    query_param,
    searchable_fields,
    unsupported_tools,
)
from factory.envs.entities.outputs import Paging, paging_style, range_field
from factory.envs.entities.params import list_edit_keys
from factory.envs.toolkit.common import MAX_LIMIT, _cursor_token
from factory.lexicon import TIMESTAMP_COLUMNS
from factory.models import EntitySpec, EnvSpec, FieldSpec, StateCheck, TestCase, TestExpect, ToolSpec
from factory.sandbox.schema import compile_schema

Rows = list[dict[str, Any]]
MISSING_ID = "does-not-exist-0"
MISSING_INT_ID = 987654321
MAX_SHAPED_EXAMPLES = 50  # existing values an unknown id is shaped after (each costs a schema check per edit)


def _ok(match: Any = None, count: int | None = None) -> TestExpect:
    return TestExpect(ok=True, match=match, count=count)


def _fail(code: str) -> TestExpect:
    return TestExpect(ok=False, error_code=code)


def _round(value: Any) -> Any:
    return round(value, 6) if isinstance(value, float) else value


FORMAT_EXAMPLES = {
    "date": "2025-06-01",
    "date-time": "2025-06-01T12:00:00Z",
    "email": "test@example.org",
    "uri": "https://example.org/test",
    "url": "https://example.org/test",
    "uuid": "123e4567-e89b-42d3-a456-426614174000",
    "ipv4": "192.0.2.1",
    "hostname": "example.org",
}
_CATEGORY_CHARS = {"CATEGORY_DIGIT": "7", "CATEGORY_WORD": "a", "CATEGORY_SPACE": " "}


def _regex_text(nodes: Any) -> str:
    """A string the parsed regex `nodes` matches: first branches, minimal repeats (at least one), anchors skipped."""
    out = []
    for op, arg in nodes:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(arg))
        elif name == "NOT_LITERAL":
            out.append("a" if chr(arg) != "a" else "b")
        elif name == "ANY":
            out.append("a")
        elif name == "IN":
            out.append(_class_char(arg))
        elif name in ("MAX_REPEAT", "MIN_REPEAT"):
            low, _, sub = arg
            out.append(_regex_text(sub) * max(low, 1))
        elif name == "SUBPATTERN":
            out.append(_regex_text(arg[-1]))
        elif name == "BRANCH":
            out.append(_regex_text(arg[1][0]))
        elif name == "CATEGORY":
            out.append(_CATEGORY_CHARS.get(str(arg), "a"))
    return "".join(out)


def _class_char(items: list[tuple[Any, Any]]) -> str:
    """A character inside the class `items` (`[a-z0-9_]`), or outside what a negated class (`[^ :]`) excludes."""
    if items and str(items[0][0]) == "NEGATE":
        excluded = {chr(a) for op, a in items[1:] if str(op) == "LITERAL"}
        return next(c for c in "a7Z_" if c not in excluded)
    op, arg = items[0]
    if str(op) == "RANGE":
        return chr(arg[0])
    if str(op) == "CATEGORY":
        return _CATEGORY_CHARS.get(str(arg), "a")
    return chr(arg)


def _pattern_text(pattern: str) -> str | None:
    try:
        return _regex_text(_parser.parse(pattern))
    except (re.error, StopIteration, TypeError, ValueError):
        return None


def schema_example(schema: Any, hint: str = "test value", depth: int = 0) -> Any:
    """A value `schema` accepts, built from the schema alone (enum member, format, pattern, required
    properties, one item per array), or None when none is found; checked with the gate's own validator."""
    value = _example(schema, hint, depth)
    if isinstance(schema, dict) and compile_schema({"type": "object", "properties": {"v": schema}})({"v": value}):
        return None
    return value


def _example(schema: Any, hint: str, depth: int) -> Any:
    if not isinstance(schema, dict) or depth > 6:
        return hint
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return next((v for v in schema["enum"] if v is not None), schema["enum"][0])
    for key in ("anyOf", "oneOf"):
        for alt in schema.get(key) or []:
            if isinstance(alt, dict) and alt.get("type") != "null":
                value = schema_example({**{k: v for k, v in schema.items() if k != key}, **alt}, hint, depth + 1)
                if value is not None:
                    return value
    if isinstance(schema.get("allOf"), list):
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            if isinstance(part, dict):
                merged["properties"] = {**merged.get("properties", {}), **part.get("properties", {})}
                merged["required"] = [*merged.get("required", []), *part.get("required", [])]
                merged.update({k: v for k, v in part.items() if k not in ("properties", "required")})
        return _example(merged, hint, depth + 1)
    types = schema.get("type")
    names = [types] if isinstance(types, str) else [t for t in types or [] if t != "null"] or list(types or [])
    typ = names[0] if names else ("object" if "properties" in schema else "array" if "items" in schema else "string")
    return _typed_example(schema, typ, hint, depth)


def _typed_example(schema: dict[str, Any], typ: str, hint: str, depth: int) -> Any:
    if typ == "object":
        props = schema.get("properties") or {}
        names = [r for r in schema.get("required") or [] if isinstance(r, str)] or list(props)[:1]
        return {n: _example(props.get(n, {}), n.replace("_", " "), depth + 1) for n in names}
    if typ == "array":
        return [_example(schema.get("items"), hint, depth + 1)] * max(int(schema.get("minItems", 1)), 1)
    if typ in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0) + 1 if "exclusiveMinimum" in schema else 1)
        value = min(max(low, 1), schema.get("maximum", max(low, 1)))
        return int(value) if typ == "integer" else float(value)
    if typ == "boolean":
        return True
    if typ == "null":
        return None
    text = FORMAT_EXAMPLES.get(str(schema.get("format")), hint)
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        variants = [text, *(text.replace(" ", sep) for sep in ("-", "_", ""))]
        text = next((v for v in variants if re.search(pattern, v)), None) or _pattern_text(pattern) or text
    return text.ljust(int(schema.get("minLength", 0)), "x")


def _structured(prop: dict[str, Any]) -> bool:
    """Whether the parameter takes an array or an object (not a scalar a row column could hold as is)."""
    types = prop.get("type")
    names = {types} if isinstance(types, str) else set(types or [])
    return bool(names & {"array", "object"}) and not names & {"string", "integer", "number", "boolean"}


def next_id(keys: list[Any], integer: bool, prefix: str) -> Any:
    """The id a create must return: one past the largest existing id, in the same shape."""
    if integer:
        return max((k for k in keys if isinstance(k, int)), default=0) + 1
    numbered = [m for m in (re.fullmatch(r"(.*?)(\d+)", str(k)) for k in keys) if m]
    if not numbered:
        return f"{prefix}0001"
    best = max(numbered, key=lambda m: int(m.group(2)))
    width = len(best.group(2))
    return f"{best.group(1)}{int(best.group(2)) + 1:0{width}d}"


class _Cases:
    """Builds the cases of one tool."""

    def __init__(self, spec: EnvSpec, tool: ToolSpec, rows: dict[str, Rows], seed: int):
        assert tool.operation is not None
        self.spec, self.tool, self.op = spec, tool, tool.operation
        entity = find_entity(spec.entities, self.op.entity)
        assert entity is not None
        self.entity = entity
        self.all_rows = rows
        self.pk = entity.primary_key
        self.rows = self.rows_of(entity)
        self.props: dict[str, dict] = dict(tool.parameters.get("properties") or {})
        self.required = [p for p in tool.parameters.get("required") or [] if p in self.props]
        self.fields = {f.name: f for f in entity.fields}
        self.key = key_param(entity, self.props)
        self.rng = random.Random(f"{seed}:{tool.name}")
        self.cases: list[TestCase] = []
        self.base: dict[str, Any] = {}  # required filters every case of a list/search/aggregate carries
        self.checks: dict[str, Callable[[Any], str | None]] = {}
        self.validate = compile_schema(tool.parameters)
        self.items = batch_items(self.op, self.props) if self.op.batch_param else {}
        self.props.update({k: v for k, v in (self.items.get("properties") or {}).items() if k not in self.props})

    def rows_of(self, entity: EntitySpec) -> Rows:
        return sorted(self.all_rows.get(entity.table, []), key=lambda r: r[entity.primary_key])

    def open_rows(self, entity: EntitySpec, rows: Rows | None = None) -> Rows:
        """The rows (of `entity`, or `rows`) not in a closed state: the ones that still take changes."""
        status, closed = closed_states(entity)
        rows = self.rows_of(entity) if rows is None else rows
        return [r for r in rows if status is None or r.get(status) not in closed]

    def closed_rows(self, entity: EntitySpec) -> Rows:
        status, closed = closed_states(entity)
        return [r for r in self.rows_of(entity) if status is not None and r.get(status) in closed]

    def effect(self, what: str, args: dict[str, Any], expect: TestExpect, state: list[StateCheck]) -> None:
        """A case whose success must also leave `state` behind."""
        made = len(self.cases)
        self.add(what, args, expect)
        if len(self.cases) == made:  # the schema refuses its arguments
            return
        case = self.cases.pop()
        self.cases.append(case.model_copy(update={"state": state}))

    def supply_row(self, s: Supply, key: Any) -> dict[str, Any] | None:
        return next((r for r in self.rows_of(s.supply) if r[s.supply.primary_key] == key), None)

    @staticmethod
    def held(s: Supply, row: dict[str, Any]) -> Any:
        if s.status is not None and row.get(s.status) in s.released:
            return 0
        return 1 if s.quantity is None else row.get(s.quantity) or 0

    def open_parent(self, params: dict[str, FieldSpec], param: str | None, value: Any) -> bool:
        """Whether `value` of the foreign key `param` names a row that is not closed (True for other fields)."""
        f = params.get(param or "")
        if f is None or not f.references:
            return True
        return value in self.ref_values(f, live=True)

    def closed_parent_case(self, args: dict[str, Any], params: dict[str, FieldSpec], key: dict[str, Any]) -> None:
        """A new or changed row pointing at a closed row is refused (booking a cancelled flight)."""
        for p, f in params.items():
            target = find_entity(self.spec.entities, (f.references or "").partition(".")[0]) if f.references else None
            if target is None or (p not in args and not key):
                continue
            ref = (f.references or "").partition(".")[2] or target.primary_key
            closed = [r for r in self.closed_rows(target) if self.allows(p, r[ref])]
            if closed:
                status = closed_states(target)[0]
                row = closed[0]
                self.add(
                    f"{p} names a {row[status or '']} {target.name}",
                    {**args, **key, p: row[ref]},
                    _fail("invalid_state"),
                )
                return

    def required_filters(self) -> bool:
        """Fix a value for each required filter of a list/search/aggregate; the cases then see only those rows.

        An optional field filter with a declared default (`status="open"`) filters by it when a call leaves it
        out, as the tool states: the cases see only the rows holding the default.
        """
        for p, schema in self.props.items():
            default = schema.get("default") if isinstance(schema, dict) else None
            f = param_field(self.entity, p) if default is not None and p not in self.required else None
            if f is not None and not _structured(schema) and p not in self.paging.params:
                self.rows = [r for r in self.rows if r.get(f.name) == default]
        for p in self.required:
            if p in ("query", "limit", "offset", "field", "group_by", query_param(self.props), *self.paging.params):
                continue
            f = param_field(self.entity, p)
            if f is None:  # a required argument the entity has no field for: the tool filters nothing by it
                self.base[p] = self.filler(p)
                continue
            if _structured(self.props.get(p) or {}):
                return False  # stores match lists and objects by their JSON text, not by value
            values = [r[f.name] for r in self.rows if r.get(f.name) is not None and self.allows(p, r[f.name])]
            value = self.rng.choice(values) if values else self.fresh_value(p, f, "test")
            if value is None or not self.allows(p, value):
                return False
            self.base[p] = value
            self.rows = [r for r in self.rows if r.get(f.name) == value]
        return True

    def add(self, what: str, args: dict[str, Any], expect: TestExpect) -> None:
        """Add a case; one whose arguments the schema refuses is dropped unless it expects invalid_arguments
        (the gate refuses such arguments before the tool runs, so any other expectation would be wrong)."""
        args = {**self.base, **args}
        for p in self.required:
            if p not in args:
                args[p] = self.filler(p)
        if expect.error_code != "invalid_arguments" and self.validate(args) is not None:
            return
        self.cases.append(TestCase(tool=self.tool.name, args=args, expect=expect, name=f"{self.tool.name}: {what}"))

    def missing_id(self, param: str | None) -> Any:
        """An id no row has that the parameter's schema still accepts."""
        if param is None or self.allows(param, MISSING_ID):
            return MISSING_ID
        if self.allows(param, MISSING_INT_ID):
            return MISSING_INT_ID
        taken = {str(r.get(f.name)) for e in self.spec.entities for r in self.rows_of(e) for f in e.fields}
        members = (self.props.get(param) or {}).get("enum")
        if members:  # an enum-typed id: a member no row holds, else none (the case is left out)
            return next((v for v in members if str(v) not in taken), MISSING_ID)
        example = self.example(param, MISSING_ID)
        if example is not None and str(example) not in taken:
            return example
        return self.shaped(param, sorted(taken)[:MAX_SHAPED_EXAMPLES], taken) or MISSING_ID

    def shaped(self, param: str, examples: list[str], taken: set[str]) -> str | None:
        """A string like one of `examples` (a character changed) that the schema accepts and is not taken."""
        classes = ("0123456789", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
        for example in [*examples, "NEW-0001", "+1 555 0100", "new value", "USD", "AB12"]:
            for i in range(len(example) - 1, -1, -1):
                chars = next((c for c in classes if example[i] in c), "")
                for c in chars:
                    candidate = example[:i] + c + example[i + 1 :]
                    if candidate not in taken and self.allows(param, candidate):
                        return candidate
        return None

    def shown(self, row: dict[str, Any], n: int = 3) -> dict[str, Any]:
        """The key plus a few stable fields of `row` (no timestamps) a result must carry."""
        out = {self.pk: row[self.pk]}
        stable = [k for k, v in row.items() if k != self.pk and k not in TIMESTAMP_COLUMNS and v is not None]
        for k in stable[:n]:
            out[k] = _round(row[k])
        return out

    def filler(self, p: str) -> Any:
        """A valid value for a required parameter the case is not about (a reason, a note, a fee)."""
        f = param_field(self.entity, p)
        if f is not None:
            return self.fresh_value(p, f, "test")
        value = self.example(p)
        return value if value is not None else self.shaped(p, [], set())

    @cached_property
    def referrers(self) -> list[tuple[EntitySpec, str, str]]:
        """Foreign keys pointing at this tool's entity, found once per tool (an API has hundreds of tables)."""
        return delete_referrers(self.spec.entities, self.entity, self.op)[0]

    def taken_along(self, row: dict[str, Any]) -> list[StateCheck]:
        """What a cascading delete of `row` must leave: none of the rows of the cascaded tables pointing at it."""
        return [
            StateCheck(table=other.table, where={fk: row.get(ref)}, count=0)
            for other, fk, ref in delete_referrers(self.spec.entities, self.entity, self.op)[1]
            if any(r.get(fk) == row.get(ref) for r in self.rows_of(other))
        ]

    def referenced(self, row: dict[str, Any]) -> bool:
        return any(any(r.get(fk) == row.get(ref) for r in self.rows_of(other)) for other, fk, ref in self.referrers)

    def field_params(self) -> dict[str, FieldSpec]:
        return {p: f for p in self.props if (f := param_field(self.entity, p)) is not None}

    def allows(self, param: str, value: Any) -> bool:
        """Whether the schema itself accepts `value` (else the runtime answers invalid_arguments first)."""
        if param not in self.checks:
            self.checks[param] = compile_schema({"type": "object", "properties": {param: self.props.get(param) or {}}})
        return self.checks[param]({param: value}) is None

    def example(self, param: str, hint: str = "test value") -> Any:
        """A value the parameter's schema accepts, from the schema alone."""
        return schema_example(self.props.get(param) or {}, hint)

    # values for new rows

    def ref_values(self, f: FieldSpec, live: bool = False) -> list[Any]:
        """Values of the referenced key; `live`: only of rows that are not closed."""
        ent, _, ref = (f.references or "").partition(".")
        target = find_entity(self.spec.entities, ent)
        if target is None:
            return []
        rows = self.open_rows(target) if live else self.rows_of(target)
        return [r[ref or target.primary_key] for r in rows]

    def fresh_value(self, param: str, f: FieldSpec, tag: str) -> Any:
        """A valid value for field `f` that no row holds yet (for unique fields) and the schema accepts."""
        prop = self.props.get(param) or {}
        if _structured(prop) or f.format == "json":
            return self.example(param, f"{tag} {f.name}".replace("_", " "))
        if f.references:
            values = [v for v in self.ref_values(f, live=True) if self.allows(param, v)]
            return self.rng.choice(values) if values else None
        choices = [c for c in prop.get("enum") or f.enum or [] if self.allows(param, c)]
        if choices:
            return self.rng.choice(choices)
        low = max(x for x in (f.minimum, prop.get("minimum"), 0) if x is not None)
        high = min((x for x in (f.maximum, prop.get("maximum")) if x is not None), default=None)
        if f.type == "integer" or prop.get("type") == "integer":
            value = int(low) + 2
            return min(value, int(high)) if high is not None else value
        if f.type == "number":
            value = float(low) + 12.5
            return min(value, float(high)) if high is not None else value
        if f.type == "boolean":
            return True
        if f.type == "date" and self.allows(param, "2025-06-01"):
            return "2025-06-01"
        if f.type == "datetime" and self.allows(param, "2025-06-01T12:00:00"):
            return "2025-06-01T12:00:00"
        value = f"{tag}.{f.name}@example.org" if f.format == "email" else f"{tag} {f.name}".replace("_", " ")
        if self.allows(param, value):
            return value
        existing = [str(r[f.name]) for r in self.rows if isinstance(r.get(f.name), str)]
        if not f.unique:
            fitting = [v for v in existing if self.allows(param, v)]
            if fitting:
                return self.rng.choice(fitting)
        example = self.example(param, value)
        if example is not None and not (f.unique and example in existing):
            return example
        return self.shaped(param, existing, set(existing)) or value

    # per kind

    def build(self) -> list[TestCase]:
        kind = self.op.kind if self.op.kind != "action" else f"action_{self.op.action}"
        kind = f"batch_{kind}" if self.op.batch_param else kind
        if self.op.kind in ("list", "search", "aggregate") and not self.required_filters():
            return []
        getattr(self, f"_{kind}")()
        for p in self.required:
            args = {k: v for k, v in self.valid_args().items() if k != p}
            name = f"{self.tool.name}: missing {p}"
            self.cases.append(TestCase(tool=self.tool.name, args=args, expect=_fail("invalid_arguments"), name=name))
            break
        return self.cases

    def valid_args(self) -> dict[str, Any]:
        """Arguments of the first success case, reused to make error cases differ in one argument."""
        for c in self.cases:
            if c.expect.ok:
                return dict(c.args)
        return {}

    def _get(self) -> None:
        named = [r for r in self.rows if self.key is not None and self.allows(self.key, r[self.pk])]
        if named:
            row = self.rng.choice(named)
            self.add("existing id", {self.key: row[self.pk]}, _ok(self.shown(row)))
        self.add("unknown id", {self.key: self.missing_id(self.key)}, _fail("not_found"))

    def filtered(self, predicate: Callable[[dict[str, Any]], bool]) -> Rows:
        return [r for r in self.rows if predicate(r)]

    @cached_property
    def paging(self) -> Paging:
        return paging_style(self.props)

    def page_args(self) -> dict[str, Any]:
        """The largest page, when the tool's page size takes it (a string-typed limit pages by default)."""
        size = self.paging.size
        return {size: MAX_LIMIT} if size and self.allows(size, MAX_LIMIT) else {}

    def page_limit(self) -> int | None:
        """The limit the filtered cases run with: the one page_args sends, else the tool's default."""
        return MAX_LIMIT if self.page_args() else None

    def expect_page(self, matched: Rows, limit: int | None = None, offset: int = 0) -> TestExpect:
        if self.paging.unpaged:
            limit = len(matched) or 1
        elif self.paging.count_only:  # the first rows, as many as asked (not capped), no next page
            limit = limit or self.default_limit()
        else:
            limit = min(limit or self.default_limit(), MAX_LIMIT)
        page = matched[offset : offset + limit]
        end = offset + limit
        following = self.position_value(end, limit) if end < len(matched) and not self.paging.count_only else None
        match: dict[str, Any] = {"total": len(matched), self.paging.next_key: following}
        if page:
            match["items"] = [{self.pk: page[0][self.pk]}, {self.pk: page[-1][self.pk]}]
        return _ok(match, len(page))

    def position_value(self, offset: int, limit: int) -> Any:
        """The value of the paging position parameter that asks for the page starting at row `offset`."""
        if self.paging.style == "page":
            return offset // limit + self.paging.first
        if self.paging.style == "cursor":
            return _cursor_token(offset)
        return offset

    def default_limit(self) -> int:
        default = (self.props.get(self.paging.size or "") or {}).get("default")
        return default if isinstance(default, int) and default > 0 else DEFAULT_LIMIT

    def _list(self) -> None:
        self.add("no filter", {}, self.expect_page(self.rows))
        self.paging_cases()
        self.filter_cases()
        size = self.paging.size
        if size and self.allows(size, 0):
            self.add(f"{size} 0", {size: 0}, _fail("invalid_arguments"))

    def paging_cases(self) -> None:
        """The first two pages, asked for as the tool's paging style says: a tool ignoring its position
        parameter answers the first page twice and fails the second case."""
        size, position = self.paging.size, self.paging.position
        if not position or len(self.rows) < 2:
            return
        limit = max(1, min(len(self.rows) // 3, MAX_LIMIT)) if size else min(self.default_limit(), MAX_LIMIT)
        sized = {size: limit} if size else {}
        for offset in (0, limit):
            value = self.position_value(offset, limit)
            if self.paging.style == "cursor" and offset == 0:
                self.add(f"first page, no {position}", sized, self.expect_page(self.rows, limit, offset))
                continue
            what = f"page at offset {offset}" if self.paging.style == "offset" else f"page at {position}={value!r}"
            self.add(what, {**sized, position: value}, self.expect_page(self.rows, limit, offset))
        if self.paging.style == "cursor":
            self.add("unknown cursor", {position: "not-a-cursor"}, _fail("invalid_arguments"))
        elif self.paging.style == "page" and self.allows(position, self.paging.first - 1):
            self.add(f"{position} before the first", {position: self.paging.first - 1}, _fail("invalid_arguments"))

    def filter_cases(self) -> None:
        fields = {p: f for p, f in self.field_params().items() if p not in self.paging.params}
        for p, f in fields.items():
            values = [r[f.name] for r in self.rows if r.get(f.name) is not None and self.allows(p, r[f.name])]
            if not values or f.name == self.pk or p in self.base or _structured(self.props.get(p) or {}):
                continue  # (stores match lists and objects by their JSON text, not by value)
            value = self.rng.choice(values)
            matched = self.filtered(lambda r, n=f.name, v=value: r.get(n) == v)
            self.add(
                f"filter {p}={value!r}", {p: value, **self.page_args()}, self.expect_page(matched, self.page_limit())
            )
        for p in self.props:
            bounded = range_field(self.entity, p) if p not in fields and p not in self.paging.params else None
            if bounded is not None:
                name, upper = bounded
                values = sorted(r[name] for r in self.rows if r.get(name) is not None)
                if not values:
                    continue
                value = values[len(values) // 2]
                if not upper:
                    matched = self.filtered(lambda r, n=name, v=value: r.get(n) is not None and r[n] >= v)
                else:
                    matched = self.filtered(lambda r, n=name, v=value: r.get(n) is not None and r[n] <= v)
                self.add(
                    f"filter {p}={value!r}",
                    {p: value, **self.page_args()},
                    self.expect_page(matched, self.page_limit()),
                )

    def _search(self) -> None:
        fields = searchable_fields(self.entity)
        qp = query_param(self.props)
        if qp is None:
            self._list()
            return
        texts = [r[f] for r in self.rows for f in fields if isinstance(r.get(f), str) and r[f].strip()]
        if texts:
            words = [w for w in re.split(r"\W+", self.rng.choice(texts)) if len(w) >= 3] or [texts[0][:3]]
            word = self.rng.choice(words).upper()
            needle = word.casefold()
            matched = self.filtered(
                lambda r: any(isinstance(r.get(f), str) and needle in r[f].casefold() for f in fields)
            )
            self.add(f"query {word!r}", {qp: word, **self.page_args()}, self.expect_page(matched, self.page_limit()))
        nothing = "zq-no-such-text-xj"
        if not any(nothing in t.casefold() for t in texts):
            self.add("query matching nothing", {qp: nothing}, _ok({"total": 0, "items": []}, 0))

    def summary(self, rows: Rows, field: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {"count": len(rows)}
        if field:
            values = [r[field] for r in rows if r.get(field) is not None]
            out["sum"] = _round(sum(values))
            out["avg"] = _round(sum(values) / len(values)) if values else None
            out["min"] = min(values, default=None)
            out["max"] = max(values, default=None)
        return out

    def _aggregate(self) -> None:
        numeric = [f.name for f in self.entity.fields if f.type in ("integer", "number")]
        field = self.op.field
        args: dict[str, Any] = {}
        if "field" in self.props and numeric:
            field = field if field in numeric else self.rng.choice(numeric)
            args["field"] = field
        self.add("over all rows", args, _ok(self.summary(self.rows, field)))
        if "group_by" in self.props:
            groupable = [
                f.name
                for f in self.entity.fields
                if (f.enum or f.references or f.type == "boolean") and self.allows("group_by", f.name)
            ]
            if groupable:
                key = self.rng.choice(groupable)
                groups: dict[Any, Rows] = {}
                for r in self.rows:
                    groups.setdefault(r.get(key), []).append(r)
                expected = [{key: v, **self.summary(members, field)} for v, members in groups.items()]
                self.add(f"grouped by {key}", {**args, "group_by": key}, _ok({"groups": expected}))
            self.add("group_by unknown field", {**args, "group_by": "no_such_field"}, _fail("invalid_arguments"))
        if "field" in self.props and self.allows("field", "no_such_field"):
            self.add("field not numeric", {"field": "no_such_field"}, _fail("invalid_arguments"))

    def _create(self) -> None:
        params = self.field_params()
        args: dict[str, Any] = {}
        for p, f in params.items():
            if f.name == self.pk and p not in self.required:
                continue
            if _structured(self.props.get(p) or {}):
                value = self.example(p, f"new {f.name}".replace("_", " "))
                if value is not None or p in self.required or f.required:
                    args[p] = value
                continue
            if f.name in TIMESTAMP_COLUMNS:
                continue
            args[p] = self.fresh_value(p, f, "new")
        consumes = consumed_supplies(self.spec.entities, self.entity)
        for s in consumes:
            # a new row that holds its supply: not created straight into a released state
            status_p = next((p for p, f in params.items() if f.name == s.status), None)
            if status_p in args and args[status_p] in s.released:
                holding = [v for v in (params[status_p].enum or []) if v not in s.released and self.allows(status_p, v)]
                args[status_p] = holding[0] if holding else args[status_p]
        for qty, supply, sf, fk, *_ in consumes:
            fk_param = next((p for p, f in params.items() if f.name == fk), None)
            qty_param = next((p for p, f in params.items() if f.name == qty), None)
            stocked = [r for r in self.open_rows(supply) if (r.get(sf) or 0) >= 1]
            if fk_param is None or (qty is not None and qty_param is None) or not stocked:
                return
            args[fk_param] = self.rng.choice(stocked)[supply.primary_key]
            if qty_param is not None:
                args[qty_param] = 1
        if not self.free_together(args, params):
            return
        if any(v is None for v in args.values()):
            return
        expect = {params[p].name: _round(v) for p, v in args.items()}
        settable = {f.name for f in params.values()}
        for name, value in create_defaults(self.entity, settable).items():
            expect.setdefault(name, value)
        if self.pk not in expect:
            integer = self.fields[self.pk].type == "integer"
            prefix = self.entity.id_prefix or f"{self.entity.name[:3]}_"
            expect[self.pk] = next_id([r[self.pk] for r in self.rows], integer, prefix)
        taken = []
        for s in consumes:
            fk_param = next(p for p, f in params.items() if f.name == s.foreign_key)
            row = self.supply_row(s, args[fk_param])
            if row is not None and isinstance(row.get(s.supply_field), int | float):
                held = self.held(s, {**expect, **({s.quantity: 1} if s.quantity else {})})
                left = _round(row[s.supply_field] - held)
                where = {s.supply.primary_key: row[s.supply.primary_key]}
                taken.append(StateCheck(table=s.supply.table, where=where, match={s.supply_field: left}))
        if taken:
            self.effect("new row", args, _ok(expect), taken)
        else:
            self.add("new row", args, _ok(expect))
        self.error_cases(args, params, consumes)
        self.closed_parent_case(args, params, {})

    def free_together(self, args: dict[str, Any], params: dict[str, FieldSpec]) -> bool:
        """Make unique_together fields of `args` a new combination; False when none is free."""
        by_field = {f.name: p for p, f in params.items()}
        for rule in self.entity.rules:
            names = rule.fields or []
            if rule.kind != "unique_together" or not all(n in by_field for n in names):
                continue
            taken = {tuple(r.get(n) for n in names) for r in self.rows}
            options = [names[0]]
            for _ in range(20):
                if tuple(args[by_field[n]] for n in names) not in taken:
                    break
                for n in options:
                    args[by_field[n]] = self.fresh_value(by_field[n], params[by_field[n]], "new")
                options = names
            else:
                return False
        return True

    def error_cases(self, args: dict[str, Any], params: dict[str, FieldSpec], consumes: list[Supply]) -> None:
        """Each error the create can return, one argument away from a valid call."""
        for p, f in params.items():
            if f.references and self.allows(p, MISSING_ID):
                self.add(f"{p} references nothing", {**args, p: self.missing_id(p)}, _fail("invalid_reference"))
                break
        for p, f in params.items():
            if (f.unique or f.name == self.pk) and p in args:
                values = [r[f.name] for r in self.rows if r.get(f.name) is not None and self.allows(p, r[f.name])]
                if values:
                    self.add(f"{p} already taken", {**args, p: values[0]}, _fail("conflict"))
        by_field = {f.name: p for p, f in params.items()}
        for rule in self.entity.rules:
            names = rule.fields or []
            live = [r for r in self.rows if all(self.open_parent(params, by_field.get(n), r.get(n)) for n in names)]
            if rule.kind == "unique_together" and live and all(by_field.get(n) in args for n in names):
                row = live[0]
                if all(row.get(n) is not None for n in names):
                    dup = {**args, **{by_field[n]: row[n] for n in names}}
                    self.add("same " + ", ".join(names) + " as an existing row", dup, _fail("conflict"))
            if rule.kind == "non_negative" and rule.field in by_field and by_field[rule.field] in args:
                p = by_field[rule.field]
                if self.allows(p, -1):
                    self.add(f"negative {p}", {**args, p: -1}, _fail(f"insufficient_{rule.field}"))
        for qty, supply, sf, fk, *_ in consumes:
            target = args[by_field[fk]]
            row = next(r for r in self.rows_of(supply) if r[supply.primary_key] == target)
            if qty is None:
                continue
            too_much = (row.get(sf) or 0) + 1
            if self.allows(by_field[qty], too_much):
                self.add(
                    f"{qty} above {supply.name} {sf}", {**args, by_field[qty]: too_much}, _fail(f"insufficient_{sf}")
                )

    def _update(self) -> None:
        if self.key is None or not self.rows:
            return
        params = {p: f for p, f in self.field_params().items() if p != self.key and f.name != self.pk}
        rule_fields = {n for r in self.entity.rules if r.kind == "unique_together" for n in r.fields or []}
        consumes = consumed_supplies(self.spec.entities, self.entity)
        rule_fields |= {x for qty, _, _, fk, *_ in consumes for x in (qty, fk) if x}
        plain = [p for p, f in params.items() if f.name not in rule_fields and f.name not in TIMESTAMP_COLUMNS]
        open_rows = self.open_rows(self.entity, self.rows)
        if not open_rows:
            return
        closed = self.closed_rows(self.entity)
        if closed and params:
            p = next(iter(params))
            value = self.changed_value(p, params[p], closed[0])
            if value is not None:
                status = closed_states(self.entity)[0] or ""
                args = {self.key: closed[0][self.pk], p: value}
                self.add(f"{closed[0][status]} {self.entity.name} takes no change", args, _fail("invalid_state"))
        row = self.rng.choice(open_rows)
        if plain:
            p = self.rng.choice(plain)
            f = params[p]
            value = self.changed_value(p, f, row)
            if value is not None:
                self.add(
                    f"change {p}",
                    {self.key: row[self.pk], p: value},
                    _ok({self.pk: row[self.pk], f.name: _round(value)}),
                )
                self.add("unknown id", {self.key: self.missing_id(self.key), p: value}, _fail("not_found"))
        elif consumes:
            self.change_quantity(row, params, consumes)
        if params and not any(p in self.required for p in params):
            self.add("nothing to change", {self.key: row[self.pk]}, _fail("invalid_arguments"))
        for p, f in params.items():
            if f.references and self.allows(p, MISSING_ID):
                self.add(
                    f"{p} references nothing",
                    {self.key: row[self.pk], p: self.missing_id(p)},
                    _fail("invalid_reference"),
                )
                break
        for p, f in params.items():
            others = [
                r
                for r in self.rows
                if r[self.pk] != row[self.pk] and r.get(f.name) is not None and self.allows(p, r[f.name])
            ]
            if f.unique and others:
                self.add(f"{p} taken by another row", {self.key: row[self.pk], p: others[0][f.name]}, _fail("conflict"))
        by_field = {f.name: p for p, f in params.items()}
        for qty, supply, sf, fk, *_ in consumes:
            if qty not in by_field or row.get(fk) is None or row.get(qty) is None:
                continue
            target = next((r for r in self.rows_of(supply) if r[supply.primary_key] == row[fk]), None)
            if target is None:
                continue
            too_much = (target.get(sf) or 0) + row[qty] + 1
            if self.allows(by_field[qty], too_much):
                args = {self.key: row[self.pk], by_field[qty]: too_much}
                self.add(f"{qty} above {supply.name} {sf}", args, _fail(f"insufficient_{sf}"))

    def change_quantity(self, row: dict[str, Any], params: dict[str, FieldSpec], consumes: list[Supply]) -> None:
        """A success case for an update whose only fields are consumed quantities: move to a quantity that fits."""
        by_field = {f.name: p for p, f in params.items()}
        for qty, supply, sf, fk, *_ in consumes:
            target = next((r for r in self.rows_of(supply) if r[supply.primary_key] == row.get(fk)), None)
            if qty not in by_field or target is None or not isinstance(row.get(qty), int | float):
                continue
            available = (target.get(sf) or 0) + row[qty]
            value = 1 if row[qty] != 1 else 2
            if value <= available and self.allows(by_field[qty], value):
                args = {self.key: row[self.pk], by_field[qty]: value}
                self.add(f"change {by_field[qty]}", args, _ok({self.pk: row[self.pk], qty: value}))
                self.add("unknown id", {**args, self.key: self.missing_id(self.key)}, _fail("not_found"))
                return

    def changed_value(self, p: str, f: FieldSpec, row: dict[str, Any]) -> Any:
        current = row.get(f.name)
        choices = (self.props.get(p) or {}).get("enum") or f.enum
        if choices:
            others = [c for c in choices if c != current and self.allows(p, c)]
            return self.rng.choice(others) if others else None
        if f.references:
            others = [v for v in self.ref_values(f) if v != current]
            return self.rng.choice(others) if others else None
        if f.type in ("integer", "number") and isinstance(current, int | float):
            value = current + 1
            return value if self.allows(p, value) and (f.maximum is None or value <= f.maximum) else None
        return self.fresh_value(p, f, "changed")

    def _delete(self) -> None:
        if self.key is None:
            return
        free = [r for r in self.rows if not self.referenced(r)]
        if free:
            row = self.rng.choice(free)
            self.add("unreferenced row", {self.key: row[self.pk]}, _ok({"deleted": True, self.key: row[self.pk]}))
        along = [r for r in free if self.taken_along(r)]
        if along:
            gone = [StateCheck(table=self.entity.table, where={self.pk: along[0][self.pk]}, count=0)]
            args, expect = {self.key: along[0][self.pk]}, _ok({"deleted": True, self.key: along[0][self.pk]})
            self.effect("a row and what points at it", args, expect, gone + self.taken_along(along[0]))
        busy = [r for r in self.rows if self.referenced(r)]
        if busy:
            self.add("row still referenced", {self.key: busy[0][self.pk]}, _fail("conflict"))
        self.add("unknown id", {self.key: self.missing_id(self.key)}, _fail("not_found"))

    # batch tools: N items give N rows; one bad item fails the call

    def batch_ok(self, values: list[Any]) -> bool:
        return self.allows(self.op.batch_param or "", values)

    def new_item(self, fields: dict[str, FieldSpec], tag: str) -> dict[str, Any] | None:
        """One valid item of a batch create (fields fresh, other required keys from their schema)."""
        item: dict[str, Any] = {}
        for key, f in fields.items():
            if f.name != self.pk and f.name not in TIMESTAMP_COLUMNS:
                item[key] = self.fresh_value(key, f, tag)
        for key in self.items.get("required") or []:
            if key not in item:
                item[key] = self.example(key, tag)
        return None if any(v is None for v in item.values()) else item

    def _batch_create(self) -> None:
        fields = item_fields(self.entity, self.items)
        made = [self.new_item(fields, f"new {n}") for n in (1, 2)]
        if None in made:
            return
        items = [i for i in made if i is not None]
        keys = [r[self.pk] for r in self.rows]
        integer = self.fields[self.pk].type == "integer"
        prefix = self.entity.id_prefix or f"{self.entity.name[:3]}_"
        settable = {f.name for f in fields.values()}
        expected = []
        for item in items:
            row = {fields[k].name: _round(v) for k, v in item.items() if k in fields}
            row = {**create_defaults(self.entity, settable), **row}
            row[self.pk] = next_id(keys, integer, prefix)
            keys.append(row[self.pk])
            expected.append(row)
        arg = self.op.batch_param or ""
        state = [StateCheck(table=self.entity.table, where={self.pk: r[self.pk]}, match=r, count=1) for r in expected]
        self.effect(f"{len(items)} new rows", {arg: items}, _ok({self.entity.table: expected}), state)
        for key, f in fields.items():
            if f.references and self.allows(key, MISSING_ID):
                bad = [items[0], {**items[1], key: self.missing_id(key)}]
                self.add(f"an item's {key} references nothing", {arg: bad}, _fail("invalid_reference"))
                break
        for key, f in fields.items():
            taken = [r[f.name] for r in self.rows if r.get(f.name) is not None and self.allows(key, r[f.name])]
            if f.unique and taken:
                self.add(f"an item's {key} is taken", {arg: [items[0], {**items[1], key: taken[0]}]}, _fail("conflict"))
            if f.unique:
                self.add(
                    f"two items with one {key}", {arg: [items[0], {**items[1], key: items[0][key]}]}, _fail("conflict")
                )

    def _batch_action_append(self) -> None:
        self.batch_list_edit(add=True)

    def _batch_action_remove(self) -> None:
        self.batch_list_edit(add=False)

    def batch_list_edit(self, add: bool) -> None:
        """Two rows named by their key field: one value each is added (plus one already held, kept once) or
        removed (plus one not held, a no-op); an item naming no row fails the call."""
        keys = list_edit_keys(self.entity.name, set(self.fields), self.items)
        if keys is None:
            return
        named, values, column = keys
        field = self.op.field or ""
        arg = self.op.batch_param or ""
        unique = [r for r in self.rows if sum(x.get(column) == r.get(column) for x in self.rows) == 1]
        rows = [r for r in unique if isinstance(r.get(column), str) and (add or r.get(field))][:2]
        if not rows:
            return
        items, expected = [], []
        for n, r in enumerate(rows, 1):
            held = list(r.get(field) or [])
            if add:
                given = [f"new {n} {field}".replace("_", " "), *held[:1]]
                after = held + given[:1]
            else:
                given = [held[0], f"no such {field}".replace("_", " ")]
                after = held[1:]
            items.append({named: r[column], values: given})
            expected.append({self.pk: r[self.pk], field: after})
        state = [StateCheck(table=self.entity.table, where={self.pk: e[self.pk]}, match=e) for e in expected]
        self.effect(f"{len(items)} named rows", {arg: items}, _ok({self.entity.table: expected}), state)
        if self.allows(arg, [{named: MISSING_ID, values: ["x"]}]):
            self.add("an item naming no row", {arg: [items[0], {named: MISSING_ID, values: ["x"]}]}, _fail("not_found"))

    def batch_keys(self) -> tuple[str, Rows]:
        """The column scalar items name rows by, and the rows whose value of it the schema accepts."""
        column = self.op.key_field or self.pk
        return column, [r for r in self.rows if r.get(column) is not None and self.batch_ok([r[column]])]

    def _batch_get(self) -> None:
        column, named = self.batch_keys()
        arg = self.op.batch_param or ""
        if len(named) >= 2:
            rows = self.rng.sample(named, 2)
            expect = _ok({self.entity.table: [self.shown(r) for r in rows]})
            self.add("two named rows", {arg: [r[column] for r in rows]}, expect)
        if named and self.batch_ok([MISSING_ID]):
            self.add("one unknown name", {arg: [named[0][column], MISSING_ID]}, _fail("not_found"))

    def _batch_delete(self) -> None:
        arg = self.op.batch_param or ""
        if self.items.get("type") == "object":
            self.batch_delete_matching(arg)
            return
        column, named = self.batch_keys()
        free = [r for r in named if not self.referenced(r) and sum(x[column] == r[column] for x in named) == 1]
        if len(free) >= 2:
            rows = self.rng.sample(free, 2)
            state = [StateCheck(table=self.entity.table, where={self.pk: r[self.pk]}, count=0) for r in rows]
            self.effect("two unreferenced rows", {arg: [r[column] for r in rows]}, _ok({"deleted": True}), state)
        along = [r for r in free if self.taken_along(r)]
        if along:
            gone = [StateCheck(table=self.entity.table, where={self.pk: along[0][self.pk]}, count=0)]
            args = {arg: [along[0][column]]}
            self.effect("a row and what points at it", args, _ok({"deleted": True}), gone + self.taken_along(along[0]))
        busy = [r for r in named if self.referenced(r)]
        if busy:
            self.add("a row still referenced", {arg: [busy[0][column]]}, _fail("conflict"))
        if named and self.batch_ok([MISSING_ID]):
            self.add("one unknown name", {arg: [named[0][column], MISSING_ID]}, _fail("not_found"))

    def batch_delete_matching(self, arg: str) -> None:
        """Items whose values match the rows to delete (`{from, to, relationType}` of a relation)."""
        fields = item_fields(self.entity, self.items)

        def item(row: dict[str, Any]) -> dict[str, Any]:
            return {k: row.get(f.name) for k, f in fields.items()}

        free = [r for r in self.rows if not self.referenced(r) and self.batch_ok([item(r)])]
        if len(free) >= 2:
            rows = self.rng.sample(free, 2)
            gone = [x for x in self.rows if any(item(x) == item(r) for r in rows)]
            state = [StateCheck(table=self.entity.table, where={self.pk: r[self.pk]}, count=0) for r in gone]
            self.effect("two matching items", {arg: [item(r) for r in rows]}, _ok({"deleted": True}), state)
        text = next((k for k, f in fields.items() if f.type == "string" and self.allows(k, MISSING_ID)), None)
        if free and text is not None:
            self.add(
                "an item matching nothing",
                {arg: [item(free[0]), {**item(free[0]), text: MISSING_ID}]},
                _fail("not_found"),
            )

    def amount(self, integer_field: bool) -> int | float:
        typ = (self.props.get(self.op.amount_param or "amount") or {}).get("type")
        return 2 if integer_field or typ == "integer" else 2.5

    def _action_increment(self, sign: int = 1) -> None:
        name, amount_p = self.op.field or "", self.op.amount_param or "amount"
        f = self.fields[name]
        amount = self.amount(f.type == "integer")
        candidates = [r for r in self.open_rows(self.entity, self.rows) if isinstance(r.get(name), int | float)]
        if sign < 0 and is_non_negative(self.entity, name):
            candidates = [r for r in candidates if r[name] >= amount]
        if f.maximum is not None and sign > 0:
            candidates = [r for r in candidates if r[name] + amount <= f.maximum]
        if candidates:
            row = self.rng.choice(candidates)
            expect = {self.pk: row[self.pk], name: _round(row[name] + sign * amount)}
            args = {self.key: row[self.pk], amount_p: amount}
            entries = self.ledger_checks([(row[self.pk], amount, "decrement" if sign < 0 else "increment")])
            if entries:
                self.effect(f"change {name} by {sign * amount}, recorded in the ledger", args, _ok(expect), entries)
            else:
                self.add(f"change {name} by {sign * amount}", args, _ok(expect))
        closed = [r for r in self.closed_rows(self.entity) if isinstance(r.get(name), int | float)]
        if closed:
            status = closed_states(self.entity)[0] or ""
            what = f"{closed[0][status]} {self.entity.name} takes no amount change"
            self.add(what, {self.key: closed[0][self.pk], amount_p: amount}, _fail("invalid_state"))
            if self.allows(amount_p, 0):
                self.add("zero amount", {self.key: row[self.pk], amount_p: 0}, _fail("invalid_arguments"))
        if self.rows:
            self.add("unknown id", {self.key: self.missing_id(self.key), amount_p: amount}, _fail("not_found"))
        if sign < 0 and is_non_negative(self.entity, name):
            rows = [r for r in self.open_rows(self.entity, self.rows) if isinstance(r.get(name), int | float)]
            if rows:
                row = self.rng.choice(rows)
                too_much = int(row[name]) + 1 if f.type == "integer" else _round(row[name] + 1.5)
                if self.allows(amount_p, too_much):
                    self.add(
                        f"more than the {name} left",
                        {self.key: row[self.pk], amount_p: too_much},
                        _fail(f"insufficient_{name}"),
                    )

    def _action_decrement(self) -> None:
        self._action_increment(-1)

    def _action_transition(self) -> None:
        name, to_value, sources = self.op.field or "", self.op.to_value, self.op.from_values
        allowed = [r for r in self.rows if (r.get(name) in sources if sources else True)]
        supplies = [s for s in consumed_supplies(self.spec.entities, self.entity) if s.status == name]
        freeing = [s for s in supplies if to_value in s.released]
        if allowed and freeing:
            self.release_case(allowed, freeing, to_value)
        elif allowed:
            row = self.rng.choice(allowed)
            self.add(
                f"{row.get(name)} -> {to_value}", {self.key: row[self.pk]}, _ok({self.pk: row[self.pk], name: to_value})
            )
        if sources:
            refused = [r for r in self.rows if r.get(name) not in sources]
            if refused:
                row = self.rng.choice(refused)
                self.add(
                    f"{row.get(name)} -> {to_value} not allowed", {self.key: row[self.pk]}, _fail("invalid_transition")
                )
        self.add("unknown id", {self.key: self.missing_id(self.key)}, _fail("not_found"))

    def release_case(self, allowed: Rows, freeing: list[Supply], to_value: Any) -> None:
        """Moving a row into a released state (cancelling it) gives back what it held: the supply row ends
        with its seed value plus the row's quantity."""
        name = self.op.field or ""
        holding = [
            r for r in allowed if all(self.held(s, r) and self.supply_row(s, r.get(s.foreign_key)) for s in freeing)
        ]
        row = self.rng.choice(holding or allowed)
        checks = []
        for s in freeing:
            supply = self.supply_row(s, row.get(s.foreign_key))
            if supply is None or not isinstance(supply.get(s.supply_field), int | float):
                continue
            back = _round(supply[s.supply_field] + self.held(s, row))
            where = {s.supply.primary_key: supply[s.supply.primary_key]}
            checks.append(StateCheck(table=s.supply.table, where=where, match={s.supply_field: back}))
        expect = _ok({self.pk: row[self.pk], name: to_value})
        gives = ", ".join(f"{s.supply.name} {s.supply_field}" for s in freeing)
        if checks:
            self.effect(f"{row.get(name)} -> {to_value} gives back {gives}", {self.key: row[self.pk]}, expect, checks)
        else:
            self.add(f"{row.get(name)} -> {to_value}", {self.key: row[self.pk]}, expect)

    def ledger_checks(self, moves: list[tuple[Any, Any, str]]) -> list[StateCheck]:
        """One more ledger row per (key, amount, movement) than the seed has, when a ledger rule asks for it."""
        ledger = ledger_of(self.spec.entities, self.entity, self.op.field)
        if ledger is None:
            return []
        rows = self.rows_of(ledger.entity)
        checks = []
        for key, amount, movement in moves:
            out = movement in ("decrement", "transfer_out")
            signed = -amount if ledger.kind is None and out else amount
            entry = ledger_entry(ledger, key, signed, movement)
            where = {ledger.foreign_key: key, ledger.amount: signed}
            if ledger.kind is not None:
                where[ledger.kind] = entry[ledger.kind]
            before = [r for r in rows if all(r.get(k) == v for k, v in where.items())]
            checks.append(StateCheck(table=ledger.entity.table, where=where, count=len(before) + 1))
        return checks

    def _action_transfer(self) -> None:
        name, ent, amount_p = self.op.field or "", self.entity.name, self.op.amount_param or "amount"
        src_p, dst_p = f"from_{ent}_id", f"to_{ent}_id"
        amount = self.amount(self.fields[name].type == "integer")
        live = self.open_rows(self.entity, self.rows)
        rich = [r for r in live if isinstance(r.get(name), int | float) and r[name] >= amount]
        if not rich or len(live) < 2:
            return
        src = self.rng.choice(rich)
        dst = self.rng.choice([r for r in live if r[self.pk] != src[self.pk]])
        args = {src_p: src[self.pk], dst_p: dst[self.pk], amount_p: amount}
        expect = {
            "from": {self.pk: src[self.pk], name: _round(src[name] - amount)},
            "to": {self.pk: dst[self.pk], name: _round((dst.get(name) or 0) + amount)},
        }
        entries = self.ledger_checks([(src[self.pk], amount, "transfer_out"), (dst[self.pk], amount, "transfer_in")])
        if entries:
            self.effect(f"move {amount} {name}, recorded in the ledger", args, _ok(expect), entries)
        else:
            self.add(f"move {amount} {name}", args, _ok(expect))
        closed = self.closed_rows(self.entity)
        if closed:
            status = closed_states(self.entity)[0] or ""
            what = f"to a {closed[0][status]} {ent}"
            self.add(what, {**args, dst_p: closed[0][self.pk]}, _fail("invalid_state"))
        self.add("to an unknown id", {**args, dst_p: self.missing_id(dst_p)}, _fail("not_found"))
        self.add("to the same row", {**args, dst_p: src[self.pk]}, _fail("invalid_arguments"))
        if is_non_negative(self.entity, name):
            too_much = int(src[name]) + 1 if self.fields[name].type == "integer" else _round(src[name] + 1.5)
            if self.allows(amount_p, too_much):
                self.add(f"more than the {name} left", {**args, amount_p: too_much}, _fail(f"insufficient_{name}"))


def generate_tests(spec: EnvSpec, rows: dict[str, Rows], seed: int) -> list[TestCase]:
    """Test cases for every tool that gets code, expectations computed from the seed `rows`."""
    plain = json.loads(json.dumps(rows, default=str))
    skipped = unsupported_tools(spec)
    cases: list[TestCase] = []
    for tool in spec.tools:
        if tool.operation is not None and tool.name not in skipped:
            cases.extend(_Cases(spec, tool, plain, seed).build())
    return cases
