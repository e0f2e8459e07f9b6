"""What each tool does, from its name, description, annotations and parameters: an operation on an entity.

The first pass reads every tool alone (`cancel_order(order_id)` is a transition of `order`); the
second maps each tool's noun onto the entities the whole tool list confirms, since one tool cannot
tell that `list_supplier_items(supplier_id)` works on `supplier_item` rather than `item`, nor that
`git_` is the namespace of git_status and git_log rather than their noun.

A server's MCP annotations outrank the name: a `readOnlyHint` tool is never a write, and a
`destructiveHint` tool whose name says reset or clear is a delete.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace

from factory.envs.entities.names import ToolName, namespace_of, read_tool
from factory.envs.entities.params import (
    amount_param,
    base_type,
    batch_param,
    find_key,
    id_entities,
    normalize_props,
    transfer_ends,
)
from factory.lexicon import (
    AGGREGATE_VERBS,
    AMOUNT_NOUNS,
    CREATE_VERBS,
    DECREMENT_VERBS,
    DELETE_VERBS,
    DERIVED_CREATES,
    DESTRUCTIVE_VERBS,
    DUAL_VERBS,
    FIELD_ALIASES,
    GENERIC_PARTS,
    GET_VERBS,
    INCREMENT_VERBS,
    LIST_VERBS,
    NOT_ENTITIES,
    QUERY_NAMES,
    SEARCH_VERBS,
    TRANSFER_VERBS,
    TRANSITIONS,
    UPDATE_VERBS,
    VERB_FIELDS,
)
from factory.models import ActionKind, JsonSchema, OperationKind, ToolSpec
from factory.naming import is_plural, plural, singular, snake_case, split_words

WRITES = ("create", "update", "delete", "action")


@dataclass(frozen=True)
class Plan:
    """What one tool does, as far as inference has settled it."""

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
    transfer_params: tuple[str, str] | None = None
    full: str = ""  # the whole noun of the name, singular: a known entity wins over a split by id
    reason: str = ""
    batch_param: str | None = None  # the array a batch tool takes its rows or keys in (create_entities)


def _require_entity(plan: Plan) -> Plan:
    if not plan.entity:
        return replace(plan, kind=None, entity=None, reason="no noun names an entity")
    return plan


def _names_row(noun: list[str], props: dict[str, JsonSchema]) -> bool:
    """A dual verb (submit, send...) works on an existing row when the tool names that row's id."""
    name = singular("_".join(noun))
    return bool(name) and (f"{name}_id" in props or "id" in props)


def _hint(tool: ToolSpec, name: str) -> bool | None:
    value = (tool.annotations or {}).get(name)
    return value if isinstance(value, bool) else None


def _destructive_name(tool: ToolSpec, parsed: ToolName) -> ToolName:
    """`git_reset` of a server that calls it destructive reads as a delete of what follows the word."""
    if parsed.verb is not None or not parsed.noun or parsed.noun[0] not in DESTRUCTIVE_VERBS:
        return parsed
    if _hint(tool, "destructiveHint") is not True or _hint(tool, "readOnlyHint") is True:
        return parsed
    return replace(parsed, verb="delete", noun=parsed.noun[1:])


def _as_read(plan: Plan) -> Plan:
    """A write guess on a tool the server marks read-only becomes the read its parameters allow."""
    if plan.kind not in WRITES or _hint(plan.spec, "readOnlyHint") is not True:
        return plan
    kind: OperationKind = "list"
    if plan.batch_param or (plan.entity and find_key(plan.entity, plan.props)):
        kind = "get"
    elif any(p in QUERY_NAMES for p in plan.props):
        kind = "search"
    return replace(plan, kind=kind, action=None, field=None, amount_param=None, to_candidates=[], transfer_params=None)


def classify(tool: ToolSpec, known: set[str], namespace: str | None = None) -> Plan:
    """Kind and entity of one tool from its name, description, hints and parameters (no entity list yet).

    `namespace` is the word the server prefixes its tools with (`git`), set aside when reading the name.
    """
    props, required = normalize_props(tool.parameters)
    parsed = _destructive_name(tool, read_tool(tool.name, tool.description, namespace))
    plan = _classify(tool, known, parsed, props, required)
    return _as_read(replace(plan, batch_param=batch_param(props, required)))


def _classify(
    tool: ToolSpec, known: set[str], parsed: ToolName, props: dict[str, JsonSchema], required: list[str]
) -> Plan:
    verb = parsed.verb
    noun = parsed.noun
    noun_name = singular("_".join(noun))
    plan = Plan(spec=tool, props=props, required=required, verb=verb, full=noun_name if verb else "")
    if verb is None:
        return replace(plan, reason="no verb in the tool name")
    ids = id_entities(props)

    def split_by_id() -> tuple[str | None, list[str]]:
        """`get_account_balance(account_id)` -> ("account", ["balance"])."""
        for x in ids:
            xw = x.split("_")
            if noun[: len(xw)] == xw and len(noun) > len(xw):
                return x, noun[len(xw) :]
        return None, noun

    def rest_noun() -> str:
        """The noun after the id's entity: `list_customer_orders(customer_id)` -> "order"."""
        subject, rest = split_by_id()
        return singular("_".join(rest)) if subject else noun_name

    if verb in TRANSFER_VERBS:  # two rows of the same entity
        ends = transfer_ends(props)
        if ends is None:
            return replace(plan, reason="transfer without from/to parameters")
        (from_p, from_x), (to_p, to_x) = ends
        entity = from_x or to_x or (noun_name if noun_name in known else None) or "account"
        hint = noun_name if noun_name and noun_name != entity else None
        amount = amount_param(props, {from_p, to_p})
        return replace(
            plan,
            kind="action" if amount else None,
            action="transfer",
            entity=entity,
            transfer_params=(from_p, to_p),
            amount_param=amount,
            field=FIELD_ALIASES.get(hint or "", hint) or VERB_FIELDS["transfer"],
            reason="" if amount else "transfer without an amount parameter",
        )

    is_add_amount = verb == "add" and "_".join(noun) in AMOUNT_NOUNS and bool(ids)
    if verb in INCREMENT_VERBS or verb in DECREMENT_VERBS or is_add_amount:
        action: ActionKind = "decrement" if verb in DECREMENT_VERBS else "increment"
        subject, rest = split_by_id()
        if subject is None:
            if noun_name in ids or (noun_name and not ids):
                subject, rest = noun_name, []
            elif ids:
                subject = ids[0]
        if subject is None:
            return replace(plan, action=action, reason="no entity for the amount change")
        hint = "_".join(rest) if rest else None
        amount = amount_param(props, {f"{subject}_id", "id"})
        return replace(
            plan,
            kind="action" if amount else None,
            action=action,
            entity=subject,
            field=FIELD_ALIASES.get(hint or "", hint) if hint else None,
            amount_param=amount,
            reason="" if amount else "no amount parameter",
        )

    if verb in TRANSITIONS and (verb not in DUAL_VERBS or _names_row(noun, props)):
        candidates = list(TRANSITIONS[verb][0])
        if verb == "mark":
            words = [w for w in noun + parsed.tail if w != "as"]
            candidates, noun = words[-1:], words[:-1]
        subject, _ = split_by_id()
        entity = subject or singular("_".join(noun)) or (ids[0] if len(ids) == 1 else None)
        if entity is None or not candidates:
            return replace(plan, reason="no entity or target state for the status change")
        return replace(plan, kind="action", action="transition", entity=entity, to_candidates=candidates)

    if verb in DERIVED_CREATES and noun_name and noun_name in ids:
        return replace(plan, kind="create", entity=DERIVED_CREATES[verb])

    if verb in AGGREGATE_VERBS or parsed.trailing == "aggregate":
        return _require_entity(replace(plan, kind="aggregate", entity=rest_noun()))

    if verb in LIST_VERBS or parsed.trailing == "list":
        return _require_entity(replace(plan, kind="list", entity=rest_noun()))

    if verb in SEARCH_VERBS:
        has_query = any(p in QUERY_NAMES for p in props)
        return _require_entity(replace(plan, kind="search" if has_query else "list", entity=rest_noun()))

    if verb in GET_VERBS:
        subject, rest = split_by_id()
        if subject is not None and is_plural(rest[-1]):
            return replace(plan, kind="list", entity=singular("_".join(rest)))
        if subject is not None:
            return replace(plan, kind="get", entity=subject)
        many = bool(noun) and is_plural(noun[-1])
        if not many and not props:
            return replace(plan, reason="a get with no parameter names no row")
        kind: OperationKind = "get" if find_key(noun_name, props) and not many else "list"
        return _require_entity(replace(plan, kind=kind, entity=noun_name))

    if verb in DELETE_VERBS:
        subject, _ = split_by_id()
        return _require_entity(replace(plan, kind="delete", entity=subject or noun_name))

    if verb in UPDATE_VERBS:
        subject, _ = split_by_id()
        return _require_entity(replace(plan, kind="update", entity=subject or noun_name))

    if verb in CREATE_VERBS or verb in DUAL_VERBS or verb in DERIVED_CREATES:
        entity = rest_noun()
        if verb in DERIVED_CREATES and not entity:
            entity = DERIVED_CREATES[verb]
        return _require_entity(replace(plan, kind="create", entity=entity))

    return replace(plan, reason=f"verb {verb!r} has no operation")


def settle_names(plans: list[Plan], fixed: list[str] | None) -> list[Plan]:
    """Each plan's noun mapped onto a known entity: exact name, table name, or the longest matching suffix.

    `fixed` are the entities a source gives (OpenAPI); without them, the entities are those some tool
    reads or writes by key, or names by an `<x>_id` parameter.
    """
    plans = _read_namespaced(plans, set(fixed or []))
    confirmed: set[str] = set(fixed or [])
    if fixed is None:
        for p in plans:
            if p.kind in ("get", "create", "update", "delete") and p.entity:
                confirmed.add(p.entity)
            confirmed.update(x for x in id_entities(p.props) if x not in NOT_ENTITIES)
    tables = {plural(e): e for e in confirmed}
    settled = [_settle_name(p, confirmed, tables, fixed is not None) for p in plans]
    if fixed is not None:
        return settled
    written = {p.entity for p in settled if p.kind in WRITES} | {x for p in settled for x in id_entities(p.props)}
    return [p if p.entity in written else _answered_entity(p, tables) for p in settled]


def _answered_entity(p: Plan, tables: dict[str, str]) -> Plan:
    """A read of a noun no tool writes reads the entity its declared output lists: the memory server's
    `search_nodes`, `open_nodes` and `read_graph` answer `{"entities": [...], "relations": [...]}`, rows of
    `entity`."""
    if p.kind not in (None, "list", "search", "get"):
        return p
    if p.kind is None and (_hint(p.spec, "readOnlyHint") is not True or p.required):
        return p
    props = (p.spec.output or {}).get("properties")
    listed = [
        tables[snake_case(k) or k]
        for k, v in (props.items() if isinstance(props, dict) else [])
        if (snake_case(k) or k) in tables and isinstance(v, dict) and base_type(v) == "array"
    ]
    if not listed or p.entity in listed:
        return p
    kind = p.kind or ("search" if any(q in p.props for q in QUERY_NAMES) else "list")
    return replace(p, kind=kind, entity=listed[0], reason="")


def _read_namespaced(plans: list[Plan], known: set[str]) -> list[Plan]:
    """Tools read again without the server's namespace word when it took the verb's or the noun's place."""
    namespace = namespace_of([p.spec.name for p in plans])
    if namespace is None:
        return plans
    return [
        classify(p.spec, known, namespace)
        if split_words(p.spec.name)[:1] == [namespace] and (p.verb is None or p.full.split("_")[0] == namespace)
        else p
        for p in plans
    ]


def _settle_name(p: Plan, confirmed: set[str], tables: dict[str, str], fixed: bool) -> Plan:
    split_off = bool(p.entity) and p.full.endswith(f"_{p.entity}")  # list_supplier_items(supplier_id)
    generic_part = p.entity not in confirmed and p.entity in GENERIC_PARTS  # list_order_items(order_id)
    if p.kind in ("list", "search", "aggregate", "create") and split_off and (p.full in confirmed or generic_part):
        return replace(p, entity=p.full)
    if not p.entity or p.entity in confirmed:
        return p
    if p.entity in tables:
        return replace(p, entity=tables[p.entity])
    words = p.entity.split("_")
    candidates = ["_".join(words[k:]) for k in range(1, len(words))]
    candidates += ["_".join(words[:-k]) for k in range(1, len(words))]
    match = next((c for c in candidates if c in confirmed or c in tables), None)
    if match is not None:
        return replace(p, entity=tables.get(match, match))
    if fixed:
        return replace(p, kind=None, entity=None, reason=f"no known entity matches {p.entity!r}")
    return p
