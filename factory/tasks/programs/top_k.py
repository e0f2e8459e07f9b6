"""Top-k family: the ids of the k rows with the highest or lowest value of a numeric field."""

from __future__ import annotations

import random
from collections.abc import Iterator

from factory.models import Difficulty
from factory.tasks.programs.conditions import conditions
from factory.tasks.programs.draft import Draft, limited, program
from factory.tasks.programs.view import EnvView, as_number, numeric_fields, page_size, words


def propose_top_k(view: EnvView, rng: random.Random) -> Iterator[Draft]:
    """Top-k / argmax: the k rows with the highest (or lowest) value of a numeric field."""
    combos = []
    for e, tool in view.listable():
        rows = view.rows(e)
        for f in numeric_fields(e):
            for cond in [None, *conditions(e, rows, rng, exclude=(f.name,))[:4]]:
                pool = [r for r in rows if (cond is None or cond.test(r)) and as_number(r.get(f.name)) is not None]
                for k in (1, 3, 5):
                    for highest in (True, False):
                        values = sorted((r[f.name] for r in pool), reverse=highest)
                        if len(values) > k and values[k - 1] != values[k] and len(set(values[:k])) == k:
                            combos.append((e, tool, f, cond, k, highest))
    for e, tool, f, cond, k, highest in limited(combos, rng):
        things, one, label = words(e.table), words(e.name), words(f.name)
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
            f"return [row[{e.primary_key!r}] for row in rows]{pick}"
        )
        yield Draft(
            family="top_k",
            question=question,
            program=program(body),
            capabilities=["loops", "aggregation"],
            difficulty=Difficulty(chain_length=1, constraints=[f"top {k}"]),
        )
