"""Program tasks: a library of program families instantiated on each environment's own schema and data.

A program task (Agent-World's second task kind) needs loops, aggregation and state-dependent decisions
that a short tool chain cannot express. Each family reads the environment's entities, tools and seed
state, declares whether it applies (a numeric field, a status enum with a transition tool, a foreign key,
a budget that purchases consume...) and proposes instances whose answer is not trivial. For each instance
the gold program, Python source defining `solve(tools)` that only calls the environment's tools, runs in
a fresh session through the sandbox (`session.run_program`); its answer and the state it leaves behind
become the verifier: code defining `verify(initial, final, answer)` with the expected values embedded,
checking the answer leniently and the final state exactly (the rows the gold wrote, nothing else changed).
The verifier runs in the sandbox, so its helpers live inside its source, not in this project.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from factory.envs.bundle import Bundle
from factory.envs.runtime import Session
from factory.models import Difficulty, EntitySpec, EnvSpec, FieldSpec, Lineage, Task, ToolSpec
from factory.store import hash_value
from factory.verify.state import DEFAULT_TIMESTAMP_COLUMNS, state_diff

CODE_VERSION = "1"
PAGE_SIZE = 100  # the gold programs' page size, unless the tool allows less
MAX_WRITES = 12  # a bulk task that would change more rows than this is not proposed
MAX_LISTED = 15  # answers that list ids stay short enough to type
PROPOSALS_PER_FAMILY = 24
FAMILY_MARK = "-program-"  # task ids: <env id>-program-<family>-<hash>
MAX_PARENT_VALUES = 2  # "belongs to X" conditions per foreign key, so they do not crowd out the others

Rows = list[dict[str, Any]]
SessionFactory = Callable[[], AbstractContextManager[Session]]

_QUANTITY_NAMES = ("quantity", "qty", "units", "count")
_STOCK_NAMES = ("stock", "on_hand", "quantity_on_hand", "quantity_available", "units_in_stock", "inventory")
_TARGET_NAMES = ("target_level", "target_stock", "reorder_point", "reorder_level", "par_level", "min_stock")
_COST_WORDS = ("cost", "price", "rate")


# --- the gold programs' shared prelude ----------------------------------------------------------------

PRELUDE = '''def _all(fetch, page_size=None, **filters):
    """Every row a list tool returns, following next_offset page by page."""
    rows, offset = [], 0
    while offset is not None:
        args = dict(filters, offset=offset)
        if page_size is not None:
            args["limit"] = page_size
        page = fetch(**args)
        if not isinstance(page, dict) or "error" in page:
            raise RuntimeError(f"listing failed: {page}")
        rows.extend(page["items"])
        offset = page.get("next_offset")
    return rows


def _ok(result):
    """A write's result; a failed write stops the program."""
    if isinstance(result, dict) and "error" in result:
        raise RuntimeError(f"call failed: {result['error']}")
    return result
'''


def _program(body: str) -> str:
    return PRELUDE + "\n\ndef solve(tools):\n" + "".join(f"    {line}\n" if line else "\n" for line in body.split("\n"))


# --- the environment as the families see it ------------------------------------------------------------


def _words(name: str) -> str:
    return name.replace("_", " ")


@dataclass
class EnvView:
    """An environment's spec and seed state, with the lookups the families need."""

    spec: EnvSpec
    seed: dict[str, Rows]

    def rows(self, entity: EntitySpec) -> Rows:
        return self.seed.get(entity.table, [])

    def entity(self, name: str) -> EntitySpec | None:
        for e in self.spec.entities:
            if name in (e.name, e.table):
                return e
        return None

    def tools_of(self, entity: EntitySpec, kind: str) -> list[ToolSpec]:
        return [
            t
            for t in self.spec.tools
            if t.operation is not None
            and t.operation.kind == kind
            and t.operation.entity in (entity.name, entity.table)
        ]

    def list_tool(self, entity: EntitySpec) -> ToolSpec | None:
        """A list tool that pages with limit/offset and needs no argument."""
        for t in self.tools_of(entity, "list"):
            props = t.parameters.get("properties") or {}
            if "offset" in props and "limit" in props and not t.parameters.get("required"):
                return t
        return None

    def get_tool(self, entity: EntitySpec) -> ToolSpec | None:
        key = f"{entity.name}_id"
        for t in self.tools_of(entity, "get"):
            if key in (t.parameters.get("properties") or {}):
                return t
        return None

    def listable(self) -> list[tuple[EntitySpec, ToolSpec]]:
        out = []
        for e in self.spec.entities:
            t = self.list_tool(e)
            if t is not None and self.rows(e):
                out.append((e, t))
        return out


def page_size(tool: ToolSpec) -> int:
    limit = (tool.parameters.get("properties") or {}).get("limit") or {}
    maximum = limit.get("maximum") if isinstance(limit, dict) else None
    return int(min(PAGE_SIZE, maximum)) if isinstance(maximum, int | float) and maximum >= 1 else PAGE_SIZE


def default_page(tool: ToolSpec) -> int:
    limit = (tool.parameters.get("properties") or {}).get("limit") or {}
    value = limit.get("default") if isinstance(limit, dict) else None
    return int(value) if isinstance(value, int) and value >= 1 else 20


def _numeric_fields(e: EntitySpec) -> list[FieldSpec]:
    return [
        f
        for f in e.fields
        if f.type in ("integer", "number") and not f.primary_key and not f.references and not f.name.endswith("_id")
    ]


def _key(e: EntitySpec) -> str:
    return e.primary_key


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


# --- conditions -----------------------------------------------------------------------------------------


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
        n = _num(v)
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
        words = {">": "above", "<": "below", "before": "before", "after": "after"}[self.op]
        return f"whose {self.label} is {words} {self.value}"


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
        label = _words(f.name[:-3] if f.references and f.name.endswith("_id") else f.name)
        if f.enum or f.type == "boolean" or f.references:
            counts = Counter(values)
            found = [
                Condition(f.name, "==", value, label)
                for value, c in sorted(counts.items(), key=lambda kv: str(kv[0]))
                if 2 <= c < n and (not f.references or c <= n // 2)
            ]
            out += rng.sample(found, min(len(found), MAX_PARENT_VALUES)) if f.references else found
        elif f.type in ("integer", "number"):
            distinct = sorted({v for v in values if _num(v) is not None})
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


# --- drafts and families -----------------------------------------------------------------------------


@dataclass
class Draft:
    """One proposed task before its gold has run."""

    family: str
    question: str
    program: str
    capabilities: list[str]
    difficulty: Difficulty
    mutates: bool = False


Proposer = Callable[[EnvView, random.Random], Iterator[Draft]]


def _limited(items: list[Any], rng: random.Random, k: int = PROPOSALS_PER_FAMILY) -> list[Any]:
    items = list(items)
    rng.shuffle(items)
    return items[:k]


def propose_aggregate(view: EnvView, rng: random.Random) -> Iterator[Draft]:
    """Filter and aggregate: sum / average / count / max / min over the rows matching a condition."""
    combos = []
    for e, tool in view.listable():
        rows = view.rows(e)
        for cond in conditions(e, rows, rng):
            matched = [r for r in rows if cond.test(r)]
            combos.append((e, tool, cond, None, "count"))
            for f in _numeric_fields(e):
                if f.name != cond.field and sum(_num(r.get(f.name)) is not None for r in matched) >= 2:
                    combos.append((e, tool, cond, f, rng.choice(["sum", "avg", "max", "min"])))
    for e, tool, cond, f, agg in _limited(combos, rng):
        things, one = _words(e.table), _words(e.name)
        if agg == "count":
            expr = "len(rows)"
            question = rng.choice(
                [
                    f"How many {things} are there {cond.phrase()}?",
                    f"Count every {one} {cond.phrase()}. How many are there?",
                ]
            )
        else:
            values = f"[r[{f.name!r}] for r in rows if r.get({f.name!r}) is not None]"
            expr = {
                "sum": f"round(sum({values}), 2)",
                "avg": f"round(sum({values}) / len({values}), 2)",
                "max": f"max({values})",
                "min": f"min({values})",
            }[agg]
            what = {"sum": "total", "avg": "average", "max": "highest", "min": "lowest"}[agg]
            question = rng.choice(
                [
                    f"What is the {what} {_words(f.name)} of all {things} {cond.phrase()}?",
                    f"Looking at every {one} {cond.phrase()}, what is their {what} {_words(f.name)}?",
                ]
            )
            if agg == "avg" or (agg == "sum" and f.type == "number"):
                question += " Round to 2 decimals."
        body = f"rows = [row for row in _all(tools.{tool.name}, {page_size(tool)}) if {cond.code()}]\nreturn {expr}"
        yield Draft(
            family="aggregate",
            question=question,
            program=_program(body),
            capabilities=["loops", "aggregation"],
            difficulty=Difficulty(chain_length=1, constraints=[f"{cond.field} {cond.op}"]),
        )


def propose_top_k(view: EnvView, rng: random.Random) -> Iterator[Draft]:
    """Top-k / argmax: the k rows with the highest (or lowest) value of a numeric field."""
    combos = []
    for e, tool in view.listable():
        rows = view.rows(e)
        for f in _numeric_fields(e):
            for cond in [None, *conditions(e, rows, rng, exclude=(f.name,))[:4]]:
                pool = [r for r in rows if (cond is None or cond.test(r)) and _num(r.get(f.name)) is not None]
                for k in (1, 3, 5):
                    for highest in (True, False):
                        values = sorted((r[f.name] for r in pool), reverse=highest)
                        if len(values) > k and values[k - 1] != values[k] and len(set(values[:k])) == k:
                            combos.append((e, tool, f, cond, k, highest))
    for e, tool, f, cond, k, highest in _limited(combos, rng):
        things, one, label = _words(e.table), _words(e.name), _words(f.name)
        word = "highest" if highest else "lowest"
        among = f" among those {cond.phrase()}" if cond else ""
        if k == 1:
            question = rng.choice(
                [
                    f"Which {one} has the {word} {label}{among}? Give its ID.",
                    f"Find the {one} with the {word} {label}{among} and answer with its ID.",
                ]
            )
        else:
            question = rng.choice(
                [
                    f"Which {k} {things} have the {word} {label}{among}? Answer with their IDs.",
                    f"List the IDs of the {k} {things} with the {word} {label}{among}.",
                ]
            )
        pick = "[0]" if k == 1 else f"[:{k}]"
        body = (
            f"rows = [row for row in _all(tools.{tool.name}, {page_size(tool)})"
            f" if row.get({f.name!r}) is not None{' and (' + cond.code() + ')' if cond else ''}]\n"
            f"rows.sort(key=lambda row: row[{f.name!r}], reverse={highest!r})\n"
            f"return [row[{_key(e)!r}] for row in rows]{pick}"
        )
        yield Draft(
            family="top_k",
            question=question,
            program=_program(body),
            capabilities=["loops", "aggregation"],
            difficulty=Difficulty(chain_length=1, constraints=[f"top {k}"]),
        )


def _transitions(view: EnvView, e: EntitySpec) -> list[tuple[ToolSpec, str, str, list[str] | None]]:
    """(tool, key parameter, field, target value, allowed sources) of every status-changing tool of `e`."""
    key = f"{e.name}_id"
    out: list[tuple[ToolSpec, str, str, list[str] | None]] = []
    for t in view.tools_of(e, "action"):
        op = t.operation
        props = t.parameters.get("properties") or {}
        required = set(t.parameters.get("required") or [])
        if op and op.action == "transition" and op.field and op.to_value and key in props and required <= {key}:
            out.append((t, op.field, op.to_value, op.from_values))
    fields = {f.name: f for f in e.fields}
    for t in view.tools_of(e, "update"):
        props = t.parameters.get("properties") or {}
        if key not in props or set(t.parameters.get("required") or []) - {key}:
            continue
        for name in props:
            f = fields.get(name)
            if f is not None and f.enum:
                for value in f.enum:
                    out.append((t, name, value, None))
    return out


def propose_bulk_update(view: EnvView, rng: random.Random) -> Iterator[Draft]:
    """Conditional bulk update: move every row matching a condition (and allowed to move) to a new status."""
    combos = []
    for e, tool in view.listable():
        rows = view.rows(e)
        for t, fld, to_value, from_values in _transitions(view, e):
            movable = [r for r in rows if r.get(fld) != to_value and (from_values is None or r.get(fld) in from_values)]
            for cond in conditions(e, rows, rng, exclude=(fld,)):
                hits = [r for r in movable if cond.test(r)]
                if 2 <= len(hits) <= MAX_WRITES:
                    combos.append((e, tool, t, fld, to_value, from_values, cond))
    for e, tool, t, fld, to_value, from_values, cond in _limited(combos, rng):
        things, one, label = _words(e.table), _words(e.name), _words(fld)
        if from_values is None:
            allowed = f"row.get({fld!r}) != {to_value!r}"
            scope = f'that is not already "{to_value}"'
        else:
            allowed = f"row.get({fld!r}) in {tuple(from_values)!r}"
            scope = "whose " + label + " is " + " or ".join(f'"{v}"' for v in from_values)
        question = rng.choice(
            [
                f'Set the {label} of every {one} {cond.phrase()} and {scope} to "{to_value}". How many did you change?',
                f'Go through all {things} {cond.phrase()}: each one {scope} must become "{to_value}". '
                "Report how many you updated.",
            ]
        )
        extra = {} if t.operation and t.operation.kind == "action" else {fld: to_value}
        args = ", ".join([f"{e.name}_id=row[{_key(e)!r}]", *(f"{k}={v!r}" for k, v in extra.items())])
        body = (
            "changed = 0\n"
            f"for row in _all(tools.{tool.name}, {page_size(tool)}):\n"
            f"    if ({cond.code()}) and {allowed}:\n"
            f"        _ok(tools.{t.name}({args}))\n"
            "        changed += 1\n"
            "return changed"
        )
        yield Draft(
            family="bulk_update",
            question=question,
            program=_program(body),
            capabilities=["loops", "mutation"],
            difficulty=Difficulty(chain_length=2, constraints=[f"{cond.field} {cond.op}", f"{fld} -> {to_value}"]),
            mutates=True,
        )


def propose_pagination(view: EnvView, rng: random.Random) -> Iterator[Draft]:
    """Loop over every page: list the ids of the rows matching a condition when they span several pages."""
    combos = []
    for e, tool in view.listable():
        rows = view.rows(e)
        size = default_page(tool)
        if len(rows) <= size:
            continue
        for cond in conditions(e, rows, rng):
            hits = [i for i, r in enumerate(rows) if cond.test(r)]
            if 2 <= len(hits) <= MAX_LISTED and hits[-1] >= size:
                combos.append((e, tool, cond, size))
    for e, tool, cond, size in _limited(combos, rng):
        things = _words(e.table)
        question = rng.choice(
            [
                f"List the IDs of all {things} {cond.phrase()}; make sure you look at every page of results.",
                f"Find every one of the {things} {cond.phrase()} (there are more than {size} {things}, so check them "
                "all) and give their IDs.",
            ]
        )
        body = f"rows = _all(tools.{tool.name})\nreturn [row[{_key(e)!r}] for row in rows if {cond.code()}]"
        yield Draft(
            family="pagination",
            question=question,
            program=_program(body),
            capabilities=["loops", "pagination"],
            difficulty=Difficulty(chain_length=1, pagination=True, constraints=[f"{cond.field} {cond.op}"]),
        )


def _children(view: EnvView) -> list[tuple[EntitySpec, ToolSpec, FieldSpec, EntitySpec, ToolSpec]]:
    """(child, its list tool, foreign key, parent, its list tool) for every listable parent/child pair."""
    listed = dict((e.name, (e, t)) for e, t in view.listable())
    out = []
    for child, ctool in listed.values():
        for f in child.fields:
            if f.references:
                parent = view.entity(f.references.split(".")[0])
                if parent is not None and parent.name in listed and parent.name != child.name:
                    out.append((child, ctool, f, parent, listed[parent.name][1]))
    return out


def propose_join(view: EnvView, rng: random.Random) -> Iterator[Draft]:
    """Cross-entity joins: aggregate children by a property of their parent, or find the top parent."""
    combos: list[tuple[Any, ...]] = []
    for child, ctool, fk, parent, ptool in _children(view):
        crow, prow = view.rows(child), view.rows(parent)
        numeric = [f for f in _numeric_fields(child) if sum(_num(r.get(f.name)) is not None for r in crow) >= 2]
        for cond in conditions(parent, prow, rng):
            ids = {p[_key(parent)] for p in prow if cond.test(p)}
            if sum(r.get(fk.name) in ids for r in crow) >= 2:
                combos += [("filter", child, ctool, fk, parent, ptool, cond, f) for f in [None, *numeric]]
        for f in [None, *numeric]:
            totals: dict[Any, float] = {}
            for r in crow:
                if r.get(fk.name) is not None:
                    totals[r[fk.name]] = totals.get(r[fk.name], 0) + (1 if f is None else (_num(r.get(f.name)) or 0))
            best = sorted(totals.values(), reverse=True)
            if len(best) >= 2 and best[0] - best[1] > 0.005:
                combos.append(("top", child, ctool, fk, parent, ptool, None, f))
    for kind, child, ctool, fk, parent, ptool, cond, f in _limited(combos, rng):
        kids, one_parent = _words(child.table), _words(parent.name)
        label = _words(f.name) if f is not None else ""
        value = "1" if f is None else f"(row.get({f.name!r}) or 0)"
        if kind == "filter":
            what = f"number of {kids}" if f is None else f"total {label} of the {kids}"
            question = rng.choice(
                [
                    f"What is the {what} that belong to {_words(parent.table)} {cond.phrase()}?",
                    f"Consider the {_words(parent.table)} {cond.phrase()}. What is the {what} linked to them?",
                ]
            )
            if f is not None and f.type == "number":
                question += " Round to 2 decimals."
            body = (
                f"wanted = {{p[{_key(parent)!r}] for p in _all(tools.{ptool.name}, {page_size(ptool)})"
                f" if {cond.code('p')}}}\n"
                f"rows = [row for row in _all(tools.{ctool.name}, {page_size(ctool)})"
                f" if row.get({fk.name!r}) in wanted]\n"
                f"return round(sum({value} for row in rows), 2)"
            )
        else:
            what = f"the most {kids}" if f is None else f"the highest total {label} across its {kids}"
            question = rng.choice(
                [
                    f"Which {one_parent} has {what}? Give its ID and that {'number' if f is None else 'total'}.",
                    f"Find the {one_parent} with {what}; answer with its ID and the "
                    f"{'count' if f is None else 'total'}.",
                ]
            )
            body = (
                f"known = {{p[{_key(parent)!r}] for p in _all(tools.{ptool.name}, {page_size(ptool)})}}\n"
                "totals = {}\n"
                f"for row in _all(tools.{ctool.name}, {page_size(ctool)}):\n"
                f"    if row.get({fk.name!r}) in known:\n"
                f"        totals[row[{fk.name!r}]] = totals.get(row[{fk.name!r}], 0) + {value}\n"
                "best = max(sorted(totals), key=lambda k: totals[k])\n"
                f"return {{{fk.name!r}: best, 'total': round(totals[best], 2)}}"
            )
        yield Draft(
            family="join",
            question=question,
            program=_program(body),
            capabilities=["loops", "aggregation", "join"],
            difficulty=Difficulty(chain_length=2, constraints=[f"join {child.name}.{fk.name}"]),
        )


@dataclass
class PurchasePlan:
    """How an environment buys: orders of a supplier offer, charged to a budget, restocking a product."""

    order: EntitySpec
    create: ToolSpec
    offer: EntitySpec
    offer_fk: str  # order -> offer
    offer_list: ToolSpec
    cost: str  # offer field: unit cost
    product: EntitySpec
    product_fk: str  # offer -> product
    product_list: ToolSpec
    stock: str  # product field: units on hand
    target: str | None  # product field: level to restock up to, if the data has one
    budget: EntitySpec
    budget_fk: str  # order -> budget
    budget_field: str  # the budget's remaining amount, which orders consume
    budget_read: ToolSpec
    quantity: str  # order field
    amount: str  # order field
    supply: str | None  # offer field the quantity is taken from, if a rule says so


def purchase_plan(view: EnvView) -> PurchasePlan | None:
    """The constrained-purchasing shape, found through foreign keys and `consumes` rules; None if absent."""
    for order in view.spec.entities:
        for create in view.tools_of(order, "create"):
            props = create.parameters.get("properties") or {}
            fields = {f.name: f for f in order.fields if f.name in props}
            consumes = {r.field: r.target for r in order.rules if r.kind == "consumes" and r.field and r.target}
            quantity = next((n for n in _QUANTITY_NAMES if n in fields and fields[n].type == "integer"), None)
            money = [n for n, t in consumes.items() if n in fields and fields[n].type == "number"]
            if quantity is None or not money:
                continue
            amount = money[0]
            budget = view.entity(consumes[amount].split(".")[0])
            refs = {f.name: view.entity(f.references.split(".")[0]) for f in fields.values() if f.references}
            budget_fk = next(
                (n for n, e in refs.items() if e is not None and budget is not None and e.name == budget.name), None
            )
            if budget is None or budget_fk is None:
                continue
            budget_read = view.get_tool(budget) or view.list_tool(budget)
            for offer_fk, offer in refs.items():
                if offer is None or offer.name == budget.name or view.list_tool(offer) is None:
                    continue
                costs = [f.name for f in _numeric_fields(offer) if any(w in f.name for w in _COST_WORDS)]
                for pf in offer.fields:
                    product = view.entity(pf.references.split(".")[0]) if pf.references else None
                    if product is None or view.list_tool(product) is None:
                        continue
                    pnames = {f.name for f in product.fields if f.type == "integer"}
                    stock = next((n for n in _STOCK_NAMES if n in pnames), None)
                    required = set(create.parameters.get("required") or [])
                    if (
                        not costs
                        or stock is None
                        or budget_read is None
                        or required - {offer_fk, budget_fk, quantity, amount}
                    ):
                        continue
                    supply_target = consumes.get(quantity, "")
                    return PurchasePlan(
                        order=order,
                        create=create,
                        offer=offer,
                        offer_fk=offer_fk,
                        offer_list=view.list_tool(offer),  # type: ignore[arg-type]
                        cost=costs[0],
                        product=product,
                        product_fk=pf.name,
                        product_list=view.list_tool(product),  # type: ignore[arg-type]
                        stock=stock,
                        target=next((n for n in _TARGET_NAMES if n in pnames), None),
                        budget=budget,
                        budget_fk=budget_fk,
                        budget_field=consumes[amount].split(".")[1],
                        budget_read=budget_read,
                        quantity=quantity,
                        amount=amount,
                        supply=supply_target.split(".")[1] if supply_target.startswith(offer.name + ".") else None,
                    )
    return None


def simulate_restock(
    plan: PurchasePlan, view: EnvView, budget_id: Any, threshold: int | None
) -> list[tuple[Any, int, float]]:
    """The purchases the rule implies on the seed data: (offer id, units, amount), in product id order."""
    budget = next(b for b in view.rows(plan.budget) if b[_key(plan.budget)] == budget_id)
    remaining = float(budget[plan.budget_field])
    offers = sorted(
        view.rows(plan.offer), key=lambda o: (o.get(plan.cost) is None, o.get(plan.cost), o[_key(plan.offer)])
    )
    out = []
    for p in view.rows(plan.product):
        level = p.get(plan.target) if threshold is None and plan.target else threshold
        if level is None or p.get(plan.stock) is None or p[plan.stock] >= level:
            continue
        offer = next((o for o in offers if o.get(plan.product_fk) == p[_key(plan.product)] and o.get(plan.cost)), None)
        if offer is None:
            continue
        units = level - p[plan.stock]
        if plan.supply:
            units = min(units, int(offer.get(plan.supply) or 0))
        units = min(units, math.floor(remaining / offer[plan.cost] + 1e-9))
        if units > 0:
            amount = round(units * offer[plan.cost], 2)
            remaining -= amount
            out.append((offer[_key(plan.offer)], units, amount))
    return out


def propose_restock(view: EnvView, rng: random.Random) -> Iterator[Draft]:
    """Constrained purchasing: restock products below their level from the cheapest offer, within the
    offer's supply and the budget's remaining amount (the seeds' A: 3, B: 2 for lack of supply, C: none)."""
    plan = purchase_plan(view)
    if plan is None:
        return
    budgets = [b for b in view.rows(plan.budget) if (_num(b.get(plan.budget_field)) or 0) > 0]
    stocks = sorted({p[plan.stock] for p in view.rows(plan.product) if isinstance(p.get(plan.stock), int)})
    thresholds: list[int | None] = [None] if plan.target else [s + 1 for s in stocks[: max(1, len(stocks) // 3)]]
    combos = []
    for b in budgets:
        for level in thresholds:
            buys = simulate_restock(plan, view, b[_key(plan.budget)], level)
            if 2 <= len(buys) <= MAX_WRITES:
                combos.append((b[_key(plan.budget)], b[plan.budget_field], level))
    for budget_id, remaining, level in _limited(combos, rng):
        products, offer, stock = _words(plan.product.table), _words(plan.offer.name), _words(plan.stock)
        goal = f"its {_words(plan.target)}" if level is None else f"{level} units"
        below = f"whose {stock} is below {goal}"
        supply = f", nor the {_words(plan.supply)} that {offer} has" if plan.supply else ""
        question = rng.choice(
            [
                f"Restock every one of the {products} {below}: going through them in ID order, order the missing "
                f"units up to {goal} from the cheapest {offer} for that product, charged to budget {budget_id} "
                f"({_words(plan.budget_field)} {remaining}). Never exceed what the budget has left{supply}: when "
                "either runs short, order as many units as it allows, and skip a product when none can be ordered. "
                f"Each order's {_words(plan.amount)} is its units times the {offer}'s {_words(plan.cost)}. "
                "What is the total amount spent?",
                f"Using budget {budget_id} (it has {remaining} left), bring the {products} {below} back up to "
                f"{goal}. Handle them in ID order, buy each from its cheapest {offer}, and set each order's "
                f"{_words(plan.amount)} to its units times the {offer}'s {_words(plan.cost)}. You may not spend "
                f"more than the budget has left{supply}; buy fewer units when you must, or none. How much did you "
                "spend in total?",
            ]
        )
        level_code = f"row.get({plan.target!r})" if level is None else repr(level)
        supply_code = f"\n    units = min(units, int(offer.get({plan.supply!r}) or 0))" if plan.supply else ""
        if plan.budget_read.operation and plan.budget_read.operation.kind == "get":
            read = f"_ok(tools.{plan.budget_read.name}({plan.budget.name}_id={budget_id!r}))"
        else:
            read = (
                f"next(b for b in _all(tools.{plan.budget_read.name}, {page_size(plan.budget_read)})"
                f" if b[{_key(plan.budget)!r}] == {budget_id!r})"
            )
        body = (
            f"remaining = {read}[{plan.budget_field!r}]\n"
            f"offers = _all(tools.{plan.offer_list.name}, {page_size(plan.offer_list)})\n"
            f"offers.sort(key=lambda o: (o.get({plan.cost!r}) is None, o.get({plan.cost!r}),"
            f" o[{_key(plan.offer)!r}]))\n"
            "spent = 0.0\n"
            f"for row in _all(tools.{plan.product_list.name}, {page_size(plan.product_list)}):\n"
            f"    level = {level_code}\n"
            f"    if level is None or row.get({plan.stock!r}) is None or row[{plan.stock!r}] >= level:\n"
            "        continue\n"
            f"    offer = next((o for o in offers if o.get({plan.product_fk!r}) == row[{_key(plan.product)!r}]"
            f" and o.get({plan.cost!r})), None)\n"
            "    if offer is None:\n"
            "        continue\n"
            f"    units = level - row[{plan.stock!r}]{supply_code}\n"
            f"    units = min(units, int(remaining / offer[{plan.cost!r}] + 1e-9))\n"
            "    if units <= 0:\n"
            "        continue\n"
            f"    amount = round(units * offer[{plan.cost!r}], 2)\n"
            f"    _ok(tools.{plan.create.name}({plan.offer_fk}=offer[{_key(plan.offer)!r}], "
            f"{plan.budget_fk}={budget_id!r}, {plan.quantity}=units, {plan.amount}=amount))\n"
            "    remaining -= amount\n"
            "    spent += amount\n"
            "return round(spent, 2)"
        )
        constraints = ["budget"] + (["supply"] if plan.supply else [])
        yield Draft(
            family="restock",
            question=question,
            program=_program(body),
            capabilities=["loops", "constraint", "mutation"],
            difficulty=Difficulty(chain_length=4, constraints=constraints),
            mutates=True,
        )


FAMILIES: dict[str, Proposer] = {
    "aggregate": propose_aggregate,
    "top_k": propose_top_k,
    "bulk_update": propose_bulk_update,
    "pagination": propose_pagination,
    "join": propose_join,
    "restock": propose_restock,
}


def applicable_families(view: EnvView, rng: random.Random | None = None) -> list[str]:
    """The families that have at least one instance on this environment."""
    rng = rng or random.Random(0)
    return [name for name, propose in FAMILIES.items() if next(iter(propose(view, rng)), None) is not None]


# --- the verifier ---------------------------------------------------------------------------------------

VERIFIER_TEMPLATE = '''"""Verifier of program task {task_id}: the answer (leniently) and the final state (exactly)."""

import fnmatch
import json
import re

EXPECTED = json.loads({expected!r})
NUMBER = re.compile(r"(?<![A-Za-z0-9_.])-?\\d[\\d,]*(?:\\.\\d+)?(?![A-Za-z0-9_])")
MAX_NUMBERS = 6  # an answer that lists more numbers than this is guessing


def _number(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip().replace("$", "").replace(",", "")
        try:
            return float(text)
        except ValueError:
            return None
    return None


def _close(expected, actual):
    return abs(expected - actual) <= max(0.01 + 1e-9, 1e-6 * abs(expected))


def _norm(text):
    return re.sub(r"\\s+", " ", str(text).replace("_", " ")).strip(" .,;:!?\\"'`()[]{{}}").casefold()


def _parsed(answer):
    if isinstance(answer, str):
        try:
            return json.loads(answer)
        except ValueError:
            return answer
    return answer


def _scalar_ok(expected, actual):
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        if isinstance(actual, str):
            found = {{float(t.replace(",", "")) for t in NUMBER.findall(actual)}}
            return len(found) <= MAX_NUMBERS and any(_close(expected, n) for n in found)
        n = _number(actual)
        return n is not None and _close(expected, n)
    if isinstance(actual, (list, dict)):
        return False
    if isinstance(actual, str) and _norm(actual) != _norm(expected):
        pattern = r"(?<![A-Za-z0-9_])" + re.escape(str(expected)) + r"(?![A-Za-z0-9_])"
        return re.search(pattern, actual, re.IGNORECASE) is not None
    return _norm(actual) == _norm(expected)


def _shape(item):
    match = re.fullmatch(r"([A-Za-z]+[_-])\\d+", str(item))
    return match and re.compile(r"(?<![A-Za-z0-9_])" + re.escape(match.group(1)) + r"\\d+(?![A-Za-z0-9_])", re.I)


def _list_ok(expected, actual, ordered):
    if isinstance(actual, list):
        if len(actual) != len(expected):
            return False
        if ordered:
            return all(_scalar_ok(e, a) for e, a in zip(expected, actual))
        left = list(actual)
        for e in expected:
            hit = next((i for i, a in enumerate(left) if _scalar_ok(e, a)), None)
            if hit is None:
                return False
            left.pop(hit)
        return True
    if not isinstance(actual, str):
        return len(expected) == 1 and _scalar_ok(expected[0], actual)
    if not all(_scalar_ok(e, actual) for e in expected):
        return False
    shapes = [s for s in (_shape(e) for e in expected) if s]
    wanted = {{str(e).casefold() for e in expected}}
    extra = {{m.casefold() for s in shapes for m in s.findall(actual)}} - wanted
    return not extra


def _answer_ok(expected, answer, ordered):
    if answer is None:
        return False
    actual = _parsed(answer)
    if isinstance(expected, list):
        return _list_ok(expected, actual, ordered)
    if isinstance(expected, dict):
        if isinstance(actual, dict):
            values = list(actual.values())
            return all(any(_scalar_ok(v, a) for a in values) for v in expected.values())
        text = answer if isinstance(answer, str) else json.dumps(actual)
        return all(_scalar_ok(v, text) for v in expected.values())
    return _scalar_ok(expected, actual)


def _ignored(table, column):
    return any(fnmatch.fnmatchcase(table + "." + column, p) for p in EXPECTED["ignore"])


def _same(a, b):
    x, y = _number(a) if not isinstance(a, str) else None, _number(b) if not isinstance(b, str) else None
    if x is not None and y is not None:
        return abs(x - y) <= 0.005
    return a == b


def _clean(table, row, drop_key=None):
    return {{k: v for k, v in row.items() if k != drop_key and not _ignored(table, k)}}


def _rows_equal(a, b):
    return set(a) == set(b) and all(_same(a[k], b[k]) for k in a)


def _table_ok(table, before, after, want):
    key = EXPECTED["keys"].get(table, "id")
    old = {{r.get(key): r for r in before}}
    new = {{r.get(key): r for r in after}}
    changed = {{str(k): v for k, v in want.get("changed", {{}}).items()}}
    removed = {{str(k) for k in want.get("removed", [])}}
    problems = []
    for k, row in old.items():
        if str(k) in removed:
            if k in new:
                problems.append(f"{{k}} should have been removed")
            continue
        if k not in new:
            problems.append(f"{{k}} was removed")
            continue
        expected_row = dict(_clean(table, row), **changed.get(str(k), {{}}))
        if not _rows_equal(expected_row, _clean(table, new[k])):
            problems.append(f"{{k}} is not as expected")
    added = [_clean(table, r, key) for k, r in new.items() if k not in old]
    pending = [dict(r) for r in want.get("added", [])]
    for row in added:
        hit = next((i for i, r in enumerate(pending) if _rows_equal(r, row)), None)
        if hit is None:
            problems.append(f"unexpected new row {{json.dumps(row, default=str)[:120]}}")
        else:
            pending.pop(hit)
    if pending:
        problems.append(f"{{len(pending)}} expected new row(s) missing")
    return problems


def verify(initial, final, answer):
    checks = []
    ok = _answer_ok(EXPECTED["answer"], answer, EXPECTED["ordered"])
    detail = "" if ok else "expected " + json.dumps(EXPECTED["answer"])[:200]
    checks.append({{"name": "answer", "passed": ok, "detail": detail}})
    for table in sorted(set(initial) | set(final)):
        if _ignored(table, "*"):
            continue
        problems = _table_ok(table, initial.get(table, []), final.get(table, []), EXPECTED["tables"].get(table, {{}}))
        name = ("state: " if table in EXPECTED["tables"] else "unchanged: ") + table
        if table in EXPECTED["tables"] or problems:
            checks.append({{"name": name, "passed": not problems, "detail": "; ".join(problems)[:400]}})
    passed = all(c["passed"] for c in checks)
    return {{"passed": passed, "score": 1.0 if passed else 0.0, "checks": checks[:100]}}
'''


def ignored_columns(spec: EnvSpec) -> list[str]:
    """fnmatch patterns "table.column" of what a state check ignores: bookkeeping and clock columns."""
    patterns = [p if "." in p else f"*.{p}" for p in spec.bookkeeping]
    return patterns + [f"*.{c}" for c in DEFAULT_TIMESTAMP_COLUMNS]


def expected_changes(spec: EnvSpec, initial: dict[str, Rows], final: dict[str, Rows]) -> dict[str, dict[str, Any]]:
    """What the gold run wrote, per table: changed fields by key, rows added (without their key), keys removed."""
    keys = {e.table: e.primary_key for e in spec.entities}
    diff = state_diff(initial, final, bookkeeping=spec.bookkeeping, keys=keys)
    out: dict[str, dict[str, Any]] = {}
    for table, d in diff.tables.items():
        key = keys.get(table, d.key or "id")
        out[table] = {
            "changed": {str(c.key): c.after for c in d.changed},
            "added": [{k: v for k, v in r.items() if k != key} for r in d.added],
            "removed": [r.get(key) for r in d.removed],
        }
    return out


def verifier_source(
    task_id: str, spec: EnvSpec, answer: Any, tables: dict[str, dict[str, Any]], ordered: bool = False
) -> str:
    """The code verifier of a program task, with the gold's answer and state changes embedded."""
    expected = {
        "answer": answer,
        "ordered": ordered,
        "keys": {e.table: e.primary_key for e in spec.entities},
        "ignore": ignored_columns(spec),
        "tables": tables,
    }
    return VERIFIER_TEMPLATE.format(task_id=task_id, expected=json.dumps(expected, sort_keys=True, default=str))


# --- synthesis ------------------------------------------------------------------------------------------


def family_of(task: Task) -> str | None:
    """The program family a task was made from (it is part of the task id), or None."""
    _, mark, rest = task.id.rpartition(FAMILY_MARK)
    family = rest.rsplit("-", 1)[0] if mark else ""
    return family if family in FAMILIES else None


def names_a_tool(question: str, tools: list[ToolSpec]) -> bool:
    """Questions describe goals, never calls: one that names a tool is not used."""
    return any(re.search(rf"\b{re.escape(t.name)}\b", question) for t in tools)


def _acceptable(draft: Draft, answer: Any, changes: dict[str, dict[str, Any]]) -> bool:
    """A gold run worth a task: a real answer, and a state change exactly when the task asks for one."""
    if answer is None or answer == [] or answer == {}:
        return False
    if isinstance(answer, float) and not math.isfinite(answer):
        return False
    return bool(changes) == draft.mutates


def realize(
    draft: Draft, bundle: Bundle, spec: EnvSpec, seed: dict[str, Rows], session_factory: SessionFactory
) -> Task | None:
    """Run the draft's gold in a fresh session and turn it into a Task; None when the gold fails or says nothing."""
    if names_a_tool(draft.question, spec.tools):
        return None
    with session_factory() as session:
        run = session.run_program(draft.program)
        if run.error is not None:
            return None
        final = session.snapshot().tables
    changes = expected_changes(spec, seed, final)
    if not _acceptable(draft, run.answer, changes):
        return None
    task_id = f"{spec.id}{FAMILY_MARK}{draft.family}-{hash_value([draft.question, draft.program])[:10]}"
    tools_used = {c.tool for c in run.calls}
    pages = sum(1 for c in run.calls if "offset" in c.args)
    difficulty = draft.difficulty.model_copy(
        update={"chain_length": max(draft.difficulty.chain_length, len(tools_used))}
    )
    capabilities = list(draft.capabilities)
    if pages > len({c.tool for c in run.calls if "offset" in c.args}) and "pagination" not in capabilities:
        capabilities.append("pagination")
        difficulty = difficulty.model_copy(update={"pagination": True})
    return Task(
        id=task_id,
        env_id=spec.id,
        kind="program",
        question=draft.question,
        answer=run.answer,
        gold=draft.program,
        verifier=verifier_source(task_id, spec, run.answer, changes),
        difficulty=difficulty,
        capabilities=capabilities,
        mutates=draft.mutates,
        lineage=Lineage(
            stage="tasks",
            code_version=CODE_VERSION,
            inputs={"bundle": bundle.content_hash},
        ),
    )


def synthesize_program_tasks(bundle: Bundle, session_factory: SessionFactory, rng: random.Random, n: int) -> list[Task]:
    """Up to `n` program tasks on one environment, spread over the families that apply to it.

    Families take turns (in an order drawn from `rng`); each proposes instances on the seed state, and an
    instance becomes a task only when its gold program runs cleanly and gives a non-trivial answer.
    """
    if n <= 0:
        return []
    spec = bundle.spec
    with session_factory() as session:
        seed = session.snapshot().tables
    view = EnvView(spec=spec, seed=seed)
    names = list(FAMILIES)
    rng.shuffle(names)
    queues = {name: iter(FAMILIES[name](view, random.Random(rng.random()))) for name in names}
    tasks: list[Task] = []
    seen: set[str] = set()
    while queues and len(tasks) < n:
        for name in list(queues):
            if len(tasks) >= n:
                break
            draft = next(queues[name], None)
            if draft is None:
                del queues[name]
                continue
            if draft.program in seen:
                continue
            seen.add(draft.program)
            task = realize(draft, bundle, spec, seed, session_factory)
            if task is not None:
                tasks.append(task)
    return tasks
