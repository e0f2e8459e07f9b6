"""Recovery family: try a status change on every matching row; the environment refuses some (a final state),
and the gold takes the fallback the question states (a note on the refused row) and reports which."""

from __future__ import annotations

import random
from collections.abc import Iterator

from factory.tasks.programs.acts import NOTE_REFUSED, act_draft, build, pages_hint, ranked, where
from factory.tasks.programs.draft import Draft
from factory.tasks.programs.view import EnvView, words


def propose_recovery(view: EnvView, rng: random.Random) -> Iterator[Draft]:
    """Attempt each write, meet refusals (the refused calls count in the gold's calls), recover as told."""
    for act in ranked(build(view, rng, "recover"), view.knobs, rng):
        m = act.move
        f = words(m.field)
        fallback = f", and instead {act.note.phrase(NOTE_REFUSED)}" if act.note is not None else ""
        question = rng.choice(
            [
                f'Try to set the {f} to "{m.to_value}" for each of the {where(act)}. The system will refuse '
                f"the change for some of them (their {f} does not allow it): leave those as they are{fallback}."
                f"{pages_hint(act, view.knobs)} Which ones were refused? Give their IDs.",
                f'Move to {f} "{m.to_value}" every one of the {where(act)}. Where the change is refused, keep '
                f"going with the rest{fallback}.{pages_hint(act, view.knobs)} Answer with the IDs of the refused "
                "ones.",
            ]
        )
        yield act_draft("recovery", act, question, "refused", ["loops", "recovery", "mutation"])
