"""Notify family: move every matching row to a new status and add a note (a comment, a reply...) to each one."""

from __future__ import annotations

import random
from collections.abc import Iterator

from factory.tasks.programs.acts import NOTE_TEXT, build, difficulty, pages_hint, ranked, scoped, where, writer
from factory.tasks.programs.draft import Draft
from factory.tasks.programs.view import EnvView, words


def propose_notify(view: EnvView, rng: random.Random) -> Iterator[Draft]:
    """Update each match and create a note per updated row (close stale issues and tell each one why)."""
    for act in ranked(build(view, rng, "notify"), view.knobs, rng):
        m, note = act.move, act.note
        assert note is not None
        question = rng.choice(
            [
                f'Clean up the {where(act)}: each one {m.scope()} must get {words(m.field)} "{m.to_value}", and '
                f"for each one you change, {note.phrase(NOTE_TEXT)}.{pages_hint(act, view.knobs)} "
                "How many did you change?",
                f'For every one of the {scoped(act, m.scope())}, set its {words(m.field)} to "{m.to_value}" and '
                f"then {note.phrase(NOTE_TEXT)}. Leave the others alone.{pages_hint(act, view.knobs)} "
                "How many did you update?",
            ]
        )
        write = writer(act, "count")
        yield Draft(
            family="notify",
            question=question,
            program=write(act.selections()),
            capabilities=["loops", "mutation", "notification"],
            difficulty=difficulty(act),
            mutates=True,
            selections=act.selections(),
            write=write,
        )
