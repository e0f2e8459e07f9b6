"""Entity inference: from a topic's tools to the tables behind them and what each tool does to them.

MCP servers and catalog topics only give tool names, descriptions and JSON-schema parameters; the
environment needs a database. Tools are grouped by the nouns in their names and by their `<x>_id`
parameters: `list_orders`, `get_order(order_id)` and `cancel_order(order_id)` all work on the entity
`order`, whose fields are the parameters of its create/update/list tools. Every entity has the primary
key `id` (a string like "ord_0001"); tools name a row by the parameter `<entity>_id`, and a field
`<other>_id` is a foreign key to `other.id`. Each tool gets a typed `ToolOperation` (the contract with
the code generator, see factory/models.py), a correct `mutates` and an output schema whose field
names are the real column names, so the tool graph can see which output feeds which parameter.
Parameters are normalized to that contract: snake_case names, `id` -> `<entity>_id`, pagination as
`limit`/`offset`, a search's text as `query`, transfer ends as `from_<entity>_id`/`to_<entity>_id`.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from factory.models import (
    ActionKind,
    EntitySpec,
    FieldSpec,
    FieldType,
    JsonSchema,
    OperationKind,
    Rule,
    ToolOperation,
    ToolSpec,
    Topic,
)

# --- inflector -----------------------------------------------------------------------------

_IRREGULAR = {
    "person": "people",
    "child": "children",
    "man": "men",
    "woman": "women",
    "mouse": "mice",
    "goose": "geese",
    "tooth": "teeth",
    "foot": "feet",
    "criterion": "criteria",
    "analysis": "analyses",
    "basis": "bases",
    "diagnosis": "diagnoses",
    "thesis": "theses",
    "crisis": "crises",
    "matrix": "matrices",
    "vertex": "vertices",
    "leaf": "leaves",
    "knife": "knives",
    "wife": "wives",
    "shelf": "shelves",
    "life": "lives",
    "half": "halves",
    "wolf": "wolves",
    "thief": "thieves",
    "movie": "movies",
    "cookie": "cookies",
    "calorie": "calories",
    "cache": "caches",
    "niche": "niches",
    "headache": "headaches",
    "menu": "menus",
    "guru": "gurus",
    "hero": "heroes",
    "potato": "potatoes",
    "tomato": "tomatoes",
    "echo": "echoes",
    "excuse": "excuses",
    "fuse": "fuses",
    "abuse": "abuses",
    "quiz": "quizzes",
}
_SINGULAR_OF = {plural: singular for singular, plural in _IRREGULAR.items()}
_UNCOUNTABLE = {
    "data",
    "metadata",
    "media",
    "news",
    "series",
    "species",
    "information",
    "equipment",
    "feedback",
    "staff",
    "software",
    "sheep",
    "fish",
    "money",
    "weather",
    "music",
    "traffic",
    "analytics",
    "logistics",
    "physics",
    "economics",
    "mathematics",
    "chassis",
    "lens",
    "canvas",
    "atlas",
    "alias",
    "gas",
    "bias",
    "inventory",
    "stock",
    "mail",
    "insurance",
    "payroll",
    "status",
}


def singularize(word: str) -> str:
    """English singular of one lower-case word: orders -> order, categories -> category, people -> person."""
    w = word.lower()
    if w in _UNCOUNTABLE or w in _IRREGULAR:
        return w
    if w in _SINGULAR_OF:
        return _SINGULAR_OF[w]
    if len(w) <= 2 or w.endswith(("ss", "us", "is")):
        return w
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith(("sses", "xes", "ches", "shes", "zzes")):
        return w[:-3] if w.endswith("zzes") else w[:-2]
    if w.endswith("uses"):
        return w[:-1] if w[-5] in "aeiou" else w[:-2]
    if w.endswith("s"):
        return w[:-1]
    return w


def pluralize(word: str) -> str:
    """English plural of one lower-case word; `singularize(pluralize(w)) == w` for table names."""
    w = word.lower()
    if w in _UNCOUNTABLE and w != "status":
        return w
    if w in _IRREGULAR:
        return _IRREGULAR[w]
    if w.endswith("y") and len(w) > 1 and w[-2] not in "aeiou":
        return w[:-1] + "ies"
    if w.endswith(("s", "x", "z", "ch", "sh")):
        return w + "es"
    return w + "s"


def split_words(name: str) -> list[str]:
    """Lower-case words of an identifier in any style: `getIssue`, `issues_list`, `list-open-PRs`."""
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s)
    return [t for t in re.split(r"[^A-Za-z0-9]+", s.lower()) if t]


def snake(name: str) -> str:
    return "_".join(split_words(name))


def _singular_noun(words: list[str]) -> str:
    return "_".join([*words[:-1], singularize(words[-1])]) if words else ""


def format_id(prefix: str, n: int) -> str:
    """The id of the n-th row of an entity whose `id_prefix` is `prefix`: ("ord_", 7) -> "ord_0007"."""
    return f"{prefix}{n:04d}"


# --- verbs ---------------------------------------------------------------------------------

_LIST = {"list", "browse", "enumerate", "index"}
_GET = {"get", "fetch", "read", "retrieve", "show", "describe", "view", "load", "inspect", "lookup"}
_SEARCH = {"search", "find", "query", "filter", "discover"}
_CREATE = {
    "create",
    "new",
    "insert",
    "post",
    "make",
    "register",
    "log",
    "record",
    "write",
    "upload",
    "compose",
    "draft",
    "file",
    "invite",
    "request",
    "generate",
    "raise",
    "issue",
}
# Creating through another noun: book_flight(flight_id) creates a booking of that flight.
_DERIVED_CREATE = {
    "book": "booking",
    "reserve": "reservation",
    "enroll": "enrollment",
    "subscribe": "subscription",
    "apply": "application",
    "rent": "rental",
    "purchase": "purchase",
    "buy": "purchase",
}
_UPDATE = {"update", "edit", "modify", "set", "change", "patch", "rename", "assign", "move", "reschedule", "upsert"}
_DELETE = {"delete", "remove", "destroy", "drop", "erase", "purge", "discard", "trash"}
_AGGREGATE = {"count", "summarize", "summary", "stats", "statistics", "aggregate", "total", "sum", "tally"}
_INCREMENT = {
    "restock",
    "deposit",
    "top_up",
    "topup",
    "credit",
    "refill",
    "replenish",
    "recharge",
    "increase",
    "increment",
    "fund",
    "earn",
    "award",
    "grant",
}
_DECREMENT = {
    "withdraw",
    "consume",
    "debit",
    "deduct",
    "decrease",
    "decrement",
    "redeem",
    "spend",
    "charge",
    "subtract",
    "reduce",
}
_TRANSFER = {"transfer"}
# A verb that creates a row when no row is named, and moves a named row into a state otherwise.
_DUAL = {
    "submit": ["submitted"],
    "send": ["sent"],
    "schedule": ["scheduled"],
    "place": ["placed"],
    "open": ["open"],
    "add": [],
    "publish": ["published"],
    "verify": ["verified"],
}

# verb -> (target state candidates, explicit source states or None for the general rule)
_TRANSITIONS: dict[str, tuple[list[str], list[str] | None]] = {
    "cancel": (["cancelled", "canceled"], None),
    "approve": (["approved"], None),
    "reject": (["rejected", "declined"], None),
    "decline": (["declined", "rejected"], None),
    "close": (["closed"], None),
    "reopen": (["open", "reopened"], ["closed", "resolved", "completed", "done"]),
    "complete": (["completed", "done", "finished", "closed"], None),
    "finish": (["finished", "completed", "done"], None),
    "archive": (["archived"], None),
    "unarchive": (["active", "open"], ["archived"]),
    "restore": (["active", "open"], ["archived", "deleted", "trashed"]),
    "ship": (["shipped"], None),
    "dispatch": (["dispatched", "shipped"], None),
    "deliver": (["delivered"], ["shipped", "in_transit", "dispatched", "out_for_delivery"]),
    "confirm": (["confirmed"], None),
    "resolve": (["resolved", "closed", "done"], None),
    "activate": (["active", "activated"], ["inactive", "suspended", "deactivated", "disabled", "pending", "draft"]),
    "deactivate": (["inactive", "deactivated", "disabled"], ["active"]),
    "suspend": (["suspended"], ["active"]),
    "unpublish": (["draft", "unpublished"], ["published"]),
    "lock": (["locked"], None),
    "unlock": (["unlocked", "active", "open"], ["locked"]),
    "pause": (["paused"], ["active", "running", "in_progress"]),
    "resume": (["active", "running", "in_progress"], ["paused", "suspended", "on_hold"]),
    "start": (["in_progress", "started", "running", "active"], None),
    "stop": (["stopped"], ["running", "active", "in_progress", "started"]),
    "fulfill": (["fulfilled"], None),
    "refund": (["refunded"], ["paid", "completed", "delivered", "captured", "settled", "succeeded"]),
    "accept": (["accepted", "approved"], None),
    "block": (["blocked"], None),
    "unblock": (["active", "unblocked"], ["blocked"]),
    "enable": (["enabled", "active"], ["disabled", "inactive"]),
    "disable": (["disabled", "inactive"], ["enabled", "active"]),
    "merge": (["merged"], None),
    "pay": (["paid"], None),
    "void": (["void", "voided"], None),
    "settle": (["settled", "paid"], None),
    "check_in": (["checked_in"], ["confirmed", "booked", "reserved", "pending"]),
    "check_out": (["checked_out", "completed"], ["checked_in"]),
    "escalate": (["escalated"], None),
    "hold": (["on_hold"], None),
    "return": (["returned"], ["active", "borrowed", "checked_out", "rented", "on_loan", "delivered", "shipped"]),
    "expire": (["expired"], None),
    "revoke": (["revoked"], None),
    "acknowledge": (["acknowledged"], None),
    "snooze": (["snoozed"], None),
    "mark": ([], None),
}
for _verb, _states in _DUAL.items():
    if _states:
        _TRANSITIONS.setdefault(_verb, (_states, None))

_COMPOUND_WORDS = {
    ("top", "up"): "top_up",
    ("check", "in"): "check_in",
    ("check", "out"): "check_out",
    ("in", "progress"): "in_progress",
    ("on", "hold"): "on_hold",
    ("in", "transit"): "in_transit",
}
_ALL_VERBS = (
    _LIST
    | _GET
    | _SEARCH
    | _CREATE
    | set(_DERIVED_CREATE)
    | _UPDATE
    | _DELETE
    | _AGGREGATE
    | _INCREMENT
    | _DECREMENT
    | _TRANSFER
    | set(_DUAL)
    | set(_TRANSITIONS)
)

# States: terminal ones cannot move on; after fulfilment an order cannot be cancelled.
_TERMINAL = {
    "received",
    "cancelled",
    "canceled",
    "closed",
    "completed",
    "delivered",
    "rejected",
    "refunded",
    "archived",
    "merged",
    "resolved",
    "void",
    "voided",
    "expired",
    "declined",
    "finished",
    "returned",
    "done",
    "deleted",
    "failed",
    "revoked",
    "checked_out",
}
_FULFILLED = {
    "received",
    "shipped",
    "in_transit",
    "dispatched",
    "out_for_delivery",
    "delivered",
    "fulfilled",
    "completed",
    "checked_in",
    "checked_out",
    "boarded",
    "used",
    "redeemed",
}
_LIFECYCLE = [
    "draft",
    "new",
    "open",
    "reopened",
    "pending",
    "placed",
    "submitted",
    "requested",
    "scheduled",
    "booked",
    "reserved",
    "in_review",
    "confirmed",
    "accepted",
    "approved",
    "verified",
    "acknowledged",
    "published",
    "active",
    "enabled",
    "unlocked",
    "paid",
    "processing",
    "started",
    "in_progress",
    "running",
    "on_hold",
    "paused",
    "snoozed",
    "escalated",
    "locked",
    "blocked",
    "suspended",
    "stopped",
    "inactive",
    "disabled",
    "sent",
    "ready",
    "dispatched",
    "shipped",
    "in_transit",
    "out_for_delivery",
    "delivered",
    "received",
    "checked_in",
    "checked_out",
    "fulfilled",
    "resolved",
    "completed",
    "done",
    "finished",
    "settled",
    "closed",
    "merged",
    "archived",
    "returned",
    "refunded",
    "cancelled",
    "canceled",
    "rejected",
    "declined",
    "void",
    "voided",
    "expired",
    "revoked",
    "failed",
]
_RANK = {s: i for i, s in enumerate(_LIFECYCLE)}
_NON_STATES = {"all", "any", "none", ""}
# Verbs moving a row forward: it cannot come from a state later in the lifecycle.
_FORWARD = {
    "ship",
    "dispatch",
    "confirm",
    "approve",
    "accept",
    "complete",
    "finish",
    "fulfill",
    "pay",
    "settle",
    "start",
    "merge",
    "resolve",
    "submit",
    "send",
    "place",
    "schedule",
    "verify",
    "acknowledge",
    "publish",
}
_REVOKING = {"cancel", "reject", "decline", "void", "revoke"}

# --- nouns and parameters ------------------------------------------------------------------

_LEADING_FILLERS = {
    "all",
    "my",
    "the",
    "a",
    "an",
    "new",
    "single",
    "one",
    "current",
    "existing",
    "recent",
    "latest",
    "top",
    "popular",
    "available",
    "public",
    "private",
    "upcoming",
    "unread",
    "multiple",
    "bulk",
    "batch",
    "open",
    "closed",
    "active",
    "pending",
    "archived",
    "completed",
}
_CUT_WORDS = {"by", "for", "of", "in", "with", "from", "to", "on", "into", "at", "using", "via", "per", "as"}
_TRAILING_FILLERS = {"id", "ids", "details", "detail", "info", "information", "record", "records", "data"}
_TRAILING_LIST = {"list"}
_TRAILING_AGGREGATE = {"count", "summary", "stats", "statistics", "totals", "metrics"}

_PAGING_LIMIT = {"limit", "page_size", "per_page", "max_results", "max_items", "count"}
_PAGING_DROP = {"page", "cursor", "page_token", "next_token", "after", "starting_after", "skip", "start"}
_QUERY_NAMES = {"query", "q", "keyword", "keywords", "term", "search", "text", "search_term", "search_query", "phrase"}
# Parameters that steer a read rather than name a column.
_READ_CONTROLS = {
    "limit",
    "offset",
    "query",
    "sort",
    "sort_by",
    "order_by",
    "sort_order",
    "direction",
    "fields",
    "include",
    "expand",
    "field",
    "group_by",
    "format",
}
# Parameters of a write that are not stored.
_WRITE_CONTROLS = {"dry_run", "confirm", "force", "notify", "fields", "include", "expand", "idempotency_key"}
# Fields of a tool's response, never columns of the row it returns.
_RESPONSE_FIELDS = {
    "error",
    "errors",
    "message",
    "messages",
    "success",
    "ok",
    "warning",
    "warnings",
    "next_offset",
    "next_cursor",
    "next_page",
    "next_page_token",
    "cursor",
    "has_more",
    "count",
    "total_count",
    "total_pages",
}
# Fields of a page around rows: generic next to `items` or an envelope, real columns inside a record
# (an order's `total`).
_PAGE_FIELDS = {"total", "offset", "limit", "page", "per_page", "page_size"}
_AMOUNT_NAMES = [
    "amount",
    "quantity",
    "qty",
    "units",
    "count",
    "value",
    "delta",
    "number",
    "credits",
    "points",
    "seats",
    "by",
]
_AMOUNT_NOUNS = {"balance", "stock", "funds", "fund", "money", "cash", "credits", "credit", "points", "inventory"}
_FIELD_ALIASES = {
    "fund": "balance",
    "funds": "balance",
    "money": "balance",
    "cash": "balance",
    "inventory": "stock",
    "credit": "credits",
    "point": "points",
    "seat": "seats_available",
    "seats": "seats_available",
}
_VERB_FIELDS = {
    "restock": "stock",
    "refill": "stock",
    "replenish": "stock",
    "consume": "stock",
    "deposit": "balance",
    "withdraw": "balance",
    "credit": "balance",
    "debit": "balance",
    "top_up": "balance",
    "topup": "balance",
    "recharge": "balance",
    "fund": "balance",
    "charge": "balance",
    "spend": "balance",
    "deduct": "balance",
    "transfer": "balance",
    "redeem": "points",
    "earn": "points",
    "award": "points",
    "grant": "credits",
}
# Counters of what is left (stock, seats, rooms...): never negative, and what others consume.
COUNTER_FIELDS = frozenset(
    {
        "stock",
        "quantity_on_hand",
        "on_hand",
        "inventory",
        "in_stock",
        "stock_level",
        "units_in_stock",
        "quantity_available",
        "available_quantity",
        "seats_available",
        "available_seats",
        "seats_left",
        "remaining_seats",
        "spots_left",
        "slots_available",
        "rooms_available",
        "tickets_available",
    }
)
_STOCK_LIKE = COUNTER_FIELDS | {"capacity", "remaining"}
_MONEY_LEFT = {"remaining", "remaining_amount", "amount_remaining", "available_funds", "remaining_budget"}
_BALANCE_LIKE = {"balance", "credits", "points", "loyalty_points", "available_balance", "credit_balance"}
_NON_NEGATIVE = _STOCK_LIKE | _MONEY_LEFT | _BALANCE_LIKE
_BUDGET_NOUNS = {"budget", "wallet", "allowance", "grant", "fund", "credit_line", "cost_center"}
_QUANTITY_FIELDS = {"quantity", "qty", "units", "count"}
_SEAT_FIELDS = {"seats", "seat_count", "num_seats", "passengers", "guests", "tickets", "party_size", "attendees"}
_SPEND_FIELDS = {"amount", "total", "cost", "total_amount", "total_cost", "price"}
_UNIQUE_NAMES = {"email", "username", "user_name", "sku", "code", "slug", "handle", "isbn", "login", "iban"}
_UNIQUE_SUFFIXES = ("_code", "_number", "_email", "_sku")
_MONEY_NAMES = {
    "price",
    "amount",
    "total",
    "cost",
    "fee",
    "balance",
    "salary",
    "budget",
    "remaining",
    "subtotal",
    "tax",
    "revenue",
    "unit_price",
    "total_amount",
    "total_cost",
    "limit_amount",
    "credit_limit",
    "deposit",
    "rate",
}
# `<x>_id` parameters that do not point at a row of this environment.
_NOT_ENTITIES = {
    "external",
    "idempotency",
    "request",
    "trace",
    "correlation",
    "session",
    "client",
    "api",
    "tenant",
    "parent",
    "reference",
    "ref",
    "transaction_reference",
    "device",
    "tracking",
    "google",
    "stripe",
    "object",
    "resource",
    "target",
    "source",
}
_JOIN_ENTITIES = {
    "membership",
    "enrollment",
    "follow",
    "like",
    "favorite",
    "bookmark",
    "vote",
    "star",
    "watcher",
    "member",
    "subscription",
}
# Nouns that only make sense as a part of their parent: order + items -> order_item.
_GENERIC_PARTS = {"item", "line", "entry", "line_item", "detail", "setting", "version", "part"}
_PERSON_NOUNS = {"user", "customer", "person", "member", "employee", "contact", "student", "patient"}


# --- parsing tool names --------------------------------------------------------------------


@dataclass
class _Name:
    """A tool name read as verb + noun: `list_open_issues` -> ("list", ["issues"])."""

    verb: str | None
    noun: list[str]
    tail: list[str] = dataclasses.field(default_factory=list)  # words cut after "by/for/as...", e.g. mark_x_as_<state>
    trailing: str | None = None  # "list" or "aggregate" from list_orders_summary-like endings


def parse_tool_name(name: str) -> _Name:
    words = split_words(name)
    merged: list[str] = []
    i = 0
    while i < len(words):
        pair = tuple(words[i : i + 2])
        if pair in _COMPOUND_WORDS:
            merged.append(_COMPOUND_WORDS[pair])  # type: ignore[index]
            i += 2
        else:
            merged.append(words[i])
            i += 1
    verb_at = next((k for k, w in enumerate(merged) if w in _ALL_VERBS), None)
    if verb_at is None:
        return _Name(None, merged)
    verb = merged[verb_at]
    rest = merged[verb_at + 1 :] if verb_at + 1 < len(merged) else merged[:verb_at]
    noun: list[str] = []
    tail: list[str] = []
    for k, w in enumerate(rest):
        if w in _CUT_WORDS and noun:
            tail = rest[k + 1 :]
            break
        noun.append(w)
    while len(noun) > 1 and noun[0] in _LEADING_FILLERS:
        noun.pop(0)
    trailing = None
    while noun and noun[-1] in _TRAILING_FILLERS | _TRAILING_LIST | _TRAILING_AGGREGATE:
        last = noun.pop()
        if last in _TRAILING_LIST:
            trailing = "list"
        elif last in _TRAILING_AGGREGATE:
            trailing = "aggregate"
    return _Name(verb, noun, tail, trailing)


# --- parameters ----------------------------------------------------------------------------


def _base_type(schema: JsonSchema) -> str | None:
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), None)
    if t is None:
        for alt in (schema.get("anyOf") or []) + (schema.get("oneOf") or []):
            if isinstance(alt, dict) and alt.get("type") not in (None, "null"):
                return _base_type(alt)
    return t if isinstance(t, str) else None


def _is_money(name: str) -> bool:
    return name in _MONEY_NAMES or name.endswith(("_price", "_amount", "_cost", "_fee", "_balance", "_total"))


def field_from_param(name: str, schema: JsonSchema, required: bool = False) -> FieldSpec | None:
    """A column for a parameter, or None for parameters that are not one (arrays, objects)."""
    t = _base_type(schema)
    if t in ("array", "object"):
        return None
    fmt = schema.get("format")
    ftype: FieldType = "string"
    out_format: str | None = None
    if t == "integer":
        ftype = "integer"
    elif t == "number":
        ftype = "number"
    elif t == "boolean":
        ftype = "boolean"
    elif fmt == "date" or name in ("date", "dob", "birthday", "birth_date") or name.endswith(("_date", "_on")):
        ftype = "date"
    elif fmt == "date-time" or name in ("timestamp", "datetime") or name.endswith(("_at", "_time", "_datetime")):
        ftype = "datetime"
    elif t is None and _is_money(name):
        ftype = "number"
    if ftype == "number" and _is_money(name):
        out_format = "money"
    elif ftype == "string":
        if fmt in ("email", "idn-email") or name == "email" or name.endswith("_email"):
            out_format = "email"
        elif fmt in ("uri", "url") or name in ("url", "website", "homepage") or name.endswith("_url"):
            out_format = "url"
        elif fmt == "uuid":
            out_format = "uuid"
        elif name in ("phone", "phone_number", "mobile") or name.endswith("_phone"):
            out_format = "phone"
        elif isinstance(fmt, str) and fmt:
            out_format = fmt
    enum = schema.get("enum")
    enum_values = None
    if isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum) and ftype == "string":
        enum_values = [v for v in enum if v not in _NON_STATES] or None
    minimum = schema.get("minimum", schema.get("exclusiveMinimum"))
    maximum = schema.get("maximum", schema.get("exclusiveMaximum"))
    return FieldSpec(
        name=name,
        type=ftype,
        format=out_format,
        enum=enum_values,
        required=required,
        description=str(schema.get("description") or ""),
        minimum=float(minimum) if isinstance(minimum, int | float) and ftype in ("integer", "number") else None,
        maximum=float(maximum) if isinstance(maximum, int | float) and ftype in ("integer", "number") else None,
    )


def _normalize_props(schema: JsonSchema) -> tuple[dict[str, JsonSchema], list[str]]:
    props = schema.get("properties") if isinstance(schema, dict) else None
    out: dict[str, JsonSchema] = {}
    for key, sub in (props or {}).items():
        out.setdefault(snake(key) or key, copy.deepcopy(sub) if isinstance(sub, dict) else {})
    required = [snake(r) for r in (schema.get("required") or []) if isinstance(r, str)]
    return out, [r for r in dict.fromkeys(required) if r in out]


def _id_entities(props: dict[str, JsonSchema]) -> list[str]:
    """Entities named by `<x>_id` parameters, in order (`from_<x>_id` counts as `<x>`)."""
    out: list[str] = []
    for p in props:
        if p.endswith("_id") and len(p) > 3:
            x = re.sub(r"^(from|to|source|destination|src|dst|sender|recipient|target)_", "", p[:-3])
            if x and x not in out:
                out.append(x)
    return out


_FROM_RE = re.compile(r"^(from|source|src|sender|origin)(?:_(.+?))?(?:_id)?$")
_TO_RE = re.compile(r"^(to|destination|dest|dst|target|recipient|receiver)(?:_(.+?))?(?:_id)?$")


# --- the plan for one tool -----------------------------------------------------------------


@dataclass
class _Plan:
    spec: ToolSpec
    props: dict[str, JsonSchema]
    required: list[str]
    kind: OperationKind | None = None
    entity: str | None = None
    action: ActionKind | None = None
    verb: str | None = None
    field: str | None = None
    amount_param: str | None = None
    to_candidates: list[str] = dataclasses.field(default_factory=list)
    key_param: str | None = None  # parameter naming the row, renamed to `<entity>_id`
    transfer_params: tuple[str, str] | None = None
    full: str = ""  # the whole noun of the name, singular: a known entity wins over a split by id
    reason: str = ""


@dataclass
class _Draft:
    name: str
    fields: dict[str, FieldSpec] = dataclasses.field(default_factory=dict)
    description: str = ""
    from_tools: bool = True
    from_output: set[str] = dataclasses.field(default_factory=set)  # fields only a tool's output has named yet

    def add(self, f: FieldSpec, from_output: bool = False) -> None:
        """Merge a field seen in another tool: the first type wins, enums and limits accumulate.

        A parameter's type wins over an output's: outputs only fill in what parameters do not say.
        """
        old = self.fields.get(f.name)
        if old is None:
            self.fields[f.name] = f
            if from_output:
                self.from_output.add(f.name)
            return
        if not from_output and f.name in self.from_output:
            self.from_output.discard(f.name)
            if old.type != f.type:
                old = old.model_copy(update={"type": f.type, "format": f.format, "minimum": None, "maximum": None})
        update: dict[str, Any] = {"required": old.required or f.required}
        if f.enum:
            update["enum"] = list(dict.fromkeys([*(old.enum or []), *f.enum]))
        if not old.description and f.description:
            update["description"] = f.description
        if old.format is None and f.format and old.type == f.type:
            update["format"] = f.format
        for bound in ("minimum", "maximum"):
            if getattr(old, bound) is None and getattr(f, bound) is not None and old.type == f.type:
                update[bound] = getattr(f, bound)
        self.fields[f.name] = old.model_copy(update=update)


def _amount_param(props: dict[str, JsonSchema], exclude: set[str]) -> str | None:
    for name in _AMOUNT_NAMES:
        if name in props and name not in exclude:
            return name
    numeric = [p for p, s in props.items() if _base_type(s) in ("integer", "number") and p not in exclude]
    return numeric[0] if len(numeric) == 1 else None


def _classify(tool: ToolSpec, known: set[str]) -> _Plan:
    """Kind and entity of one tool from its name and parameters (first pass: no entity list yet)."""
    props, required = _normalize_props(tool.parameters)
    plan = _Plan(spec=tool, props=props, required=required)
    parsed = parse_tool_name(tool.name)
    verb = parsed.verb
    plan.verb = verb
    if verb is None:
        plan.reason = "no verb in the tool name"
        return plan
    noun = parsed.noun
    ids = _id_entities(props)
    noun_name = _singular_noun(noun)
    plural = bool(noun) and singularize(noun[-1]) != noun[-1] and noun[-1] not in _UNCOUNTABLE
    plan.full = noun_name

    def split_by_id() -> tuple[str | None, list[str]]:
        """`get_account_balance(account_id)` -> ("account", ["balance"])."""
        for x in ids:
            xw = x.split("_")
            if noun[: len(xw)] == xw and len(noun) > len(xw):
                return x, noun[len(xw) :]
        return None, noun

    # transfer: two rows of the same entity
    if verb in _TRANSFER:
        ends = _transfer_ends(props)
        if ends is None:
            plan.reason = "transfer without from/to parameters"
            return plan
        (from_p, from_x), (to_p, to_x) = ends
        entity = from_x or to_x or (noun_name if noun_name in known else None) or "account"
        plan.kind, plan.action, plan.entity = "action", "transfer", entity
        plan.transfer_params = (from_p, to_p)
        plan.amount_param = _amount_param(props, {from_p, to_p})
        hint = noun_name if noun_name and noun_name != entity else None
        plan.field = _FIELD_ALIASES.get(hint or "", hint) or _VERB_FIELDS["transfer"]
        if plan.amount_param is None:
            plan.kind, plan.reason = None, "transfer without an amount parameter"
        return plan

    is_add_amount = verb == "add" and "_".join(noun) in _AMOUNT_NOUNS and bool(ids)
    if verb in _INCREMENT or verb in _DECREMENT or is_add_amount:
        plan.kind, plan.action = "action", "decrement" if verb in _DECREMENT else "increment"
        subject, rest = split_by_id()
        if subject is None:
            if noun_name in ids or (noun_name and not ids):
                subject, rest = noun_name, []
            elif ids:
                subject = ids[0]
        if subject is None:
            plan.kind, plan.reason = None, "no entity for the amount change"
            return plan
        plan.entity = subject
        hint = "_".join(rest) if rest else None
        plan.field = _FIELD_ALIASES.get(hint or "", hint) if hint else None
        plan.amount_param = _amount_param(props, {f"{subject}_id", "id"})
        if plan.amount_param is None:
            plan.kind, plan.reason = None, "no amount parameter"
        return plan

    if verb in _TRANSITIONS and (verb not in _DUAL or _names_row(noun, props)):
        candidates = list(_TRANSITIONS[verb][0])
        if verb == "mark":
            words = [w for w in noun + parsed.tail if w != "as"]
            candidates, noun = words[-1:], words[:-1]
        subject, _ = split_by_id()
        entity = subject or _singular_noun(noun) or (ids[0] if len(ids) == 1 else None)
        if entity is None or not candidates:
            plan.reason = "no entity or target state for the status change"
            return plan
        plan.kind, plan.action, plan.entity, plan.to_candidates = "action", "transition", entity, candidates
        return plan

    if verb in _DERIVED_CREATE and noun_name and noun_name in ids:
        plan.kind, plan.entity = "create", _DERIVED_CREATE[verb]
        return plan

    if verb in _AGGREGATE or parsed.trailing == "aggregate":
        subject, rest = split_by_id()
        plan.kind, plan.entity = "aggregate", _singular_noun(rest) if subject else noun_name
        return _require_entity(plan)

    if verb in _LIST or parsed.trailing == "list":
        subject, rest = split_by_id()
        plan.kind, plan.entity = "list", _singular_noun(rest) if subject else noun_name
        return _require_entity(plan)

    if verb in _SEARCH:
        subject, rest = split_by_id()
        has_query = any(p in _QUERY_NAMES for p in props)
        plan.kind, plan.entity = ("search" if has_query else "list"), _singular_noun(rest) if subject else noun_name
        return _require_entity(plan)

    if verb in _GET:
        subject, rest = split_by_id()
        if subject is not None and singularize(rest[-1]) != rest[-1] and rest[-1] not in _UNCOUNTABLE:
            plan.kind, plan.entity = "list", _singular_noun(rest)
            return plan
        if subject is not None:
            plan.kind, plan.entity = "get", subject
            return plan
        plan.entity = noun_name
        if not plural and not props:
            plan.kind, plan.entity, plan.reason = None, None, "a get with no parameter names no row"
            return plan
        plan.kind = "get" if _find_key(noun_name, props) and not plural else "list"
        return _require_entity(plan)

    if verb in _DELETE:
        subject, _ = split_by_id()
        plan.kind, plan.entity = "delete", subject or noun_name
        return _require_entity(plan)

    if verb in _UPDATE:
        subject, _ = split_by_id()
        plan.kind, plan.entity = "update", subject or noun_name
        return _require_entity(plan)

    if verb in _CREATE or verb in _DUAL or verb in _DERIVED_CREATE:
        subject, rest = split_by_id()
        plan.kind = "create"
        plan.entity = _singular_noun(rest) if subject else noun_name
        if verb in _DERIVED_CREATE and not plan.entity:
            plan.entity = _DERIVED_CREATE[verb]
        return _require_entity(plan)

    plan.reason = f"verb {verb!r} has no operation"
    return plan


def _require_entity(plan: _Plan) -> _Plan:
    if not plan.entity:
        plan.kind, plan.entity, plan.reason = None, None, "no noun names an entity"
    return plan


def _names_row(noun: list[str], props: dict[str, JsonSchema]) -> bool:
    """A dual verb (submit, send...) works on an existing row when the tool names that row's id."""
    name = _singular_noun(noun)
    return bool(name) and (f"{name}_id" in props or "id" in props)


def _find_key(entity: str, props: dict[str, JsonSchema]) -> str | None:
    """The parameter naming a row of `entity`: `<entity>_id`, else `id`, `<entity>_number`, `<entity>_key`."""
    for candidate in (f"{entity}_id", "id", f"{entity}_number", f"{entity}_key", f"{entity}_uuid"):
        if candidate in props:
            return candidate
    return None


def _transfer_ends(props: dict[str, JsonSchema]) -> tuple[tuple[str, str | None], tuple[str, str | None]] | None:
    src = next(((p, m.group(2)) for p in props if (m := _FROM_RE.match(p))), None)
    dst = next(((p, m.group(2)) for p in props if (m := _TO_RE.match(p))), None)
    if src is None or dst is None:
        return None
    return src, dst


# --- second pass: settle entities ----------------------------------------------------------


def _settle_entities(plans: list[_Plan], fixed: list[str] | None) -> None:
    """Map each plan's noun onto a known entity: exact name, table name, or the longest matching suffix."""
    confirmed: set[str] = set(fixed or [])
    if fixed is None:
        for p in plans:
            if p.kind in ("get", "create", "update", "delete") and p.entity:
                confirmed.add(p.entity)
            confirmed.update(x for x in _id_entities(p.props) if x not in _NOT_ENTITIES)
    tables = {pluralize(e): e for e in confirmed}
    for p in plans:
        split_off = bool(p.entity) and p.full.endswith(f"_{p.entity}")  # list_supplier_items(supplier_id)
        generic_part = p.entity not in confirmed and p.entity in _GENERIC_PARTS  # list_order_items(order_id)
        if p.kind in ("list", "search", "aggregate", "create") and split_off and (p.full in confirmed or generic_part):
            p.entity = p.full
            continue
        if not p.entity or p.entity in confirmed:
            continue
        if p.entity in tables:
            p.entity = tables[p.entity]
            continue
        words = p.entity.split("_")
        candidates = ["_".join(words[k:]) for k in range(1, len(words))]
        candidates += ["_".join(words[:-k]) for k in range(1, len(words))]
        match = next((c for c in candidates if c in confirmed or c in tables), None)
        if match is not None:
            p.entity = tables.get(match, match)
        elif fixed is not None:
            p.kind, p.entity, p.reason = None, None, f"no known entity matches {p.entity!r}"


# --- the main entry ------------------------------------------------------------------------


def infer_entities(topic: Topic) -> tuple[list[EntitySpec], list[ToolSpec]]:
    """Entities of a topic and its tools with operations, `mutates` and outputs filled in.

    Given entities (OpenAPI) are kept; only tools without an operation are mapped. Tools that cannot
    be mapped keep `operation=None` and the builder drops them with a reason (see `unmapped_reasons`).
    """
    entities, tools, _ = _infer(topic)
    return entities, tools


def unmapped_reasons(topic: Topic) -> dict[str, str]:
    """Tool name -> why no operation could be inferred (for the builder's report)."""
    return _infer(topic)[2]


def _infer(topic: Topic) -> tuple[list[EntitySpec], list[ToolSpec], dict[str, str]]:
    given = list(topic.entities)
    fixed_names = [e.name for e in given] if given else None
    plans = [_classify(t, set(fixed_names or [])) for t in topic.tools]
    _settle_entities(plans, fixed_names)
    entities = _complete_given(given, plans) if given else _build_entities(plans)
    by_name = {e.name: e for e in entities}
    tools = [_finish_tool(p, by_name) for p in plans]
    reasons = {p.spec.name: p.reason or "not mapped" for p, t in zip(plans, tools, strict=True) if t.operation is None}
    return entities, tools, reasons


def _field_params(plan: _Plan, entity: str) -> list[tuple[str, JsonSchema, bool]]:
    """Parameters of a plan that name fields of its entity, with required-ness on create."""
    key = f"{entity}_id"
    out: list[tuple[str, JsonSchema, bool]] = []
    reading = plan.kind in ("list", "search", "aggregate")
    for name, schema in plan.props.items():
        if name in (key, "id") or name in _WRITE_CONTROLS:
            continue
        if reading:
            if name in _READ_CONTROLS | _QUERY_NAMES | _PAGING_LIMIT | _PAGING_DROP or _is_sort_direction(schema):
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
        out.append((name, schema, plan.kind == "create" and name in plan.required))
    return out


def _is_sort_direction(schema: JsonSchema) -> bool:
    enum = schema.get("enum")
    return isinstance(enum, list) and bool(enum) and set(enum) <= {"asc", "desc", "ascending", "descending"}


def _add_param_fields(p: _Plan, d: _Draft) -> None:
    for name, schema, required in _field_params(p, d.name):
        f = field_from_param(name, schema, required)
        if f is not None:
            d.add(f)


def _output_record(schema: JsonSchema, entity: str, table: str) -> JsonSchema | None:
    """The schema of the row inside a tool's output: the output itself, the `items` of a page or a bare
    array, or the record in an envelope like `{"order": {...}, "error": null}`; None when there is none."""
    if _base_type(schema) == "array":
        inner = schema.get("items")
        return inner if isinstance(inner, dict) and isinstance(inner.get("properties"), dict) else None
    props = schema.get("properties")
    if not isinstance(props, dict):
        return None
    for key in ("items", "results", "data", "records", table, pluralize(entity)):
        sub = props.get(key)
        if isinstance(sub, dict) and _base_type(sub) == "array":
            return _output_record(sub, entity, table)
    others = [k for k in props if snake(k) not in _RESPONSE_FIELDS | _PAGE_FIELDS]
    if len(others) == 1 and others[0] in (entity, "data", "result", "record", "item"):
        sub = props[others[0]]
        if isinstance(sub, dict) and isinstance(sub.get("properties"), dict):
            return sub
    return schema


def _output_fields(p: _Plan) -> list[tuple[str, JsonSchema, bool]]:
    """Columns of the record a tool says it returns (a known output schema), without the row's own key
    and without the fields of the response around it (total, next_offset, error...)."""
    out = p.spec.output
    if not isinstance(out, dict) or not p.entity or p.kind in ("delete", "aggregate") or p.action == "transfer":
        return []
    record = _output_record(out, p.entity, _table_name(p.entity))
    if record is None or (p.kind in ("list", "search") and record is out):
        return []
    required = set(record.get("required") or [])
    key = f"{p.entity}_id"
    return [
        (snake(name), schema, name in required)
        for name, schema in record["properties"].items()
        if isinstance(schema, dict) and snake(name) not in (key, "id") and snake(name) not in _RESPONSE_FIELDS
    ]


_STATED_RE = re.compile(
    r"\b(?:taken|drawn|deducted|subtracted|consumed|reserved) from (?:the |its )?([a-z][a-z ]*?)'s ([a-z][a-z ]*?)"
    r"(?=[.;,)]|$)"
)


def _stated_consumes(p: _Plan) -> list[tuple[str, str, str, str]]:
    """Supplies a create tool's parameter descriptions name: `quantity` "taken from the supplier item's
    stock" -> (quantity, type, "supplier_item", "stock"); only rows the tool names by `<x>_id`."""
    if p.kind != "create":
        return []
    ids = set(_id_entities(p.props))
    out: list[tuple[str, str, str, str]] = []
    for name, schema in p.props.items():
        t = _base_type(schema)
        m = _STATED_RE.search(str(schema.get("description") or "").lower())
        if t not in ("integer", "number") or m is None:
            continue
        parent = snake(m.group(1))
        if parent in ids and parent != p.entity:
            out.append((name, t, parent, snake(m.group(2))))
    return out


def _supply_field(d: _Draft, stated: str, amount_type: str) -> str:
    """The parent's column a stated supply means: "remaining amount" is the budget's `remaining`."""
    words = stated.split("_")
    candidates = [stated, "_".join(w for w in words if w not in ("amount", "level", "count")) or stated]
    for c in candidates:
        if c in d.fields and d.fields[c].type in ("integer", "number"):
            return c
    name = candidates[-1]
    money = amount_type == "number" and (_is_money(name) or name in _MONEY_LEFT)
    d.add(
        FieldSpec(
            name=name, type="integer" if amount_type == "integer" else "number", format="money" if money else None
        )
    )
    return name


def _build_entities(plans: list[_Plan]) -> list[EntitySpec]:
    drafts: dict[str, _Draft] = {}

    def draft(name: str, from_tools: bool = True) -> _Draft:
        if name not in drafts:
            drafts[name] = _Draft(name=name, from_tools=from_tools)
        return drafts[name]

    mapped = [p for p in plans if p.kind is not None and p.entity]
    for p in mapped:
        draft(p.entity or "")
    # creates name the fields first (their order and required-ness), then updates, then the records
    # the tools return, then filters and what actions need
    writes = [p for p in mapped if p.kind in ("create", "update")]
    for p in [*sorted(writes, key=lambda p: p.kind != "create"), *(p for p in mapped if p not in writes)]:
        if p.kind in ("create", "update"):
            _add_param_fields(p, draft(p.entity or ""))
    for p in mapped:
        for name, schema, _ in _output_fields(p):
            f = field_from_param(name, schema)
            if f is not None:
                draft(p.entity or "").add(f, from_output=True)
    for p in mapped:
        d = draft(p.entity or "")
        if p.kind in ("list", "search", "aggregate"):
            _add_param_fields(p, d)
        if p.kind == "create" and not d.description:
            d.description = p.spec.description
        if p.kind == "action" and p.action in ("increment", "decrement", "transfer"):
            p.field = p.field or _existing_counter(d) or _VERB_FIELDS.get(p.verb or "", "stock")
            money = p.field in _BALANCE_LIKE - {"points", "credits", "loyalty_points"} or _is_money(p.field)
            d.add(FieldSpec(name=p.field, type="number" if money else "integer", format="money" if money else None))
        if p.kind == "action" and p.action == "transition":
            status = _status_field(d) or "status"
            p.field = status
            if status not in d.fields:
                d.add(FieldSpec(name=status, type="string"))
    # foreign keys: `<x>_id` fields point at x, created as a small entity when no tool lists it
    for d in list(drafts.values()):
        for f in list(d.fields.values()):
            target = f.name[:-3] if f.name.endswith("_id") else None
            if not target or target in _NOT_ENTITIES or target == d.name:
                continue
            if target not in drafts:
                draft(target, from_tools=False)
    # ids passed to tools of other entities (create_order(customer_id)) already became fields above;
    # ids only named by actions/gets of another entity also deserve a table
    for p in plans:
        for x in _id_entities(p.props):
            if p.kind is not None and x != p.entity and x not in _NOT_ENTITIES and x not in drafts:
                draft(x, from_tools=False)
    # supplies the descriptions state: "units ordered; taken from the supplier item's stock"
    stated: dict[str, list[Rule]] = {}
    for p in mapped:
        for name, amount_type, parent, supply in _stated_consumes(p):
            if parent in drafts and name in drafts[p.entity or ""].fields:
                target = f"{parent}.{_supply_field(drafts[parent], supply, amount_type)}"
                stated.setdefault(p.entity or "", []).append(Rule(kind="consumes", field=name, target=target))
    _settle_states(plans, drafts)
    entities = [_finish_entity(d, drafts) for d in drafts.values()]
    _assign_prefixes(entities)
    drawn = {(p.entity, p.field) for p in plans if p.action in ("decrement", "transfer") and p.entity and p.field}
    _add_rules(entities, drawn, stated)
    return _fk_order(entities)


def _existing_counter(d: _Draft) -> str | None:
    for name, f in d.fields.items():
        if _is_counter(name) and f.type in ("integer", "number"):
            return name
    return None


def _status_field(d: _Draft) -> str | None:
    for candidate in ("status", "state"):
        if candidate in d.fields and d.fields[candidate].type == "string":
            return candidate
    return next((n for n, f in d.fields.items() if n.endswith("_status") and f.type == "string"), None)


def _initial_state(verbs: set[str]) -> str:
    if verbs & {"close", "reopen", "resolve"}:
        return "open"
    if verbs & {"publish", "unpublish"}:
        return "draft"
    if verbs & {
        "deactivate",
        "suspend",
        "archive",
        "pause",
        "block",
        "disable",
        "lock",
        "unarchive",
        "unblock",
        "return",
    }:
        return "active"
    return "pending"


def _settle_states(plans: list[_Plan], drafts: dict[str, _Draft]) -> None:
    """Give every transitioned status field an enum holding the initial state and all targets."""
    by_entity: dict[str, list[_Plan]] = {}
    for p in plans:
        if p.kind == "action" and p.action == "transition" and p.entity in drafts:
            by_entity.setdefault(p.entity, []).append(p)
    for entity, group in by_entity.items():
        d = drafts[entity]
        status = group[0].field or "status"
        f = d.fields[status]
        given = list(f.enum or [])
        values = list(given)
        for p in group:
            hit = next((c for c in p.to_candidates if c in values), None)
            if hit is None:
                values.append(p.to_candidates[0])
        if not given:
            verbs = {p.verb or "" for p in group}
            values.insert(0, _initial_state(verbs))
            for p in group:
                sources = _TRANSITIONS.get(p.verb or "", ([], None))[1]
                if sources and not set(sources) & set(values):
                    values.append(sources[0])
            values = sorted(dict.fromkeys(values), key=lambda s: (_RANK.get(s, len(_RANK)), values.index(s)))
        d.fields[status] = f.model_copy(update={"enum": list(dict.fromkeys(values))})


def _finish_entity(d: _Draft, drafts: dict[str, _Draft]) -> EntitySpec:
    fields = [FieldSpec(name="id", type="string", required=True, primary_key=True, description=f"ID of the {d.name}.")]
    for f in d.fields.values():
        if f.name == "id":
            continue
        update: dict[str, Any] = {}
        target = f.name[:-3] if f.name.endswith("_id") else None
        if target and target in drafts and target != d.name:
            update.update(type="string", references=f"{target}.id", format=None, enum=None, minimum=None, maximum=None)
        elif target and target == d.name:
            update.update(type="string", format=None)
        if (f.name in _UNIQUE_NAMES or f.name.endswith(_UNIQUE_SUFFIXES)) and not f.references and not f.enum:
            update["unique"] = True
        fields.append(f.model_copy(update=update) if update else f)
    if len(fields) == 1 or (not d.from_tools and len(fields) == 1 + sum(1 for f in fields if f.references)):
        label = f"Name of the {d.name.replace('_', ' ')}."
        fields.insert(1, FieldSpec(name="name", type="string", required=not d.from_tools, description=label))
    if not d.from_tools and len(fields) == 2 and d.name in _PERSON_NOUNS:
        fields.append(FieldSpec(name="email", type="string", format="email", unique=True))
    title = d.name.replace("_", " ")
    return EntitySpec(
        name=d.name,
        table=_table_name(d.name),
        fields=fields,
        primary_key="id",
        description=_first_sentence(d.description) or f"A {title} record.",
    )


def _table_name(entity: str) -> str:
    words = entity.split("_")
    return "_".join([*words[:-1], pluralize(words[-1])])


def _first_sentence(text: str) -> str:
    text = text.strip()
    return text.split(". ")[0].rstrip(".") + "." if text else ""


def _assign_prefixes(entities: list[EntitySpec]) -> None:
    """Short, unique id prefixes: order -> "ord_", order_item -> "oi_", product/profile -> "pro_"/"prof_".

    Entities that already have one keep it.
    """
    used = {e.id_prefix.rstrip("_") for e in entities if e.id_prefix}
    for i, e in enumerate(entities):
        if e.id_prefix:
            continue
        words = e.name.split("_")
        letters = re.sub(r"[^a-z0-9]", "", e.name)
        base = "".join(w[0] for w in words) if len(words) > 1 else e.name[:3]
        candidates = [base] + [letters[:n] for n in range(len(base) + 1, len(letters) + 1)]
        prefix = next((c for c in candidates if c not in used), None) or f"{base}{i}"
        used.add(prefix)
        entities[i] = e.model_copy(update={"id_prefix": f"{prefix}_"})


def _add_rules(
    entities: list[EntitySpec],
    drawn: set[tuple[str, str]] | frozenset = frozenset(),
    stated: dict[str, list[Rule]] | None = None,
) -> None:
    """Business rules the topic implies.

    consumes: a quantity (seats, amount) on a row draws down a stock-like field (seats left, budget
    remaining) of the row it references; `stated` (entity -> rules) are the ones tool descriptions
    name, kept first. non_negative: counters, fields that actions or consumers draw from (`drawn`:
    (entity, field) pairs). unique_together: the two keys of a join row.
    """
    by_name = {e.name: e for e in entities}
    drawn = set(drawn)
    consumes: dict[str, list[Rule]] = {k: list(v) for k, v in (stated or {}).items()}
    for rules in consumes.values():
        drawn.update(tuple(r.target.split(".", 1)) for r in rules if r.target)  # type: ignore[misc]
    for e in entities:
        for f in e.fields:
            if f.type not in ("integer", "number") or any(r.field == f.name for r in consumes.get(e.name, [])):
                continue
            for ref in e.fields:
                parent = by_name.get(ref.references.split(".")[0]) if ref.references else None
                if parent is None:
                    continue
                # counts draw on integer counters, money on money
                kind = "number" if f.name in _SPEND_FIELDS else "integer"
                names = {pf.name for pf in parent.fields if pf.type == kind}
                hit = next((t for t in _consumable_fields(f.name, parent.name) if t in names), None)
                if hit is None and kind == "integer" and f.name in _QUANTITY_FIELDS | _SEAT_FIELDS:
                    hit = next((pf.name for pf in parent.fields if pf.name in names and _is_counter(pf.name)), None)
                if hit:
                    consumes.setdefault(e.name, []).append(
                        Rule(kind="consumes", field=f.name, target=f"{parent.name}.{hit}")
                    )
                    drawn.add((parent.name, hit))
                    break
    for i, e in enumerate(entities):
        rules = list(e.rules)
        have = {(r.kind, r.field, r.target) for r in rules}
        for f in e.fields:
            counter = _is_counter(f.name) or (e.name, f.name) in drawn
            if f.type in ("integer", "number") and counter and ("non_negative", f.name, None) not in have:
                rules.append(Rule(kind="non_negative", field=f.name))
        rules += [r for r in consumes.get(e.name, []) if (r.kind, r.field, r.target) not in have]
        fks = [f.name for f in e.fields if f.references]
        if e.name in _JOIN_ENTITIES and len(fks) == 2 and not any(r.kind == "unique_together" for r in rules):
            rules.append(Rule(kind="unique_together", fields=fks))
        entities[i] = e.model_copy(update={"rules": rules})


def _is_counter(name: str) -> bool:
    """What is left of something: stock, seats_available, copies_left, remaining_budget, balance."""
    return (
        name in _NON_NEGATIVE
        or name.endswith(("_remaining", "_available", "_left", "_in_stock", "_stock", "_on_hand"))
        or name.startswith(("available_", "remaining_"))
    )


def _consumable_fields(name: str, parent: str) -> list[str]:
    """Fields of a referenced `parent` row that a quantity called `name` draws down, best first."""
    if name in _QUANTITY_FIELDS:
        return sorted(_STOCK_LIKE)
    if name in _SEAT_FIELDS:
        return sorted(f for f in _STOCK_LIKE if "seat" in f or f in ("capacity", "remaining", "spots_left"))
    if name in _SPEND_FIELDS:
        return sorted(_MONEY_LEFT) + (["amount", "total", "limit"] if parent in _BUDGET_NOUNS else [])
    return []


def _fk_order(entities: list[EntitySpec]) -> list[EntitySpec]:
    """Parents before children (stable for equal rank), so tables and seed rows can be made in order."""
    by_name = {e.name: e for e in entities}
    order: list[EntitySpec] = []
    seen: set[str] = set()

    def visit(e: EntitySpec, stack: set[str]) -> None:
        if e.name in seen or e.name in stack:
            return
        stack.add(e.name)
        for f in e.fields:
            parent = f.references.split(".")[0] if f.references else None
            if parent and parent != e.name and parent in by_name:
                visit(by_name[parent], stack)
        stack.discard(e.name)
        seen.add(e.name)
        order.append(e)

    for e in entities:
        visit(e, set())
    return order


def _complete_given(given: list[EntitySpec], plans: list[_Plan]) -> list[EntitySpec]:
    """Keep given entities as they are; settle action fields against them and add missing rules/prefixes."""
    by_name = {e.name: e for e in given}
    for p in plans:
        if p.kind is None or p.entity not in by_name:
            continue
        e = by_name[p.entity]
        names = {f.name: f for f in e.fields}
        if p.kind == "action" and p.action in ("increment", "decrement", "transfer"):
            if p.field not in names:
                p.field = next((n for n, f in names.items() if n in _NON_NEGATIVE and f.type != "string"), None)
            if p.field is None:
                p.kind, p.reason = None, "no counter field for the amount change"
        elif p.kind == "action" and p.action == "transition":
            status = next((n for n in ("status", "state") if n in names and names[n].enum), None)
            values = names[status].enum or [] if status else []
            hit = next((c for c in p.to_candidates if c in values), None)
            if status is None or hit is None:
                p.kind, p.reason = None, "no status value for this transition"
            else:
                p.field, p.to_candidates = status, [hit]
    entities = list(given)
    _assign_prefixes(entities)
    if not any(e.rules for e in entities):
        _add_rules(entities)
    return _fk_order(entities)


# --- tools ---------------------------------------------------------------------------------


def _from_values(verb: str, to_value: str, enum: list[str]) -> list[str]:
    """States a transition may start from: explicit sources for reversing verbs, else the live states."""
    others = [s for s in enum if s != to_value]
    explicit = _TRANSITIONS.get(verb, ([], None))[1]
    if explicit:
        hits = [s for s in others if s in explicit]
        return hits or others
    if verb == "archive":
        out = [s for s in others if s != "deleted"]
    elif verb == "close":
        out = [s for s in others if s not in {"cancelled", "canceled", "archived", "merged", "deleted"}]
    else:
        out = [s for s in others if s not in _TERMINAL]
        if verb in _REVOKING:
            out = [s for s in out if s not in _FULFILLED]
        if verb in _FORWARD and to_value in _RANK:
            out = [s for s in out if _RANK.get(s, -1) < _RANK[to_value]]
    return out or others


def field_schema(f: FieldSpec) -> JsonSchema:
    """JSON schema of one column's values."""
    base: JsonSchema
    if f.type in ("date", "datetime"):
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


def record_schema(entity: EntitySpec) -> JsonSchema:
    """The output of get/create/update: one row with its real column names (`id` is the primary key)."""
    props: dict[str, JsonSchema] = {}
    for f in entity.fields:
        s = field_schema(f)
        if not (f.required or f.primary_key):
            s["type"] = [s["type"], "null"]
        props[f.name] = s
    required = [f.name for f in entity.fields if f.required or f.primary_key]
    return {"type": "object", "title": entity.name, "x-entity": entity.name, "properties": props, "required": required}


def page_schema(entity: EntitySpec) -> JsonSchema:
    return {
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": record_schema(entity)},
            "total": {"type": "integer"},
            "next_offset": {"type": ["integer", "null"]},
        },
        "required": ["items", "total", "next_offset"],
    }


def output_schema(op: ToolOperation, entity: EntitySpec) -> JsonSchema:
    """The JSON schema of a successful result of `op` (see ToolOperation's docstring)."""
    if op.kind in ("list", "search"):
        return page_schema(entity)
    if op.kind == "delete":
        key = f"{entity.name}_id"
        return {
            "type": "object",
            "properties": {"deleted": {"type": "boolean"}, key: {"type": "string"}},
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
        return {
            "type": "object",
            "properties": {"from": record_schema(entity), "to": record_schema(entity), "amount": {"type": "number"}},
            "required": ["from", "to"],
        }
    return record_schema(entity)


def _key_schema(entity: str, old: JsonSchema | None) -> JsonSchema:
    desc = (old or {}).get("description") or f"ID of the {entity.replace('_', ' ')}."
    return {"type": "string", "description": desc}


def _finish_tool(p: _Plan, entities: dict[str, EntitySpec]) -> ToolSpec:
    """Operation, normalized parameters, `mutates` and output of one tool."""
    tool = p.spec
    if tool.operation is not None:
        known = entities.get(tool.operation.entity)
        if known is None:
            return tool
        out = tool.output if tool.output is not None else output_schema(tool.operation, known)
        mutates = tool.operation.kind in ("create", "update", "delete", "action")
        return tool.model_copy(update={"output": out, "mutates": mutates})
    entity = entities.get(p.entity or "")
    if p.kind is None or entity is None:
        if not p.reason:
            p.reason = f"entity {p.entity!r} is unknown" if p.entity else "not mapped"
        return tool.model_copy(update={"operation": None})
    props = dict(p.props)
    required = list(p.required)

    def rename(old: str, new: str) -> None:
        nonlocal props, required
        if old == new or old not in props:
            return
        props = {(new if k == old else k): (_key_schema(entity.name, v) if k == old else v) for k, v in props.items()}
        required = [new if r == old else r for r in required]

    key = f"{entity.name}_id"
    op_fields: dict[str, Any] = {}
    if p.kind in ("get", "update", "delete") or (p.kind == "action" and p.action != "transfer"):
        found = _find_key(entity.name, props)
        if found is None:
            p.reason = f"no parameter names the {entity.name} ({key})"
            return tool.model_copy(update={"operation": None})
        rename(found, key)
        props[key] = _key_schema(entity.name, props[key])
        if key not in required:
            required.insert(0, key)
    if p.kind == "create":
        props.pop("id", None)
        props.pop(key, None)
        required = [r for r in required if r in props]
        names = {f.name for f in entity.fields}
        if not any(n in names for n in props):
            p.reason = "create tool has no parameter naming a field"
            return tool.model_copy(update={"operation": None})
    if p.kind in ("list", "search"):
        for name in list(props):
            if name in _PAGING_DROP:
                props.pop(name)
            elif name in _PAGING_LIMIT and name != "limit" and "limit" not in props:
                rename(name, "limit")
        for name in list(props):
            m = re.match(r"^(.+)_(min|max)$", name)
            if m and m.group(1) in {f.name for f in entity.fields}:
                rename(name, f"{m.group(2)}_{m.group(1)}")
            m = re.match(r"^(.+)_(after|before|since|until)$", name)
            if m and f"{m.group(1)}_at" in {f.name for f in entity.fields}:
                bound = "min" if m.group(2) in ("after", "since") else "max"
                rename(name, f"{bound}_{m.group(1)}_at")
        props["limit"] = {
            "type": "integer",
            "minimum": 1,
            "maximum": 100,
            "default": 20,
            "description": "Maximum number of results to return.",
        }
        props["offset"] = {"type": "integer", "minimum": 0, "default": 0, "description": "Results to skip."}
        required = [r for r in required if r in props and r not in ("limit", "offset")]
    if p.kind == "search":
        qname = next((n for n in props if n in _QUERY_NAMES), None)
        if qname:
            rename(qname, "query")
        props["query"] = {"type": "string", "description": (props.get("query") or {}).get("description") or "Text."}
        if "query" not in required:
            required.insert(0, "query")
    if p.kind == "action":
        f_names = {f.name: f for f in entity.fields}
        op_fields.update(action=p.action, field=p.field)
        if p.action in ("increment", "decrement", "transfer"):
            op_fields["amount_param"] = p.amount_param
            if p.amount_param and p.amount_param not in required:
                required.append(p.amount_param)
        if p.action == "transfer" and p.transfer_params:
            rename(p.transfer_params[0], f"from_{key}")
            rename(p.transfer_params[1], f"to_{key}")
            for end in (f"from_{key}", f"to_{key}"):
                if end not in required:
                    required.append(end)
        if p.action == "transition":
            enum = f_names[p.field].enum or [] if p.field in f_names else []
            to_value = next((c for c in p.to_candidates if c in enum), None)
            if to_value is None:
                p.reason = "no status value for this transition"
                return tool.model_copy(update={"operation": None})
            op_fields.update(to_value=to_value, from_values=_from_values(p.verb or "", to_value, enum))
    op = ToolOperation(kind=p.kind, entity=entity.name, **op_fields)
    params = {k: v for k, v in tool.parameters.items() if k not in ("properties", "required")}
    params.setdefault("type", "object")
    params["properties"] = props
    if required:
        params["required"] = list(dict.fromkeys(required))
    return tool.model_copy(
        update={
            "operation": op,
            "parameters": params,
            "mutates": p.kind in ("create", "update", "delete", "action"),
            "output": output_schema(op, entity),
        }
    )
