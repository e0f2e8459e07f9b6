"""Keys and business rules of settled entities: id prefixes, what draws down what, what stays >= 0."""

from __future__ import annotations

import re
from collections.abc import Collection

from factory.lexicon import (
    BALANCE_LIKE,
    BUDGET_NOUNS,
    CLOSED_STATES,
    COUNT_FIELDS,
    COUNTER_PREFIXES,
    COUNTER_SUFFIXES,
    ENDED_STATES,
    JOIN_ENTITIES,
    LEDGER_AMOUNTS,
    LEDGER_NOUNS,
    LEDGER_SUFFIXES,
    MONEY_LEFT,
    NON_NEGATIVE,
    ONE_UNIT_NOUNS,
    QUANTITY_FIELDS,
    RELEASED_STATES,
    REUSABLE_SUPPLY_WORDS,
    SEAT_FIELDS,
    SPEND_FIELDS,
    STOCK_LIKE,
)
from factory.models import EntitySpec, Rule


def is_counter(name: str) -> bool:
    """What is left of something: stock, seats_available, copies_left, remaining_budget, balance."""
    return name in NON_NEGATIVE or name.endswith(COUNTER_SUFFIXES) or name.startswith(COUNTER_PREFIXES)


def assign_prefixes(entities: list[EntitySpec]) -> list[EntitySpec]:
    """Short, unique id prefixes: order -> "ord_", order_item -> "oi_", product/profile -> "pro_"/"prof_".

    Entities that already have one keep it.
    """
    used = {e.id_prefix.rstrip("_") for e in entities if e.id_prefix}
    out: list[EntitySpec] = []
    for i, e in enumerate(entities):
        if e.id_prefix:
            out.append(e)
            continue
        words = e.name.split("_")
        letters = re.sub(r"[^a-z0-9]", "", e.name)
        base = "".join(w[0] for w in words) if len(words) > 1 else e.name[:3]
        candidates = [base] + [letters[:n] for n in range(len(base) + 1, len(letters) + 1)]
        prefix = next((c for c in candidates if c not in used), None) or f"{base}{i}"
        used.add(prefix)
        out.append(e.model_copy(update={"id_prefix": f"{prefix}_"}))
    return out


def _consumable_fields(name: str, parent: str) -> list[str]:
    """Fields of a referenced `parent` row that a quantity called `name` draws down, best first."""
    if name in QUANTITY_FIELDS:
        return sorted(STOCK_LIKE)
    if name in SEAT_FIELDS:
        # what is left (seats_available) before the whole (capacity)
        return [*sorted(f for f in STOCK_LIKE if "seat" in f or f in ("remaining", "spots_left")), "capacity"]
    if name in SPEND_FIELDS:
        return sorted(MONEY_LEFT) + (["amount", "total", "limit"] if parent in BUDGET_NOUNS else [])
    return []


def _consumes(entities: list[EntitySpec], stated: dict[str, list[Rule]]) -> dict[str, list[Rule]]:
    """entity -> consumes rules: the stated ones first, then a quantity (seats, amount) on a row that draws
    down a stock-like field (seats left, budget remaining) of the row it references."""
    by_name = {e.name: e for e in entities}
    consumes: dict[str, list[Rule]] = {k: list(v) for k, v in stated.items()}
    for e in entities:
        for f in e.fields:
            if f.type not in ("integer", "number") or any(r.field == f.name for r in consumes.get(e.name, [])):
                continue
            for ref in e.fields:
                parent = by_name.get(ref.references.split(".")[0]) if ref.references else None
                if parent is None:
                    continue
                # counts draw on integer counters, money on money
                kind = "number" if f.name in SPEND_FIELDS else "integer"
                names = {pf.name for pf in parent.fields if pf.type == kind}
                hit = next((t for t in _consumable_fields(f.name, parent.name) if t in names), None)
                counted = f.name in QUANTITY_FIELDS or f.name in SEAT_FIELDS
                if hit is None and kind == "integer" and counted:
                    hit = next((pf.name for pf in parent.fields if pf.name in names and is_counter(pf.name)), None)
                if hit:
                    consumes.setdefault(e.name, []).append(
                        Rule(kind="consumes", field=f.name, target=f"{parent.name}.{hit}")
                    )
                    break
        counted = any(f.name in COUNT_FIELDS and f.type in ("integer", "number") for f in e.fields)
        if e.name in ONE_UNIT_NOUNS and not consumes.get(e.name) and not counted:
            rule = _one_unit(e, by_name)
            if rule is not None:
                consumes[e.name] = [rule]
    return consumes


def _one_unit(e: EntitySpec, by_name: dict[str, EntitySpec]) -> Rule | None:
    """A loan or an enrolment takes one unit of what is left on the row it references (a copy, a seat)."""
    for ref in e.fields:
        parent = by_name.get(ref.references.split(".")[0]) if ref.references else None
        if parent is None:
            continue
        counters = [f.name for f in parent.fields if f.type == "integer" and is_counter(f.name)]
        best = sorted(counters, key=lambda n: (not n.endswith(("_available", "_left", "_remaining")), n))
        if best:
            return Rule(kind="consumes", field=None, target=f"{parent.name}.{best[0]}")
    return None


def status_field(e: EntitySpec) -> str | None:
    """The field holding the row's state: `status` or `state`, with its values."""
    by_name = {f.name: f for f in e.fields}
    return next((n for n in ("status", "state") if n in by_name and by_name[n].enum), None)


def _ledger_entity(e: EntitySpec, entities: list[EntitySpec]) -> EntitySpec | None:
    """The entity whose rows record the amount movements of `e`'s rows: a transaction referencing it."""
    for other in entities:
        named = other.name in LEDGER_NOUNS or other.name.endswith(LEDGER_SUFFIXES)
        refs = any((f.references or "").split(".")[0] in (e.name, e.table) for f in other.fields)
        amount = any(f.name in LEDGER_AMOUNTS and f.type in ("integer", "number") for f in other.fields)
        if other.name != e.name and named and refs and amount:
            return other
    return None


def add_effects(entities: list[EntitySpec], moved: Collection[tuple[str, str]] | None = None) -> list[EntitySpec]:
    """The entities with the rules for the effects of state changes, where they have none of that kind yet.

    releases: the states in which a consuming row holds nothing (cancelled, rejected; for a lent supply such
    as seats or copies also the states that end the use: completed, returned). terminal: the closed states
    of a row's status. ledger: amount changes of `moved` fields ((entity, field) pairs; without them, of
    balance-like fields) are written to a transaction entity referencing the entity, when there is one.
    """
    out: list[EntitySpec] = []
    for e in entities:
        rules = list(e.rules)
        kinds = {r.kind for r in rules}
        status = status_field(e)
        states = next((f.enum or [] for f in e.fields if f.name == status), [])
        if status and "releases" not in kinds:
            for r in [r for r in rules if r.kind == "consumes" and r.target]:
                supply_field = (r.target or "").partition(".")[2]
                reusable = any(w in supply_field for w in REUSABLE_SUPPLY_WORDS)
                released = [s for s in states if s in RELEASED_STATES or (reusable and s in ENDED_STATES)]
                if released:
                    rules.append(Rule(kind="releases", field=status, target=r.target, fields=released))
        closed = [s for s in states if s in CLOSED_STATES]
        if status and closed and "terminal" not in kinds:
            rules.append(Rule(kind="terminal", field=status, fields=closed))
        ledger = _ledger_entity(e, entities) if "ledger" not in kinds else None
        if ledger is not None:
            for f in e.fields:
                chosen = (e.name, f.name) in moved if moved is not None else f.name in BALANCE_LIKE
                if chosen and f.type in ("integer", "number"):
                    rules.append(Rule(kind="ledger", field=f.name, target=ledger.name))
        out.append(e.model_copy(update={"rules": rules}))
    return out


def add_rules(
    entities: list[EntitySpec],
    drawn: Collection[tuple[str, str]] = (),
    stated: dict[str, list[Rule]] | None = None,
    moved: Collection[tuple[str, str]] | None = None,
) -> list[EntitySpec]:
    """The entities with the business rules the topic implies.

    consumes: see `_consumes`; `stated` (entity -> rules) are the ones tool descriptions name.
    non_negative: counters, and fields that actions or consumers draw from (`drawn`: (entity, field)
    pairs). unique_together: the two keys of a join row. releases, terminal, ledger: see `add_effects`
    (`moved`: the (entity, field) pairs amount actions change).
    """
    consumes = _consumes(entities, stated or {})
    drawn = set(drawn)
    for rules in consumes.values():
        drawn.update((entity, field) for entity, _, field in (r.target.partition(".") for r in rules if r.target))
    out: list[EntitySpec] = []
    for e in entities:
        rules = list(e.rules)
        have = {(r.kind, r.field, r.target) for r in rules}
        for f in e.fields:
            counter = is_counter(f.name) or (e.name, f.name) in drawn
            if f.type in ("integer", "number") and counter and ("non_negative", f.name, None) not in have:
                rules.append(Rule(kind="non_negative", field=f.name))
        rules += [r for r in consumes.get(e.name, []) if (r.kind, r.field, r.target) not in have]
        fks = [f.name for f in e.fields if f.references]
        if e.name in JOIN_ENTITIES and len(fks) == 2 and not any(r.kind == "unique_together" for r in rules):
            rules.append(Rule(kind="unique_together", fields=fks))
        out.append(e.model_copy(update={"rules": rules}))
    return add_effects(out, moved)
