"""Bulk-update family: move every row that matches a condition, and may move, to a new status."""

from __future__ import annotations

import random
from collections.abc import Iterator

from factory.models import Difficulty, EntitySpec, ToolSpec
from factory.tasks.programs.conditions import Selection, conditions
from factory.tasks.programs.draft import MAX_WRITES, Draft, Writer, limited, program
from factory.tasks.programs.view import EnvView, page_size, words


def _transitions(view: EnvView, e: EntitySpec) -> list[tuple[ToolSpec, str, str, list[str] | None]]:
    """(tool, key parameter, field, target value, allowed sources) of every status-changing tool of `e`."""
    key = f"{e.name}_id"
    out: list[tuple[ToolSpec, str, str, list[str] | None]] = []
    for t in view.tools_of(e, "action"):
        op = t.operation
        props = t.parameters.get("properties") or {}
        required = set(t.parameters.get("required") or [])
        if op and op.action == "transition" and op.field and op.to_value and key in props and required <= {key}:
            out.append((t, op.field, op.to_value, op.from_values))
    fields = {f.name: f for f in e.fields}
    for t in view.tools_of(e, "update"):
        props = t.parameters.get("properties") or {}
        if key not in props or set(t.parameters.get("required") or []) - {key}:
            continue
        for name in props:
            f = fields.get(name)
            if f is not None and f.enum:
                for value in f.enum:
                    out.append((t, name, value, None))
    return out


def _writer(t: ToolSpec, allowed: str, args: str) -> Writer:
    def write(selections: tuple[Selection, ...]) -> str:
        (sel,) = selections
        return program(
            "changed = 0\n"
            f"for row in {sel.fetch(page_size(sel.tool))}:\n"
            f"    if ({sel.code()}) and {allowed}:\n"
            f"        _ok(tools.{t.name}({args}))\n"
            "        changed += 1\n"
            "return changed"
        )

    return write


def propose_bulk_update(view: EnvView, rng: random.Random) -> Iterator[Draft]:
    """Conditional bulk update: move every row matching a condition (and allowed to move) to a new status."""
    combos = []
    for e, tool in view.listable():
        rows = view.rows(e)
        for t, fld, to_value, from_values in _transitions(view, e):
            movable = [r for r in rows if r.get(fld) != to_value and (from_values is None or r.get(fld) in from_values)]
            for cond in conditions(e, rows, rng, exclude=(fld,)):
                sel = Selection(e, tool, cond, settled=(fld,), scope=view.scope(e), args=view.scope_args(e)).ruled(
                    movable, rng
                )
                if 2 <= sum(sel.test(r) for r in movable) <= MAX_WRITES:
                    combos.append((sel, cond, t, fld, to_value, from_values))
    for sel, cond, t, fld, to_value, from_values in limited(combos, rng):
        e = sel.entity
        things, one, label, where = words(e.table), words(e.name), words(fld), sel.phrase()
        rule = f", {sel.status.phrase()}" if sel.status is not None else ""
        if from_values is None:
            allowed = f"row.get({fld!r}) != {to_value!r}"
            scope = f'that is not already "{to_value}"'
        else:
            allowed = f"row.get({fld!r}) in {tuple(from_values)!r}"
            scope = "whose " + label + " is " + " or ".join(f'"{v}"' for v in from_values)
        question = rng.choice(
            [
                f'Set the {label} of every {one} {cond.phrase()} and {scope} to "{to_value}"{rule}. '
                "How many did you change?",
                f'Go through all {things} {where}: each one {scope} must become "{to_value}". '
                "Report how many you updated.",
            ]
        )
        extra = {} if t.operation and t.operation.kind == "action" else {fld: to_value}
        args = ", ".join([f"{e.name}_id=row[{e.primary_key!r}]", *(f"{k}={v!r}" for k, v in extra.items())])
        write = _writer(t, allowed, args)
        yield Draft(
            family="bulk_update",
            question=question,
            program=write((sel,)),
            capabilities=["loops", "mutation"],
            difficulty=Difficulty(chain_length=2, constraints=[f"{cond.field} {cond.op}", f"{fld} -> {to_value}"]),
            mutates=True,
            selections=(sel,),
            write=write,
        )
