"""Cascade family: every row of the parents a condition picks (or matching its own condition) read over every
page, then moved to a new status one by one, when its state allows."""

from __future__ import annotations

import random
from collections.abc import Iterator

from factory.tasks.programs.acts import build, difficulty, pages_hint, ranked, where, writer
from factory.tasks.programs.draft import Draft
from factory.tasks.programs.view import EnvView, words


def propose_cascade(view: EnvView, rng: random.Random) -> Iterator[Draft]:
    """Read parent -> children over every page -> move each match whose state allows it."""
    for act in ranked(build(view, rng, "move"), view.knobs, rng):
        m = act.move
        question = rng.choice(
            [
                f'Set the {words(m.field)} to "{m.to_value}" for every one of the {where(act)}, but only those '
                f"{m.scope()}.{pages_hint(act, view.knobs)} How many did you change?",
                f'Go through the {where(act)}. Each one {m.scope()} must become "{m.to_value}"; leave the '
                f"others as they are.{pages_hint(act, view.knobs)} How many did you update?",
            ]
        )
        write = writer(act, "count")
        yield Draft(
            family="cascade",
            question=question,
            program=write(act.selections()),
            capabilities=["loops", "join", "mutation"] if act.owner else ["loops", "mutation"],
            difficulty=difficulty(act),
            mutates=True,
            selections=act.selections(),
            write=write,
        )
