"""Conditions: filters on one field that select some but not all of an entity's seed rows."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from typing import Any

from factory.models import EntitySpec
from factory.tasks.programs.view import Rows, as_number, words

MAX_PARENT_VALUES = 2  # "belongs to X" conditions per foreign key, so they do not crowd out the others


@dataclass(frozen=True)
class Condition:
    """A filter on one field of a row, as Python code, as a test, and in words."""

    field: str
    op: str  # "==", ">", "<", "before", "after"
    value: Any
    label: str

    def test(self, row: dict[str, Any]) -> bool:
        v = row.get(self.field)
        if v is None:
            return False
        if self.op == "==":
            return bool(v == self.value)
        if self.op in ("before", "after"):
            day = str(v)[:10]
            return day < self.value if self.op == "before" else day > self.value
        n = as_number(v)
        return n is not None and (n > self.value if self.op == ">" else n < self.value)

    def code(self, var: str = "row") -> str:
        get = f"{var}.get({self.field!r})"
        if self.op == "==":
            return f"{get} == {self.value!r}"
        if self.op in ("before", "after"):
            cmp = "<" if self.op == "before" else ">"
            return f"{get} is not None and str({get})[:10] {cmp} {self.value!r}"
        return f"{get} is not None and {get} {self.op} {self.value!r}"

    def phrase(self) -> str:
        if self.op == "==":
            if isinstance(self.value, bool):
                return f'whose "{self.label}" flag is {"set" if self.value else "not set"}'
            return f'whose {self.label} is "{self.value}"'
        relation = {">": "above", "<": "below", "before": "before", "after": "after"}[self.op]
        return f"whose {self.label} is {relation} {self.value}"


def _between(a: float, b: float, integral: bool) -> float | int | None:
    """A round number strictly between two adjacent values, so no row sits on the threshold."""
    mid = (a + b) / 2
    for digits in (-3, -2, -1, 0, 1, 2):
        t = round(mid, digits)
        if a < t < b:
            return int(t) if float(t).is_integer() and (integral or digits <= 0) else t
    return None


def conditions(e: EntitySpec, rows: Rows, rng: random.Random, exclude: tuple[str, ...] = ()) -> list[Condition]:
    """Filters that select some but not all rows: enum/boolean values, numeric and date thresholds, parents."""
    out: list[Condition] = []
    n = len(rows)
    for f in e.fields:
        if f.primary_key or f.name in exclude:
            continue
        values = [r.get(f.name) for r in rows if r.get(f.name) is not None]
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
                    a, b = distinct[i], distinct[i + 1]
                    op = rng.choice([">", "<"])
                    t = _between(a, b, f.type == "integer")
                    if f.type == "integer" and not isinstance(t, int):  # whole numbers: "above 3", not "above 3.5"
                        t = a if op == ">" else b
                    if t is not None:
                        out.append(Condition(f.name, op, t, label))
        elif f.type in ("date", "datetime"):
            days = sorted({str(v)[:10] for v in values})
            for q in (0.3, 0.6):
                if len(days) > 3:
                    out.append(
                        Condition(f.name, rng.choice(["before", "after"]), days[int(q * (len(days) - 1))], label)
                    )
    return [c for c in out if 0 < sum(c.test(r) for r in rows) < n]
