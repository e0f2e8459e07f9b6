"""Conditions and the rows they pick: filters with one reading, and the status rule a question states.

A threshold lies strictly between two values the column holds, so no row sits on it and "after" reads the
same whether or not the boundary counts; when no such value exists the words say which way it goes ("at
least 4", "on or after 2024-03-05"). Rows in a voided state (cancelled, rejected, archived...) are counted or
left out as the question says, since either is a fair reading of "its orders".
"""

from __future__ import annotations

import operator
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date
from typing import Any

from factory.models import EntitySpec, ToolSpec
from factory.tasks.programs.view import Rows, as_number, one_page_call, words

MAX_PARENT_VALUES = 2  # "belongs to X" conditions per foreign key, so they do not crowd out the others
NEARBY_GAPS = 2  # how far from a date quantile a gap between two days is looked for

# States in which some readers stop counting a row: "the customer's orders" may or may not mean the cancelled ones.
VOIDED_STATES = frozenset(
    {
        "cancelled",
        "canceled",
        "void",
        "voided",
        "rejected",
        "declined",
        "refunded",
        "revoked",
        "failed",
        "expired",
        "deleted",
        "returned",
        "archived",
        "closed",
    }
)

_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    ">": operator.gt,
    "<": operator.lt,
    ">=": operator.ge,
    "<=": operator.le,
}
DATE_OPS = {"after": ">", "before": "<", "on or after": ">=", "on or before": "<="}  # days compare as text
_WORDS = {">": "above", "<": "below", ">=": "at least", "<=": "at most"}
_INCLUSIVE = {">": ">=", "<": "<=", "after": "on or after", "before": "on or before"}
LOWER_BOUNDS = frozenset({">", ">=", "after", "on or after"})


@dataclass(frozen=True)
class Condition:
    """A filter on one field of a row, as Python code, as a test, and in words."""

    field: str
    op: str  # "==", ">", "<", ">=", "<=", "before", "after", "on or before", "on or after"
    value: Any
    label: str

    def test(self, row: dict[str, Any]) -> bool:
        v = row.get(self.field)
        if v is None:
            return False
        if self.op == "==":
            return bool(v == self.value)
        if self.op in DATE_OPS:
            return _OPERATORS[DATE_OPS[self.op]](str(v)[:10], self.value)
        n = as_number(v)
        return n is not None and _OPERATORS[self.op](n, self.value)

    def code(self, var: str = "row") -> str:
        get = f"{var}.get({self.field!r})"
        if self.op == "==":
            return f"{get} == {self.value!r}"
        if self.op in DATE_OPS:
            return f"{get} is not None and str({get})[:10] {DATE_OPS[self.op]} {self.value!r}"
        return f"{get} is not None and {get} {self.op} {self.value!r}"

    def phrase(self) -> str:
        if self.op == "==":
            if isinstance(self.value, bool):
                return f'whose "{self.label}" flag is {"set" if self.value else "not set"}'
            return f'whose {self.label} is "{self.value}"'
        return f"whose {self.label} is {_WORDS.get(self.op, self.op)} {self.value}"

    def inclusive(self) -> Condition | None:
        """The reading that counts a row on the threshold, when the words leave it open ("after", "above")."""
        op = _INCLUSIVE.get(self.op)
        return replace(self, op=op) if op else None

    def tool_filter(self, tool: ToolSpec) -> dict[str, Any] | None:
        """The list tool's own range filter for this threshold (`min_<field>`, `max_<field>`), if it has one."""
        if self.op == "==":
            return None
        param = ("min_" if self.op in LOWER_BOUNDS else "max_") + self.field
        return {param: self.value} if param in (tool.parameters.get("properties") or {}) else None


@dataclass(frozen=True)
class StatusRule:
    """Whether rows in a voided state count, said in so many words: 'leaving out orders whose status is "cancelled"'."""

    things: str  # the rows, in the plural
    states: tuple[tuple[str, tuple[Any, ...]], ...]  # (field, its voided values among the rows read)
    counted: bool

    def test(self, row: dict[str, Any]) -> bool:
        return self.counted or not any(row.get(f) in values for f, values in self.states)

    def code(self, var: str = "row") -> str:
        if self.counted:
            return "True"
        return " and ".join(f"{var}.get({f!r}) not in {values!r}" for f, values in self.states)

    def which(self) -> str:
        return " or ".join(f"whose {words(f)} is " + " or ".join(f'"{v}"' for v in values) for f, values in self.states)

    def phrase(self) -> str:
        return f"{'including' if self.counted else 'leaving out'} {self.things} {self.which()}"

    def flipped(self) -> StatusRule:
        return replace(self, counted=not self.counted)


def voided_states(e: EntitySpec, rows: Rows, exclude: tuple[str, ...] = ()) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """(field, values) of the status-like fields of `e` whose voided values some of `rows` hold."""
    out = []
    for f in e.fields:
        if f.name in exclude or f.type != "string" or not (f.enum or f.name.endswith("status") or f.name == "state"):
            continue
        held = sorted({v for r in rows if isinstance(v := r.get(f.name), str) and v.lower() in VOIDED_STATES})
        if held:
            out.append((f.name, tuple(held)))
    return tuple(out)


@dataclass(frozen=True)
class Selection:
    """The rows of one entity a gold program reads: its list tool, the condition and the status rule.

    `via_tool` is a reading, never a phrasing: the condition handed to the list tool's own range filter, whose
    bounds include the threshold, instead of being tested row by row.
    """

    entity: EntitySpec
    tool: ToolSpec
    condition: Condition | None = None
    status: StatusRule | None = None
    settled: tuple[str, ...] = ()  # status fields the question's own words settle (the one a bulk update sets)
    via_tool: bool = False
    scope: str = ""  # the words limiting the rows to those a one-page listing returns (EnvView.scope)
    args: tuple[tuple[str, Any], ...] = ()  # the scope the listing is read in (EnvView.scope_args)

    def test(self, row: dict[str, Any]) -> bool:
        return (self.condition is None or self.condition.test(row)) and (self.status is None or self.status.test(row))

    def code(self, var: str = "row") -> str:
        parts = [f"({self.condition.code(var)})"] if self.condition is not None and not self.via_tool else []
        if self.status is not None and not self.status.counted:
            parts.append(f"({self.status.code(var)})")
        return " and ".join(parts) or "True"

    def unruled(self, rows: Rows) -> tuple[tuple[str, tuple[Any, ...]], ...]:
        """The voided states among the rows this selection picks that neither its words nor its rule settle."""
        fields = {f for f, _ in self.status.states} if self.status is not None else set()
        exclude = (*self.settled, *fields, *([self.condition.field] if self.condition is not None else []))
        return voided_states(self.entity, [r for r in rows if self.test(r)], exclude)

    def ruled(self, rows: Rows, rng: random.Random) -> Selection:
        """This selection with a status rule (counted or not, drawn from `rng`) when some of `rows` it picks
        are voided and nothing settles them yet; unchanged otherwise."""
        states = self.unruled(rows)
        return (
            replace(self, status=StatusRule(words(self.entity.table), states, rng.random() < 0.5)) if states else self
        )

    def fetch(self, page: int | None) -> str:
        """The call of the prelude's `_all` that reads the rows, `page` at a time (the tool's default when None)."""
        own = self.condition.tool_filter(self.tool) if self.condition is not None and self.via_tool else None
        filters = {**dict(self.args), **(own or {})}
        if "offset" not in (self.tool.parameters.get("properties") or {}):  # one page is all the tool returns
            call = {**one_page_call(self.tool), **filters}
            return f"tools.{self.tool.name}({', '.join(f'{k}={v!r}' for k, v in call.items())})['items']"
        args = [f"tools.{self.tool.name}", *([str(page)] if page is not None else [])]
        args += [f"{k}={v!r}" for k, v in filters.items()]
        return f"_all({', '.join(args)})"

    def phrase(self, lead: str = "") -> str:
        """The condition's words (after `lead`, for "among those"), then the status rule's."""
        said = [f"{lead}{self.condition.phrase()}"] if self.condition is not None else []
        said += [self.status.phrase()] if self.status is not None else []
        return ", ".join(said + ([self.scope] if self.scope else []))


def _between(a: float, b: float, integral: bool) -> float | int | None:
    """A round number strictly between two adjacent values, so no row sits on the threshold."""
    mid = (a + b) / 2
    for digits in (-3, -2, -1, 0, 1, 2):
        t = round(mid, digits)
        if a < t < b:
            return int(t) if float(t).is_integer() and (integral or digits <= 0) else t
    return None


def _number_condition(name: str, label: str, a: Any, b: Any, integral: bool, op: str) -> Condition | None:
    """A threshold between adjacent values `a` < `b`; whole numbers with none between say "at least b"/"at most a"."""
    t = _between(a, b, integral)
    if integral and not isinstance(t, int):
        return Condition(name, ">=", b, label) if op == ">" else Condition(name, "<=", a, label)
    return Condition(name, op, t, label) if t is not None else None


def _day(value: str) -> date | None:
    try:
        return date.fromisoformat(value)
    except ValueError:
        return None


def _date_condition(name: str, label: str, days: list[date], i: int, op: str) -> Condition:
    """A day no row falls on, strictly between two days near `days[i]`; "on or after" the next day otherwise."""
    near = sorted(
        range(max(0, i - NEARBY_GAPS), min(len(days) - 1, i + NEARBY_GAPS + 1)), key=lambda j: (abs(j - i), j)
    )
    for j in near:
        gap = days[j + 1] - days[j]
        if gap.days >= 2:
            return Condition(name, op, (days[j] + gap // 2).isoformat(), label)
    return Condition(name, "on or after", days[i + 1].isoformat(), label)


def conditions(e: EntitySpec, rows: Rows, rng: random.Random, exclude: tuple[str, ...] = ()) -> list[Condition]:
    """Filters that select some but not all rows: enum/boolean values, numeric and date thresholds, parents."""
    out: list[Condition] = []
    n = len(rows)
    for f in e.fields:
        if f.primary_key or f.name in exclude:
            continue
        values = [r.get(f.name) for r in rows if r.get(f.name) is not None]
        if f.type == "boolean":  # stored as 0/1: the question says the flag is set, not that it is "1"
            values = [bool(v) for v in values if isinstance(v, int)]
        if not values:
            continue
        label = words(f.name[:-3] if f.references and f.name.endswith("_id") else f.name)
        if f.enum or f.type == "boolean" or f.references:
            counts = Counter(values)
            found = [
                Condition(f.name, "==", value, label)
                for value, c in sorted(counts.items(), key=lambda kv: str(kv[0]))
                if 2 <= c < n and (not f.references or c <= n // 2)
            ]
            out += rng.sample(found, min(len(found), MAX_PARENT_VALUES)) if f.references else found
        elif f.type in ("integer", "number"):
            distinct = sorted({v for v in values if as_number(v) is not None})
            for q in (0.25, 0.5, 0.75):
                i = int(q * (len(distinct) - 1))
                if i + 1 < len(distinct):
                    op = rng.choice([">", "<"])
                    c = _number_condition(f.name, label, distinct[i], distinct[i + 1], f.type == "integer", op)
                    if c is not None:
                        out.append(c)
        elif f.type in ("date", "datetime"):
            days = sorted({d for v in values if (d := _day(str(v)[:10])) is not None})
            for q in (0.3, 0.6):
                if len(days) > 3:
                    out.append(
                        _date_condition(f.name, label, days, int(q * (len(days) - 1)), rng.choice(["before", "after"]))
                    )
    if not out:  # nothing else to filter on (a knowledge graph's entities): a text field of a few kinds
        out = _kinds(e, rows, exclude)
    unique = list(dict.fromkeys(out))
    return [c for c in unique if 0 < sum(c.test(r) for r in rows) < n]


MAX_KINDS = 6  # a text field with at most this many distinct values names kinds of rows (`entity_type`)


def _kinds(e: EntitySpec, rows: Rows, exclude: tuple[str, ...]) -> list[Condition]:
    """`<field> == value` for each value on two rows or more of a plain text field that holds few distinct
    values: at most MAX_KINDS, or at most one per two rows (a pet's tag), so a name or free text, whose values
    rarely repeat, is no kind (unlike an enum's, the field is read as it is)."""
    out: list[Condition] = []
    for f in e.fields:
        if f.primary_key or f.name in exclude or f.type != "string" or f.format in ("list", "json") or f.unique:
            continue
        counts = Counter(r.get(f.name) for r in rows if isinstance(r.get(f.name), str))
        if 2 <= len(counts) <= max(MAX_KINDS, len(rows) // 2):
            out += [Condition(f.name, "==", value, words(f.name)) for value, c in sorted(counts.items()) if c >= 2]
    return out
