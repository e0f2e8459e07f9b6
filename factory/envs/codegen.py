"""Offline tool code generation: write `tools.py` of a bundle from its typed tool operations.

Each tool with a `ToolOperation` becomes one readable function `def name(state, ...)` whose keyword
parameters mirror the tool's JSON schema. The semantics follow the docstrings of `ToolOperation` and
`Rule` in factory/models.py. A small backend layer at the top of the module (`_select`, `_get`,
`_insert`, `_update`, `_delete`) is the only code that touches the state: parameterized SQL on a
sqlite3 connection, or JSON collections `<table>.json` in a directory (written via temp file +
`os.replace`). New ids continue the largest existing id and timestamps continue the latest existing
one, so a replay of the same calls in a fresh session gives the same answers (no clock, no uuid).
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass, field

from factory.models import EntitySpec, EnvSpec, FieldSpec, ToolOperation, ToolSpec

# Columns the tools maintain themselves: set from the latest existing value, ignored by verifiers.
TIMESTAMP_FIELDS = ("created_at", "updated_at", "modified_at", "last_updated", "last_modified")
NUMERIC_TYPES = ("integer", "number")
ORDERED_TYPES = ("integer", "number", "date", "datetime")
DEFAULT_LIMIT = 20
MAX_LIMIT = 100
# Locals the generated bodies use; a parameter with one of these names is read from **params instead.
_RESERVED = {"state", "params", "current", "changes", "record", "rows", "supply", "old_supply", "source", "destination"}


class CodegenError(ValueError):
    """A tool whose operation cannot be realized from its schema and entities."""


def searchable_fields(entity: EntitySpec) -> list[str]:
    """Text fields a `search` tool matches `query` against: free strings, not keys, enums or references."""
    return [
        f.name
        for f in entity.fields
        if f.type == "string" and not f.enum and not f.references and f.name != entity.primary_key
    ]


def timestamp_fields(entity: EntitySpec) -> list[str]:
    return [f.name for f in entity.fields if f.name in TIMESTAMP_FIELDS]


def find_entity(entities: list[EntitySpec], name: str) -> EntitySpec | None:
    """The entity called `name` (singular) or stored in table `name`."""
    for e in entities:
        if name in (e.name, e.table):
            return e
    return None


def key_param(entity: EntitySpec, props: dict) -> str | None:
    """The parameter naming the row a get/update/delete/action works on: `<entity>_id`, else the key field."""
    for candidate in (f"{entity.name}_id", entity.primary_key):
        if candidate in props:
            return candidate
    return None


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


def unsupported_tools(spec: EnvSpec) -> dict[str, str]:
    """Tools that get no code, with the reason (no operation, unknown entity, no key parameter...)."""
    reasons: dict[str, str] = {}
    for tool in spec.tools:
        try:
            _check_tool(spec, tool)
        except CodegenError as e:
            reasons[tool.name] = str(e)
    return reasons


def _props(tool: ToolSpec) -> dict:
    return dict(tool.parameters.get("properties") or {})


def _check_tool(spec: EnvSpec, tool: ToolSpec) -> tuple[ToolOperation, EntitySpec]:
    op = tool.operation
    if op is None:
        raise CodegenError("no operation was inferred for this tool")
    entity = find_entity(spec.entities, op.entity)
    if entity is None:
        raise CodegenError(f"operation names unknown entity {op.entity!r}")
    if not tool.name.isidentifier() or keyword.iskeyword(tool.name) or tool.name.startswith("_"):
        raise CodegenError(f"tool name {tool.name!r} is not a Python function name")
    props = _props(tool)
    needs_key = op.kind in ("get", "update", "delete") or (op.kind == "action" and op.action != "transfer")
    if needs_key and key_param(entity, props) is None:
        raise CodegenError(f"no parameter names the {entity.name} (expected {entity.name}_id)")
    field_names = {f.name for f in entity.fields}
    if op.kind == "action":
        if op.action is None:
            raise CodegenError("action operation without an action kind")
        if op.field not in field_names:
            raise CodegenError(f"action changes unknown field {op.field!r}")
        if op.action in ("increment", "decrement", "transfer") and (op.amount_param or "amount") not in props:
            raise CodegenError(f"no amount parameter {(op.amount_param or 'amount')!r}")
        if op.action == "transition" and not op.to_value:
            raise CodegenError("transition without a target value")
        if op.action == "transfer":
            for end in ("from", "to"):
                if f"{end}_{entity.name}_id" not in props:
                    raise CodegenError(f"transfer without parameter {end}_{entity.name}_id")
    if op.kind == "create" and not any(param_field(entity, p) for p in props):
        raise CodegenError("create tool has no parameter naming a field")
    return op, entity


# --- the module template ------------------------------------------------------------------------

_HEADER = '''"""Tools of the {title!s} environment ({backend} backend), generated by factory.envs.codegen.

Each tool is `name(state, **params)`; `state` is {state_doc}. Tools return JSON values;
failures are `{{"error": {{"code": ..., "message": ...}}}}`. New ids continue the largest existing id and
timestamps continue the latest existing one, so the same calls always give the same answers.
"""

{imports}

_PRIMARY_KEYS = {primary_keys!r}
_BOOLEAN_FIELDS = {boolean_fields!r}
'''

_SQLITE_HELPERS = '''

def _record(table, columns, row):
    record = dict(zip(columns, row, strict=True))
    for name in _BOOLEAN_FIELDS.get(table, ()):
        if record.get(name) is not None:
            record[name] = bool(record[name])
    return record


def _select(state, table, where=None, ranges=None):
    """Rows of `table` (ordered by key) equal to `where` and inside `ranges` {column: (low, high)}."""
    clauses, values = [], []
    for column, value in (where or {}).items():
        if value is not None:
            clauses.append(f'"{column}" = ?')
            values.append(value)
    for column, (low, high) in (ranges or {}).items():
        if low is not None:
            clauses.append(f'"{column}" >= ?')
            values.append(low)
        if high is not None:
            clauses.append(f'"{column}" <= ?')
            values.append(high)
    sql = f'SELECT * FROM "{table}"'
    if clauses:
        sql += " WHERE " + " AND ".join(clauses)
    cursor = state.execute(sql + f' ORDER BY "{_PRIMARY_KEYS[table]}"', values)
    columns = [c[0] for c in cursor.description]
    return [_record(table, columns, row) for row in cursor.fetchall()]


def _column_values(values):
    """SQLite stores lists and objects as JSON text."""
    return [json.dumps(v) if isinstance(v, list | dict) else v for v in values]


def _insert(state, table, record):
    columns = ", ".join(f'"{c}"' for c in record)
    marks = ", ".join("?" for _ in record)
    state.execute(f'INSERT INTO "{table}" ({columns}) VALUES ({marks})', _column_values(record.values()))


def _update(state, table, key, changes):
    assignments = ", ".join(f'"{c}" = ?' for c in changes)
    sql = f'UPDATE "{table}" SET {assignments} WHERE "{_PRIMARY_KEYS[table]}" = ?'
    state.execute(sql, [*_column_values(changes.values()), key])


def _delete(state, table, key):
    state.execute(f'DELETE FROM "{table}" WHERE "{_PRIMARY_KEYS[table]}" = ?', [key])
'''

_FILES_HELPERS = '''

def _load(state, table):
    path = os.path.join(state, f"{table}.json")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _save(state, table, rows):
    """Write the collection through a temp file and a rename: a crash never leaves half a file."""
    fd, tmp = tempfile.mkstemp(prefix=f".{table}.", suffix=".tmp", dir=state)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(rows, f, indent=2, ensure_ascii=False)
        f.write("\\n")
    os.replace(tmp, os.path.join(state, f"{table}.json"))


def _inside(row, where, ranges):
    for column, value in (where or {}).items():
        if value is not None and row.get(column) != value:
            return False
    for column, (low, high) in (ranges or {}).items():
        value = row.get(column)
        if (low is not None or high is not None) and value is None:
            return False
        if (low is not None and value < low) or (high is not None and value > high):
            return False
    return True


def _select(state, table, where=None, ranges=None):
    """Rows of `table` (ordered by key) equal to `where` and inside `ranges` {column: (low, high)}."""
    key = _PRIMARY_KEYS[table]
    rows = [row for row in _load(state, table) if _inside(row, where, ranges)]
    return sorted(rows, key=lambda row: row[key])


def _insert(state, table, record):
    _save(state, table, [*_load(state, table), record])


def _update(state, table, key, changes):
    rows = _load(state, table)
    for row in rows:
        if row[_PRIMARY_KEYS[table]] == key:
            row.update(changes)
    _save(state, table, rows)


def _delete(state, table, key):
    _save(state, table, [row for row in _load(state, table) if row[_PRIMARY_KEYS[table]] != key])
'''

_COMMON_HELPERS = '''

def _error(code, message):
    return {"error": {"code": code, "message": message}}


def _get(state, table, key):
    rows = _select(state, table, {_PRIMARY_KEYS[table]: key})
    return rows[0] if rows else None


def _page(rows, limit, offset):
    """One page of `rows`: {"items", "total", "next_offset"} (None on the last page)."""
    limit = DEFAULT_LIMIT if limit is None else limit
    offset = 0 if offset is None else offset
    if limit < 1 or offset < 0:
        return _error("invalid_arguments", "limit must be at least 1 and offset at least 0")
    limit = min(limit, MAX_LIMIT)
    end = offset + limit
    return {"items": rows[offset:end], "total": len(rows), "next_offset": end if end < len(rows) else None}


def _matches_query(row, query, fields):
    needle = query.casefold()
    return any(isinstance(row.get(f), str) and needle in row[f].casefold() for f in fields)


def _round(value):
    return round(value, 6) if isinstance(value, float) else value


def _summary(rows, field):
    """count, and sum/avg/min/max of `field` over the rows where it is set."""
    result = {"count": len(rows)}
    if field is not None:
        values = [row[field] for row in rows if row.get(field) is not None]
        total = sum(values)
        result["sum"] = _round(total)
        result["avg"] = _round(total / len(values)) if values else None
        result["min"] = min(values, default=None)
        result["max"] = max(values, default=None)
    return result


def _aggregate(rows, field, group_by):
    if group_by is None:
        return _summary(rows, field)
    groups = {}
    for row in rows:
        groups.setdefault(row.get(group_by), []).append(row)
    ordered = sorted(groups.items(), key=lambda item: (item[0] is None, item[0]))
    return {"groups": [{group_by: value, **_summary(members, field)} for value, members in ordered]}


def _next_id(state, table, prefix):
    """The id after the largest existing one: 41 -> 42, "ord_0041" -> "ord_0042"."""
    keys = [row[_PRIMARY_KEYS[table]] for row in _select(state, table)]
    if prefix is None:
        return max((k for k in keys if isinstance(k, int)), default=0) + 1
    best = None
    for key in keys:
        match = re.fullmatch(r"(.*?)(\\d+)", str(key))
        if match and (best is None or int(match.group(2)) > int(best.group(2))):
            best = match
    if best is None:
        return f"{prefix}0001"
    digits = best.group(2)
    return f"{best.group(1)}{int(digits) + 1:0{len(digits)}d}"


def _next_time(state, table, field, kind):
    """A logical clock: the latest existing value of `field` plus one second (dates stay on that day)."""
    values = [row[field] for row in _select(state, table) if isinstance(row.get(field), str)]
    if not values:
        return "2025-01-01" if kind == "date" else "2025-01-01T00:00:00"
    latest = max(values)
    if kind == "date":
        return latest
    try:
        moment = datetime.datetime.fromisoformat(latest.replace("Z", "+00:00"))
    except ValueError:
        return latest
    text = (moment + datetime.timedelta(seconds=1)).isoformat()
    return text.replace("+00:00", "Z") if latest.endswith("Z") else text


def _valid_time(value, kind):
    try:
        if kind == "date":
            datetime.date.fromisoformat(value)
        else:
            datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return False
    return True
'''


# --- per-tool code ------------------------------------------------------------------------------


@dataclass
class _Fn:
    """Lines of one generated function, plus the local name of each parameter."""

    lines: list[str] = field(default_factory=list)
    local: dict[str, str] = field(default_factory=dict)
    level: int = 1

    def add(self, line: str) -> None:
        self.lines.append("    " * self.level + line)

    def error(self, condition: str, code: str, template: str, *args: str) -> None:
        """`if condition: return _error(code, message)`; `{}` in the template are filled with `args` (expressions)."""
        message = repr(template) + (f".format({', '.join(args)})" if args else "")
        self.add(f"if {condition}:")
        self.add(f'    return _error("{code}", {message})')


def _lit(text: object) -> str:
    """Static text inside a message template (braces escaped)."""
    return str(text).replace("{", "{{").replace("}", "}}")


_CONTROL_PARAMS = ("limit", "offset", "query", "field", "group_by")
_UPDATE_STAMPS = ("updated_at", "modified_at", "last_updated", "last_modified")


class _ToolWriter:
    """Writes one tool function from its operation, schema and entity."""

    def __init__(self, spec: EnvSpec, tool: ToolSpec, op: ToolOperation, entity: EntitySpec):
        self.spec, self.tool, self.op, self.entity = spec, tool, op, entity
        self.props = _props(tool)
        self.fields = {f.name: f for f in entity.fields}
        self.pk = entity.primary_key
        self.fn = _Fn()
        self.checked: set[str] = set()

    def source(self) -> str:
        head = self._signature()
        prologue = self.fn.lines
        self.fn = _Fn(local=self.fn.local)
        doc = (self.tool.description or self.tool.name).strip().replace("\\", "\\\\").replace('"""', "'''")
        for p in self.tool.parameters.get("required") or []:
            if p in self.props:
                self._require(p)
        getattr(self, f"_{self.op.kind}")()
        return "\n".join([head, f'    """{doc}"""', *prologue, *self.fn.lines]) + "\n"

    def _signature(self) -> str:
        names = list(self.props)
        plain = all(n.isidentifier() and not keyword.iskeyword(n) and not n.startswith("_") for n in names)
        plain = plain and not (_RESERVED & set(names))
        defaults = {n: self._default(n) for n in names}
        if plain:
            self.fn.local = {n: n for n in names}
            params = "".join(f", {n}={defaults[n]!r}" for n in names)
            return f"def {self.tool.name}(state{params}):"
        for i, n in enumerate(names):
            self.fn.local[n] = f"arg_{i}"
            self.fn.add(f"arg_{i} = params.get({n!r}, {defaults[n]!r})")
        return f"def {self.tool.name}(state, **params):"

    def _default(self, name: str) -> object:
        prop = self.props[name]
        value = prop.get("default") if isinstance(prop, dict) else None
        if value is None and self.op.kind in ("list", "search") and name in ("limit", "offset"):
            return DEFAULT_LIMIT if name == "limit" else 0
        return value if isinstance(value, str | int | float | bool) else None

    # parameters

    def v(self, param: str) -> str:
        return self.fn.local[param]

    def _opt(self, param: str) -> str:
        return self.v(param) if param in self.props else "None"

    @property
    def table(self) -> str:
        return self.entity.table

    def _field_params(self) -> list[tuple[str, FieldSpec]]:
        """(parameter, field) for every parameter naming a field of the entity."""
        out = []
        for p in self.props:
            f = param_field(self.entity, p)
            if f is not None:
                out.append((p, f))
        return out

    def _select_expr(self) -> str:
        """`_select(...)` with the equality filters and min_/max_ range filters of the parameters."""
        where: dict[str, str] = {}
        ranges: dict[str, list[str]] = {}
        control = (*_CONTROL_PARAMS, query_param(self.props)) if self.op.kind in ("search", "aggregate") else ()
        for p in self.props:
            if p in control:
                continue
            f = param_field(self.entity, p)
            if f is not None:
                where[f.name] = self.v(p)
                continue
            for bound, idx in (("min_", 0), ("max_", 1)):
                name = p[len(bound) :]
                if p.startswith(bound) and name in self.fields and self.fields[name].type in ORDERED_TYPES:
                    ranges.setdefault(name, ["None", "None"])[idx] = self.v(p)
        w = "{" + ", ".join(f"{k!r}: {v}" for k, v in where.items()) + "}"
        r = "{" + ", ".join(f"{k!r}: ({lo}, {hi})" for k, (lo, hi) in ranges.items()) + "}"
        return f"_select(state, {self.table!r}, {w}, {r})"

    # shared checks

    def _require(self, param: str) -> None:
        if param in self.checked:
            return
        self.checked.add(param)
        self.fn.error(f"{self.v(param)} is None", "invalid_arguments", f"{_lit(param)} is required")

    def _load_current(self) -> None:
        var = self.v(key_param(self.entity, self.props) or "")
        self._require(key_param(self.entity, self.props) or "")
        self.fn.add(f"current = _get(state, {self.table!r}, {var})")
        self.fn.error("current is None", "not_found", f"no {self.entity.name} with id {{!r}}", var)

    def _non_negative(self, name: str) -> bool:
        return any(r.kind == "non_negative" and r.field == name for r in self.entity.rules)

    def _validate_value(self, f: FieldSpec, var: str, *, creating: bool) -> None:
        """Checks on one given field value: enum, format, non_negative, range, foreign key, uniqueness."""
        given, name = f"{var} is not None", _lit(f.name)
        if f.enum:
            allowed = _lit(", ".join(f.enum))
            self.fn.error(
                f"{given} and {var} not in {tuple(f.enum)!r}", "invalid_arguments", f"{name} must be one of: {allowed}"
            )
        if f.type in ("date", "datetime"):
            self.fn.error(
                f"{given} and not _valid_time({var}, {f.type!r})",
                "invalid_arguments",
                f"{name} must be an ISO {f.type}",
            )
        if self._non_negative(f.name):
            self.fn.error(f"{given} and {var} < 0", f"insufficient_{f.name}", f"{name} cannot be negative")
        if any(r.kind == "consumes" and r.field == f.name for r in self.entity.rules):
            self.fn.error(f"{given} and {var} < 0", "invalid_arguments", f"{name} cannot be negative")
        if f.minimum is not None:
            self.fn.error(
                f"{given} and {var} < {f.minimum!r}", "invalid_arguments", f"{name} must be at least {f.minimum}"
            )
        if f.maximum is not None:
            self.fn.error(
                f"{given} and {var} > {f.maximum!r}", "invalid_arguments", f"{name} must be at most {f.maximum}"
            )
        if f.references:
            ref_entity, _, ref_field = f.references.partition(".")
            target = find_entity(self.spec.entities, ref_entity)
            if target is not None:
                ref_field = ref_field or target.primary_key
                lookup = f"_select(state, {target.table!r}, {{{ref_field!r}: {var}}})"
                message = f"no {_lit(target.name)} with {_lit(ref_field)} {{!r}}"
                self.fn.error(f"{given} and not {lookup}", "invalid_reference", message, var)
        if f.unique or (creating and f.name == self.pk):
            same = f"_select(state, {self.table!r}, {{{f.name!r}: {var}}})"
            if not creating:
                same = f"any(row[{self.pk!r}] != current[{self.pk!r}] for row in {same})"
            message = f"a {_lit(self.entity.name)} with {name} {{!r}} already exists"
            self.fn.error(f"{given} and {same}", "conflict", message, var)

    def _unique_together(self, *, creating: bool) -> None:
        for rule in self.entity.rules:
            names = [n for n in (rule.fields or []) if n in self.fields]
            if rule.kind != "unique_together" or not names:
                continue
            given = " and ".join(f"record[{n!r}] is not None" for n in names)
            same = f"_select(state, {self.table!r}, {{" + ", ".join(f"{n!r}: record[{n!r}]" for n in names) + "})"
            if not creating:
                same = f"any(row[{self.pk!r}] != record[{self.pk!r}] for row in {same})"
            message = f"another {_lit(self.entity.name)} has the same {_lit(', '.join(names))}"
            self.fn.error(f"{given} and {same}", "conflict", message)

    def _consumes(self) -> list[tuple[str, EntitySpec, str, str]]:
        """(quantity field, supply entity, supply field, foreign key field) of each consumes rule."""
        out = []
        for rule in self.entity.rules:
            if rule.kind != "consumes" or not rule.field or not rule.target or rule.field not in self.fields:
                continue
            ent_name, _, supply_field = rule.target.partition(".")
            supply = find_entity(self.spec.entities, ent_name)
            if supply is None or supply_field not in {f.name for f in supply.fields}:
                continue
            refs = [
                f.name
                for f in self.entity.fields
                if f.references and f.references.split(".")[0] in (supply.name, supply.table)
            ]
            if refs:
                out.append((rule.field, supply, supply_field, refs[0]))
        return out

    def _check_supply(self, qty: str, supply: EntitySpec, sf: str, fk: str, local: str, give_back: str = "0") -> None:
        """Fail with insufficient_<supply field> when the referenced row has less than `record[qty]` left."""
        self.fn.add(f"{local} = _get(state, {supply.table!r}, record[{fk!r}]) if record[{fk!r}] is not None else None")
        available = f"({local}[{sf!r}] or 0) + {give_back}" if give_back != "0" else f"({local}[{sf!r}] or 0)"
        self.fn.error(
            f"{local} is not None and record[{qty!r}] is not None and {available} < record[{qty!r}]",
            f"insufficient_{sf}",
            f"only {{}} {_lit(sf)} left on {_lit(supply.name)} {{!r}}",
            available,
            f"record[{fk!r}]",
        )

    def _move_supply(self, supply: EntitySpec, sf: str, key: str, amount: str, sign: str) -> None:
        """Add (sign '+') or take (sign '-') `amount` on the supply row `key`, both read fresh."""
        self.fn.add(f"if {key} is not None and {amount} is not None:")
        self.fn.add(f"    row = _get(state, {supply.table!r}, {key})")
        self.fn.add("    if row is not None:")
        self.fn.add(
            f"        _update(state, {supply.table!r}, {key}, {{{sf!r}: _round((row[{sf!r}] or 0) {sign} {amount})}})"
        )

    def _set_timestamps(self, target: str, names: tuple[str, ...], only_missing: bool = False) -> None:
        for name in timestamp_fields(self.entity):
            if name in names:
                value = f"_next_time(state, {self.table!r}, {name!r}, {self.fields[name].type!r})"
                if only_missing:
                    self.fn.add(f"if {target}[{name!r}] is None:")
                    self.fn.add(f"    {target}[{name!r}] = {value}")
                else:
                    self.fn.add(f"{target}[{name!r}] = {value}")

    def _write_back(self) -> None:
        self._set_timestamps("changes", _UPDATE_STAMPS)
        self.fn.add(f"_update(state, {self.table!r}, current[{self.pk!r}], changes)")
        self.fn.add("return {**current, **changes}")

    # operations

    def _list(self) -> None:
        self.fn.add(f"rows = {self._select_expr()}")
        self.fn.add(f"return _page(rows, {self._opt('limit')}, {self._opt('offset')})")

    def _search(self) -> None:
        self.fn.add(f"rows = {self._select_expr()}")
        if query_param(self.props):
            q = self.v(query_param(self.props) or "")
            fields = tuple(searchable_fields(self.entity))
            self.fn.add(f"if {q}:")
            self.fn.add(f"    rows = [row for row in rows if _matches_query(row, {q}, {fields!r})]")
        self.fn.add(f"return _page(rows, {self._opt('limit')}, {self._opt('offset')})")

    def _get(self) -> None:
        self._load_current()
        self.fn.add("return current")

    def _aggregate(self) -> None:
        numeric = tuple(f.name for f in self.entity.fields if f.type in NUMERIC_TYPES)
        names = tuple(f.name for f in self.entity.fields)
        field_expr = repr(self.op.field)
        if "field" in self.props:
            field_expr = f"{self.v('field')} or {self.op.field!r}" if self.op.field else self.v("field")
        self.fn.add(f"field = {field_expr}")
        self.fn.add(f"group_by = {self._opt('group_by')}")
        self.fn.error(
            f"field is not None and field not in {numeric!r}",
            "invalid_arguments",
            f"field must be one of: {_lit(', '.join(numeric))}",
        )
        self.fn.error(
            f"group_by is not None and group_by not in {names!r}",
            "invalid_arguments",
            f"group_by must be one of: {_lit(', '.join(names))}",
        )
        self.fn.add(f"rows = {self._select_expr()}")
        self.fn.add("return _aggregate(rows, field, group_by)")

    def _create(self) -> None:
        by_field = {f.name: p for p, f in self._field_params()}
        for f in self.entity.fields:
            if f.required and f.name != self.pk and f.name not in TIMESTAMP_FIELDS and f.name in by_field:
                self._require(by_field[f.name])
        for p, f in self._field_params():
            self._validate_value(f, self.v(p), creating=True)
        values = ", ".join(
            f"{f.name!r}: {self.v(by_field[f.name]) if f.name in by_field else None}" for f in self.entity.fields
        )
        self.fn.add(f"record = {{{values}}}")
        for f in self.entity.fields:
            if f.enum and f.name != self.pk:
                self.fn.add(f"if record[{f.name!r}] is None:")
                self.fn.add(f"    record[{f.name!r}] = {f.enum[0]!r}")
        prefix = (
            None if self.fields[self.pk].type == "integer" else (self.entity.id_prefix or f"{self.entity.name[:3]}_")
        )
        new_id = f"_next_id(state, {self.table!r}, {prefix!r})"
        if self.pk in by_field:
            self.fn.add(f"if record[{self.pk!r}] is None:")
            self.fn.add(f"    record[{self.pk!r}] = {new_id}")
        else:
            self.fn.add(f"record[{self.pk!r}] = {new_id}")
        self._unique_together(creating=True)
        consumes = self._consumes()
        for qty, supply, sf, fk in consumes:
            self._check_supply(qty, supply, sf, fk, "supply")
        for qty, supply, sf, fk in consumes:
            self._move_supply(supply, sf, f"record[{fk!r}]", f"record[{qty!r}]", "-")
        stamps = tuple(timestamp_fields(self.entity))
        self._set_timestamps("record", tuple(n for n in stamps if n not in by_field))
        self._set_timestamps("record", tuple(n for n in stamps if n in by_field), only_missing=True)
        self.fn.add(f"_insert(state, {self.table!r}, record)")
        self.fn.add("return record")

    def _update(self) -> None:
        key_p = key_param(self.entity, self.props)
        self._load_current()
        changeable = [(p, f) for p, f in self._field_params() if p != key_p and f.name != self.pk]
        pairs = ", ".join(f"{f.name!r}: {self.v(p)}" for p, f in changeable)
        self.fn.add(f"changes = {{name: value for name, value in {{{pairs}}}.items() if value is not None}}")
        self.fn.error("not changes", "invalid_arguments", "give at least one field to change")
        for p, f in changeable:
            self._validate_value(f, self.v(p), creating=False)
        consumes = self._consumes()
        if consumes or any(r.kind == "unique_together" for r in self.entity.rules):
            self.fn.add("record = {**current, **changes}")
        self._unique_together(creating=False)
        for qty, supply, sf, fk in consumes:
            give_back = f"((current[{qty!r}] or 0) if current[{fk!r}] == record[{fk!r}] else 0)"
            self._check_supply(qty, supply, sf, fk, "supply", give_back)
        for qty, supply, sf, fk in consumes:
            self._move_supply(supply, sf, f"current[{fk!r}]", f"current[{qty!r}]", "+")
            self._move_supply(supply, sf, f"record[{fk!r}]", f"record[{qty!r}]", "-")
        self._write_back()

    def _referrers(self) -> list[tuple[EntitySpec, str, str]]:
        """(entity, field, referenced field) of every foreign key pointing at this entity."""
        out = []
        for other in self.spec.entities:
            for f in other.fields:
                ent, _, ref_field = (f.references or "").partition(".")
                if f.references and ent in (self.entity.name, self.entity.table):
                    out.append((other, f.name, ref_field or self.pk))
        return out

    def _delete(self) -> None:
        key_p = key_param(self.entity, self.props) or self.pk
        self._load_current()
        for other, fk, ref_field in self._referrers():
            lookup = f"_select(state, {other.table!r}, {{{fk!r}: current[{ref_field!r}]}})"
            message = f"{_lit(self.entity.name)} {{!r}} is still referenced by {_lit(other.table)}"
            self.fn.error(lookup, "conflict", message, f"current[{self.pk!r}]")
        for qty, supply, sf, fk in self._consumes():
            self._move_supply(supply, sf, f"current[{fk!r}]", f"current[{qty!r}]", "+")
        self.fn.add(f"_delete(state, {self.table!r}, current[{self.pk!r}])")
        self.fn.add(f'return {{"deleted": True, {key_p!r}: current[{self.pk!r}]}}')

    def _action(self) -> None:
        getattr(self, f"_action_{self.op.action}")()

    def _amount(self) -> str:
        param = self.op.amount_param or "amount"
        self._require(param)
        self.fn.error(f"{self.v(param)} <= 0", "invalid_arguments", f"{_lit(param)} must be positive")
        return self.v(param)

    def _action_increment(self, sign: str = "+") -> None:
        name = self.op.field or ""
        self._load_current()
        amount = self._amount()
        self.fn.add(f"value = (current[{name!r}] or 0) {sign} {amount}")
        if self._non_negative(name):
            self.fn.error("value < 0", f"insufficient_{name}", f"only {{}} {_lit(name)} left", f"current[{name!r}]")
        if self.fields[name].maximum is not None:
            limit = self.fields[name].maximum
            self.fn.error(f"value > {limit!r}", "invalid_arguments", f"{_lit(name)} cannot exceed {limit}")
        self.fn.add(f"changes = {{{name!r}: _round(value)}}")
        self._write_back()

    def _action_decrement(self) -> None:
        self._action_increment("-")

    def _action_transition(self) -> None:
        name, to_value = self.op.field or "", self.op.to_value
        self._load_current()
        if self.op.from_values:
            allowed = _lit(", ".join(self.op.from_values))
            target = _lit(repr(to_value))
            message = (
                f"cannot move {_lit(self.entity.name)} from {_lit(name)} {{!r}} to {target} (only from: {allowed})"
            )
            self.fn.error(
                f"current[{name!r}] not in {tuple(self.op.from_values)!r}",
                "invalid_transition",
                message,
                f"current[{name!r}]",
            )
        self.fn.add(f"changes = {{{name!r}: {to_value!r}}}")
        key_p = key_param(self.entity, self.props)
        for p, f in self._field_params():
            if p != key_p and f.name not in (name, self.pk):
                self._validate_value(f, self.v(p), creating=False)
                self.fn.add(f"if {self.v(p)} is not None:")
                self.fn.add(f"    changes[{f.name!r}] = {self.v(p)}")
        self._write_back()

    def _action_transfer(self) -> None:
        name, ent = self.op.field or "", self.entity.name
        src, dst = self.v(f"from_{ent}_id"), self.v(f"to_{ent}_id")
        self._require(f"from_{ent}_id")
        self._require(f"to_{ent}_id")
        amount = self._amount()
        self.fn.error(f"{src} == {dst}", "invalid_arguments", f"cannot transfer to the same {_lit(ent)}")
        for local, var in (("source", src), ("destination", dst)):
            self.fn.add(f"{local} = _get(state, {self.table!r}, {var})")
            self.fn.error(f"{local} is None", "not_found", f"no {_lit(ent)} with id {{!r}}", var)
        if self._non_negative(name):
            self.fn.error(
                f"(source[{name!r}] or 0) < {amount}",
                f"insufficient_{name}",
                f"only {{}} {_lit(name)} left",
                f"source[{name!r}]",
            )
        self.fn.add(f"source = {{**source, {name!r}: _round((source[{name!r}] or 0) - {amount})}}")
        self.fn.add(f"destination = {{**destination, {name!r}: _round((destination[{name!r}] or 0) + {amount})}}")
        for local in ("source", "destination"):
            self.fn.add(f"_update(state, {self.table!r}, {local}[{self.pk!r}], {{{name!r}: {local}[{name!r}]}})")
        self.fn.add(f'return {{"from": source, "to": destination, {(self.op.amount_param or "amount")!r}: {amount}}}')


def generate_tools(spec: EnvSpec) -> str:
    """The source of tools.py for `spec`: helpers for its backend, then one function per realizable tool."""
    primary_keys = {e.table: e.primary_key for e in spec.entities}
    booleans = {e.table: tuple(f.name for f in e.fields if f.type == "boolean") for e in spec.entities}
    state_doc = (
        "a sqlite3 connection to the session database"
        if spec.backend == "sqlite"
        else "the path of the session's state directory (one <table>.json per collection)"
    )
    parts = [
        _HEADER.format(
            title=spec.title.replace('"', "'").replace("\\", "/"),
            imports="import datetime\nimport json\nimport re"
            if spec.backend == "sqlite"
            else "import datetime\nimport json\nimport os\nimport re\nimport tempfile",
            backend=spec.backend,
            state_doc=state_doc,
            primary_keys=primary_keys,
            boolean_fields={k: v for k, v in booleans.items() if v},
        ),
        f"DEFAULT_LIMIT = {DEFAULT_LIMIT}\nMAX_LIMIT = {MAX_LIMIT}\n",
        _SQLITE_HELPERS if spec.backend == "sqlite" else _FILES_HELPERS,
        _COMMON_HELPERS,
    ]
    skipped = unsupported_tools(spec)
    for tool in spec.tools:
        if tool.name not in skipped:
            op, entity = _check_tool(spec, tool)
            parts.append("\n\n" + _ToolWriter(spec, tool, op, entity).source())
    return "".join(parts).rstrip() + "\n"
