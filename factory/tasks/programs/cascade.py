"""Cascade family: every row of the parents a condition picks (or matching its own condition) read over every
page, then moved to a new status one by one, when its state allows; or, when the recovery knob asks, tried on
every row, a refused one skipped and reported."""

from __future__ import annotations

import random
from collections.abc import Iterator

from factory.tasks.programs.acts import REFUSALS, act_draft, acts_for, pages_hint, where
from factory.tasks.programs.draft import Draft
from factory.tasks.programs.view import EnvView, words


def propose_cascade(view: EnvView, rng: random.Random) -> Iterator[Draft]:
    """Read parent -> children over every page -> move each match whose state allows it (or try each)."""
    for act in acts_for(view, rng, "move"):
        m = act.move
        hint = pages_hint(act, view.knobs)
        if act.recover:
            question = rng.choice(
                [
                    f'Set the {words(m.field)} to "{m.to_value}" for every one of the {where(act)}. {REFUSALS}'
                    f"{hint} How many did you change, and which ones were refused (their IDs)?",
                    f'Go through the {where(act)} and try to make each one "{m.to_value}". Where the system '
                    f"refuses, skip that one and keep going.{hint} Report how many you changed and the IDs of "
                    "the refused ones.",
                ]
            )
        else:
            question = rng.choice(
                [
                    f'Set the {words(m.field)} to "{m.to_value}" for every one of the {where(act)}, but only those '
                    f"{m.scope()}.{hint} How many did you change?",
                    f'Go through the {where(act)}. Each one {m.scope()} must become "{m.to_value}"; leave the '
                    f"others as they are.{hint} How many did you update?",
                ]
            )
        capabilities = ["loops", "join", "mutation"] if act.owner else ["loops", "mutation"]
        yield act_draft("cascade", act, question, "count", capabilities)
