"""What an imported question leaves to the solver: values its verified chain writes that nothing supplies.

The release's chains pass values that no question states and no read returns: a cancel reason in its author's
words, a new table's key name, a timeout, a policy's source. A solver picks its own, so no check may hold it to
the release's. Such a value is a free choice when the chain, replayed with the value changed, succeeds call for
call as before; the state fields and the outputs that then differ depend on the choice and are left out of the
question's checks. Only a whole argument or a field of a record argument can be such a choice, a line of text or a
number: what a list or a multi-line text holds (a flow's steps, a policy's source) is what the question asks for,
in a form no check here can judge but by its letter, so it stays held to grounding and the question is dropped.
So is a value the data holds (a record's id, the numbers of a chart the question names): the solver has to find
it. A constrained one (a key type that must be "S", "N" or "B") fails the changed replay and stays too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from factory.envs.importers import FREE_TEXT_PARAM
from factory.models import EnvSpec, ToolCall
from factory.naming import snake_case
from factory.tasks.filter import is_prose, ungrounded_values, value_key, value_keys
from factory.verify.answers import answer_contains, parse_date
from factory.verify.scoring import Replay, SessionFactory, replay_calls
from factory.verify.state import StateDiff, state_diff

MAX_CHOICES = 24  # values tried one by one when changing them all at once breaks the chain

Rebind = Callable[[list[ToolCall]], list[ToolCall]]


@dataclass
class Choices:
    """What a chain's free choices decide: `table.field`s of the state, and values of its outputs (the
    choices among them)."""

    fields: list[str] = field(default_factory=list)
    outputs: set[tuple[str, Any]] = field(default_factory=set)


def solver_worded(spec: EnvSpec, chain: list[ToolCall], question: str) -> list[str]:
    """Prose the chain's writes pass in free-text parameters (a cancel `reason`, a `note`) that the question
    does not state, even where an earlier output holds it: a solver words its own."""
    writes = {t.name for t in spec.tools if t.mutates}
    return [
        v
        for c in chain
        if c.tool in writes
        for name, v in c.args.items()
        if FREE_TEXT_PARAM.search(snake_case(name)) and is_prose(v) and not answer_contains(question, v)
    ]


def _candidates(spec: EnvSpec, chain: list[ToolCall], replay: Replay, question: str) -> list[Any]:
    held = value_keys(replay.initial.tables)
    loose = [
        u.value
        for u in ungrounded_values(spec, question, chain, replay.results)
        if _whole(chain[u.call - 1].args.get(u.param), u.value)
    ]
    out: dict[tuple[str, Any], Any] = {}
    for v in [*solver_worded(spec, chain, question), *loose]:
        k = value_key(v)
        if k is None or k in out or (k in held and not is_prose(v)) or _dated(v):
            continue
        if not (isinstance(v, int | float) and _numbers_in(question, v)):
            out[k] = v
    return list(out.values())


_SPELLED = re.compile(
    r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|"
    r"sixty|ninety|hundred|thousand|million|dozen|half)\b",
    re.IGNORECASE,
)
_UNIT_FACTORS = (60, 100, 1000, 1024, 3600, 86400)  # s/min, percent, ms/s and k, KiB, s/h, s/day


def _numbers_in(question: str, value: float) -> bool:
    """Whether the question may state `value` in other words: spelled out ("five thousand"), or in another
    unit ("timeout 60s" for 60000 ms). Such a number is no free choice."""
    if _SPELLED.search(question):
        return True
    stated = [float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", question)]
    return any(math.isclose(value, n * f) or math.isclose(value * f, n) for n in stated for f in _UNIT_FACTORS)


def _whole(arg: Any, value: Any) -> bool:
    """`value` is the argument, or a field of the record it is (`data={"slug": ...}`), and no multi-line text."""
    if isinstance(value, str) and "\n" in value:
        return False
    return arg is value or (isinstance(arg, dict) and any(v is value for v in arg.values()))


def _dated(value: Any) -> bool:
    return isinstance(value, str) and parse_date(value) is not None


def _changed(value: Any) -> Any:
    """Another value of the same kind: what a solver that chose differently would pass."""
    if isinstance(value, str):
        return value + "2"
    return value + 1


def _with(args: Any, keys: set[tuple[str, Any]]) -> Any:
    if isinstance(args, dict):
        return {k: _with(v, keys) for k, v in args.items()}
    if isinstance(args, list):
        return [_with(v, keys) for v in args]
    return _changed(args) if value_key(args) in keys else args


def differing_fields(a: StateDiff, b: StateDiff, whole: bool = False) -> list[str] | None:
    """`table.field`s whose written values differ between two runs (keys aside), or None when the runs wrote
    different rows (another count added, another row changed). With `whole`, also None when a field that
    differs holds a structure: a choice that decides part of an entry's attributes cannot be left out without
    leaving out the parts the question states."""
    out: set[str] = set()
    for table in sorted(set(a.tables) | set(b.tables)):
        x, y = a.tables.get(table), b.tables.get(table)
        if x is None or y is None or len(x.added) != len(y.added) or len(x.removed) != len(y.removed):
            return None
        before = {repr(c.key): c.after for c in x.changed}
        after = {repr(c.key): c.after for c in y.changed}
        if set(before) != set(after):
            return None
        pairs = [*_paired(x.added, y.added), *((before[k], after[k]) for k in before)]
        for r, s in pairs:  # an added row's key is no check already, and rows are matched by it
            fields = {f for f in set(r) | set(s) if r.get(f) != s.get(f) and f != x.key}
            if whole and any(isinstance(v.get(f), dict | list) for f in fields for v in (r, s)):
                return None
            out |= {f"{table}.{f}" for f in fields}
    return sorted(out)


def _paired(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Each row one run added with the row the other added that agrees with it most (their order may differ:
    ids drawn from the content sort them otherwise)."""
    rest = list(b)
    out = []
    for r in a:
        best = max(rest, key=lambda s: sum(r.get(f) == v for f, v in s.items()))
        rest.remove(best)
        out.append((r, best))
    return out


def solver_choices(
    spec: EnvSpec,
    session_factory: SessionFactory,
    chain: list[ToolCall],
    replay: Replay,
    question: str,
    rebind: Rebind,
) -> Choices:
    """The chain's free choices (see the module docstring), found by replaying it with them changed; `rebind`
    gives a changed chain the ids its own creates draw (a policy id that depends on the policy's source)."""
    candidates = _candidates(spec, chain, replay, question)
    if not candidates:
        return Choices()
    keys = spec.primary_keys()
    oks = [r.ok for r in replay.results]
    diff = state_diff(replay.initial, replay.final, spec.bookkeeping, keys=keys)

    def attempt(values: list[Any]) -> tuple[Replay, list[str]] | None:
        wanted = {k for v in values if (k := value_key(v)) is not None}
        changed = rebind([c.model_copy(update={"args": _with(c.args, wanted)}) for c in chain])
        again = replay_calls(session_factory, changed)
        if [r.ok for r in again.results] != oks:
            return None
        fields = differing_fields(diff, state_diff(again.initial, again.final, spec.bookkeeping, keys=keys), whole=True)
        return (again, fields) if fields is not None else None

    free = candidates
    found = attempt(free)
    if found is None:
        free = [v for v in candidates[:MAX_CHOICES] if attempt([v]) is not None]
        found = attempt(free) if free else None
    if found is None:
        return Choices()
    again, fields = found
    theirs = value_keys([r.value for r in again.results if r.ok])
    ours = value_keys([r.value for r in replay.results if r.ok])
    return Choices(fields=fields, outputs=(ours - theirs) | value_keys(free))


def path_fields(
    spec: EnvSpec, session_factory: SessionFactory, chain: list[ToolCall], replay: Replay, rebind: Rebind
) -> list[str]:
    """`table.field`s whose written values depend on the calls before the chain: a run that first reads once more
    draws other ids, so a new render job names another new chart config. The solver's path is its own: found by
    replaying the chain after one more call of its first read, they go unchecked like its choices."""
    keys = spec.primary_keys()
    writes = {t.name for t in spec.tools if t.mutates}
    read = next((c for c in chain if c.tool not in writes), None)
    if read is None:
        return []
    again = replay_calls(session_factory, rebind([read, *chain]))
    if [r.ok for r in again.results[1:]] != [r.ok for r in replay.results]:
        return []
    diff = state_diff(replay.initial, replay.final, spec.bookkeeping, keys=keys)
    return differing_fields(diff, state_diff(again.initial, again.final, spec.bookkeeping, keys=keys)) or []
