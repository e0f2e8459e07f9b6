"""Offline tool code generation: write `tools.py` of a bundle from its typed tool operations.

Each tool with a `ToolOperation` becomes one function `def name(state, ...)` whose keyword parameters
mirror the tool's JSON schema and whose body calls the runtime helpers of factory/envs/toolkit with literal
arguments: tables, fields and rules of its entity. The semantics follow the docstrings of `ToolOperation`
and `Rule` in factory/models.py. A bundle runs in a sandbox worker without factory, so the helpers'
source is copied into tools.py, which comes out formatted as ruff formats it.
"""

from __future__ import annotations

import ast
import functools
import inspect
import keyword
import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import NamedTuple

from factory.envs.entities.outputs import CONTROL_PARAMS, Paging, paging_style, param_field, query_param, range_field
from factory.envs.entities.params import list_edit_keys
from factory.envs.toolkit import common, files_store, sqlite_store
from factory.envs.toolkit.common import DEFAULT_LIMIT
from factory.lexicon import (
    LEDGER_AMOUNTS,
    LEDGER_KIND_FIELDS,
    LEDGER_KINDS,
    TIMESTAMP_COLUMNS,
    UPDATE_TIMESTAMP_COLUMNS,
)
from factory.models import EntitySpec, EnvSpec, FieldSpec, ToolOperation, ToolSpec
from factory.naming import snake_case

# Columns the tools maintain themselves: set from the latest existing value, ignored by verifiers.
NUMERIC_TYPES = ("integer", "number")
# Locals the generated bodies use; a parameter with one of these names is read from **params instead.
_RESERVED = {"state", "params", "db", "rows", "current", "changes", "record"}
_BATCH_LOCALS = {"item", "key", "values", "records", "found", "matched"}  # the loops of a batch tool's body
LINE_LENGTH = 120


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
    return [f.name for f in entity.fields if f.name in TIMESTAMP_COLUMNS]


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
    needs_key = needs_key and op.batch_param is None
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
    if op.batch_param is not None:
        _check_batch(op, entity, props)
    elif op.kind == "create" and not any(param_field(entity, p) for p in props):
        raise CodegenError("create tool has no parameter naming a field")
    return op, entity


def batch_items(op: ToolOperation, props: dict) -> dict:
    """The item schema of a batch tool's array parameter (`{}` when it states none)."""
    items = (props.get(op.batch_param or "") or {}).get("items")
    return items if isinstance(items, dict) else {}


def item_fields(entity: EntitySpec, items: dict) -> dict[str, FieldSpec]:
    """Declared item key -> the field it sets or matches (`entityType` -> `entity_type`)."""
    out = {}
    for key in items.get("properties") or {}:
        f = param_field(entity, snake_case(key) or key)
        if f is not None:
            out[key] = f
    return out


def _check_batch(op: ToolOperation, entity: EntitySpec, props: dict) -> None:
    if op.kind == "action" and op.action in ("append", "remove"):
        lists = {f.name for f in entity.fields if f.format == "list"}
        keys = list_edit_keys(entity.name, {f.name for f in entity.fields}, batch_items(op, props))
        if op.field not in lists or keys is None:
            raise CodegenError(f"the items of {op.batch_param!r} name no {entity.name} and values of a list field")
        return
    if op.kind not in ("create", "delete", "get"):
        raise CodegenError(f"a batch {op.kind} is not supported")
    prop = props.get(op.batch_param or "")
    if not isinstance(prop, dict) or prop.get("type") != "array":
        raise CodegenError(f"batch parameter {op.batch_param!r} is not an array")
    items = batch_items(op, props)
    fields = item_fields(entity, items)
    if op.key_field is not None and op.key_field not in {f.name for f in entity.fields}:
        raise CodegenError(f"batch items name rows by unknown field {op.key_field!r}")
    if items.get("type") != "object":
        if op.kind == "create":
            raise CodegenError("a batch create needs items that are objects")
        return
    if op.kind == "create" and not fields:
        raise CodegenError("batch items name no field")
    if op.kind == "create" and (
        consumed_supplies_rules(entity) or any(r.kind == "unique_together" for r in entity.rules)
    ):
        raise CodegenError("a batch create of rows that draw on a supply or are unique together is not supported")
    unmatched = [k for k in items.get("properties") or {} if k not in fields]
    if op.kind != "create" and (unmatched or not fields):
        raise CodegenError(f"batch items hold values that are no field: {', '.join(unmatched) or 'none'}")


def consumed_supplies_rules(entity: EntitySpec) -> bool:
    return any(r.kind == "consumes" for r in entity.rules)


# --- business rules, shared with factory.envs.testgen ------------------------------------------


class Supply(NamedTuple):
    """A consumes rule resolved against the entities: a row's `quantity` (None: one unit) is taken from
    `supply_field` of the `supply` row its `foreign_key` names; a row whose `status` is one of `released`
    holds none of it (a releases rule)."""

    quantity: str | None
    supply: EntitySpec
    supply_field: str
    foreign_key: str
    status: str | None = None
    released: tuple[str, ...] = ()


def consumed_supplies(entities: list[EntitySpec], entity: EntitySpec) -> list[Supply]:
    """The consumes rules of `entity` the tools enforce: those whose supply field exists and is referenced."""
    fields = {f.name for f in entity.fields}
    out = []
    for rule in entity.rules:
        if rule.kind != "consumes" or not rule.target or (rule.field is not None and rule.field not in fields):
            continue
        name, _, supply_field = rule.target.partition(".")
        supply = find_entity(entities, name)
        if supply is None or supply_field not in {f.name for f in supply.fields}:
            continue
        refs = [
            f.name for f in entity.fields if f.references and f.references.split(".")[0] in (supply.name, supply.table)
        ]
        releases = [
            r
            for r in entity.rules
            if r.kind == "releases" and r.field in fields and r.fields and r.target in (rule.target, None)
        ]
        status, released = (releases[0].field, tuple(releases[0].fields or ())) if releases else (None, ())
        if refs:
            out.append(Supply(rule.field, supply, supply_field, refs[0], status, released))
    return out


def closed_states(entity: EntitySpec) -> tuple[str | None, tuple[str, ...]]:
    """The status field of `entity` and its closed states (a terminal rule), or (None, ())."""
    fields = {f.name for f in entity.fields}
    for rule in entity.rules:
        if rule.kind == "terminal" and rule.field in fields and rule.fields:
            return rule.field, tuple(rule.fields)
    return None, ()


class Ledger(NamedTuple):
    """A ledger rule resolved: amount changes are written as rows of `entity` naming the moved row by
    `foreign_key`, the amount in `amount` (negative for money going out when there is no `kind` column) and
    the direction in `kind` (values by movement: increment, decrement, transfer_out, transfer_in)."""

    entity: EntitySpec
    foreign_key: str
    amount: str
    kind: str | None
    kinds: dict[str, str]


def ledger_of(entities: list[EntitySpec], entity: EntitySpec, field: str | None) -> Ledger | None:
    """How amount changes of `field` on `entity` are recorded, when a ledger rule says so."""
    for rule in entity.rules:
        if rule.kind != "ledger" or rule.field != field or not rule.target:
            continue
        ledger = find_entity(entities, rule.target)
        if ledger is None:
            continue
        by_name = {f.name: f for f in ledger.fields}
        fks = [f.name for f in ledger.fields if (f.references or "").split(".")[0] in (entity.name, entity.table)]
        amount = next((n for n in LEDGER_AMOUNTS if n in by_name and by_name[n].type in NUMERIC_TYPES), None)
        if not fks or amount is None:
            continue
        kind = next((n for n in LEDGER_KIND_FIELDS if n in by_name and by_name[n].enum), None)
        values = by_name[kind].enum or [] if kind else []
        kinds = {}
        for movement, words in LEDGER_KINDS.items():
            hit = next((w for w in words if w in values), None)
            if hit is not None:
                kinds[movement] = hit
        if kind is not None and not {"increment", "decrement"} <= set(kinds):
            kind, kinds = None, {}
        return Ledger(ledger, fks[0], amount, kind, kinds)
    return None


def ledger_entry(ledger: Ledger, key: object, amount: object, movement: str) -> dict[str, object]:
    """The fields a ledger row of one movement gets (the others are None, enums their first value)."""
    entry: dict[str, object] = {}
    for f in ledger.entity.fields:
        entry[f.name] = f.enum[0] if f.enum and f.name != ledger.entity.primary_key else None
    entry[ledger.foreign_key] = key
    entry[ledger.amount] = amount
    if ledger.kind is not None:
        value = ledger.kinds.get(movement) or ledger.kinds["decrement" if movement == "transfer_out" else "increment"]
        entry[ledger.kind] = value
    return entry


def referrers(entities: list[EntitySpec], entity: EntitySpec) -> list[tuple[EntitySpec, str, str]]:
    """(entity, field, referenced field) of every foreign key pointing at `entity`."""
    out = []
    for other in entities:
        for f in other.fields:
            name, _, ref_field = (f.references or "").partition(".")
            if f.references and name in (entity.name, entity.table):
                out.append((other, f.name, ref_field or entity.primary_key))
    return out


Referrer = tuple[EntitySpec, str, str]


def delete_referrers(
    entities: list[EntitySpec], entity: EntitySpec, op: ToolOperation
) -> tuple[list[Referrer], list[Referrer]]:
    """The foreign keys pointing at `entity`, split for a delete: those whose rows refuse it (`conflict`), and
    those of the tables it takes along (`op.cascade`)."""
    cascade = op.cascade or []
    found = referrers(entities, entity)
    return [r for r in found if r[0].table not in cascade], [r for r in found if r[0].table in cascade]


_BLANK_VALUES: dict[str, object] = {
    "integer": 0,
    "number": 0,
    "boolean": False,
    "date": "2025-01-01",
    "datetime": "2025-01-01T00:00:00",
}


def create_defaults(entity: EntitySpec, settable: set[str]) -> dict[str, object]:
    """The values a create gives fields the caller left out: an enum its first value, and a required (NOT NULL)
    field no parameter sets (a server-made token) a blank of its type; keys, stamps and references excluded."""
    out: dict[str, object] = {f.name: f.enum[0] for f in entity.fields if f.enum and f.name != entity.primary_key}
    for f in entity.fields:
        unset = f.required and f.name not in settable and f.name not in out and f.name != entity.primary_key
        if unset and f.name not in TIMESTAMP_COLUMNS and not f.references:
            out[f.name] = _BLANK_VALUES.get(f.type, "")
    return out


def is_non_negative(entity: EntitySpec, field: str) -> bool:
    """Whether a rule keeps `field` of `entity` at 0 or more."""
    return any(r.kind == "non_negative" and r.field == field for r in entity.rules)


# --- writing Python: values as literals, calls and collections laid out to fit the line -------------

_INDENT = "    "


@dataclass(frozen=True)
class _Code:
    """An expression written as text (a local name, `record["id"]`); never split across lines."""

    text: str


@dataclass(frozen=True)
class _Call:
    """`func(*args, **kwargs)`; arguments are Python values (written as literals), _Code or _Call."""

    func: str
    args: tuple[object, ...] = ()
    kwargs: tuple[tuple[str, object], ...] = ()


def _call(func: str, *args: object, **kwargs: object) -> _Call:
    return _Call(func, args, tuple(kwargs.items()))


def _item(name: str, key: str) -> _Code:
    """`name[key]`, e.g. record["product_id"]."""
    return _Code(f"{name}[{_literal(key)}]")


STATE, DB, ROWS, CURRENT, CHANGES, RECORD = (_Code(n) for n in ("state", "db", "rows", "current", "changes", "record"))


def _literal(value: object) -> str:
    """`value` as ruff writes it: strings in double quotes unless they hold more double than single quotes."""
    if isinstance(value, str):
        quote = "'" if value.count('"') > value.count("'") else '"'
        escaped = ("\\" + c if c in ("\\", quote) else c if c.isprintable() else repr(c)[1:-1] for c in value)
        return quote + "".join(escaped) + quote
    if value is None or isinstance(value, bool | int) or (isinstance(value, float) and math.isfinite(value)):
        return repr(value)
    raise CodegenError(f"{value!r} cannot be written as a literal")


def _parts(value: object) -> tuple[str, list[tuple[str, object]], str] | None:
    """Opening bracket, (prefix, item) pairs and closing bracket of a call or collection; None for atoms."""
    if isinstance(value, _Call):
        items = [("", a) for a in value.args] + [(f"{k}=", v) for k, v in value.kwargs]
        return f"{value.func}(", items, ")"
    if isinstance(value, dict):
        return "{", [(f"{_literal(k)}: ", v) for k, v in value.items()], "}"
    if isinstance(value, list):
        return "[", [("", v) for v in value], "]"
    if isinstance(value, tuple):
        return "(", [("", v) for v in value], ")"
    return None


def _flat(value: object) -> str:
    if isinstance(value, _Code):
        return value.text
    parts = _parts(value)
    if parts is None:
        return _literal(value)
    opening, items, closing = parts
    inner = ", ".join(prefix + _flat(item) for prefix, item in items)
    one_tuple = isinstance(value, tuple) and len(value) == 1
    return opening + inner + ("," if one_tuple else "") + closing


def _layout(value: object, indent: str, prefix: str = "", suffix: str = "") -> list[str]:
    """`prefix value suffix` on one line when it fits, else with the brackets of `value` open, one item per line.

    The trailing comma after the last item makes ruff keep that layout, so the output is already formatted.
    """
    line = indent + prefix + _flat(value) + suffix
    parts = _parts(value)
    if len(line) <= LINE_LENGTH or parts is None or not parts[1]:
        return [line]
    opening, items, closing = parts
    lines = [indent + prefix + opening]
    for item_prefix, item in items:
        lines += _layout(item, indent + _INDENT, item_prefix, ",")
    return [*lines, indent + closing + suffix]


def _text(text: str) -> str:
    """`text` on one line, safe inside a triple-quoted string."""
    printable = "".join(c if c.isprintable() else " " for c in text)
    return " ".join(printable.split()).replace("\\", "\\\\").replace('"""', "'''")


def _docstring(paragraphs: list[str], indent: str) -> list[str]:
    """The docstring of `paragraphs`, wrapped so that each line with its quotes fits LINE_LENGTH.

    Text that fits one line stays on one line with both quotes: ruff would join it anyway.
    """
    lines: list[str] = []
    for text in (_text(p) for p in paragraphs):
        lines += ["", *textwrap.wrap(text, LINE_LENGTH - len(indent) - 6, break_long_words=False)]
    first, *rest = lines[1:]
    if not rest:
        # A quote right before the closing quotes would end the string one quote early.
        space = " " if first.endswith('"') else ""
        return [f'{indent}"""{first}{space}"""']
    return [f'{indent}"""{first}', *(indent + line if line else "" for line in rest), f'{indent}"""']


class _Block:
    """The statements of a function body."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.indent = _INDENT

    def do(self, value: object) -> None:
        self.lines += _layout(value, self.indent)

    def let(self, name: str, value: object) -> None:
        self.lines += _layout(value, self.indent, f"{name} = ")

    def ret(self, value: object) -> None:
        self.lines += _layout(value, self.indent, "return ")

    def refuse(self, code: str, message: str, value: _Code) -> None:
        """`raise _Refusal(code, message + repr(value))`."""
        self.lines += _layout(
            _call("_Refusal", code, _Code(f"{_literal(message)} + repr({value.text})")), self.indent, "raise "
        )

    def open(self, header: str) -> None:
        """A `for`/`if` statement whose body the next statements are, until `close`."""
        self.lines.append(self.indent + header)
        self.indent += _INDENT

    def close(self) -> None:
        self.indent = self.indent[: -len(_INDENT)]


# --- the runtime copied into tools.py -----------------------------------------------------------

_RUNTIME: dict[str, tuple[ModuleType, ...]] = {"sqlite": (common, sqlite_store), "files": (common, files_store)}
_STORES = {
    "sqlite": _call("_SqliteStore", STATE, _Code("_PRIMARY_KEYS"), _Code("_BOOLEAN_FIELDS")),
    "files": _call("_FileStore", STATE, _Code("_PRIMARY_KEYS")),
}


def _list_columns(spec: EnvSpec) -> dict[str, tuple[str, ...]]:
    """Table -> its list columns (`_LIST_FIELDS`), for the tables that have some."""
    lists = {e.table: tuple(f.name for f in e.fields if f.format == "list") for e in spec.entities}
    return {t: names for t, names in lists.items() if names}


def _store(spec: EnvSpec) -> _Call:
    """The store a tool opens: a sqlite one with list columns decodes them (`_LIST_FIELDS`)."""
    if spec.backend == "sqlite" and _list_columns(spec):
        return _call("_SqliteStore", STATE, _Code("_PRIMARY_KEYS"), _Code("_BOOLEAN_FIELDS"), _Code("_LIST_FIELDS"))
    return _STORES[spec.backend]


_STATE_DOCS = {
    "sqlite": "a sqlite3 connection to the session database",
    "files": "the path of the session's state directory (one <table>.json per collection)",
}


class _ModuleCode(NamedTuple):
    """A toolkit module split for copying: its imports (run time and typing only) and its code."""

    imports: tuple[ast.Import, ...]
    typing_imports: tuple[ast.Import | ast.ImportFrom, ...]
    code: str


def _is_preamble(node: ast.stmt) -> bool:
    """The module docstring or `from __future__ import annotations`: tools.py has its own."""
    docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    return docstring or (isinstance(node, ast.ImportFrom) and node.module == "__future__")


def _is_type_checking(node: ast.stmt) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return isinstance(test, ast.Attribute) and isinstance(test.value, ast.Name) and test.attr == "TYPE_CHECKING"


@functools.cache
def runtime_code(module: ModuleType) -> _ModuleCode:
    """A toolkit module as tools.py gets it: the layout factory/envs/toolkit/__init__.py describes."""
    source = inspect.getsource(module)
    imports: list[ast.Import] = []
    typing_imports: list[ast.Import | ast.ImportFrom] = []
    end = 0
    for node in ast.parse(source).body:
        if isinstance(node, ast.Import):
            imports.append(node)
        elif isinstance(node, ast.If) and _is_type_checking(node):
            if not all(isinstance(n, ast.Import | ast.ImportFrom) for n in node.body):
                raise ValueError(f"{module.__name__}: only imports may be typing-only")
            typing_imports += [n for n in node.body if isinstance(n, ast.Import | ast.ImportFrom)]
        elif not _is_preamble(node):
            break
        end = node.end_lineno or end
    code = "\n".join(source.splitlines()[end:]).strip()
    return _ModuleCode(tuple(imports), tuple(typing_imports), code)


def _import_lines(nodes: Sequence[ast.Import | ast.ImportFrom]) -> list[str]:
    """`nodes` merged and ordered as isort writes them: `import x` lines, then `from x import a, b` lines."""
    plain = sorted({a.name for n in nodes if isinstance(n, ast.Import) for a in n.names})
    names: dict[str, set[str]] = {}
    for n in nodes:
        if isinstance(n, ast.ImportFrom):
            names.setdefault(n.module or "", set()).update(a.name for a in n.names)
    froms = [f"from {m} import {', '.join(sorted(ns))}" for m, ns in sorted(names.items())]
    return [f"import {m}" for m in plain] + froms


def _module_head(spec: EnvSpec) -> str:
    """The docstring and the imports of tools.py: those of the toolkit modules it holds."""
    title = f"Tools of the {spec.title} environment ({spec.backend} backend), generated by factory.envs.codegen."
    about = (
        f"Each tool is `name(state, **params)`; `state` is {_STATE_DOCS[spec.backend]}. Tools return JSON "
        'values; failures are `{"error": {"code": ..., "message": ...}}`. The helpers before the tools are '
        "copied from factory/envs/toolkit, so this module needs nothing but the standard library. New ids "
        "continue the largest existing id and timestamps continue the latest existing one, so the same calls "
        "always give the same answers."
    )
    parts = [runtime_code(m) for m in _RUNTIME[spec.backend]]
    lines = [*_docstring([title, about], ""), "", "from __future__ import annotations", ""]
    lines += _import_lines([n for p in parts for n in p.imports])
    typing_only = _import_lines([n for p in parts for n in p.typing_imports])
    if typing_only:
        lines += ["", "if typing.TYPE_CHECKING:", *(_INDENT + line for line in typing_only)]
    return "\n".join(lines)


def _schema(spec: EnvSpec) -> str:
    """The tables of the environment as the store of its backend needs them."""
    lines = _layout(spec.primary_keys(), "", "_PRIMARY_KEYS = ")
    if spec.backend == "sqlite":
        booleans = {e.table: tuple(f.name for f in e.fields if f.type == "boolean") for e in spec.entities}
        lines += _layout({t: names for t, names in booleans.items() if names}, "", "_BOOLEAN_FIELDS = ")
        if _list_columns(spec):
            lines += _layout(_list_columns(spec), "", "_LIST_FIELDS = ")
    return "\n".join(lines)


# --- per-tool code ------------------------------------------------------------------------------


def _page_default(paging: Paging, name: str) -> int | None:
    """The smallest value the paging helpers take for paging parameter `name` (None: not a counted one)."""
    if name == paging.size:
        return 1
    if name == paging.position and paging.style != "cursor":
        return paging.first
    return None


def _counted(value: object, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


class _ToolWriter:
    """Writes one tool function from its operation, schema and entity."""

    def __init__(self, spec: EnvSpec, tool: ToolSpec, op: ToolOperation, entity: EntitySpec):
        self.spec, self.tool, self.op, self.entity = spec, tool, op, entity
        self.props = _props(tool)
        self.paging = paging_style(self.props)
        self.fields = {f.name: f for f in entity.fields}
        self.pk = entity.primary_key
        self.table = entity.table
        self.body = _Block()
        self.local: dict[str, str] = {}
        self.used: set[str] = set()  # parameters the body reads
        self.from_params = False  # whether the body reads its parameters from **params
        self.checked: set[str] = set()

    def source(self) -> str:
        signature = self._signature()
        self.body.let("db", _store(self.spec))
        self._require(*[p for p in self.tool.parameters.get("required") or [] if p in self.props])
        getattr(self, f"_batch_{self.op.kind}" if self.op.batch_param else f"_{self.op.kind}")()
        doc = _docstring([self.tool.description if _text(self.tool.description) else self.tool.name], _INDENT)
        lines = ["@_tool", *_layout(signature, "", "def ", ":"), *doc]
        for p in self.props if self.from_params else ():
            if p in self.used:
                default = () if self._default(p) is None else (self._default(p),)
                lines += _layout(_call("params.get", p, *default), _INDENT, f"{self.local[p]} = ")
        return "\n".join([*lines, *self.body.lines])

    def _signature(self) -> _Call:
        """`name(state, p=default, ...)`, or `name(state, **params)` when a parameter name is no plain local."""
        names = list(self.props)
        plain = all(n.isidentifier() and not keyword.iskeyword(n) and not n.startswith("_") for n in names)
        plain = plain and not ((_RESERVED | (_BATCH_LOCALS if self.op.batch_param else set())) & set(names))
        defaults = {n: self._default(n) for n in names}
        self.from_params = not plain
        if plain:
            self.local = {n: n for n in names}
            return _Call(self.tool.name, (STATE,), tuple(defaults.items()))
        self.local = {n: f"arg_{i}" for i, n in enumerate(names)}
        # positional-only: a tool parameter may itself be called `state`
        return _Call(self.tool.name, (STATE, _Code("/"), _Code("**params")))

    def _default(self, name: str) -> object:
        prop = self.props[name]
        value = prop.get("default") if isinstance(prop, dict) else None
        least = _page_default(self.paging, name) if self.op.kind in ("list", "search") else None
        if least is not None and not _counted(value, least):
            # no default, or one the paging helpers refuse (an API's `limit: -1` meaning "all", a string)
            return DEFAULT_LIMIT if name == self.paging.size else least
        return value if isinstance(value, str | int | float | bool) else None

    # parameters

    def v(self, param: str) -> _Code:
        """The local holding the parameter's value."""
        self.used.add(param)
        return _Code(self.local[param])

    def _opt(self, param: str) -> _Code | None:
        return self.v(param) if param in self.props else None

    def _page_arg(self, param: str) -> _Code | None:
        """`limit`/`offset` for _page, when the schema types it as an integer (a string limit pages by default)."""
        prop = self.props.get(param)
        types = prop.get("type") if isinstance(prop, dict) else None
        integer = types is None or "integer" in ([types] if isinstance(types, str) else types)
        return self._opt(param) if integer else None

    def _field_params(self) -> list[tuple[str, FieldSpec]]:
        """(parameter, field) for every parameter naming a field of the entity."""
        out = []
        for p in self.props:
            f = param_field(self.entity, p)
            if f is not None:
                out.append((p, f))
        return out

    def _select(self) -> _Call:
        """`db.select(...)` with the equality filters and min_/max_ range filters of the parameters."""
        where: dict[str, object] = {}
        ranges: dict[str, list[object]] = {}
        control = (*CONTROL_PARAMS, query_param(self.props)) if self.op.kind in ("search", "aggregate") else ()
        if self.op.kind in ("list", "search"):
            control = (*control, *self.paging.params)
        for p in self.props:
            if p in control:
                continue
            f = param_field(self.entity, p)
            bounded = range_field(self.entity, p)
            if f is not None:
                where[f.name] = self.v(p)
            elif bounded is not None:
                ranges.setdefault(bounded[0], [None, None])[bounded[1]] = self.v(p)
        args: list[object] = [self.table]
        if where or ranges:
            args.append(where)
        if ranges:
            args.append({name: tuple(bounds) for name, bounds in ranges.items()})
        return _call("db.select", *args)

    # shared checks

    def _require(self, *params: str) -> None:
        todo = [p for p in dict.fromkeys(params) if p not in self.checked]
        if todo:
            self.checked.update(todo)
            self.body.do(_call("_require", {p: self.v(p) for p in todo}))

    def _find(self) -> _Call:
        """`_find(...)` of the row the key parameter names, after requiring that parameter."""
        param = key_param(self.entity, self.props) or ""
        self._require(param)
        return _call("_find", DB, self.table, self.v(param), self.entity.name)

    def _validate(self, f: FieldSpec, value: _Code, *, creating: bool) -> None:
        """Checks on one given field value: enum, format, sign, range, foreign key, uniqueness."""
        if f.enum:
            self.body.do(_call("_check_one_of", f.name, value, tuple(f.enum)))
        if f.type in ("date", "datetime"):
            self.body.do(_call("_check_time", f.name, value, f.type))
        consumed = any(r.kind == "consumes" and r.field == f.name for r in self.entity.rules)
        sign_code = f"insufficient_{f.name}" if is_non_negative(self.entity, f.name) else None
        sign_code = sign_code or ("invalid_arguments" if consumed else None)
        if sign_code:
            self.body.do(_call("_check_not_negative", f.name, value, sign_code))
        numeric = f.type in NUMERIC_TYPES  # a bound on a text field (a length) is the schema's to check
        if numeric and f.minimum is not None and not (sign_code and f.minimum <= 0):
            self.body.do(_call("_check_at_least", f.name, value, f.minimum))
        if numeric and f.maximum is not None:
            self.body.do(_call("_check_at_most", f.name, value, f.maximum))
        target = find_entity(self.spec.entities, f.references.partition(".")[0]) if f.references else None
        if f.references and target is not None:
            ref_field = f.references.partition(".")[2] or target.primary_key
            self.body.do(_call("_check_reference", DB, target.table, ref_field, value, target.name))
            status, closed = closed_states(target)
            if status:
                args = (DB, target.table, ref_field, value, target.name, status, closed)
                self.body.do(_call("_check_open_reference", *args))
        if f.unique or (creating and f.name == self.pk):
            current = {} if creating else {"current": CURRENT}
            self.body.do(_call("_check_unique", DB, self.table, f.name, value, self.entity.name, **current))

    @staticmethod
    def _held(s: Supply, row: _Code) -> _Call:
        """What `row` holds of the supply `s` (see `_held` of the toolkit)."""
        extra = (s.status, s.released) if s.status else ()
        return _call("_held", row, s.quantity, *extra)

    def _check_supplies(self, supplies: list[Supply], *, updating: bool = False) -> None:
        """Refuse the write when a supply it draws on (stock, budget) has too little left."""
        for s in supplies:
            args = (DB, s.supply.table, s.supply_field, s.supply.name, _item("record", s.foreign_key))
            old = (_item("current", s.foreign_key), self._held(s, CURRENT)) if updating else ()
            self.body.do(_call("_check_supply", *args, self._held(s, RECORD), *old))

    def _move_supplies(self, supplies: list[Supply], *, taking: bool = True, giving: bool = True) -> None:
        """Give back what the row held (`current`) and take what it holds now (`record`)."""
        for s in supplies:
            if giving:
                key = _item("current", s.foreign_key)
                self.body.do(_call("_return_supply", DB, s.supply.table, s.supply_field, key, self._held(s, CURRENT)))
            if taking:
                key = _item("record", s.foreign_key)
                self.body.do(_call("_take_supply", DB, s.supply.table, s.supply_field, key, self._held(s, RECORD)))

    def _check_open(self) -> None:
        """Refuse changing the row `current` when it is closed (a terminal rule)."""
        status, closed = closed_states(self.entity)
        if status:
            self.body.do(_call("_check_open", CURRENT, self.entity.name, status, closed))

    def _complete_record(self, settable: set[str]) -> None:
        """A new `record` gets the defaults of the fields no parameter sets, then its key."""
        defaults = create_defaults(self.entity, settable)
        if defaults:
            self.body.do(_call("_fill_defaults", RECORD, defaults))
        integer_key = self.fields[self.pk].type == "integer"
        prefix = None if integer_key else (self.entity.id_prefix or f"{self.entity.name[:3]}_")
        self.body.do(_call("_assign_key", DB, self.table, RECORD, prefix))

    def _unique_together(self) -> None:
        for rule in self.entity.rules:
            names = tuple(n for n in (rule.fields or []) if n in self.fields)
            if rule.kind == "unique_together" and names:
                self.body.do(_call("_check_unique_together", DB, self.table, RECORD, names, self.entity.name))

    def _write_back(self) -> None:
        stamps = {n: self.fields[n].type for n in timestamp_fields(self.entity) if n in UPDATE_TIMESTAMP_COLUMNS}
        self.body.ret(_call("_write_changes", DB, self.table, CURRENT, CHANGES, stamps))

    # operations

    def _page(self) -> _Call:
        """The page of `rows` the tool's paging parameters ask for, in the tool's paging style."""
        paging = self.paging
        if paging.unpaged:
            return _call("_every_row", ROWS)
        size = self._page_arg(paging.size) if paging.size else None
        if paging.style == "cursor":
            return _call("_cursor_page", ROWS, size, self._opt(paging.position or ""))
        if paging.count_only:
            return _call("_first_rows", ROWS, size)
        position = self._page_arg(paging.position) if paging.position else None
        if paging.style == "page":
            return _call("_numbered_page", ROWS, size, position, paging.first)
        return _call("_page", ROWS, size, position)

    def _list(self) -> None:
        self.body.let("rows", self._select())
        self.body.ret(self._page())

    def _search(self) -> None:
        self.body.let("rows", self._select())
        query = query_param(self.props)
        if query:
            self.body.let("rows", _call("_search", ROWS, self.v(query), tuple(searchable_fields(self.entity))))
        self.body.ret(self._page())

    def _get(self) -> None:
        self.body.ret(self._find())

    def _aggregate(self) -> None:
        numeric = tuple(f.name for f in self.entity.fields if f.type in NUMERIC_TYPES)
        field: object = self.op.field
        if "field" in self.props:
            field = _Code(f"{self.v('field').text} or {_literal(self.op.field)}") if self.op.field else self.v("field")
        group_by = self._opt("group_by")
        if field is not None:
            self.body.do(_call("_check_one_of", "field", field, numeric))
        if group_by is not None:
            self.body.do(_call("_check_one_of", "group_by", group_by, tuple(self.fields)))
        self.body.let("rows", self._select())
        self.body.ret(_call("_aggregate", ROWS, field, group_by))

    def _create(self) -> None:
        by_field = {f.name: p for p, f in self._field_params()}
        self._require(
            *[
                by_field[f.name]
                for f in self.entity.fields
                if f.required and f.name != self.pk and f.name not in TIMESTAMP_COLUMNS and f.name in by_field
            ]
        )
        for p, f in self._field_params():
            self._validate(f, self.v(p), creating=True)
        self.body.let(
            "record", {f.name: self.v(by_field[f.name]) if f.name in by_field else None for f in self.fields.values()}
        )
        self._complete_record(set(by_field))
        self._unique_together()
        supplies = consumed_supplies(self.spec.entities, self.entity)
        self._check_supplies(supplies)
        self._move_supplies(supplies, giving=False)
        stamps = {n: self.fields[n].type for n in timestamp_fields(self.entity)}
        if stamps:
            self.body.do(_call("_stamp", DB, self.table, RECORD, stamps, only_missing=True))
        self.body.do(_call("db.insert", self.table, RECORD))
        self.body.ret(RECORD)

    def _update(self) -> None:
        key_p = key_param(self.entity, self.props)
        self.body.let("current", self._find())
        self._check_open()
        changeable = [(p, f) for p, f in self._field_params() if p != key_p and f.name != self.pk]
        self.body.let("changes", _call("_changes", {f.name: self.v(p) for p, f in changeable}))
        for p, f in changeable:
            self._validate(f, self.v(p), creating=False)
        supplies = consumed_supplies(self.spec.entities, self.entity)
        if supplies or any(r.kind == "unique_together" for r in self.entity.rules):
            self.body.let("record", _Code("{**current, **changes}"))
        self._unique_together()
        self._check_supplies(supplies, updating=True)
        self._move_supplies(supplies)
        self._write_back()

    def _delete(self) -> None:
        key_p = key_param(self.entity, self.props) or self.pk
        self.body.let("current", self._find())
        key = _item("current", self.pk)
        self._check_referrers(key)
        self._move_supplies(consumed_supplies(self.spec.entities, self.entity), taking=False)
        self._delete_referrers()
        self.body.do(_call("db.delete", self.table, key))
        self.body.ret({"deleted": True, key_p: key})

    def _check_referrers(self, key: _Code) -> None:
        """Refuse deleting `current` while rows point at it, but for the tables the delete takes along."""
        for other, fk, ref_field in delete_referrers(self.spec.entities, self.entity, self.op)[0]:
            where = {fk: _item("current", ref_field)}
            self.body.do(_call("_check_unreferenced", DB, self.entity.name, key, other.table, where))

    def _delete_referrers(self) -> None:
        """Delete the rows of the cascaded tables that point at `current`."""
        for other, fk, ref_field in delete_referrers(self.spec.entities, self.entity, self.op)[1]:
            self.body.do(_call("_delete_where", DB, other.table, {fk: _item("current", ref_field)}))

    # batch operations: the single-item checks on every item, then the writes (see ToolOperation)

    def _item_values(self) -> list[tuple[str, FieldSpec, _Code]]:
        """(declared key, field, `item.get(key)`) of every item property naming a field."""
        fields = item_fields(self.entity, batch_items(self.op, self.props))
        return [(key, f, _Code(f"item.get({_literal(key)})")) for key, f in fields.items()]

    def _find_each(self, items: _Code) -> None:
        """`found`: the row each item names (by the key field or the primary key), refused when one is missing."""
        self.body.let("found", [])
        self.body.open(f"for key in {items.text}:")
        if self.op.key_field is None:
            self.body.do(_call("found.append", _call("_find", DB, self.table, _Code("key"), self.entity.name)))
        else:
            select = _call("db.select", self.table, {self.op.key_field: _Code("key")})
            self._extend_found(select, f"no {self.entity.name} with {self.op.key_field} ", "key")
        self.body.close()

    def _match_each(self, items: _Code) -> None:
        """`found`: the rows each item's values match, refused when an item matches none."""
        self.body.let("found", [])
        self.body.open(f"for item in {items.text}:")
        select = _call("db.select", self.table, {f.name: v for _, f, v in self._item_values()})
        self._extend_found(select, f"no {self.entity.name} matches ", "item")
        self.body.close()

    def _extend_found(self, select: _Call, message: str, shown: str) -> None:
        """`found` gets the rows `select` matches; none matched is `not_found`, naming the item by `shown`."""
        self.body.let("matched", select)
        self.body.open("if not matched:")
        self.body.lines.append(f'{self.body.indent}raise _Refusal("not_found", {_literal(message)} + repr({shown}))')
        self.body.close()
        self.body.do(_call("found.extend", _Code("matched")))

    def _refuse_repeat(self, key: str, f: FieldSpec, value: _Code) -> None:
        """Refuse an item whose unique `f` an earlier item of the batch already has."""
        self.body.open(f"if {value.text} is not None and {value.text} in [r[{_literal(f.name)}] for r in records]:")
        message = f"two items have the same {key}: "
        self.body.lines.append(
            f'{self.body.indent}raise _Refusal("conflict", {_literal(message)} + repr({value.text}))'
        )
        self.body.close()

    def _named_rows(self, items: _Code) -> None:
        """`found`: the rows the items name, by their values (object items) or by key (scalar items)."""
        if batch_items(self.op, self.props).get("type") == "object":
            self._match_each(items)
        else:
            self._find_each(items)

    def _batch_get(self) -> None:
        self._named_rows(self.v(self.op.batch_param or ""))
        self.body.ret({self.table: _Code("found")})

    def _batch_delete(self) -> None:
        items = self.v(self.op.batch_param or "")
        self._named_rows(items)
        if delete_referrers(self.spec.entities, self.entity, self.op)[0]:
            self.body.open("for current in found:")
            self._check_referrers(_item("current", self.pk))
            self.body.close()
        self.body.open("for current in found:")
        self._delete_referrers()
        self.body.do(_call("db.delete", self.table, _item("current", self.pk)))
        self.body.close()
        self.body.ret({"deleted": True, self.op.batch_param or "": items})

    def _batch_action(self) -> None:
        """Append to or remove from the list field of the row each item names (see ToolOperation)."""
        named, values, key_field = list_edit_keys(
            self.entity.name, set(self.fields), batch_items(self.op, self.props)
        ) or ("", "", "")
        items = self.v(self.op.batch_param or "")
        name, given = _Code(f"item.get({_literal(named)})"), _Code(f"item.get({_literal(values)})")
        self.body.let("found", [])
        self.body.open(f"for item in {items.text}:")
        self.body.do(_call("_require", {named: name, values: given}))
        self.body.let("matched", _call("db.select", self.table, {key_field: name}))
        self.body.open("if not matched:")
        self.body.refuse("not_found", f"no {self.entity.name} with {key_field} ", name)
        self.body.close()
        self.body.do(_call("found.append", _Code(f"(matched[0][{_literal(self.pk)}], {given.text})")))
        self.body.close()
        add = self.op.action == "append"
        edit = _call("_edit_list", DB, self.table, _Code("key"), self.op.field, _Code("values"), add)
        self.body.ret({self.table: _Code(f"[{_flat(edit)} for key, values in found]")})

    def _batch_create(self) -> None:
        values = self._item_values()
        self.body.let("records", [])
        self.body.open(f"for item in {self.v(self.op.batch_param or '').text}:")
        required = [
            (k, v) for k, f, v in values if f.required and f.name != self.pk and f.name not in TIMESTAMP_COLUMNS
        ]
        if required:
            self.body.do(_call("_require", dict(required)))
        for _, f, v in values:
            self._validate(f, v, creating=True)
        for key, f, v in values:
            if f.unique:  # two items of the batch with one value
                self._refuse_repeat(key, f, v)
        by_field = {f.name: v for _, f, v in values}
        self.body.do(_call("records.append", {name: by_field.get(name) for name in self.fields}))
        self.body.close()
        self.body.open("for record in records:")
        self._complete_record(set(by_field))
        stamps = {n: self.fields[n].type for n in timestamp_fields(self.entity)}
        if stamps:
            self.body.do(_call("_stamp", DB, self.table, RECORD, stamps, only_missing=True))
        self.body.do(_call("db.insert", self.table, RECORD))
        self.body.close()
        self.body.ret({self.table: _Code("records")})

    def _action(self) -> None:
        getattr(self, f"_action_{self.op.action}")()

    def _amount(self) -> _Code:
        param = self.op.amount_param or "amount"
        self._require(param)
        self.body.do(_call("_check_positive", param, self.v(param)))
        return self.v(param)

    def _action_increment(self, sign: str = "") -> None:
        name = self.op.field or ""
        self.body.let("current", self._find())
        self._check_open()
        amount = self._amount()
        non_negative, maximum = is_non_negative(self.entity, name), self.fields[name].maximum
        change = _call(
            "_add_amount", CURRENT, name, _Code(sign + amount.text), non_negative=non_negative, maximum=maximum
        )
        self.body.let("changes", {name: change})
        self._post_entry(_item("current", self.pk), amount, "decrement" if sign else "increment")
        self._write_back()

    def _post_entry(self, key: _Code, amount: _Code, movement: str) -> None:
        """Write the ledger row of one movement of the action's field, when a ledger rule asks for it."""
        ledger = ledger_of(self.spec.entities, self.entity, self.op.field)
        if ledger is None:
            return
        out = movement in ("decrement", "transfer_out")
        signed = _Code("-" + amount.text) if ledger.kind is None and out else amount
        entry = ledger_entry(ledger, key, signed, movement)
        target = ledger.entity
        prefix = None if self._integer_key(target) else (target.id_prefix or f"{target.name[:3]}_")
        stamps = {n: f.type for f in target.fields if (n := f.name) in TIMESTAMP_COLUMNS}
        self.body.do(_call("_post_entry", DB, target.table, entry, prefix, stamps))

    @staticmethod
    def _integer_key(entity: EntitySpec) -> bool:
        return any(f.name == entity.primary_key and f.type == "integer" for f in entity.fields)

    def _action_decrement(self) -> None:
        self._action_increment("-")

    def _action_transition(self) -> None:
        name, to_value = self.op.field or "", self.op.to_value
        self.body.let("current", self._find())
        if self.op.from_values:
            allowed = tuple(self.op.from_values)
            self.body.do(_call("_check_transition", CURRENT, self.entity.name, name, allowed, to_value))
        key_p = key_param(self.entity, self.props)
        extra = [(p, f) for p, f in self._field_params() if p != key_p and f.name not in (name, self.pk)]
        for p, f in extra:
            self._validate(f, self.v(p), creating=False)
        self.body.let("changes", {name: to_value})
        if extra:
            self.body.do(_call("changes.update", _call("_given", {f.name: self.v(p) for p, f in extra})))
        supplies = [s for s in consumed_supplies(self.spec.entities, self.entity) if s.status == name]
        if supplies:
            self.body.let("record", _Code("{**current, **changes}"))
            self._check_supplies(supplies, updating=True)
            self._move_supplies(supplies)
        self._write_back()

    def _action_transfer(self) -> None:
        name, entity = self.op.field or "", self.entity.name
        source, destination = f"from_{entity}_id", f"to_{entity}_id"
        self._require(source, destination)
        amount = self._amount()
        status, states = closed_states(self.entity)
        closed = {"status": status, "closed": states} if status else {}
        transfer = _call(
            "_transfer",
            DB,
            self.table,
            name,
            self.v(source),
            self.v(destination),
            amount,
            entity=entity,
            amount_name=self.op.amount_param or "amount",
            non_negative=is_non_negative(self.entity, name),
            **closed,
        )
        if ledger_of(self.spec.entities, self.entity, self.op.field) is None:
            self.body.ret(transfer)
            return
        self.body.let("record", transfer)
        self._post_entry(self.v(source), amount, "transfer_out")
        self._post_entry(self.v(destination), amount, "transfer_in")
        self.body.ret(RECORD)


def generate_tools(spec: EnvSpec) -> str:
    """The source of tools.py for `spec`: the runtime of its backend, then one function per realizable tool."""
    runtime = [runtime_code(m).code for m in _RUNTIME[spec.backend]]
    # isort wants one blank line between the imports and a first statement that is no class or function.
    chunks = [_module_head(spec) + "\n\n" + runtime[0], *runtime[1:], _schema(spec)]
    skipped = unsupported_tools(spec)
    for tool in spec.tools:
        if tool.name not in skipped:
            op, entity = _check_tool(spec, tool)
            chunks.append(_ToolWriter(spec, tool, op, entity).source())
    return "\n\n\n".join(chunks) + "\n"
