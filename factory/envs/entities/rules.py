"""Keys and business rules of settled entities: id prefixes, what draws down what, what stays >= 0."""

from __future__ import annotations

import re
from collections.abc import Collection

from factory.lexicon import (
    BUDGET_NOUNS,
    COUNTER_PREFIXES,
    COUNTER_SUFFIXES,
    JOIN_ENTITIES,
    MONEY_LEFT,
    NON_NEGATIVE,
    QUANTITY_FIELDS,
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
        return sorted(f for f in STOCK_LIKE if "seat" in f or f in ("capacity", "remaining", "spots_left"))
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
    return consumes


def add_rules(
    entities: list[EntitySpec],
    drawn: Collection[tuple[str, str]] = (),
    stated: dict[str, list[Rule]] | None = None,
) -> list[EntitySpec]:
    """The entities with the business rules the topic implies.

    consumes: see `_consumes`; `stated` (entity -> rules) are the ones tool descriptions name.
    non_negative: counters, and fields that actions or consumers draw from (`drawn`: (entity, field)
    pairs). unique_together: the two keys of a join row.
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
    return out
