"""The factory's word tables: what tool names, parameters, fields and states mean.

Every stage that reads meaning from a name (entity inference, the OpenAPI and MCP loaders, the
procedural miner, task synthesis, state comparison) looks the words up here, so a verb means the
same thing to the loader that reads a spec and to the inference that maps an MCP tool list.
"""

from __future__ import annotations

# --- verbs of tool names -----------------------------------------------------------------------

LIST_VERBS = frozenset({"list", "browse", "enumerate", "index"})
GET_VERBS = frozenset({"get", "fetch", "read", "retrieve", "show", "describe", "view", "load", "inspect", "lookup"})
SEARCH_VERBS = frozenset({"search", "find", "query", "filter", "discover"})
CREATE_VERBS = frozenset(
    {
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
)
# Creating through another noun: book_flight(flight_id) creates a booking of that flight.
DERIVED_CREATES = {
    "book": "booking",
    "reserve": "reservation",
    "enroll": "enrollment",
    "subscribe": "subscription",
    "apply": "application",
    "rent": "rental",
    "purchase": "purchase",
    "buy": "purchase",
}
UPDATE_VERBS = frozenset(
    {"update", "edit", "modify", "set", "change", "patch", "rename", "assign", "move", "reschedule", "upsert"}
)
DELETE_VERBS = frozenset({"delete", "remove", "destroy", "drop", "erase", "purge", "discard", "trash"})
# Words that delete only when the server says the tool is destructive (MCP `destructiveHint`): `git_reset`.
DESTRUCTIVE_VERBS = frozenset({"clear", "reset", "wipe", "flush", "truncate", "empty", "prune"})
AGGREGATE_VERBS = frozenset(
    {"count", "summarize", "summary", "stats", "statistics", "aggregate", "total", "sum", "tally"}
)
INCREMENT_VERBS = frozenset(
    {
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
)
DECREMENT_VERBS = frozenset(
    {
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
)
TRANSFER_VERBS = frozenset({"transfer"})
# Verbs that create a row when no row is named, and move a named row into a state otherwise.
DUAL_VERBS = frozenset({"submit", "send", "schedule", "place", "open", "add", "publish", "verify"})
# Verbs that only say which CRUD operation a tool is, never a business action of its own.
CRUD_VERBS = frozenset({"get", "list", "search", "create", "update", "delete", "add", "set", "remove", "new", "find"})
# Verbs whose tools only read; a tool whose name starts with any other verb is taken to change state.
READ_VERBS = frozenset(
    {
        "list",
        "get",
        "search",
        "find",
        "count",
        "read",
        "fetch",
        "query",
        "describe",
        "show",
        "view",
        "lookup",
        "check",
        "retrieve",
        "browse",
        "summarize",
        "preview",
        "validate",
        "estimate",
        "calculate",
        "export",
        "download",
    }
)
# Verbs that name a write on their own (an Agent-World tool whose code cannot be read).
WRITE_VERBS = frozenset(
    {
        "add",
        "append",
        "apply",
        "approve",
        "archive",
        "assign",
        "book",
        "cancel",
        "checkout",
        "close",
        "complete",
        "create",
        "delete",
        "insert",
        "issue",
        "mark",
        "move",
        "open",
        "place",
        "post",
        "register",
        "reject",
        "remove",
        "rename",
        "reserve",
        "reset",
        "return",
        "save",
        "schedule",
        "send",
        "set",
        "submit",
        "transfer",
        "update",
        "upsert",
        "write",
    }
)
# Two-word verbs and states that tool names spell as two words.
COMPOUND_WORDS = {
    ("top", "up"): "top_up",
    ("check", "in"): "check_in",
    ("check", "out"): "check_out",
    ("in", "progress"): "in_progress",
    ("on", "hold"): "on_hold",
    ("in", "transit"): "in_transit",
}

# --- states ------------------------------------------------------------------------------------

# verb -> (target states, best first; the only states it may start from, or None for the general rule)
TRANSITIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...] | None]] = {
    "cancel": (("cancelled", "canceled"), None),
    "approve": (("approved",), None),
    "reject": (("rejected", "declined"), None),
    "decline": (("declined", "rejected"), None),
    "close": (("closed",), None),
    "reopen": (("open", "reopened"), ("closed", "resolved", "completed", "done")),
    "complete": (("completed", "done", "finished", "closed", "complete"), None),
    "finish": (("finished", "completed", "done"), None),
    "archive": (("archived",), None),
    "unarchive": (("active", "open"), ("archived",)),
    "restore": (("active", "open"), ("archived", "deleted", "trashed")),
    "ship": (("shipped",), None),
    "dispatch": (("dispatched", "shipped"), None),
    "deliver": (("delivered",), ("shipped", "in_transit", "dispatched", "out_for_delivery")),
    "confirm": (("confirmed",), None),
    "resolve": (("resolved", "closed", "done"), None),
    "activate": (("active", "activated"), ("inactive", "suspended", "deactivated", "disabled", "pending", "draft")),
    "deactivate": (("inactive", "deactivated", "disabled"), ("active",)),
    "suspend": (("suspended",), ("active",)),
    "freeze": (("frozen",), None),
    "publish": (("published",), None),
    "unpublish": (("draft", "unpublished"), ("published",)),
    "lock": (("locked",), None),
    "unlock": (("unlocked", "active", "open"), ("locked",)),
    "pause": (("paused",), ("active", "running", "in_progress")),
    "resume": (("active", "running", "in_progress"), ("paused", "suspended", "on_hold")),
    "start": (("in_progress", "started", "running", "active"), None),
    "stop": (("stopped",), ("running", "active", "in_progress", "started")),
    "fulfill": (("fulfilled",), None),
    "refund": (("refunded",), ("paid", "completed", "delivered", "captured", "settled", "succeeded")),
    "accept": (("accepted", "approved"), None),
    "block": (("blocked",), None),
    "unblock": (("active", "unblocked"), ("blocked",)),
    "enable": (("enabled", "active"), ("disabled", "inactive")),
    "disable": (("disabled", "inactive"), ("enabled", "active")),
    "merge": (("merged",), None),
    "pay": (("paid",), None),
    "void": (("void", "voided"), None),
    "settle": (("settled", "paid"), None),
    "check_in": (("checked_in",), ("confirmed", "booked", "reserved", "pending")),
    "check_out": (("checked_out", "completed"), ("checked_in",)),
    "escalate": (("escalated",), None),
    "hold": (("on_hold",), None),
    "return": (("returned",), ("active", "borrowed", "checked_out", "rented", "on_loan", "delivered", "shipped")),
    "expire": (("expired",), None),
    "revoke": (("revoked",), None),
    "acknowledge": (("acknowledged",), None),
    "snooze": (("snoozed",), None),
    "submit": (("submitted",), None),
    "send": (("sent",), None),
    "schedule": (("scheduled",), None),
    "place": (("placed",), None),
    "open": (("open",), None),
    "verify": (("verified",), None),
    "mark": ((), None),  # mark_<x>_as_<state>: the state is in the name
}
# Terminal states: a row in one cannot move on.
TERMINAL_STATES = frozenset(
    {
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
)
# States after fulfilment: an order that shipped can no longer be cancelled.
FULFILLED_STATES = frozenset(
    {
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
)
# States in the order a row's life passes through them.
LIFECYCLE = (
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
)
# Enum values of a filter that are no state.
NON_STATES = frozenset({"all", "any", "none", ""})
# Verbs moving a row forward: it cannot come from a state later in the lifecycle.
FORWARD_VERBS = frozenset(
    {
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
)
# Verbs that undo an earlier change: they start only from the states they undo (resume from paused).
UNDOING_VERBS = frozenset({"reopen", "unarchive", "restore", "unlock", "resume", "unblock", "unpublish"})
# Verbs undoing a row: not after it was fulfilled.
REVOKING_VERBS = frozenset({"cancel", "reject", "decline", "void", "revoke"})
# States a close or an archive does not start from.
NOT_CLOSABLE = frozenset({"cancelled", "canceled", "archived", "merged", "deleted"})
NOT_ARCHIVABLE = frozenset({"deleted"})
# The state new rows start in, by the verbs a topic has; rows start "pending" otherwise.
INITIAL_STATES: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({"close", "reopen", "resolve"}), "open"),
    (frozenset({"publish", "unpublish"}), "draft"),
    (
        frozenset(
            {"deactivate", "suspend", "archive", "pause", "block", "disable", "lock", "unarchive", "unblock", "return"}
        ),
        "active",
    ),
)
DEFAULT_INITIAL_STATE = "pending"

# --- nouns of tool names -----------------------------------------------------------------------

# Words before the noun that do not name it: list_all_open_issues works on issues.
LEADING_FILLERS = frozenset(
    {
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
)
# Words that end the noun: get_order_by_id, mark_ticket_as_resolved.
CUT_WORDS = frozenset({"by", "for", "of", "in", "with", "from", "to", "on", "into", "at", "using", "via", "per", "as"})
# Where a description's object ends: "Shows changes in the working directory that are not yet staged" -> changes.
DESCRIPTION_STOPS = CUT_WORDS | {"that", "which", "who", "and", "or", "if", "when", "where", "so", "between", "than"}
TRAILING_FILLERS = frozenset({"id", "ids", "details", "detail", "info", "information", "record", "records", "data"})
TRAILING_LIST = frozenset({"list"})
TRAILING_AGGREGATE = frozenset({"count", "summary", "stats", "statistics", "totals", "metrics"})
# `<x>_id` parameters that do not point at a row of this environment.
NOT_ENTITIES = frozenset(
    {
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
)
# Rows that join two others, one pair at most once.
JOIN_ENTITIES = frozenset(
    {
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
)
# Nouns that only make sense as a part of their parent: order + items -> order_item.
GENERIC_PARTS = frozenset({"item", "line", "entry", "line_item", "detail", "setting", "version", "part"})
PERSON_NOUNS = frozenset({"user", "customer", "person", "member", "employee", "contact", "student", "patient"})

# --- parameters --------------------------------------------------------------------------------

PAGING_LIMIT = frozenset({"limit", "page_size", "per_page", "max_results", "max_items", "count"})
PAGING_DROP = frozenset({"page", "cursor", "page_token", "next_token", "after", "starting_after", "skip", "start"})
QUERY_NAMES = frozenset(
    {"query", "q", "keyword", "keywords", "term", "search", "text", "search_term", "search_query", "phrase"}
)
# Parameters that steer a read rather than name a column.
READ_CONTROLS = frozenset(
    {
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
)
# Parameters of a write that are not stored.
WRITE_CONTROLS = frozenset({"dry_run", "confirm", "force", "notify", "fields", "include", "expand", "idempotency_key"})
# Fields of a tool's response, never columns of the row it returns.
RESPONSE_FIELDS = frozenset(
    {
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
)
# Fields of a page around rows: generic next to `items` or an envelope, real columns inside a record
# (an order's `total`).
PAGE_FIELDS = frozenset({"total", "offset", "limit", "page", "per_page", "page_size"})
# Parameters holding the amount of an increment, decrement or transfer, best first.
AMOUNT_NAMES = (
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
)
# Nouns of an amount change: add_balance(account_id, amount) tops up the account.
AMOUNT_NOUNS = frozenset(
    {"balance", "stock", "funds", "fund", "money", "cash", "credits", "credit", "points", "inventory"}
)

# --- fields ------------------------------------------------------------------------------------

# The column a noun of an amount change means.
FIELD_ALIASES = {
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
# The column an amount verb changes when the tool name names none.
VERB_FIELDS = {
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
COUNTER_SUFFIXES = ("_remaining", "_available", "_left", "_in_stock", "_stock", "_on_hand")
COUNTER_PREFIXES = ("available_", "remaining_")
STOCK_LIKE = COUNTER_FIELDS | {"capacity", "remaining"}
MONEY_LEFT = frozenset({"remaining", "remaining_amount", "amount_remaining", "available_funds", "remaining_budget"})
BALANCE_LIKE = frozenset({"balance", "credits", "points", "loyalty_points", "available_balance", "credit_balance"})
# Balances kept in points or credits rather than money.
POINT_BALANCES = frozenset({"points", "credits", "loyalty_points"})
NON_NEGATIVE = STOCK_LIKE | MONEY_LEFT | BALANCE_LIKE
# Parents whose own amount is what their children spend.
BUDGET_NOUNS = frozenset({"budget", "wallet", "allowance", "grant", "fund", "credit_line", "cost_center"})
# Integer fields of a row that draw on a counter of the row it references, best first.
QUANTITY_FIELDS = ("quantity", "qty", "units", "count")
SEAT_FIELDS = frozenset(
    {
        "seats",
        "seat_count",
        "num_seats",
        "passengers",
        "guests",
        "tickets",
        "party_size",
        "attendees",
        "participants",
        "rooms",
    }
)
SPEND_FIELDS = frozenset({"amount", "total", "cost", "total_amount", "total_cost", "price"})
# Fields counting a few things on one row (units ordered, seats, nights): small values.
COUNT_FIELDS = frozenset({*QUANTITY_FIELDS, *SEAT_FIELDS, "nights", "items", "copies"})
# Stock and target levels of a restock, and the words of a cost field, best first.
STOCK_FIELDS = ("stock", "on_hand", "quantity_on_hand", "quantity_available", "units_in_stock", "inventory")
TARGET_FIELDS = ("target_level", "target_stock", "reorder_point", "reorder_level", "par_level", "min_stock")
COST_WORDS = ("cost", "price", "rate")
# Words of a stated supply that do not name its column: "remaining amount" is `remaining`.
SUPPLY_NOISE = frozenset({"amount", "level", "count"})
UNIQUE_NAMES = frozenset({"email", "username", "user_name", "sku", "code", "slug", "handle", "isbn", "login", "iban"})
UNIQUE_SUFFIXES = ("_code", "_number", "_email", "_sku")
MONEY_NAMES = frozenset(
    {
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
)
MONEY_SUFFIXES = ("_price", "_amount", "_cost", "_fee", "_balance", "_total")
# Words that make a number field money wherever they appear in its name (`unit_price_usd`).
MONEY_WORDS = ("price", "amount", "cost", "total", "balance", "fee", "salary", "budget", "remaining")
DATE_NAMES = frozenset({"date", "dob", "birthday", "birth_date"})
DATE_SUFFIXES = ("_date", "_on")
DATETIME_NAMES = frozenset({"timestamp", "datetime"})
DATETIME_SUFFIXES = ("_at", "_time", "_datetime")
URL_NAMES = frozenset({"url", "website", "homepage"})
PHONE_NAMES = frozenset({"phone", "phone_number", "mobile"})
# Columns the clock writes: comparisons of states ignore them, tools stamp them.
TIMESTAMP_COLUMNS = (
    "created_at",
    "updated_at",
    "modified_at",
    "inserted_at",
    "last_modified",
    "last_modified_at",
    "last_updated",
    "last_updated_at",
    "timestamp",
)
# Of those, the columns an update refreshes (the others are set once, at creation).
UPDATE_TIMESTAMP_COLUMNS = (
    "updated_at",
    "modified_at",
    "last_modified",
    "last_modified_at",
    "last_updated",
    "last_updated_at",
)

# --- effects of state changes: supplies given back, ledgers, closed rows -------------------------

# States in which a row that consumed a supply (an order, a booking) holds none of it any more.
RELEASED_STATES = frozenset(
    {
        "cancelled",
        "canceled",
        "rejected",
        "declined",
        "void",
        "voided",
        "refunded",
        "withdrawn",
        "expired",
        "failed",
        "revoked",
    }
)
# States that end the use of something lent rather than spent (a seat, a room, a copy): it is free again.
ENDED_STATES = frozenset({"completed", "returned", "checked_out", "finished", "ended", "done"})
# Words of a supply that is lent for a while and comes back when the use ends (seats, capacity, copies).
REUSABLE_SUPPLY_WORDS = ("seat", "capacity", "copies", "spot", "place", "room", "slot", "bed", "table")
# Rows that hold one unit of the counter of the row they reference, without a quantity of their own.
ONE_UNIT_NOUNS = frozenset(
    {
        "enrollment",
        "enrolment",
        "loan",
        "registration",
        "signup",
        "borrowing",
        "checkout",
        "seat_booking",
    }
)
# Closed states: a row in one is done with; it takes no updates, amount changes or new rows pointing at it.
CLOSED_STATES = frozenset(
    {
        "closed",
        "cancelled",
        "canceled",
        "archived",
        "void",
        "voided",
        "deleted",
        "revoked",
        "expired",
        "retired",
        "terminated",
        "inactive",
        "discontinued",
    }
)
# Entities whose rows record amount movements of the row they reference.
LEDGER_NOUNS = frozenset(
    {"transaction", "ledger", "ledger_entry", "entry", "movement", "posting", "transfer", "statement_line"}
)
LEDGER_SUFFIXES = ("_transaction", "_entry", "_movement", "_posting")
# The amount column of a ledger row and the column saying which way the amount went, best first.
LEDGER_AMOUNTS = ("amount", "value", "delta", "change", "quantity", "points")
LEDGER_KIND_FIELDS = ("kind", "type", "direction", "transaction_type", "entry_type", "category")
# Values of that column for each movement, best first.
LEDGER_KINDS = {
    "increment": ("deposit", "credit", "top_up", "topup", "refund", "in", "incoming", "earn", "accrual", "receipt"),
    "decrement": ("withdrawal", "withdraw", "debit", "charge", "payment", "out", "outgoing", "redeem", "spend"),
    "transfer_out": ("transfer_out", "outgoing_transfer", "transfer", "debit", "out", "withdrawal"),
    "transfer_in": ("transfer_in", "incoming_transfer", "transfer", "credit", "in", "deposit"),
}
