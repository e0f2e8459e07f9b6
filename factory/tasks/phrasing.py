"""Offline phrasing of graph-walk tasks: readable English questions from the intent of each step.

A question describes what to achieve ("Find the most expensive product in the home category, then
cancel that customer's latest order"), never how: no tool names, no raw field names (fields are
spoken as phrases: `shipping_address` -> "shipping address"), and no observed values except the ones
an agent needs to start (a name to search for, a filter value) and the new values a write must use.
Several templates per operation kind, picked by the caller's rng, so the same chain can be asked in
different words; `obscured` phrasing swaps entity and field names for synonyms, as the Agent-World
difficulty knob asks.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass
from typing import Any, Literal

from factory.naming import plural, singular

IntentKind = Literal[
    "find_extreme",
    "find_named",
    "find_only",
    "lookup",
    "aggregate",
    "create",
    "update",
    "delete",
    "transition",
    "adjust",
]

# Everyday synonyms for entity and field names (obscured phrasing); anything missing falls back to a generic noun.
ENTITY_SYNONYMS: dict[str, tuple[str, ...]] = {
    "product": ("item", "article"),
    "customer": ("client", "buyer"),
    "order": ("purchase",),
    "account": ("ledger",),
    "transaction": ("money movement", "ledger entry"),
    "book": ("title", "volume"),
    "member": ("patron", "cardholder"),
    "loan": ("checkout", "borrowing"),
    "flight": ("trip", "departure"),
    "passenger": ("traveller", "flyer"),
    "booking": ("reservation",),
    "reservation": ("booking",),
    "employee": ("staff member", "worker"),
    "ticket": ("case", "request"),
    "invoice": ("bill",),
    "patient": ("person under care",),
    "appointment": ("visit", "slot"),
    "message": ("note",),
    "user": ("person",),
    "project": ("initiative",),
    "issue": ("problem report",),
    "deal": ("opportunity",),
    "supplier": ("vendor",),
    "vendor": ("supplier",),
    "room": ("space",),
    "event": ("occasion",),
    "course": ("class",),
    "student": ("learner",),
    "document": ("file",),
    "file": ("document",),
}
FIELD_SYNONYMS: dict[str, tuple[str, ...]] = {
    "price": ("cost", "sticker price"),
    "stock": ("units on hand", "inventory level"),
    "quantity": ("number of units", "amount ordered"),
    "total": ("overall amount", "grand total"),
    "balance": ("funds", "available money"),
    "amount": ("sum", "value"),
    "fare": ("ticket cost",),
    "seats": ("number of seats",),
    "seats_available": ("free seats", "open seats"),
    "copies_available": ("copies on the shelf",),
    "email": ("email address", "mail address"),
    "phone": ("phone number", "contact number"),
    "name": ("name",),
    "title": ("title",),
    "status": ("state", "current state"),
    "tier": ("level",),
    "placed_at": ("time it was placed",),
    "due_date": ("due day",),
    "shipping_address": ("delivery address",),
    "category": ("section",),
}
_GENERIC_NOUNS = ("record", "entry")
_FIELD_WORDS = {"id": "ID", "sku": "SKU", "isbn": "ISBN", "kyc": "KYC", "url": "URL", "iban": "IBAN"}


@dataclass(frozen=True)
class Style:
    """How a question is worded: plain entity/field names, or synonyms only (obscured)."""

    obscured: bool = False


@dataclass
class Filter:
    """A condition on the records a step looks at: an upstream record (`of that customer`) or a value."""

    field: str
    value: Any = None
    relation: str | None = None  # entity of the upstream record the filter points at
    op: Literal["eq", "min", "max"] = "eq"


@dataclass
class Intent:
    """What one step of a chain means, in the terms a question speaks of."""

    kind: IntentKind
    entity: str
    filters: list[Filter] = dataclasses.field(default_factory=list)
    field: str | None = None  # the field compared, aggregated, changed or adjusted
    direction: Literal["highest", "lowest"] = "highest"
    value: Any = None  # a name looked for, a new value, an amount, a target status
    source: str | None = None  # lookup: the entity of the record whose reference is followed
    changes: dict[str, Any] = dataclasses.field(default_factory=dict)  # create/update: field -> new value
    links: list[str] = dataclasses.field(default_factory=list)  # create: entities of the records it points at
    verb: str | None = None  # transition/adjust: the tool's own verb ("cancel", "deposit")
    sign: int = 1  # adjust: +1 increment, -1 decrement
    statistic: str = "count"  # aggregate: count, sum, avg, min, max
    pages: bool = False  # the records span several pages
    temporal: bool = False  # find_extreme over a date or time: "latest" and "earliest"
    limit_note: str | None = None  # a constraint to respect, in words


def humanize(name: str) -> str:
    """`shipping_address` -> "shipping address", `kyc_status` -> "KYC status", `opened_on` -> "opened date"."""
    words = [_FIELD_WORDS.get(w, w) for w in name.split("_") if w]
    if len(words) > 1 and words[-1] in ("on", "at"):
        words[-1] = "date" if words[-1] == "on" else "time"
    return " ".join(words)


class Phraser:
    """Names entities and fields consistently within one question (a synonym once chosen stays)."""

    def __init__(self, rng: random.Random, style: Style):
        self.rng = rng
        self.style = style
        self._nouns: dict[str, str] = {}
        self._fields: dict[str, str] = {}

    def noun(self, entity: str) -> str:
        if entity not in self._nouns:
            base = humanize(singular(entity))
            if self.style.obscured:
                options = ENTITY_SYNONYMS.get(entity) or _GENERIC_NOUNS
                taken = set(self._nouns.values())
                free = [o for o in options if o not in taken] or [f"{o} of the second kind" for o in options]
                base = self.rng.choice(free)
            self._nouns[entity] = base
        return self._nouns[entity]

    def field(self, name: str) -> str:
        if name not in self._fields:
            base = humanize(name)
            if self.style.obscured and name in FIELD_SYNONYMS:
                base = self.rng.choice(FIELD_SYNONYMS[name])
            self._fields[name] = base
        return self._fields[name]

    def pick(self, *templates: str) -> str:
        return self.rng.choice(templates)

    # --- pieces ------------------------------------------------------------------------------

    def filters(self, filters: list[Filter]) -> str:
        parts = []
        for f in filters:
            if f.relation is not None:
                parts.append(
                    self.pick(" of that {r}", " linked to that {r}", " belonging to that {r}").format(
                        r=self.noun(f.relation)
                    )
                )
            elif f.op == "min":
                parts.append(f" with {self.field(f.field)} of at least {value_text(f.value)}")
            elif f.op == "max":
                parts.append(f" with {self.field(f.field)} of at most {value_text(f.value)}")
            else:
                parts.append(
                    self.pick(" whose {f} is {v}", " with {f} {v}").format(f=self.field(f.field), v=value_text(f.value))
                )
        return "".join(parts[:1]) + "".join(" and" + p for p in parts[1:])

    def changes(self, changes: dict[str, Any]) -> str:
        items = [f"{self.field(k)} {value_text(v)}" for k, v in changes.items()]
        if not items:
            return ""
        if len(items) == 1:
            return items[0]
        return ", ".join(items[:-1]) + " and " + items[-1]

    # --- one sentence per intent --------------------------------------------------------------

    def sentence(self, it: Intent) -> str:
        n = self.noun(it.entity)
        ns = plural(n)
        where = self.filters(it.filters)
        if it.kind == "find_extreme":
            most = "highest" if it.direction == "highest" else "lowest"
            if it.temporal:
                most = "latest" if it.direction == "highest" else "earliest"
            f = self.field(it.field or "")
            scope = "all " if it.pages else ""
            return self.pick(
                "Among {scope}the {ns}{where}, find the one with the {most} {f}.",
                "Find the {n}{where} with the {most} {f}{pages}.",
                "Identify which {n}{where} has the {most} {f}{pages}.",
            ).format(scope=scope, ns=ns, where=where, most=most, f=f, n=n, pages=" of them all" if it.pages else "")
        if it.kind == "find_named":
            return self.pick(
                'Find the {n} called "{v}"{where}.',
                'Look up the {n} named "{v}"{where}.',
                'Locate the {n} "{v}"{where}.',
            ).format(n=n, v=it.value, where=where)
        if it.kind == "find_only":
            return self.pick("Find the {n}{where}.", "Look up the only {n}{where}.").format(n=n, where=where)
        if it.kind == "lookup":
            src = self.noun(it.source or "")
            return self.pick(
                "Look up the {n} that {src_article} {src} refers to.",
                "Pull up the {n} linked to that {src}.",
                "Check the details of that {src}'s {n}.",
            ).format(n=n, src=src, src_article="this")
        if it.kind == "aggregate":
            return self._aggregate(it, n, ns, where)
        if it.kind == "create":
            links = "".join(f" for that {self.noun(e)}" for e in it.links)
            with_ = f" with {self.changes(it.changes)}" if it.changes else ""
            note = f" ({it.limit_note})" if it.limit_note else ""
            return self.pick(
                "Create a new {n}{links}{with_}{note}.",
                "Add a new {n}{links}{with_}{note}.",
                "Register a new {n}{links}{with_}{note}.",
            ).format(n=n, links=links, with_=with_, note=note)
        if it.kind == "update":
            (k, v), *_ = it.changes.items()
            return self.pick(
                "Change that {n}'s {f} to {v}.",
                "Set the {f} of that {n} to {v}.",
                "Update that {n} so that its {f} is {v}.",
            ).format(n=n, f=self.field(k), v=value_text(v))
        if it.kind == "delete":
            return self.pick("Delete that {n}.", "Remove that {n} for good.", "Get rid of that {n}.").format(n=n)
        if it.kind == "transition":
            verb = it.verb
            options = ["Mark that {n} as {v}.", "Make sure that {n} ends up {v}."]
            if verb:
                options.append(verb.capitalize() + " that {n}.")
            return self.pick(*options).format(n=n, v=humanize(str(it.value)))
        return self._adjust(it, n)

    def _aggregate(self, it: Intent, n: str, ns: str, where: str) -> str:
        if it.statistic == "count" or not it.field:
            return self.pick(
                "Count the {ns}{where}.", "Work out how many {ns}{where} there are.", "Find the number of {ns}{where}."
            ).format(ns=ns, where=where)
        words = {"sum": "total", "avg": "average", "min": "smallest", "max": "largest"}
        return self.pick(
            "Work out the {s} {f} over the {ns}{where}.",
            "Compute the {s} {f} of the {ns}{where}.",
            "Find the {s} {f} across the {ns}{where}.",
        ).format(s=words.get(it.statistic, it.statistic), f=self.field(it.field), ns=ns, where=where)

    def _adjust(self, it: Intent, n: str) -> str:
        f = self.field(it.field or "")
        amount = value_text(it.value)
        note = f" ({it.limit_note})" if it.limit_note else ""
        if it.verb and it.verb not in ("increment", "decrement", "adjust"):
            prep = "into" if it.sign > 0 else "from"
            return self.pick("{V} {amount} {prep} that {n}{note}.", "{V} {amount} {prep} that {n}'s {f}{note}.").format(
                V=it.verb.capitalize(), amount=amount, prep=prep, n=n, f=f, note=note
            )
        if it.sign > 0:
            return self.pick(
                "Increase the {f} of that {n} by {amount}{note}.", "Add {amount} to that {n}'s {f}{note}."
            ).format(f=f, n=n, amount=amount, note=note)
        return self.pick(
            "Reduce the {f} of that {n} by {amount}{note}.", "Take {amount} off that {n}'s {f}{note}."
        ).format(f=f, n=n, amount=amount, note=note)

    def request(self, asks: list[tuple[str, str]]) -> str:
        """The closing sentence: which values to report. `asks` holds (entity, field) pairs."""
        parts = []
        for entity, name in asks:
            what = self.field(name) if name not in ("count", "sum", "avg", "min", "max") else _stat_word(name)
            if name == "id":
                what = "ID"
            parts.append(f"that {self.noun(entity)}'s {what}" if entity else f"the {what}")
        if not parts:
            return ""
        listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
        return self.pick("Report {x}.", "Tell me {x}.", "Reply with {x}.", "In your answer, give {x}.").format(x=listed)


def _stat_word(name: str) -> str:
    return {"count": "number you found", "sum": "total", "avg": "average", "min": "minimum", "max": "maximum"}[name]


def value_text(value: Any) -> str:
    """A value as a question states it: strings quoted, enum-like words bare, numbers plain."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.2f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))
    if isinstance(value, str):
        if value.replace("_", "").isalpha() and value.islower():
            return humanize(value)
        return f'"{value}"'
    return str(value)


CONNECTORS = ("Then", "Next,", "After that,", "Once that is done,")


def compose_question(intents: list[Intent], asks: list[tuple[str, str]], rng: random.Random, style: Style) -> str:
    """The whole question: one sentence per intent, joined with connectors, then the report request."""
    p = Phraser(rng, style)
    sentences = []
    for i, it in enumerate(intents):
        s = p.sentence(it)
        if i > 0 and rng.random() < 0.6:
            s = f"{rng.choice(CONNECTORS)} {s[0].lower()}{s[1:]}"
        sentences.append(s)
    closing = p.request(asks)
    if closing:
        sentences.append(closing)
    return " ".join(sentences)
