"""Reschedule family: move every booking (appointment, visit, shift, session...) of some resources (a doctor, a
room, a tutor) in a period to its next free slot.

It applies where an entity has a start time, a length (an end time, a duration of its own, or the duration of a
row it references, such as its service), a foreign key to a listable resource, and an update tool that takes
the start (and the end, when there is one). The next free slot of a booking is the same time of day one day
later, moved on a day at a time while it would overlap another booking of the same resource that holds its slot
(any one not in a final state such as "cancelled"; a booking already moved holds its new slot). Bookings in a
final state refuse the update: the gold tries each, leaves a refused one as it is and reports it (recovery).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from factory.models import Difficulty, EntitySpec, FieldSpec, ToolSpec
from factory.tasks.programs.acts import MAX_ACTED, Owner, label, owners, pages, stats_short
from factory.tasks.programs.draft import Draft, limited, program
from factory.tasks.programs.view import EnvView, Rows, page_size, words

STARTS = ("starts_at", "start_at", "start_time", "starts", "start", "scheduled_at", "scheduled_for", "begins_at")
ENDS = ("ends_at", "end_at", "end_time", "ends", "end", "finishes_at")
FORMAT = "%Y-%m-%dT%H:%M:%S"


@dataclass(frozen=True)
class Length:
    """How long a booking lasts: its end field, its own duration in minutes, or the duration of a row it references
    (`via`: the booking's foreign key, `source`/`tool`: that entity and its list tool); none: a point in time."""

    end: str | None = None
    minutes: str | None = None
    via: str | None = None
    source: EntitySpec | None = None
    tool: ToolSpec | None = None


@dataclass(frozen=True)
class Calendar:
    """A bookable entity: its list and update tools, start field, length, and the final states that hold no slot."""

    entity: EntitySpec
    ctool: ToolSpec
    update: ToolSpec
    start: str
    length: Length
    status: str | None
    final: tuple[str, ...]


def _minutes_field(e: EntitySpec) -> str | None:
    return next(
        (f.name for f in e.fields if f.type in ("integer", "number") and ("duration" in f.name or f.name == "minutes")),
        None,
    )


def calendars(view: EnvView) -> list[Calendar]:
    """Every bookable entity of the environment (see the module docstring)."""
    out = []
    for e, ctool in view.listable():
        fields = {f.name: f for f in e.fields}
        start = next((n for n in STARTS if n in fields and fields[n].type == "datetime"), None)
        if start is None:
            continue
        end = next((n for n in ENDS if n in fields and fields[n].type == "datetime"), None)
        length = Length(end=end) if end else Length(minutes=_minutes_field(e))
        if length.end is None and length.minutes is None:
            for f in e.fields:
                ref = view.entity(f.references.split(".")[0]) if f.references else None
                tool = view.list_tool(ref) if ref is not None else None
                if ref is not None and tool is not None and (m := _minutes_field(ref)) is not None:
                    length = Length(minutes=m, via=f.name, source=ref, tool=tool)
                    break
        key = f"{e.name}_id"
        for t in view.tools_of(e, "update"):
            props = t.parameters.get("properties") or {}
            takes = key in props and start in props and (end is None or end in props)
            if takes and not set(t.parameters.get("required") or []) - {key}:
                final = next((r for r in e.rules if r.kind == "terminal" and r.field and r.fields), None)
                status = final.field if final else None
                out.append(Calendar(e, ctool, t, start, length, status, tuple(final.fields or ()) if final else ()))
                break
    return out


def _when(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        return None


def _span(cal: Calendar, row: dict[str, Any], minutes: dict[Any, Any]) -> timedelta:
    s = _when(row.get(cal.start))
    if cal.length.end is not None:
        e = _when(row.get(cal.length.end))
        return e - s if e is not None and s is not None and e > s else timedelta(0)
    if cal.length.via is not None:
        value = minutes.get(row.get(cal.length.via))
    elif cal.length.minutes is not None:
        value = row.get(cal.length.minutes)
    else:
        value = None
    return timedelta(minutes=value) if isinstance(value, int | float) and value > 0 else timedelta(0)


def _clash(s1: datetime, e1: datetime, s2: datetime, e2: datetime) -> bool:
    return s1 == s2 or (s1 < e2 and s2 < e1)


def simulate(cal: Calendar, fk: str, rows: Rows, chosen: Rows, minutes: dict[Any, Any]) -> tuple[int, int]:
    """(bookings moved, bookings refused) when `chosen` move to their next free slots, as the gold does it."""
    pk = cal.entity.primary_key
    held = {
        r[pk]: (r.get(fk), s, s + _span(cal, r, minutes))
        for r in rows
        if r.get(cal.status) not in cal.final and (s := _when(r.get(cal.start))) is not None
    }
    moved = refused = 0
    for r in sorted(chosen, key=lambda r: (str(r.get(cal.start)), str(r[pk]))):
        if r.get(cal.status) in cal.final:
            refused += 1
            continue
        s = _when(r.get(cal.start))
        assert s is not None
        span = _span(cal, r, minutes)
        new = s + timedelta(days=1)
        while any(
            o != r[pk] and res == r.get(fk) and _clash(new, new + span, hs, he) for o, (res, hs, he) in held.items()
        ):
            new += timedelta(days=1)
        held[r[pk]] = (r.get(fk), new, new + span)
        moved += 1
    return moved, refused


def _day(row: dict[str, Any], start: str) -> date | None:
    when = _when(row.get(start))
    return when.date() if when is not None else None


@dataclass(frozen=True)
class Plan:
    cal: Calendar
    owner: Owner
    first: date
    last: date
    stats: dict[str, Any]


def _plans(view: EnvView, rng: random.Random) -> list[Plan]:
    knobs = view.knobs
    out = []
    for cal in calendars(view):
        rows = view.rows(cal.entity)
        minutes: dict[Any, Any] = {}
        if cal.length.source is not None:
            minutes = {
                r[cal.length.source.primary_key]: r.get(cal.length.minutes) for r in view.rows(cal.length.source)
            }
        for owner in owners(view, cal.entity, rng, knobs):
            if owner is None or owner.filtered or (knobs.obscured and owner.sel is None):
                continue
            if owner.sel is not None:
                wanted = {p[owner.entity.primary_key] for p in view.rows(owner.entity) if owner.sel.test(p)}
            else:
                wanted = {owner.pid}
            mine = sorted(
                (r for r in rows if r.get(owner.fk) in wanted and _day(r, cal.start)), key=lambda r: str(r[cal.start])
            )
            days = sorted({_day(r, cal.start) for r in mine})  # type: ignore[type-var]
            most = max(MAX_ACTED, knobs.chain_length + 6)
            for _ in range(3):
                if len(days) < 2:
                    break
                i = rng.randrange(len(days))
                j = min(len(days) - 1, i + rng.randrange(2, 12))
                first, last = days[i], days[j]
                chosen = [r for r in mine if first <= _day(r, cal.start) <= last]  # type: ignore[operator]
                if not 2 <= len(chosen) <= most:
                    continue
                moved, refused = simulate(cal, owner.fk, rows, chosen, minutes)
                if moved < 1:
                    continue
                in_period = sum(1 for r in rows if first <= (_day(r, cal.start) or first - timedelta(1)) <= last)
                near = (len(mine) - len(chosen)) + (in_period - len(chosen))
                cpages = pages(len(rows), page_size(cal.ctool))
                ppages = pages(len(view.rows(owner.entity)), page_size(owner.sel.tool)) if owner.sel else 0
                lpages = pages(len(view.rows(cal.length.source)), page_size(cal.length.tool)) if cal.length.tool else 0
                stated = ["period", "free slot"] + (
                    [f"{owner.sel.condition.field}"] if owner.sel and owner.sel.condition else []
                )
                stats = {
                    "calls": cpages + ppages + lpages + len(chosen),
                    "pages": max(cpages, ppages, lpages),
                    "refused": refused,
                    "distractors": near,
                    "constraints": stated,
                    "obscured": owner.sel is not None,
                }
                out.append(Plan(cal, owner, first, last, stats))
    return out


def _length_words(cal: Calendar) -> str:
    if cal.length.end is not None:
        return f"its {label(_field(cal.entity, cal.length.end))} moves with it, so it keeps its length"
    if cal.length.via is not None and cal.length.source is not None:
        return f"it lasts the {words(cal.length.minutes or '')} of its {words(cal.length.source.name)}"
    if cal.length.minutes is not None:
        return f"it lasts its {words(cal.length.minutes)}"
    return "two of them clash only when they start at the same time"


def _field(e: EntitySpec, name: str) -> FieldSpec:
    return next(f for f in e.fields if f.name == name)


def _code(plan: Plan) -> str:
    cal, owner = plan.cal, plan.owner
    pk, fk = cal.entity.primary_key, owner.fk
    lines = ["from datetime import date, datetime, timedelta", ""]
    if owner.sel is not None:
        lines.append(
            f"wanted = {{p[{owner.entity.primary_key!r}] for p in {owner.sel.fetch(page_size(owner.sel.tool))} "
            f"if {owner.sel.code('p')}}}"
        )
    else:
        lines.append(f"wanted = {{{owner.pid!r}}}")
    if cal.length.tool is not None and cal.length.source is not None:
        lines.append(
            f"minutes = {{s[{cal.length.source.primary_key!r}]: s.get({cal.length.minutes!r}) "
            f"for s in _all(tools.{cal.length.tool.name}, {page_size(cal.length.tool)})}}"
        )
    lines.append(f"rows = _all(tools.{cal.ctool.name}, {page_size(cal.ctool)})")
    lines += ["", "def span(r):", f"    s = datetime.fromisoformat(r[{cal.start!r}])"]
    if cal.length.end is not None:
        lines.append(f"    e = datetime.fromisoformat(r[{cal.length.end!r}]) if r.get({cal.length.end!r}) else s")
        lines.append("    return max(e - s, timedelta(0))")
    else:
        if cal.length.via is not None:
            lines.append(f"    m = minutes.get(r.get({cal.length.via!r}))")
        elif cal.length.minutes is not None:
            lines.append(f"    m = r.get({cal.length.minutes!r})")
        else:
            lines.append("    m = None")
        lines.append("    return timedelta(minutes=m) if isinstance(m, (int, float)) and m > 0 else timedelta(0)")
    lines += [
        "",
        "held = {}",
        "for r in rows:",
        f"    if r.get({cal.status!r}) not in {cal.final!r} and r.get({cal.start!r}):"
        if cal.status
        else f"    if r.get({cal.start!r}):",
        f"        s = datetime.fromisoformat(r[{cal.start!r}])",
        f"        held[r[{pk!r}]] = (r.get({fk!r}), s, s + span(r))",
        f"first, last = date.fromisoformat({plan.first.isoformat()!r}), date.fromisoformat({plan.last.isoformat()!r})",
        "chosen = [",
        "    r",
        "    for r in rows",
        f"    if r.get({fk!r}) in wanted and r.get({cal.start!r})",
        f"    and first <= datetime.fromisoformat(r[{cal.start!r}]).date() <= last",
        "]",
        f"chosen.sort(key=lambda r: (r[{cal.start!r}], str(r[{pk!r}])))",
        "moved, refused = 0, []",
        "for r in chosen:",
        f"    s, length = datetime.fromisoformat(r[{cal.start!r}]), span(r)",
        "    new = s + timedelta(days=1)",
        "    while any(",
        f"        o != r[{pk!r}] and res == r.get({fk!r}) and (new == hs or (new < he and hs < new + length))",
        "        for o, (res, hs, he) in held.items()",
        "    ):",
        "        new += timedelta(days=1)",
        f"    args = {{{cal.start!r}: new.strftime({FORMAT!r})}}",
    ]
    if cal.length.end is not None:
        lines.append(f"    args[{cal.length.end!r}] = (new + length).strftime({FORMAT!r})")
    lines += [
        f"    result = tools.{cal.update.name}({cal.entity.name}_id=r[{pk!r}], **args)",
        "    if isinstance(result, dict) and 'error' in result:",
        f"        refused.append(r[{pk!r}])",
        "        continue",
        f"    held[r[{pk!r}]] = (r.get({fk!r}), new, new + length)",
        "    moved += 1",
        "return {'moved': moved, 'refused': sorted(refused)}",
    ]
    return program("\n".join(lines))


def propose_reschedule(view: EnvView, rng: random.Random) -> Iterator[Draft]:
    """Read the resources, their bookings over every page, and move each one in the period to its next free slot."""
    plans = limited(_plans(view, rng), rng, 48)
    plans.sort(key=lambda p: (stats_short(p.stats, view.knobs), p.stats["calls"] < 1.5 * view.knobs.chain_length))
    for plan in plans[:12]:
        cal, owner = plan.cal, plan.owner
        things, thing = words(cal.entity.table), words(cal.entity.name)
        a = "an" if thing[:1] in "aeiou" else "a"
        whose = owner.phrase()
        period = f"from {plan.first.isoformat()} through {plan.last.isoformat()}"
        final = " or ".join(f'"{v}"' for v in cal.final)
        holds = f" whose {words(cal.status)} is not {final}" if cal.status else ""
        slot = (
            f"The next free slot of {a} {thing} is the same time of day one day later; while that would overlap "
            f"another {thing} of the same {words(owner.entity.name)}{holds} ({_length_words(cal)}), move it one "
            f"more day. {a.capitalize()} {thing} you have already moved holds its new slot. Handle them in order "
            "of start time."
        )
        hint = " Check every page of the listings, not only the first." if view.knobs.pages > 1 else ""
        question = rng.choice(
            [
                f"Every {thing} of {whose} with a start {period} has to move to its next free slot. {slot} "
                "The system may refuse to move some of them; leave any refused one as it is and carry on."
                f"{hint} How many did you move, and which ones were refused (their IDs)?",
                f"Reschedule the {things} of {whose} that start {period}: each one goes to its next free slot. "
                f"{slot} Where the system refuses a change, keep that {thing} as it is and go on with the rest."
                f"{hint} Report how many you moved and the IDs of the refused ones.",
            ]
        )
        yield Draft(
            family="reschedule",
            question=question,
            program=_code(plan),
            capabilities=["loops", "scheduling", "mutation"] + (["join"] if owner.sel is not None else []),
            difficulty=Difficulty(
                chain_length=3,
                constraints=list(plan.stats["constraints"]),
                obscured=bool(plan.stats["obscured"]),
                distractors=int(plan.stats["distractors"]),
                recovery=int(plan.stats["refused"]),
            ),
            mutates=True,
        )
