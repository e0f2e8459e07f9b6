"""Aggregate family: a sum, average, count, maximum or minimum over the rows that match a condition."""

from __future__ import annotations

import random
from collections.abc import Iterator

from factory.models import Difficulty
from factory.tasks.programs.conditions import Selection, conditions
from factory.tasks.programs.draft import Draft, Writer, limited, program
from factory.tasks.programs.view import EnvView, as_number, numeric_fields, page_size, words


def _writer(expr: str) -> Writer:
    def write(selections: tuple[Selection, ...]) -> str:
        (sel,) = selections
        return program(f"rows = [row for row in {sel.fetch(page_size(sel.tool))} if {sel.code()}]\nreturn {expr}")

    return write


def propose_aggregate(view: EnvView, rng: random.Random) -> Iterator[Draft]:
    """Filter and aggregate: sum / average / count / max / min over the rows matching a condition."""
    combos = []
    for e, tool in view.listable():
        rows = view.rows(e)
        if e.name in view.scoped:  # the scope alone selects rows: how many it holds
            combos.append((Selection(e, tool, scope=view.scope(e), args=view.scope_args(e)), None, None, "count"))
        for cond in conditions(e, rows, rng):
            sel = Selection(e, tool, cond, scope=view.scope(e), args=view.scope_args(e)).ruled(rows, rng)
            matched = [r for r in rows if sel.test(r)]
            if matched:
                combos.append((sel, cond, None, "count"))
            for f in numeric_fields(e):
                if f.name != cond.field and sum(as_number(r.get(f.name)) is not None for r in matched) >= 2:
                    combos.append((sel, cond, f, rng.choice(["sum", "avg", "max", "min"])))
    for sel, cond, f, agg in limited(combos, rng):
        things, one, where = words(sel.entity.table), words(sel.entity.name), sel.phrase()
        if f is None:
            expr = "len(rows)"
            question = rng.choice(
                [f"How many {things} are there {where}?", f"Count every {one} {where}. How many are there?"]
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
                    f"What is the {what} {words(f.name)} of all {things} {where}?",
                    f"Looking at every {one} {where}, what is their {what} {words(f.name)}?",
                ]
            )
            if agg == "avg" or (agg == "sum" and f.type == "number"):
                question += " Round to 2 decimals."
        write = _writer(expr)
        yield Draft(
            family="aggregate",
            question=question,
            program=write((sel,)),
            capabilities=["loops", "aggregation"],
            difficulty=Difficulty(chain_length=1, constraints=[f"{cond.field} {cond.op}"] if cond else []),
            selections=(sel,),
            write=write,
        )
