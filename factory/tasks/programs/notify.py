"""Notify family: move every matching row to a new status and add a note (a comment, a reply...) to each one;
when the recovery knob asks, every row is tried, and a refused one gets another note instead."""

from __future__ import annotations

import random
from collections.abc import Iterator

from factory.tasks.programs.acts import NOTE_REFUSED, NOTE_TEXT, act_draft, acts_for, pages_hint, scoped, where
from factory.tasks.programs.draft import Draft
from factory.tasks.programs.view import EnvView, words


def propose_notify(view: EnvView, rng: random.Random) -> Iterator[Draft]:
    """Update each match and create a note per updated row (close stale issues and tell each one why)."""
    for act in acts_for(view, rng, "notify"):
        m, note = act.move, act.note
        assert note is not None
        hint = pages_hint(act, view.knobs)
        if act.recover:
            question = rng.choice(
                [
                    f'Clean up the {where(act)}: try to give each one {words(m.field)} "{m.to_value}", and for each '
                    f"one you change, {note.phrase(NOTE_TEXT)}. The system may refuse the change for some of them: "
                    f"leave those as they are and {note.phrase(NOTE_REFUSED)} instead.{hint} How many did you "
                    "change, and which ones were refused (their IDs)?",
                    f'For every one of the {where(act)}, set its {words(m.field)} to "{m.to_value}" and then '
                    f"{note.phrase(NOTE_TEXT)}. Where the change is refused, keep going with the rest, but "
                    f"{note.phrase(NOTE_REFUSED)} instead.{hint} Report how many you changed and the IDs of the "
                    "refused ones.",
                ]
            )
        else:
            question = rng.choice(
                [
                    f'Clean up the {where(act)}: each one {m.scope()} must get {words(m.field)} "{m.to_value}", '
                    f"and for each one you change, {note.phrase(NOTE_TEXT)}.{hint} How many did you change?",
                    f'For every one of the {scoped(act, m.scope())}, set its {words(m.field)} to "{m.to_value}" and '
                    f"then {note.phrase(NOTE_TEXT)}. Leave the others alone.{hint} How many did you update?",
                ]
            )
        yield act_draft("notify", act, question, "count", ["loops", "mutation", "notification"])
