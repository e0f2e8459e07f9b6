"""Branch family: each matching row takes one of two status changes, depending on what a read of it returns."""

from __future__ import annotations

import random
from collections.abc import Iterator

from factory.tasks.programs.acts import build, difficulty, pages_hint, ranked, scoped, writer
from factory.tasks.programs.draft import Draft
from factory.tasks.programs.view import EnvView, words


def propose_branch(view: EnvView, rng: random.Random) -> Iterator[Draft]:
    """Conditional branches: rows matching a second condition take the other move."""
    for act in ranked(build(view, rng, "branch"), view.knobs, rng):
        assert act.branch is not None
        m, (cond, other) = act.move, act.branch
        f = words(m.field)
        question = rng.choice(
            [
                f"Go through the {scoped(act, m.scope())}. Each one {cond.phrase()} must get {f} "
                f'"{other.to_value}"; every other one must get {f} "{m.to_value}".{pages_hint(act, view.knobs)} '
                f"Report how many you moved to each {f}, as a count per new {f}.",
                f'Decide the {f} of every one of the {scoped(act, m.scope())}: "{other.to_value}" when it is one '
                f'{cond.phrase()}, "{m.to_value}" otherwise.{pages_hint(act, view.knobs)} How many went to each '
                f"{f}? Give the counts by {f}.",
            ]
        )
        write = writer(act, "split")
        yield Draft(
            family="branch",
            question=question,
            program=write(act.selections()),
            capabilities=["loops", "branching", "mutation"],
            difficulty=difficulty(act),
            mutates=True,
            selections=act.selections(),
            write=write,
        )
