"""Difficulty a user can turn: three presets and six knobs, shared by graph-walk and program tasks.

Every knob is a floor on what a task must make the solver do, so setting one can only make tasks harder:
- `chain_length`: tool calls the gold makes, at least (refused calls and extra pages count);
- `pages`: pages of one listing the gold must read, at least (2 or more: one page cannot answer it);
- `constraints`: conditions the task states that limit what may be done (budget, supply, status, threshold);
- `obscured`: records are described by what they hold, never by their name;
- `distractors`: rows in the data that match all but one of the task's conditions (near misses), at least;
- `recovery`: refused calls the gold meets and recovers from, at least.

A task records what it actually reached in `Task.difficulty` (level included); `shortfalls` says, per knob,
where it stayed below the setting, so a synthesis run can report how many tasks fell short and why.
"""

from __future__ import annotations

import os
from typing import Literal, get_args

from pydantic import Field

from factory.models import Difficulty, Model, Task

Level = Literal["easy", "medium", "hard"]
LEVELS: tuple[str, ...] = get_args(Level)
DEFAULT_LEVEL: Level = "medium"
DIFFICULTY_VARIABLE = "FACTORY_DIFFICULTY"
KNOBS = ("chain_length", "pages", "constraints", "obscured", "distractors", "recovery")


class Knobs(Model):
    """The floors a synthesis run asks of every task (see the module docstring)."""

    level: Level = DEFAULT_LEVEL
    chain_length: int = Field(default=6, ge=1)
    pages: int = Field(default=1, ge=1)
    constraints: int = Field(default=0, ge=0)
    obscured: bool = False
    distractors: int = Field(default=0, ge=0)
    recovery: int = Field(default=0, ge=0)


PRESETS: dict[str, Knobs] = {
    "easy": Knobs(level="easy", chain_length=2),
    "medium": Knobs(level="medium", chain_length=6, pages=2, constraints=1),
    "hard": Knobs(level="hard", chain_length=14, pages=3, constraints=2, obscured=True, distractors=2, recovery=1),
}


class DifficultyError(ValueError):
    """A difficulty setting that names no level or sets a knob to a value it cannot take."""


def knobs_for(level: str | None = None, **overrides: int | bool | None) -> Knobs:
    """The preset for `level` (None: FACTORY_DIFFICULTY, read when called, else medium), with the knobs
    given in `overrides` set on top. A knob only ever raises its floor: below the preset's value (or False,
    or None) it leaves the preset's value, so setting a knob never makes tasks easier or shorter."""
    source = "level"
    if level is None:
        level, source = os.environ.get(DIFFICULTY_VARIABLE) or DEFAULT_LEVEL, DIFFICULTY_VARIABLE
    if level not in PRESETS:
        raise DifficultyError(f"{source} must be one of {', '.join(LEVELS)}, not {level!r}")
    unknown = sorted(set(overrides) - set(KNOBS))
    if unknown:
        raise DifficultyError(f"unknown difficulty knob(s): {', '.join(unknown)} (knobs: {', '.join(KNOBS)})")
    chosen = {k: v for k, v in overrides.items() if v is not None}
    try:
        Knobs.model_validate(chosen)  # each value valid on its own: a negative page count is an error
    except ValueError as e:
        raise DifficultyError(f"bad difficulty knob: {e}") from e
    preset = PRESETS[level].model_dump()
    return Knobs.model_validate({**preset, **{k: max(preset[k], v) for k, v in chosen.items()}})


def shortfalls(task: Task, knobs: Knobs) -> list[str]:
    """Where `task` stays below a knob, one reason per knob ("chain_length: 8 of 14 calls")."""
    return reached_shortfalls(task.gold_calls, task.difficulty, knobs)


def reached_shortfalls(gold_calls: int, reached: Difficulty, knobs: Knobs) -> list[str]:
    """`shortfalls` for what a task, or a draft before it is one, reached: its gold calls and difficulty."""
    out = []
    if gold_calls < knobs.chain_length:
        out.append(f"chain_length: {gold_calls} of {knobs.chain_length} calls")
    if knobs.pages > 1 and reached.pages < knobs.pages:
        out.append(f"pages: {reached.pages} of {knobs.pages} pages of one listing")
    if len(reached.constraints) < knobs.constraints:
        out.append(f"constraints: {len(reached.constraints)} of {knobs.constraints}")
    if knobs.obscured and not reached.obscured:
        out.append("obscured: records are named")
    if reached.distractors < knobs.distractors:
        out.append(f"distractors: {reached.distractors} of {knobs.distractors} near-miss rows")
    if reached.recovery < knobs.recovery:
        out.append(f"recovery: {reached.recovery} of {knobs.recovery} refused calls")
    return out


class Shortfall(Model):
    """How many tasks stayed below one knob, and one of them as an example ("online-shop: 8 of 14 calls")."""

    tasks: int
    example: str


def shortfall_summary(tasks: list[Task], knobs: Knobs) -> dict[str, Shortfall]:
    """Knob -> the tasks that stayed below it, in knob order."""
    out: dict[str, Shortfall] = {}
    for task in tasks:
        for reason in shortfalls(task, knobs):
            knob, _, detail = reason.partition(": ")
            found = out.get(knob)
            example = found.example if found else f"{task.env_id}: {detail}"
            out[knob] = Shortfall(tasks=(found.tasks if found else 0) + 1, example=example)
    return {k: out[k] for k in KNOBS if k in out}
