"""Join family: children aggregated by a property of their parent, or the parent with the most of them."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from factory.models import Difficulty, EntitySpec, FieldSpec, ToolSpec
from factory.tasks.programs.conditions import conditions
from factory.tasks.programs.draft import Draft, limited, program
from factory.tasks.programs.view import EnvView, as_number, numeric_fields, page_size, words


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
        numeric = [f for f in numeric_fields(child) if sum(as_number(r.get(f.name)) is not None for r in crow) >= 2]
        for cond in conditions(parent, prow, rng):
            ids = {p[parent.primary_key] for p in prow if cond.test(p)}
            if sum(r.get(fk.name) in ids for r in crow) >= 2:
                combos += [("filter", child, ctool, fk, parent, ptool, cond, f) for f in [None, *numeric]]
        for f in [None, *numeric]:
            totals: dict[Any, float] = {}
            for r in crow:
                if r.get(fk.name) is not None:
                    totals[r[fk.name]] = totals.get(r[fk.name], 0) + (
                        1 if f is None else (as_number(r.get(f.name)) or 0)
                    )
            best = sorted(totals.values(), reverse=True)
            if len(best) >= 2 and best[0] - best[1] > 0.005:
                combos.append(("top", child, ctool, fk, parent, ptool, None, f))
    for kind, child, ctool, fk, parent, ptool, cond, f in limited(combos, rng):
        kids, one_parent = words(child.table), words(parent.name)
        label = words(f.name) if f is not None else ""
        value = "1" if f is None else f"(row.get({f.name!r}) or 0)"
        if kind == "filter":
            what = f"number of {kids}" if f is None else f"total {label} of the {kids}"
            question = rng.choice(
                [
                    f"What is the {what} that belong to {words(parent.table)} {cond.phrase()}?",
                    f"Consider the {words(parent.table)} {cond.phrase()}. What is the {what} linked to them?",
                ]
            )
            if f is not None and f.type == "number":
                question += " Round to 2 decimals."
            body = (
                f"wanted = {{p[{parent.primary_key!r}] for p in _all(tools.{ptool.name}, {page_size(ptool)})"
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
                f"known = {{p[{parent.primary_key!r}] for p in _all(tools.{ptool.name}, {page_size(ptool)})}}\n"
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
            program=program(body),
            capabilities=["loops", "aggregation", "join"],
            difficulty=Difficulty(chain_length=2, constraints=[f"join {child.name}.{fk.name}"]),
        )
