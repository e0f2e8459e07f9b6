"""Branch family: each matching row takes one of two status changes, depending on what a read of it returns;
when the recovery knob asks, every row is tried, and the refused ones are left as they are and reported."""

from __future__ import annotations

import random
from collections.abc import Iterator

from factory.tasks.programs.acts import REFUSALS, act_draft, acts_for, pages_hint, scoped, where
from factory.tasks.programs.draft import Draft
from factory.tasks.programs.view import EnvView, words


def propose_branch(view: EnvView, rng: random.Random) -> Iterator[Draft]:
    """Conditional branches: rows matching a second condition take the other move."""
    for act in acts_for(view, rng, "branch"):
        assert act.branch is not None
        m, (cond, other) = act.move, act.branch
        f = words(m.field)
        hint = pages_hint(act, view.knobs)
        if act.recover:
            question = rng.choice(
                [
                    f"Go through the {where(act)}. Each one {cond.phrase()} must get {f} "
                    f'"{other.to_value}"; every other one must get {f} "{m.to_value}". {REFUSALS}{hint} '
                    f"Report how many you moved to each {f} (a count per new {f}) and the IDs of the refused ones.",
                    f'Decide the {f} of every one of the {where(act)}: "{other.to_value}" when it is one '
                    f'{cond.phrase()}, "{m.to_value}" otherwise, and make the change. {REFUSALS}{hint} How many '
                    f"went to each {f}, and which ones were refused? Give the counts by {f} and the refused IDs.",
                ]
            )
        else:
            question = rng.choice(
                [
                    f"Go through the {scoped(act, m.scope())}. Each one {cond.phrase()} must get {f} "
                    f'"{other.to_value}"; every other one must get {f} "{m.to_value}".{hint} '
                    f"Report how many you moved to each {f}, as a count per new {f}.",
                    f'Decide the {f} of every one of the {scoped(act, m.scope())}: "{other.to_value}" when it is one '
                    f'{cond.phrase()}, "{m.to_value}" otherwise.{hint} How many went to each '
                    f"{f}? Give the counts by {f}.",
                ]
            )
        yield act_draft("branch", act, question, "split", ["loops", "branching", "mutation"])
