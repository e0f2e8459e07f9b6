"""Settling entities: the fields, keys, foreign keys, states and rules the classified tools imply.

Creates name the fields first (their order and required-ness), then updates, then the records tools
return, then filters and what actions need (a counter to change, a status to move). A field
`<x>_id` is a foreign key to `x`, which becomes a small entity of its own when no tool lists it; in the
rows batch tools write, a field holding another row's name (`entity_name`, a relation's `from` "the name of
the entity") is a foreign key to that `name`, which is then unique.
Given entities (OpenAPI) are kept as they are; only the actions are settled against them.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, replace
from typing import Any

from factory.envs.entities.classify import Plan
from factory.envs.entities.outputs import output_fields
from factory.envs.entities.params import (
    base_type,
    batch_items,
    field_from_param,
    field_params,
    id_entities,
    is_money,
    list_edit_keys,
    list_field,
)
from factory.envs.entities.rules import add_effects, add_rules, assign_prefixes, is_counter
from factory.envs.schema import table_order
from factory.lexicon import (
    BALANCE_LIKE,
    DEFAULT_INITIAL_STATE,
    INITIAL_STATES,
    LIFECYCLE,
    MONEY_LEFT,
    NON_NEGATIVE,
    NOT_ENTITIES,
    PERSON_NOUNS,
    POINT_BALANCES,
    SUPPLY_NOISE,
    TRANSITIONS,
    UNIQUE_NAMES,
    UNIQUE_SUFFIXES,
    VERB_FIELDS,
)
from factory.models import ActionKind, EntitySpec, FieldSpec, Rule
from factory.naming import plural, snake_case

_RANK = {s: i for i, s in enumerate(LIFECYCLE)}
_AMOUNT_ACTIONS = ("increment", "decrement", "transfer")
_LIST_ACTIONS = ("append", "remove")
_NAMED_RE = re.compile(r"\bname of the ([a-z][a-z ]*)")
_STATED_RE = re.compile(
    r"\b(?:taken|drawn|deducted|subtracted|consumed|reserved) from (?:the |its )?([a-z][a-z ]*?)'s ([a-z][a-z ]*?)"
    r"(?=[.;,)]|$)"
)


@dataclass
class _Draft:
    """The fields of one entity as the tools name them, merged across tools."""

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

    def add_params(self, p: Plan) -> None:
        """Fields the tool's parameters name. A read's option with a default value (`git_diff(context_lines=3)`,
        `git_log(max_count=10)`) that no write or output names is a setting of the read, not a column: as a
        column its default would filter every call that leaves it out. A `null` default (pydantic's optional
        parameter) filters nothing when left out, so that parameter still names a column."""
        reading = p.kind in ("list", "search", "aggregate")
        for name, schema, required in field_params(p.kind, self.name, p.props, p.required):
            if reading and schema.get("default") is not None and name not in self.fields:
                continue
            f = field_from_param(name, schema, required) or (
                list_field(name, schema, required) if p.batch_param else None
            )
            if f is not None:
                self.add(f)


def _stated_consumes(p: Plan) -> list[tuple[str, str, str, str]]:
    """Supplies a create tool's parameter descriptions name: `quantity` "taken from the supplier item's
    stock" -> (quantity, type, "supplier_item", "stock"); only rows the tool names by `<x>_id`."""
    if p.kind != "create":
        return []
    ids = set(id_entities(p.props))
    out: list[tuple[str, str, str, str]] = []
    for name, schema in p.props.items():
        t = base_type(schema)
        m = _STATED_RE.search(str(schema.get("description") or "").lower())
        if t not in ("integer", "number") or m is None:
            continue
        parent = snake_case(m.group(1))
        if parent in ids and parent != p.entity:
            out.append((name, t, parent, snake_case(m.group(2))))
    return out


def _supply_field(d: _Draft, stated: str, amount_type: str) -> str:
    """The parent's column a stated supply means: "remaining amount" is the budget's `remaining`."""
    words = stated.split("_")
    candidates = [stated, "_".join(w for w in words if w not in SUPPLY_NOISE) or stated]
    for c in candidates:
        if c in d.fields and d.fields[c].type in ("integer", "number"):
            return c
    name = candidates[-1]
    money = amount_type == "number" and (is_money(name) or name in MONEY_LEFT)
    d.add(
        FieldSpec(
            name=name, type="integer" if amount_type == "integer" else "number", format="money" if money else None
        )
    )
    return name


def _existing_counter(d: _Draft) -> str | None:
    for name, f in d.fields.items():
        if is_counter(name) and f.type in ("integer", "number"):
            return name
    return None


def _status_field(d: _Draft) -> str | None:
    for candidate in ("status", "state"):
        if candidate in d.fields and d.fields[candidate].type == "string":
            return candidate
    return next((n for n, f in d.fields.items() if n.endswith("_status") and f.type == "string"), None)


def _initial_state(verbs: set[str]) -> str:
    return next((state for group, state in INITIAL_STATES if verbs & group), DEFAULT_INITIAL_STATE)


def _settle_action(p: Plan, d: _Draft) -> Plan:
    """The field an action changes: the counter an amount moves, the status a transition sets."""
    if p.action in _AMOUNT_ACTIONS:
        field = p.field or _existing_counter(d) or VERB_FIELDS.get(p.verb or "", "stock")
        money = field in BALANCE_LIKE - POINT_BALANCES or is_money(field)
        d.add(FieldSpec(name=field, type="number" if money else "integer", format="money" if money else None))
        return replace(p, field=field)
    status = _status_field(d) or "status"
    if status not in d.fields:
        d.add(FieldSpec(name=status, type="string"))
    return replace(p, field=status)


def _settle_states(plans: list[Plan], drafts: dict[str, _Draft]) -> None:
    """Give every transitioned status field an enum holding the initial state and all targets."""
    by_entity: dict[str, list[Plan]] = {}
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
            values.insert(0, _initial_state({p.verb or "" for p in group}))
            for p in group:
                sources = TRANSITIONS.get(p.verb or "", ((), None))[1]
                if sources and not set(sources) & set(values):
                    values.append(sources[0])
            values = sorted(dict.fromkeys(values), key=lambda s: (_RANK.get(s, len(_RANK)), values.index(s)))
        d.fields[status] = f.model_copy(update={"enum": list(dict.fromkeys(values))})


def _name_target(f: FieldSpec, owner: str, drafts: dict[str, _Draft]) -> str | None:
    """The entity whose `name` a field holds: `<x>_name` of a tool that names rows by name, or an end of a
    relation its description calls "the name of the <x>" (`from`, `to` of a knowledge graph's relations)."""
    candidate = f.name.removesuffix("_name") if f.name.endswith("_name") else None
    if candidate not in drafts:
        m = _NAMED_RE.search(f.description.lower())
        words = m.group(1).split() if m else []
        joined = ("_".join(words[:k]) for k in range(len(words), 0, -1))
        candidate = next((c for c in joined if c in drafts), None)
    if candidate is None or candidate == owner or "name" not in drafts[candidate].fields:
        return None
    return candidate


def _named_targets(drafts: dict[str, _Draft], batch: set[str]) -> dict[tuple[str, str], str]:
    """(entity, field) -> the entity whose `name` it holds, for entities batch tools write (they name rows by name)."""
    out: dict[tuple[str, str], str] = {}
    for d in drafts.values():
        for f in d.fields.values() if d.name in batch else ():
            target = _name_target(f, d.name, drafts)
            if target is not None:
                out[(d.name, f.name)] = target
    return out


def _finish_entity(d: _Draft, drafts: dict[str, _Draft], named: dict[tuple[str, str], str]) -> EntitySpec:
    """The entity of a draft: key `id` first, `<x>_id` fields as foreign keys, unique names unique.

    A field holding another row's name (`named`) is a foreign key to that name, which is then unique.
    """
    fields = [FieldSpec(name="id", type="string", required=True, primary_key=True, description=f"ID of the {d.name}.")]
    for f in d.fields.values():
        if f.name == "id":
            continue
        update: dict[str, Any] = {}
        target = f.name[:-3] if f.name.endswith("_id") else None
        plain = {"type": "string", "format": None, "enum": None, "minimum": None, "maximum": None}
        if target and target in drafts and target != d.name:
            update.update(plain, references=f"{target}.id")
        elif target and target == d.name:
            update.update(type="string", format=None)
        elif (d.name, f.name) in named:
            update.update(plain, references=f"{named[(d.name, f.name)]}.name")
        if f.name == "name" and d.name in named.values():
            update["unique"] = True
        if (f.name in UNIQUE_NAMES or f.name.endswith(UNIQUE_SUFFIXES)) and not f.references and not f.enum:
            update["unique"] = True
        fields.append(f.model_copy(update=update) if update else f)
    if len(fields) == 1 or (not d.from_tools and len(fields) == 1 + sum(1 for f in fields if f.references)):
        label = f"Name of the {d.name.replace('_', ' ')}."
        fields.insert(1, FieldSpec(name="name", type="string", required=not d.from_tools, description=label))
    if not d.from_tools and len(fields) == 2 and d.name in PERSON_NOUNS:
        fields.append(FieldSpec(name="email", type="string", format="email", unique=True))
    title = d.name.replace("_", " ")
    return EntitySpec(
        name=d.name,
        table=plural(d.name),
        fields=fields,
        primary_key="id",
        description=_first_sentence(d.description) or f"A {title} record.",
    )


def _first_sentence(text: str) -> str:
    text = text.strip()
    return text.split(". ")[0].rstrip(".") + "." if text else ""


def _list_edits(plans: list[Plan]) -> list[Plan]:
    """A batch create or delete whose noun is a list field of the rows another batch creates edits that list:
    `add_observations([{entityName, contents}])` appends to an entity's `observations` and `delete_observations`
    removes from them (the memory server's knowledge graph), rather than writing rows of an `observation`."""
    lists: dict[str, tuple[str, set[str]]] = {}  # list field -> (its entity, the fields the entity's items set)
    for p in plans:
        rows = batch_items(p.entity, p.props) if p.kind == "create" and p.batch_param and p.entity else None
        if rows is None:
            continue
        fields, _ = rows
        lists.update((name, (p.entity or "", set(fields))) for name, s in fields.items() if list_field(name, s))
    out = []
    for p in plans:
        owner = lists.get(plural(p.entity or ""))
        if p.batch_param and p.kind in ("create", "delete") and owner and owner[0] != p.entity:
            items = (p.props.get(p.batch_param) or {}).get("items")
            if isinstance(items, dict) and list_edit_keys(owner[0], owner[1], items) is not None:
                action: ActionKind = "append" if p.kind == "create" else "remove"
                p = replace(p, kind="action", action=action, entity=owner[0], field=plural(p.entity or ""))
        out.append(p)
    return out


def build_entities(plans: list[Plan]) -> tuple[list[EntitySpec], list[Plan]]:
    """Entities from the tools alone, parents first, and the plans with their action fields settled."""
    drafts: dict[str, _Draft] = {}

    def draft(name: str, from_tools: bool = True) -> _Draft:
        if name not in drafts:
            drafts[name] = _Draft(name=name, from_tools=from_tools)
        return drafts[name]

    plans = _list_edits(plans)
    mapped = [p for p in plans if p.kind is not None and p.entity]
    for p in mapped:
        draft(p.entity or "")
    writes = [p for p in mapped if p.kind in ("create", "update")]
    for p in sorted(writes, key=lambda p: p.kind != "create"):
        draft(p.entity or "").add_params(p)
    for p in mapped:
        for name, schema, _ in output_fields(p):
            f = field_from_param(name, schema)
            if f is not None:
                draft(p.entity or "").add(f, from_output=True)
    settled: list[Plan] = []
    for p in plans:
        if p.kind is None or not p.entity:
            settled.append(p)
            continue
        d = draft(p.entity)
        if p.kind in ("list", "search", "aggregate"):
            d.add_params(p)
        if p.kind == "create" and not d.description:
            d.description = p.spec.description
        if p.kind == "action" and p.action not in (None, *_LIST_ACTIONS):
            p = _settle_action(p, d)
        settled.append(p)
    # foreign keys: `<x>_id` fields point at x, created as a small entity when no tool lists it
    for d in list(drafts.values()):
        for f in list(d.fields.values()):
            target = f.name[:-3] if f.name.endswith("_id") else None
            if target and target not in NOT_ENTITIES and target != d.name and target not in drafts:
                draft(target, from_tools=False)
    # ids passed to tools of other entities (create_order(customer_id)) already became fields above;
    # ids only named by actions/gets of another entity also deserve a table
    for p in settled:
        for x in id_entities(p.props):
            if p.kind is not None and x != p.entity and x not in NOT_ENTITIES and x not in drafts:
                draft(x, from_tools=False)
    # supplies the descriptions state: "units ordered; taken from the supplier item's stock"
    stated: dict[str, list[Rule]] = {}
    for p in mapped:
        for name, amount_type, parent, supply in _stated_consumes(p):
            if parent in drafts and name in drafts[p.entity or ""].fields:
                target = f"{parent}.{_supply_field(drafts[parent], supply, amount_type)}"
                stated.setdefault(p.entity or "", []).append(Rule(kind="consumes", field=name, target=target))
    _settle_states(settled, drafts)
    named = _named_targets(drafts, {p.entity or "" for p in mapped if p.batch_param})
    entities = assign_prefixes([_finish_entity(d, drafts, named) for d in drafts.values()])
    drawn = {(p.entity, p.field) for p in settled if p.action in ("decrement", "transfer") and p.entity and p.field}
    moved = {(p.entity, p.field) for p in settled if p.action in _AMOUNT_ACTIONS and p.entity and p.field}
    return table_order(add_rules(entities, drawn, stated, moved), strict=False), settled


def _settle_given(p: Plan, by_name: dict[str, EntitySpec]) -> Plan:
    """An action against a given entity: its counter or its status value, or unmapped with a reason."""
    if p.kind != "action" or p.entity not in by_name:
        return p
    names = {f.name: f for f in by_name[p.entity].fields}
    if p.action in _AMOUNT_ACTIONS:
        field = p.field
        if field not in names:
            field = next((n for n, f in names.items() if n in NON_NEGATIVE and f.type != "string"), None)
        if field is None:
            return replace(p, field=None, kind=None, reason="no counter field for the amount change")
        return replace(p, field=field)
    if p.action == "transition":
        status = next((n for n in ("status", "state") if n in names and names[n].enum), None)
        values = names[status].enum or [] if status else []
        hit = next((c for c in p.to_candidates if c in values), None)
        if status is None or hit is None:
            return replace(p, kind=None, reason="no status value for this transition")
        return replace(p, field=status, to_candidates=[hit])
    return p


def complete_given(given: list[EntitySpec], plans: list[Plan]) -> tuple[list[EntitySpec], list[Plan]]:
    """Given entities as they are, with missing prefixes and rules; actions settled against them."""
    by_name = {e.name: e for e in given}
    settled = [_settle_given(p, by_name) for p in plans]
    entities = assign_prefixes(list(given))
    moved = {(p.entity, p.field) for p in settled if p.action in _AMOUNT_ACTIONS and p.entity and p.field}
    entities = add_effects(entities, moved) if any(e.rules for e in entities) else add_rules(entities, moved=moved)
    return table_order(entities, strict=False), settled
