"""Top-k family: the ids of the k rows with the highest or lowest value of a numeric field."""

from __future__ import annotations

import random
from collections.abc import Iterator

from factory.models import Difficulty
from factory.tasks.programs.conditions import Selection, conditions
from factory.tasks.programs.draft import Draft, Writer, limited, program
from factory.tasks.programs.view import EnvView, as_number, numeric_fields, page_size, words


def _writer(field: str, key: str, highest: bool, pick: str) -> Writer:
    def write(selections: tuple[Selection, ...]) -> str:
        (sel,) = selections
        return program(
            f"rows = [row for row in {sel.fetch(page_size(sel.tool))}"
            f" if row.get({field!r}) is not None and ({sel.code()})]\n"
            f"rows.sort(key=lambda row: row[{field!r}], reverse={highest!r})\n"
            f"return [row[{key!r}] for row in rows]{pick}"
        )

    return write


def propose_top_k(view: EnvView, rng: random.Random) -> Iterator[Draft]:
    """Top-k / argmax: the k rows with the highest (or lowest) value of a numeric field."""
    combos = []
    for e, tool in view.listable():
        rows = view.rows(e)
        for f in numeric_fields(e):
            for cond in [None, *conditions(e, rows, rng, exclude=(f.name,))[:4]]:
                sel = Selection(e, tool, cond, scope=view.scope(e), args=view.scope_args(e)).ruled(
                    [r for r in rows if as_number(r.get(f.name)) is not None], rng
                )
                pool = [r for r in rows if as_number(r.get(f.name)) is not None and sel.test(r)]
                for k in (1, 3, 5):
                    for highest in (True, False):
                        values = sorted((r[f.name] for r in pool), reverse=highest)
                        if len(values) > k and values[k - 1] != values[k] and len(set(values[:k])) == k:
                            combos.append((sel, f, k, highest))
    for sel, f, k, highest in limited(combos, rng):
        things, one, label = words(sel.entity.table), words(sel.entity.name), words(f.name)
        word = "highest" if highest else "lowest"
        where = sel.phrase(lead="among those ")
        among = ("" if not where else " " if sel.condition else ", ") + where
        if k == 1:
            question = rng.choice(
                [
                    f"Which {one} has the {word} {label}{among}? Give its ID.",
                    f"Find the {one} with the {word} {label}{among}{',' if sel.status else ''} and answer with its ID.",
                ]
            )
        else:
            question = rng.choice(
                [
                    f"Which {k} {things} have the {word} {label}{among}? Answer with their IDs.",
                    f"List the IDs of the {k} {things} with the {word} {label}{among}.",
                ]
            )
        write = _writer(f.name, sel.entity.primary_key, highest, "[0]" if k == 1 else f"[:{k}]")
        yield Draft(
            family="top_k",
            question=question,
            program=write((sel,)),
            capabilities=["loops", "aggregation"],
            difficulty=Difficulty(chain_length=1, constraints=[f"top {k}"]),
            selections=(sel,),
            write=write,
        )
