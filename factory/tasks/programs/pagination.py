"""Pagination family: the ids of the rows that match a condition when they span several pages."""

from __future__ import annotations

import random
from collections.abc import Iterator

from factory.models import Difficulty
from factory.tasks.programs.conditions import conditions
from factory.tasks.programs.draft import Draft, limited, program
from factory.tasks.programs.view import EnvView, default_page, words

MAX_LISTED = 15  # answers that list ids stay short enough to type


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
    for e, tool, cond, size in limited(combos, rng):
        things = words(e.table)
        question = rng.choice(
            [
                f"List the IDs of all {things} {cond.phrase()}; make sure you look at every page of results.",
                f"Find every one of the {things} {cond.phrase()} (there are more than {size} {things}, so check them "
                "all) and give their IDs.",
            ]
        )
        body = f"rows = _all(tools.{tool.name})\nreturn [row[{e.primary_key!r}] for row in rows if {cond.code()}]"
        yield Draft(
            family="pagination",
            question=question,
            program=program(body),
            capabilities=["loops", "pagination"],
            difficulty=Difficulty(chain_length=1, pagination=True, constraints=[f"{cond.field} {cond.op}"]),
        )
