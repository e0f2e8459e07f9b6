"""Tool parameters as the environment's contract spells them, and as the columns they name.

Parameters are normalized to snake_case; `<x>_id` names a row of `x` (`from_<x>_id` too), a
parameter's JSON schema gives its column's type and format, and a read's filters (`min_price`,
`created_after`) name the columns they compare.
"""

from __future__ import annotations

import copy
import re

from factory.lexicon import (
    AMOUNT_NAMES,
    DATE_NAMES,
    DATE_SUFFIXES,
    DATETIME_NAMES,
    DATETIME_SUFFIXES,
    MONEY_NAMES,
    MONEY_SUFFIXES,
    NON_STATES,
    PAGING_DROP,
    PAGING_LIMIT,
    PHONE_NAMES,
    QUERY_NAMES,
    READ_CONTROLS,
    URL_NAMES,
    WRITE_CONTROLS,
)
from factory.models import FieldSpec, FieldType, JsonSchema, OperationKind
from factory.naming import plural, snake_case

_FROM_RE = re.compile(r"^(from|source|src|sender|origin)(?:_(.+?))?(?:_id)?$")
_TO_RE = re.compile(r"^(to|destination|dest|dst|target|recipient|receiver)(?:_(.+?))?(?:_id)?$")
_END_PREFIX = re.compile(r"^(from|to|source|destination|src|dst|sender|recipient|target)_")

Ends = tuple[tuple[str, str | None], tuple[str, str | None]]


def base_type(schema: JsonSchema) -> str | None:
    """The JSON type a schema gives its values, `null` aside (`["string", "null"]` -> "string")."""
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), None)
    if t is None:
        for alt in (schema.get("anyOf") or []) + (schema.get("oneOf") or []):
            if isinstance(alt, dict) and alt.get("type") not in (None, "null"):
                return base_type(alt)
    return t if isinstance(t, str) else None


def is_money(name: str) -> bool:
    return name in MONEY_NAMES or name.endswith(MONEY_SUFFIXES)


def _string_format(name: str, fmt: object) -> str | None:
    if fmt in ("email", "idn-email") or name == "email" or name.endswith("_email"):
        return "email"
    if fmt in ("uri", "url") or name in URL_NAMES or name.endswith("_url"):
        return "url"
    if fmt == "uuid":
        return "uuid"
    if name in PHONE_NAMES or name.endswith("_phone"):
        return "phone"
    return fmt if isinstance(fmt, str) and fmt else None


def list_field(name: str, schema: JsonSchema, required: bool = False) -> FieldSpec | None:
    """A list-of-texts column for an array of strings a batch write's items carry (an entity's `observations`)."""
    if not _texts(schema):
        return None
    return FieldSpec(
        name=name, type="string", format="list", required=required, description=str(schema.get("description") or "")
    )


def field_from_param(name: str, schema: JsonSchema, required: bool = False) -> FieldSpec | None:
    """A column for a parameter, or None for parameters that are not one (arrays, objects)."""
    t = base_type(schema)
    if t in ("array", "object"):
        return None
    fmt = schema.get("format")
    ftype: FieldType = "string"
    if t == "integer":
        ftype = "integer"
    elif t == "number":
        ftype = "number"
    elif t == "boolean":
        ftype = "boolean"
    elif fmt == "date" or name in DATE_NAMES or name.endswith(DATE_SUFFIXES):
        ftype = "date"
    elif fmt == "date-time" or name in DATETIME_NAMES or name.endswith(DATETIME_SUFFIXES):
        ftype = "datetime"
    elif t is None and is_money(name):
        ftype = "number"
    out_format: str | None = None
    if ftype == "number" and is_money(name):
        out_format = "money"
    elif ftype == "string":
        out_format = _string_format(name, fmt)
    enum = schema.get("enum")
    enum_values = None
    if isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum) and ftype == "string":
        enum_values = [v for v in enum if v not in NON_STATES] or None
    minimum = schema.get("minimum", schema.get("exclusiveMinimum"))
    maximum = schema.get("maximum", schema.get("exclusiveMaximum"))
    numeric = ftype in ("integer", "number")
    return FieldSpec(
        name=name,
        type=ftype,
        format=out_format,
        enum=enum_values,
        required=required,
        description=str(schema.get("description") or ""),
        minimum=float(minimum) if isinstance(minimum, int | float) and numeric else None,
        maximum=float(maximum) if isinstance(maximum, int | float) and numeric else None,
    )


def normalize_props(schema: JsonSchema) -> tuple[dict[str, JsonSchema], list[str]]:
    """A tool's parameters with snake_case names (the first spelling wins), and the required ones."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    out: dict[str, JsonSchema] = {}
    for key, sub in (props or {}).items():
        out.setdefault(snake_case(key) or key, copy.deepcopy(sub) if isinstance(sub, dict) else {})
    required = [snake_case(r) for r in (schema.get("required") or []) if isinstance(r, str)]
    return out, [r for r in dict.fromkeys(required) if r in out]


def id_entities(props: dict[str, JsonSchema]) -> list[str]:
    """Entities named by `<x>_id` parameters, in order (`from_<x>_id` counts as `<x>`)."""
    out: list[str] = []
    for p in props:
        if p.endswith("_id") and len(p) > 3:
            x = _END_PREFIX.sub("", p[:-3])
            if x and x not in out:
                out.append(x)
    return out


def batch_param(props: dict[str, JsonSchema], required: list[str]) -> str | None:
    """The array a batch tool takes its rows or keys in: its only required parameter, when that is an array.

    `create_entities(entities=[{name, entityType}])` creates one row per item, `delete_entities(entityNames=[...])`
    deletes one per name; the operation is the single-item one, applied to each.
    """
    if len(required) != 1 or base_type(props[required[0]]) != "array":
        return None
    items = props[required[0]].get("items")
    return required[0] if isinstance(items, dict) and base_type(items) in ("object", "string", "integer") else None


def _texts(schema: object) -> bool:
    items = schema.get("items") if isinstance(schema, dict) else None
    return base_type(schema) == "array" and isinstance(items, dict) and base_type(items) == "string"


def list_edit_keys(entity: str, fields: set[str], items: JsonSchema) -> tuple[str, str, str] | None:
    """How the items of a batch edit of a list field name their row and carry the values, as declared:
    (the key naming the row, the key holding the values, the field it names the row by). `{entityName,
    contents}` of `add_observations` -> ("entityName", "contents", "name"); None when the items are not so."""
    props = items.get("properties") if base_type(items) == "object" else None
    if not isinstance(props, dict) or len(props) != 2:
        return None
    values = [k for k, v in props.items() if _texts(v)]
    named = [
        (k, field)
        for k in props
        if base_type(props[k]) == "string"
        and (field := (snake_case(k) or k).removeprefix(f"{entity}_")) in fields
        and (snake_case(k) or k) != field
    ]
    if len(values) != 1 or len(named) != 1:
        return None
    return named[0][0], values[0], named[0][1]


def batch_items(entity: str, props: dict[str, JsonSchema]) -> tuple[dict[str, JsonSchema], list[str]] | None:
    """The item parameters of a batch of rows of `entity`: the array parameter named like its table."""
    schema = props.get(plural(entity))
    items = schema.get("items") if schema and base_type(schema) == "array" else None
    if not isinstance(items, dict) or base_type(items) != "object":
        return None
    return normalize_props(items)


def find_key(entity: str, props: dict[str, JsonSchema]) -> str | None:
    """The parameter naming a row of `entity`: `<entity>_id`, else `id`, `<entity>_number`, `<entity>_key`."""
    for candidate in (f"{entity}_id", "id", f"{entity}_number", f"{entity}_key", f"{entity}_uuid"):
        if candidate in props:
            return candidate
    return None


def transfer_ends(props: dict[str, JsonSchema]) -> Ends | None:
    """The (parameter, entity) of a transfer's source and destination: `from_account_id` -> account."""
    src = next(((p, m.group(2)) for p in props if (m := _FROM_RE.match(p))), None)
    dst = next(((p, m.group(2)) for p in props if (m := _TO_RE.match(p))), None)
    if src is None or dst is None:
        return None
    return src, dst


def amount_param(props: dict[str, JsonSchema], exclude: set[str]) -> str | None:
    """The parameter holding the amount of an increment, decrement or transfer."""
    for name in AMOUNT_NAMES:
        if name in props and name not in exclude:
            return name
    numeric = [p for p, s in props.items() if base_type(s) in ("integer", "number") and p not in exclude]
    return numeric[0] if len(numeric) == 1 else None


def _is_sort_direction(schema: JsonSchema) -> bool:
    enum = schema.get("enum")
    return isinstance(enum, list) and bool(enum) and set(enum) <= {"asc", "desc", "ascending", "descending"}


def field_params(
    kind: OperationKind | None, entity: str, props: dict[str, JsonSchema], required: list[str]
) -> list[tuple[str, JsonSchema, bool]]:
    """Parameters of a tool that name fields of its entity, with required-ness on create.

    A batch write's array of rows (`entities` of `create_entities`) names the fields its items have.

    A read's controls (paging, sorting, the search text) name no field; its range filters name the
    field they bound: `min_price` and `price_max` -> `price`, `created_after` -> `created_at`.
    """
    key = f"{entity}_id"
    out: list[tuple[str, JsonSchema, bool]] = []
    reading = kind in ("list", "search", "aggregate")
    batch = batch_items(entity, props) if kind in ("create", "update") else None
    if batch is not None:  # a batch's items are the rows: their properties name the fields
        rows = plural(entity)
        props = {**{k: v for k, v in props.items() if k != rows}, **batch[0]}
        required = [r for r in required if r != rows] + batch[1]
    for name, schema in props.items():
        if name in (key, "id") or name in WRITE_CONTROLS:
            continue
        if reading:
            if name in READ_CONTROLS | QUERY_NAMES | PAGING_LIMIT | PAGING_DROP or _is_sort_direction(schema):
                continue
            m = re.match(r"^(min|max)_(.+)$", name) or re.match(r"^(.+)_(min|max)$", name)
            if m:
                base = m.group(2) if name.startswith(("min_", "max_")) else m.group(1)
                out.append((base, schema, False))
                continue
            m = re.match(r"^(.+)_(after|before|since|until)$", name)
            if m:
                out.append((f"{m.group(1)}_at", {**schema, "format": "date-time", "type": "string"}, False))
                continue
        out.append((name, schema, kind == "create" and name in required))
    return out
