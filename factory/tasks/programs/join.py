"""Join family: children aggregated by a property of their parent, or the parent with the most of them."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from factory.models import Difficulty, EntitySpec, FieldSpec, ToolSpec
from factory.tasks.programs.conditions import Condition, Selection, conditions
from factory.tasks.programs.draft import Draft, Writer, limited, program
from factory.tasks.programs.view import EnvView, Rows, as_number, numeric_fields, page_size, words

Link = tuple[EntitySpec, ToolSpec, FieldSpec, EntitySpec, ToolSpec]


def _children(view: EnvView) -> list[Link]:
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


def _filter_writer(parent_key: str, fk: str, value: str) -> Writer:
    def write(selections: tuple[Selection, ...]) -> str:
        parents, children = selections
        return program(
            f"wanted = {{p[{parent_key!r}] for p in {parents.fetch(page_size(parents.tool))} if {parents.code('p')}}}\n"
            f"rows = [row for row in {children.fetch(page_size(children.tool))}"
            f" if row.get({fk!r}) in wanted and ({children.code()})]\n"
            f"return round(sum({value} for row in rows), 2)"
        )

    return write


def _top_writer(parent_key: str, fk: str, value: str) -> Writer:
    def write(selections: tuple[Selection, ...]) -> str:
        parents, children = selections
        return program(
            f"known = {{p[{parent_key!r}] for p in {parents.fetch(page_size(parents.tool))} if {parents.code('p')}}}\n"
            "totals = {}\n"
            f"for row in {children.fetch(page_size(children.tool))}:\n"
            f"    if row.get({fk!r}) in known and ({children.code()}):\n"
            f"        totals[row[{fk!r}]] = totals.get(row[{fk!r}], 0) + {value}\n"
            "best = max(sorted(totals), key=lambda k: totals[k])\n"
            f"return {{{fk!r}: best, 'total': round(totals[best], 2)}}"
        )

    return write


def _selections(
    view: EnvView, rng: random.Random, link: Link, cond: Condition | None, prow: Rows, crow: Rows
) -> tuple[Selection, Selection]:
    """The parents (those matching `cond`) and the children a join reads, each with the status rule its rows
    need: the children's first, then that of the parents left with some children."""
    child, ctool, fk, parent, ptool = link
    chosen = [p for p in prow if cond is None or cond.test(p)]
    ids = {p[parent.primary_key] for p in chosen}
    kids = [r for r in crow if r.get(fk.name) in ids]
    csel = Selection(child, ctool, scope=view.scope(child), args=view.scope_args(child)).ruled(kids, rng)
    linked = {r.get(fk.name) for r in kids if csel.test(r)}
    return Selection(parent, ptool, cond, scope=view.scope(parent), args=view.scope_args(parent)).ruled(
        [p for p in chosen if p[parent.primary_key] in linked], rng
    ), csel


def _counted(view: EnvView, link: Link, psel: Selection, csel: Selection) -> Rows:
    """The children a join adds up: those its rule counts, of the parents it reads."""
    child, _, fk, parent, _ = link
    known = {p[parent.primary_key] for p in view.rows(parent) if psel.test(p)}
    return [r for r in view.rows(child) if r.get(fk.name) in known and csel.test(r)]


def _what(f: FieldSpec | None, kids: str) -> str:
    """What a filtered join adds up, without "total total" for a field that is a total already."""
    if f is None:
        return f"number of {kids}"
    label = words(f.name)
    return f"sum of the {label} of the {kids}" if label.split()[0] == "total" else f"total {label} of the {kids}"


def _most(f: FieldSpec | None, kids: str) -> str:
    """What the top parent has most of."""
    if f is None:
        return f"the most {kids}"
    label = words(f.name)
    return (
        f"the highest {label} summed over its {kids}"
        if label.split()[0] == "total"
        else f"the highest total {label} across its {kids}"
    )


def propose_join(view: EnvView, rng: random.Random) -> Iterator[Draft]:
    """Cross-entity joins: aggregate children by a property of their parent, or find the top parent."""
    combos: list[tuple[Any, ...]] = []
    for link in _children(view):
        child, _, fk, parent, _ = link
        crow, prow = view.rows(child), view.rows(parent)
        numeric = [f for f in numeric_fields(child) if sum(as_number(r.get(f.name)) is not None for r in crow) >= 2]
        for cond in conditions(parent, prow, rng):
            psel, csel = _selections(view, rng, link, cond, prow, crow)
            if len(_counted(view, link, psel, csel)) >= 2:
                combos += [("filter", fk, psel, csel, f) for f in [None, *numeric]]
        psel, csel = _selections(view, rng, link, None, prow, crow)
        counted = _counted(view, link, psel, csel)
        for f in [None, *numeric]:
            totals: dict[Any, float] = {}
            for r in counted:
                totals[r[fk.name]] = totals.get(r[fk.name], 0) + (1 if f is None else (as_number(r.get(f.name)) or 0))
            best = sorted(totals.values(), reverse=True)
            if len(best) >= 2 and best[0] - best[1] > 0.005:
                combos.append(("top", fk, psel, csel, f))
    for kind, fk, psel, csel, f in limited(combos, rng):
        kids, parents, one_parent = words(csel.entity.table), words(psel.entity.table), words(psel.entity.name)
        value = "1" if f is None else f"(row.get({f.name!r}) or 0)"
        rules = "".join(f", {s.phrase()}" for s in (psel, csel) if s.status is not None)
        if kind == "filter":
            child_rule = f", {csel.phrase()}" if csel.status is not None else ""
            what = _what(f, kids)
            question = rng.choice(
                [
                    f"What is the {what} that belong to {parents} {psel.phrase()}{child_rule}?",
                    f"Consider the {parents} {psel.phrase()}. What is the {what} linked to them{child_rule}?",
                ]
            )
            if f is not None and f.type == "number":
                question += " Round to 2 decimals."
            write = _filter_writer(psel.entity.primary_key, fk.name, value)
        else:
            what = _most(f, kids)
            answer = "the count" if f is None else "the total"
            question = rng.choice(
                [
                    f"Which {one_parent} has {what}{rules}? Give its ID and {answer}.",
                    f"Find the {one_parent} with {what}{rules}; answer with its ID and {answer}.",
                ]
            )
            write = _top_writer(psel.entity.primary_key, fk.name, value)
        yield Draft(
            family="join",
            question=question,
            program=write((psel, csel)),
            capabilities=["loops", "aggregation", "join"],
            difficulty=Difficulty(chain_length=2, constraints=[f"join {csel.entity.name}.{fk.name}"]),
            selections=(psel, csel),
            write=write,
        )
