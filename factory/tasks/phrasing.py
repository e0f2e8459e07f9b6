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
import re
from dataclasses import dataclass
from typing import Any, Literal

from factory.models import EnvSpec
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
    "append",
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


_PARTICLES = ("at", "on", "by", "ts", "utc")


def humanize(name: str) -> str:
    """A column name as English: `shipping_address` -> "shipping address", `kyc_status` -> "KYC status",
    `opened_on` -> "opening date", `ends_at` -> "end time", `placed_at` -> "placement time"."""
    words = [_FIELD_WORDS.get(w, w) for w in name.split("_") if w]
    if len(words) > 1 and words[-1] in ("on", "at"):
        kind = "date" if words[-1] == "on" else "time"
        verb = words[-2]
        if verb in _NOMINALS or (verb.endswith("s") and not verb.endswith(("ss", "ed"))):
            words = [*words[:-2], _nominal(verb), kind]
        elif verb.endswith("ed"):
            words = [kind, "it was", *words[:-1]]
        else:
            words = [*words[:-1], kind]
    return " ".join(words)


_NOMINALS = {
    "placed": "placement",
    "created": "creation",
    "updated": "update",
    "opened": "opening",
    "closed": "closing",
    "paid": "payment",
    "sent": "sending",
    "posted": "posting",
    "booked": "booking",
    "issued": "issue",
    "joined": "joining",
    "signed": "signing",
    "shipped": "shipping",
    "delivered": "delivery",
    "scheduled": "scheduled",
    "resolved": "resolution",
    "completed": "completion",
    "cancelled": "cancellation",
    "submitted": "submission",
    "approved": "approval",
    "registered": "registration",
    "ordered": "order",
    "expires": "expiry",
    "due": "due",
    "received": "receipt",
    "borrowed": "borrowing",
    "enrolled": "enrolment",
    "returned": "return",
    "assigned": "assignment",
    "published": "publication",
    "started": "start",
    "ended": "end",
    "hired": "hiring",
    "requested": "request",
    "reported": "report",
    "uploaded": "upload",
    "modified": "modification",
    "archived": "archiving",
    "redeemed": "redemption",
    "reviewed": "review",
    "merged": "merge",
    "checked": "check",
    "dispatched": "dispatch",
    "admitted": "admission",
    "recorded": "recording",
    "applied": "application",
    "spent": "spending",
    "logged": "logging",
}


def _nominal(word: str) -> str:
    """The noun a participle or verb names a moment by: "placed" -> "placement", "ends" -> "end"."""
    if word in _NOMINALS:
        return _NOMINALS[word]
    return word[:-1] if word.endswith("s") else word


def field_phrase(name: str, description: str = "") -> str:
    """How a question speaks of a field: an `<entity>_id` reference as the entity it names, otherwise the
    humanized name (a description only helps when it is a short noun phrase, which the spec seldom has)."""
    if name.endswith("_id") and name != "id":
        return humanize(name[:-3])
    return humanize(name)


class Phraser:
    """Names entities and fields consistently within one question (a synonym once chosen stays)."""

    def __init__(self, rng: random.Random, style: Style):
        self.rng = rng
        self.style = style
        self._nouns: dict[str, str] = {}
        self._fields: dict[str, str] = {}
        self._entities: set[str] = set()  # the plain names of the question's entities (no synonym may clash)

    def noun(self, entity: str) -> str:
        if entity not in self._nouns:
            base = humanize(singular(entity))
            if self.style.obscured:
                taken = set(self._nouns.values())
                free = [o for o in ENTITY_SYNONYMS.get(entity, ()) if o not in taken and o not in self._entities]
                # No synonym: the plain noun (a made-up one, "record" or "entry", would name nothing).
                base = self.rng.choice(free) if free else base
            self._nouns[entity] = base
        return self._nouns[entity]

    def field(self, name: str) -> str:
        if name not in self._fields:
            base = field_phrase(name)
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
        if it.kind == "append":  # a text added to a list field (an entity's observations)
            f = self.field(singular(it.field or ""))
            end = "" if str(it.value).endswith((".", "!", "?")) else "."
            return self.pick(
                'Add the {f} "{v}" to that {n}.',
                'Record this {f} on that {n}: "{v}"{end}',
            ).format(n=n, f=f, v=it.value, end=end)
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


# --- goals: one coherent request over related records ------------------------------------------


@dataclass
class Condition:
    """A condition the records of a goal meet: `field` (of the record, or of the `via` record it points at)
    equal to / one of / at least / at most `value`."""

    field: str
    op: Literal["eq", "in", "min", "max"]
    value: Any
    via: str | None = None  # the entity of the related record the field belongs to ("the product it is for")
    temporal: bool = False  # a date or time: "on or after" instead of "at least"


@dataclass
class Action:
    """A write a goal makes to each of its records."""

    kind: Literal["transition", "update", "adjust", "delete"]
    entity: str
    field: str | None = None
    value: Any = None
    verb: str | None = None
    sign: int = 1


@dataclass
class Goal:
    """One user goal: (optionally) find an anchor record, then select the records of `entity` related to it
    that meet `conditions`, and act on each (a branch on a condition picks the write), or report on them."""

    entity: str
    anchor: Intent | None = None
    conditions: list[Condition] = dataclasses.field(default_factory=list)
    action: Action | None = None
    branch: Condition | None = None  # records meeting it get `action`; the others `otherwise` (or nothing)
    otherwise: Action | None = None
    fallback_report: bool = False  # recovery: a record the action is refused for is left and its ID reported
    report: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (what, field): count/sum/avg/anchor
    every_page: bool = False  # the records span several pages of their listing
    shown: int = 0  # the records are among the first `shown` of a listing that returns no more (0: all of them)


def _condition(p: Phraser, c: Condition, subject: str = "its") -> str:
    f = p.field(c.field)
    own = f"{subject} {f}" if c.via is None else f"the {f} of the {p.noun(c.via)} it is for"
    if c.op == "eq":
        return f"{own} is {value_text(c.value)}"
    if c.op == "in":
        values = [value_text(v) for v in c.value]
        return f"{own} is {', '.join(values[:-1])} or {values[-1]}" if len(values) > 1 else f"{own} is {values[0]}"
    if c.temporal:
        return f"{own} is {'on or after' if c.op == 'min' else 'on or before'} {value_text(c.value)}"
    return f"{own} is {'at least' if c.op == 'min' else 'at most'} {value_text(c.value)}"


def _action(p: Phraser, a: Action, it: str) -> str:
    """The write in words, applied to `it` ("it", "each of them")."""
    if a.kind == "delete":
        return f"delete {it}"
    if a.kind == "transition":
        if a.verb:
            return f"{a.verb} {it}"
        return f"mark {it} as {humanize(str(a.value))}"
    if a.kind == "update":
        return f"set the {p.field(a.field or '')} of {it} to {value_text(a.value)}"
    amount = value_text(a.value)
    if a.verb in ("deposit", "withdraw", "pay", "charge", "refund", "credit", "debit"):
        return f"{a.verb} {amount} {'into' if a.sign > 0 else 'from'} {it}"
    if a.verb and a.verb not in ("increment", "decrement", "adjust"):
        return f"{a.verb} {it} by {amount}"
    if a.sign > 0:
        return f"add {amount} to the {p.field(a.field or '')} of {it}"
    return f"take {amount} off the {p.field(a.field or '')} of {it}"


def _done(p: Phraser, a: Action) -> str:
    """The past tense of an action, for the report ("cancelled", "updated")."""
    if a.kind == "delete":
        return "deleted"
    if a.kind == "transition":
        verb = a.verb or ""
        if verb:
            return verb + ("d" if verb.endswith("e") else "led" if verb.endswith("el") else "ed")
        return f"marked as {humanize(str(a.value))}"
    return "changed" if a.kind == "update" else "adjusted"


def compose_goal(goal: Goal, rng: random.Random, style: Style) -> str:
    """One coherent request: the anchor, the records related to it and what to do with each, the report."""
    p = Phraser(rng, style)
    p._entities = {goal.entity, *([goal.anchor.entity] if goal.anchor else [])}
    n = p.noun(goal.entity)
    ns = plural(n)
    sentences = []
    owner = ""
    if goal.anchor is not None:
        a = goal.anchor
        an = p.noun(a.entity)
        if a.kind == "find_named":
            sentences.append(p.pick('Find the {n} "{v}".', 'Look up the {n} called "{v}".').format(n=an, v=a.value))
        else:
            most = "highest" if a.direction == "highest" else "lowest"
            if a.temporal:
                most = "latest" if a.direction == "highest" else "earliest"
            where = p.filters(a.filters)
            every = f" (look at every {an}, not just the first page)" if a.pages else ""
            sentences.append(
                p.pick(
                    "Find the {n}{where} with the {most} {f}{every}.",
                    "Work out which {n}{where} has the {most} {f}{every}.",
                ).format(n=an, where=where, most=most, f=p.field(a.field or ""), every=every)
            )
        owner = f"that {an}'s "
    conds = [_condition(p, c) for c in goal.conditions]
    where = ""
    if conds:
        where = " whose " + " and whose ".join(c.removeprefix("its ") for c in conds)
    scope = "all of " if goal.every_page and not owner else ""
    among = f" among the first {goal.shown} listed" if goal.shown else ""
    subject = f"{scope}{owner or 'the '}{ns}{among}{where}"
    if goal.action is None:
        sentences.append(p.pick("Go through {s}.", "Look at {s}.").format(s=subject))
    else:
        act = _action(p, goal.action, "each of them" if goal.branch is None else "it")
        if goal.branch is None:
            sentences.append(p.pick("Go through {s} and {a}.", "Take {s} and {a}.").format(s=subject, a=act))
        else:
            other = _action(p, goal.otherwise, "it") if goal.otherwise else "leave it as it is"
            check = _condition(p, goal.branch)
            lead = p.pick("Go through {s}.", "Take {s}.").format(s=subject)
            sentences.append(f"{lead} For each one: if {check}, {act}; otherwise {other}.")
        if goal.fallback_report:
            sentences.append(
                p.pick(
                    "Where that is refused, leave the {n} as it is and give its ID in your answer (only the IDs of "
                    "the {ns} refused).",
                    "If the system refuses that for one of them, leave that {n} as it is; in your answer, list the "
                    "IDs of the refused {ns} and no other {n} IDs.",
                ).format(n=n, ns=ns)
            )
    report = []
    for what, name in goal.report:
        if what == "count":
            did = _done(p, goal.action) if goal.action else "found"
            report.append(f"how many {ns} you {did}" if goal.action else f"how many such {ns} there are")
        elif what in ("sum", "avg"):
            word = "total" if what == "sum" else "average"
            report.append(f"the {word} {p.field(name)} over those {ns}, rounded to two decimals")
        elif what == "anchor" and goal.anchor is not None:
            report.append(f"the {p.field(name)} of that {p.noun(goal.anchor.entity)}")
    if report:
        listed = report[0] if len(report) == 1 else ", ".join(report[:-1]) + " and " + report[-1]
        sentences.append(p.pick("Tell me {x}.", "Report {x}.", "In your answer, give {x}.").format(x=listed))
    return " ".join(sentences)


# --- measuring a set of questions ------------------------------------------------------------------

_QUOTED = re.compile(r'"[^"]*"')
_NUMBER = re.compile(r"\b\d[\d.:\-T]*\b")
_BAD_LAST = ("at", "on", "by", "ts", "utc", "id")


def raw_field_phrases(spec: EnvSpec) -> set[str]:
    """Phrases that give away a raw column name (lower case), for `phrasing_report`:
    - every snake_case column name of the spec (`placed_at`, `shipping_address`), verbatim;
    - for a multi-word column ending in a particle (`_at`, `_on`, `_by`, `_ts`, `_utc`, `_id`), its naive
      humanization, the underscores made spaces ("placed at", "opened on", "customer id");
    - for such a column whose word before the particle is a verb form (ending in "s" or "ed"), that word
      followed by "time"/"date" ("ends time", "opened date", "placed time"), which is how a naive
      humanizer reads it."""
    out: set[str] = set()
    for e in spec.entities:
        for f in e.fields:
            words = f.name.lower().split("_")
            if len(words) < 2:
                continue
            out.add(f.name.lower())
            if words[-1] in _BAD_LAST:
                naive = {" ".join(words)}
                if words[-1] in ("at", "on") and words[-2].endswith(("s", "ed")) and not words[-2].endswith("ss"):
                    naive.add(" ".join([*words[:-1], "time" if words[-1] == "at" else "date"]))
                out |= naive - {humanize(f.name).lower()}  # what `humanize` says is English ("scheduled time")
    return out


def undefined_reference(question: str) -> bool:
    """The question says "record"/"entry" (a noun that names nothing), "of the second kind", or "that X"
    where the noun X (its first word) appears nowhere before that point of the question."""
    low = question.lower()
    if re.search(r"\b(record|records|entry|entries)\b", low) or "second kind" in low:
        return True
    for m in re.finditer(r"\bthat (\w+)", low):
        noun = m.group(1)
        if noun in _NOT_NOUNS:
            continue
        before = low[: m.start()]
        stem = noun.removesuffix("'s")
        if not re.search(rf"\b{re.escape(stem)}", before):
            return True
    return False


_NOT_NOUNS = frozenset(
    {"is", "are", "was", "were", "has", "have", "had", "can", "could", "will", "would", "should", "must", "do"}
    | {"does", "did", "it", "its", "they", "the", "a", "an", "one", "you", "no", "belong", "belongs", "match"}
    | {"matches", "meet", "meets", "need", "needs", "point", "points", "hold", "holds", "refer", "refers"}
    | {"start", "starts", "end", "ends", "take", "takes", "fall", "falls", "come", "comes", "lie", "lies"}
)  # words after "that" that start a relative clause ("adjustments that belong to ..."), not a reference


def template_of(question: str, spec: EnvSpec | None = None) -> str:
    """`question` with quoted values, numbers and dates, and the spec's enum values masked."""
    t = _QUOTED.sub("<v>", question)
    t = _NUMBER.sub("<n>", t)
    if spec is not None:
        values = {humanize(str(v)) for e in spec.entities for f in e.fields for v in (f.enum or [])}
        for v in sorted(values, key=len, reverse=True):
            t = re.sub(rf"\b{re.escape(v)}\b", "<e>", t)
    return t


def phrasing_report(questions: list[str], spec: EnvSpec) -> dict[str, int | float]:
    """How a set of questions reads: `questions`, `distinct_templates` (questions with values, names and
    numbers masked, counted distinct), `template_share` (distinct / questions), `raw_field_names` (questions
    holding a phrase of `raw_field_phrases`), `undefined_references` (questions for which
    `undefined_reference` holds), and `mean_words`."""
    phrases = raw_field_phrases(spec)
    raw = sum(any(re.search(rf"(?<![\w]){re.escape(x)}(?![\w])", q.lower()) for x in phrases) for q in questions)
    distinct = len({template_of(q, spec) for q in questions})
    return {
        "questions": len(questions),
        "distinct_templates": distinct,
        "template_share": round(distinct / len(questions), 3) if questions else 0.0,
        "raw_field_names": raw,
        "undefined_references": sum(undefined_reference(q) for q in questions),
        "mean_words": round(sum(len(q.split()) for q in questions) / len(questions), 1) if questions else 0.0,
    }
