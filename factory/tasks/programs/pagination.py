"""Pagination family: the ids of the rows that match a condition when they span several pages."""

from __future__ import annotations

import random
from collections.abc import Iterator

from factory.models import Difficulty
from factory.tasks.programs.conditions import Selection, conditions
from factory.tasks.programs.draft import Draft, Writer, limited, program
from factory.tasks.programs.view import EnvView, default_page, words

MAX_LISTED = 15  # answers that list ids stay short enough to type


def _writer(key: str) -> Writer:
    def write(selections: tuple[Selection, ...]) -> str:
        (sel,) = selections  # the tool's default page size: the rows span several pages
        return program(f"rows = {sel.fetch(None)}\nreturn [row[{key!r}] for row in rows if {sel.code()}]")

    return write


def propose_pagination(view: EnvView, rng: random.Random) -> Iterator[Draft]:
    """Loop over every page: list the ids of the rows matching a condition when they span several pages."""
    combos = []
    for e, tool in view.listable():
        rows = view.rows(e)
        size = default_page(tool)
        if len(rows) <= size:
            continue
        for cond in conditions(e, rows, rng):
            sel = Selection(e, tool, cond, scope=view.scope(e), args=view.scope_args(e)).ruled(rows, rng)
            hits = [i for i, r in enumerate(rows) if sel.test(r)]
            if 2 <= len(hits) <= MAX_LISTED and hits[-1] >= size:
                combos.append((sel, cond, size))
    for sel, cond, size in limited(combos, rng):
        things, where = words(sel.entity.table), sel.phrase()
        question = rng.choice(
            [
                f"List the IDs of all {things} {where}; make sure you look at every page of results.",
                f"Find every one of the {things} {where} (there are more than {size} {things}, so check them "
                "all) and give their IDs.",
            ]
        )
        write = _writer(sel.entity.primary_key)
        yield Draft(
            family="pagination",
            question=question,
            program=write((sel,)),
            capabilities=["loops", "pagination"],
            difficulty=Difficulty(chain_length=1, pages=2, constraints=[f"{cond.field} {cond.op}"]),
            selections=(sel,),
            write=write,
        )
