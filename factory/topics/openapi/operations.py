"""Plans -> ToolOperations: the method on the planned shape, business actions of verbs, entity fix-ups."""

from __future__ import annotations

from typing import Any

from factory.lexicon import DECREMENT_VERBS, INCREMENT_VERBS, TERMINAL_STATES, TRANSITIONS, UNDOING_VERBS, VERB_FIELDS
from factory.models import EntitySpec, FieldSpec, ToolOperation
from factory.naming import format_id
from factory.topics.openapi.reader import _Op
from factory.topics.openapi.schemas import _main_type, _value_type
from factory.topics.openapi.tree import _Plan


def _operation(op: _Op, plan: _Plan, entity: EntitySpec | None, params: dict[str, Any]) -> ToolOperation | None:
    """The operation of a planned tool: the method on its shape, a verb as an action on the row."""
    if entity is None or plan.shape is None:
        return None
    e, m = entity.name, op.method
    if plan.shape == "many":
        if m == "get":
            return ToolOperation(kind="search" if plan.searchy else "list", entity=e)
        if m == "post":
            return ToolOperation(kind="search" if plan.searchy else "create", entity=e)
        return None
    if plan.shape == "link":
        return ToolOperation(kind={"get": "list", "put": "create"}[m], entity=e) if m in ("get", "put") else None
    if plan.shape == "verb":
        action = _action(plan.verb or "", entity, params) if m != "get" else None
        return action if action is not None and action.action == "transfer" else None
    if plan.verb and m in ("post", "put", "patch"):
        action = _action(plan.verb, entity, params) if plan.verb != "update" else None
        return action or ToolOperation(kind="update", entity=e)
    kind = {"get": "get", "put": "update", "patch": "update", "post": "update", "delete": "delete"}[m]
    return ToolOperation(kind=kind, entity=e)


def _single_key(params: dict[str, Any], entity: EntitySpec) -> dict[str, Any]:
    """The key parameter of a singleton's tool: optional, naming by default the one row the service keeps."""
    pk = next(f for f in entity.fields if f.primary_key)
    first: str | int = 1 if pk.type == "integer" else format_id(entity.id_prefix or f"{entity.name}_", 1)
    key = {
        "type": "integer" if pk.type == "integer" else "string",
        "description": f"ID of the {entity.name.replace('_', ' ')}; the service keeps one, the default.",
        "default": first,
    }
    return {**params, "properties": {f"{entity.name}_id": key, **params["properties"]}}


def _amount_param(params: dict[str, Any]) -> str | None:
    numeric = [
        k
        for k, v in params["properties"].items()
        if isinstance(v, dict) and _main_type(v) in ("integer", "number") and not k.endswith("_id")
    ]
    for preferred in ("amount", "quantity", "count", "units"):
        if preferred in numeric:
            return preferred
    return numeric[0] if numeric else None


def _action(verb: str, entity: EntitySpec, params: dict[str, Any]) -> ToolOperation | None:
    """The business action a `POST /<things>/{id}/<verb>` endpoint performs on its entity."""
    e = entity.name
    fields = {f.name: f for f in entity.fields}
    amount = _amount_param(params)
    if verb == "transfer" and amount:
        target = "balance" if "balance" in fields else next((f for f in fields if f in ("stock", "quantity")), None)
        if target:
            return ToolOperation(kind="action", entity=e, action="transfer", field=target, amount_param=amount)
    for verbs, action in ((INCREMENT_VERBS, "increment"), (DECREMENT_VERBS, "decrement")):
        if verb in verbs and amount:
            named = VERB_FIELDS.get(verb)
            target = named if named in fields else None
            target = target or next((f for f in ("stock", "quantity", "balance") if f in fields), None)
            if target:
                return ToolOperation(kind="action", entity=e, action=action, field=target, amount_param=amount)
    status = next((f for f in entity.fields if f.enum and f.name in ("status", "state")), None)
    if status is None:
        status = next((f for f in entity.fields if f.enum), None)
    if status is None or not status.enum:
        return None
    targets = TRANSITIONS[verb][0] if verb in TRANSITIONS else ()
    candidates = targets or (verb + "d" if verb.endswith("e") else verb + "ed",)
    to_value = next((v for v in status.enum if v.lower() in candidates), None)
    if to_value is None:
        return None
    sources = TRANSITIONS[verb][1] if verb in UNDOING_VERBS else None
    if to_value.lower() in ("open", "reopened"):
        from_values = [v for v in status.enum if v.lower() in TERMINAL_STATES]
    elif sources and any(v.lower() in sources for v in status.enum):
        from_values = [v for v in status.enum if v.lower() in sources]
    else:
        from_values = [v for v in status.enum if v != to_value and v.lower() not in TERMINAL_STATES]
    return ToolOperation(
        kind="action",
        entity=e,
        action="transition",
        field=status.name,
        to_value=to_value,
        from_values=from_values or None,
    )


def _created_fields(entity: EntitySpec, params: dict[str, Any]) -> EntitySpec:
    """An entity whose create names none of its fields (an upload, a token request) keeps what it is
    created with: each parameter becomes a field, so the row records it."""
    have = {f.name for f in entity.fields}
    given = {k: v for k, v in params.items() if k not in ("id", "body", f"{entity.name}_id")}
    if not given or have & set(given):
        return entity
    added = []
    for name, schema in given.items():
        t = _value_type(schema)
        spec: dict[str, Any] = {"name": name, "description": str((schema or {}).get("description") or "")}
        if t in ("integer", "number", "boolean"):
            spec["type"] = t
        elif t in ("array", "object"):
            spec["format"] = "json"
        added.append(FieldSpec(**spec))
    return entity.model_copy(update={"fields": [*entity.fields, *added]})


def _acyclic(entities: dict[str, EntitySpec]) -> dict[str, EntitySpec]:
    """The entities with each foreign key that closes a cycle kept as a plain column: a database needs every
    parent created before its children, and a parent reference read from a path can point back up."""
    state: dict[str, int] = {}  # 1 = visiting, 2 = done
    out = dict(entities)

    def visit(name: str) -> None:
        state[name] = 1
        fields = []
        for f in out[name].fields:
            parent = f.references.split(".", 1)[0] if f.references else None
            if parent and parent != name and parent in out:
                if state.get(parent) == 1:
                    f = f.model_copy(update={"references": None})
                elif state.get(parent) is None:
                    visit(parent)
            fields.append(f)
        out[name] = out[name].model_copy(update={"fields": fields})
        state[name] = 2

    for name in entities:
        if name not in state:
            visit(name)
    return out
