"""Acting on many rows: the shared engine of the multi-step families (cascade, notify, branch, recovery).

Not a family itself. It finds, through the spec alone, what the families need on any environment:
- `Move`: a status change of an entity (a transition action, with the states it may leave from);
- `Note`: a row another entity's create tool adds for each acted-on row (a comment on an issue, a reply
  on a ticket), with constant texts the question states;
- `Act`: one instance: the rows to act on (those of the parents matching a condition, or of one parent, or
  matching a condition of their own), the move, and what to do on each (or when the move is refused).
It writes the gold program of an act (and of each other reading of its selections) and scores how an act
meets the difficulty knobs (calls, pages, constraints, obscured, distractors, recovery), so every family
draws the instances that reach the knobs first.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace
from typing import Any

from factory.models import Difficulty, EntitySpec, FieldSpec, ToolSpec
from factory.tasks.difficulty import Knobs, reached_shortfalls
from factory.tasks.programs.conditions import Condition, Selection, conditions
from factory.tasks.programs.draft import Draft, program
from factory.tasks.programs.view import EnvView, Rows, page_size, words

MAX_ACTED = 10  # rows one act changes, at most (each may add a note too)
NOTE_TEXT = "Handled in the weekly clean-up."
NOTE_REFUSED = "Could not be changed; please review."
NOTE_EMAIL = "ops@example.com"
ID = "<ID>"
UNIQUE_EMAIL = f"ops+{ID}@example.com"  # a unique email field: one address per acted-on row
NOTE_NAME = "Operations"


def label(f: FieldSpec) -> str:
    """A field as English words: "created_at" -> "creation time", "patient_id" -> "patient"."""
    name = f.name
    if f.references and name.endswith("_id"):
        return words(name[:-3])
    return words(name)


def phrase(cond: Condition, f: FieldSpec | None) -> str:
    """The condition's words with a readable field label."""
    return replace(cond, label=label(f)).phrase() if f is not None else cond.phrase()


def field_of(e: EntitySpec, name: str) -> FieldSpec | None:
    return next((f for f in e.fields if f.name == name), None)


def pages(n: int, size: int) -> int:
    """Calls `_all` makes for `n` rows at `size` a page."""
    return max(1, math.ceil(n / size) if n % size else n // size + 1)


@dataclass(frozen=True)
class Move:
    """A status change: `tool` moves `field` to `to_value`, only from `from_values` (None: from any other)."""

    tool: ToolSpec
    field: str
    to_value: str
    from_values: tuple[str, ...] | None
    extra: tuple[tuple[str, Any], ...] = ()  # arguments besides the key (an update tool's field)

    def allowed(self, row: dict[str, Any]) -> bool:
        v = row.get(self.field)
        return v != self.to_value and (self.from_values is None or v in self.from_values)

    def allowed_code(self, var: str = "row") -> str:
        if self.from_values is None:
            return f"{var}.get({self.field!r}) != {self.to_value!r}"
        return f"{var}.get({self.field!r}) in {self.from_values!r}"

    def scope(self) -> str:
        """The rows the move may take, in words."""
        if self.from_values is None:
            return f'that is not already "{self.to_value}"'
        return f"whose {words(self.field)} is " + " or ".join(f'"{v}"' for v in self.from_values)


def moves(view: EnvView, e: EntitySpec) -> list[Move]:
    """Every status change of `e` a tool makes with the row's key alone (plus the new value)."""
    key = f"{e.name}_id"
    out = []
    for t in view.tools_of(e, "action"):
        op = t.operation
        props = t.parameters.get("properties") or {}
        required = set(t.parameters.get("required") or [])
        if op and op.action == "transition" and op.field and op.to_value and key in props and required <= {key}:
            out.append(Move(t, op.field, op.to_value, tuple(op.from_values) if op.from_values else None))
    return out


@dataclass(frozen=True)
class Note:
    """A row of `entity` its create `tool` adds for an acted-on row: `fk` names that row, `args` are constants."""

    entity: EntitySpec
    tool: ToolSpec
    fk: str
    args: tuple[tuple[str, Any], ...]

    def code(self, key: str, text: str) -> str:
        args = [f"{self.fk}=row[{key!r}]"]
        for k, v in self.args:
            if v == UNIQUE_EMAIL:
                args.append(f"{k}={UNIQUE_EMAIL.split(ID)[0]!r} + str(row[{key!r}]) + {UNIQUE_EMAIL.split(ID)[1]!r}")
            else:
                args.append(f"{k}={(text if v is None else v)!r}")
        return f"_ok(tools.{self.tool.name}({', '.join(args)}))"

    def phrase(self, text: str) -> str:
        said = [f'{words(k)} "{text if v is None else v}"' for k, v in self.args]
        if any(v == UNIQUE_EMAIL for _, v in self.args):
            said.append(f"where {ID} is the ID of the {words(self.entity.name)}'s own {words(self.fk[:-3])}")
        return f"add a {words(self.entity.name)} to it with " + " and ".join(said)


def note_for(view: EnvView, e: EntitySpec) -> Note | None:
    """A create tool of another entity that references `e` and needs only texts besides the reference."""
    for n in view.spec.entities:
        if n.name == e.name:
            continue
        fields = {f.name: f for f in n.fields}
        for t in view.tools_of(n, "create"):
            props = t.parameters.get("properties") or {}
            required = list(t.parameters.get("required") or [])
            fks = [
                p
                for p in required
                if (f := fields.get(p)) is not None and f.references and f.references.split(".")[0] in (e.name, e.table)
            ]
            if len(fks) != 1 or any(p not in props for p in required):
                continue
            args: list[tuple[str, Any]] = []
            for p in required:
                f = fields.get(p)
                if p == fks[0]:
                    continue
                if f is None or f.type != "string" or f.enum or f.references:
                    break
                if f.format == "email" or "email" in p:
                    args.append((p, UNIQUE_EMAIL if f.unique else NOTE_EMAIL))
                elif p in ("author", "sender", "reviewer", "name") or f.format == "name":
                    args.append((p, NOTE_NAME))
                else:
                    args.append((p, None))  # the text: the question says which
            else:
                if any(v is None for _, v in args):
                    return Note(n, t, fks[0], tuple(args))
    return None


@dataclass(frozen=True)
class Owner:
    """The parents whose rows an act takes: those matching a condition (`sel`), or one parent by id (`pid`)."""

    entity: EntitySpec
    fk: str  # the child's field naming the parent
    sel: Selection | None = None
    pid: Any = None
    filtered: bool = False  # one parent, read through the child list tool's own filter

    def phrase(self) -> str:
        if self.sel is not None:
            return f"the {words(self.entity.table)} {self.sel.phrase()}"
        return f"{words(self.entity.name)} {self.pid}"


@dataclass(frozen=True)
class Act:
    """One instance of acting on many rows (see the module docstring)."""

    child: EntitySpec
    ctool: ToolSpec
    move: Move
    sel: Selection  # the child rows, as the question words them
    owner: Owner | None = None
    note: Note | None = None
    recover: bool = False  # try every row; a refused move gets the fallback instead
    notify: bool = False  # when recovering: a note on every changed row too (not only on the refused ones)
    branch: tuple[Condition, Move] | None = None  # rows matching the condition take the other move
    filters: tuple[tuple[str, Any], ...] = ()  # the child list tool's own exact filters (easy tasks)
    stats: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def selections(self) -> tuple[Selection, ...]:
        return (self.sel,) if self.owner is None or self.owner.sel is None else (self.owner.sel, self.sel)

    def note_done(self) -> bool:
        """Whether each changed row gets a note."""
        return self.note is not None and (not self.recover or self.notify)

    def note_refused(self) -> bool:
        """Whether each refused row gets a note (the fallback)."""
        return self.note is not None and self.recover


def _acted(view: EnvView, act: Act) -> tuple[Rows, Rows, int]:
    """(rows the move takes, rows it refuses, near misses) on the seed state."""
    rows = view.rows(act.child)
    owner = act.owner
    wanted: set[Any] | None = None
    if owner is not None:
        if owner.sel is not None:
            prows = view.rows(owner.entity)
            wanted = {p[owner.entity.primary_key] for p in prows if owner.sel.test(p)}
        else:
            wanted = {owner.pid}
    tests: list[Any] = []
    if wanted is not None:
        tests.append(lambda r: r.get(owner.fk) in wanted)  # type: ignore[union-attr]
    tests.append(act.sel.test)
    if not act.recover:
        tests.append(lambda r: _move_for(act, r).allowed(r))
    picked = [r for r in rows if all(t(r) for t in tests)]
    near = sum(1 for r in rows if sum(not t(r) for t in tests) == 1) if len(tests) > 1 else 0
    if act.recover:
        return (
            [r for r in picked if _move_for(act, r).allowed(r)],
            [r for r in picked if not _move_for(act, r).allowed(r)],
            near,
        )
    return picked, [], near


def _final(e: EntitySpec, row: dict[str, Any]) -> bool:
    """Whether the row is in a final state (a terminal rule's): no updates, nor new rows referencing it."""
    return any(r.kind == "terminal" and r.field and row.get(r.field) in (r.fields or ()) for r in e.rules)


def _move_for(act: Act, row: dict[str, Any]) -> Move:
    if act.branch is not None and act.branch[0].test(row):
        return act.branch[1]
    return act.move


def score(view: EnvView, act: Act) -> Act | None:
    """The act with its stats (calls, pages, rows acted on...), or None when it acts on too few or too many."""
    done, refused, near = _acted(view, act)
    if len(done) + len(refused) > max(MAX_ACTED, view.knobs.chain_length + 6) or len(done) < (1 if act.recover else 2):
        return None
    if act.recover and not refused:
        return None
    if act.note_refused() and any(_final(act.child, r) for r in refused):
        return None  # a row in a final state takes no new rows either: the fallback note would be refused too
    if act.branch is not None and len({_move_for(act, r).to_value for r in done}) < 2:
        return None
    crows = view.rows(act.child)
    if act.filters:
        crows = [r for r in crows if all(r.get(k) == v for k, v in act.filters)]
    cpages = pages(len(crows), page_size(act.ctool))
    ppages = 0
    if act.owner is not None and act.owner.sel is not None:
        ppages = pages(len(view.rows(act.owner.entity)), page_size(act.owner.sel.tool))
    writes = len(done) + len(refused) + (len(done) if act.note_done() else 0)
    writes += len(refused) if act.note_refused() else 0
    constraints = [c for c in (act.sel.condition, act.owner.sel.condition if act.owner and act.owner.sel else None)]
    stated = [f"{c.field} {c.op}" for c in constraints if c is not None]
    if not act.recover and act.move.from_values is not None:
        stated.append(f"{act.move.field} in {'/'.join(act.move.from_values)}")
    if act.branch is not None:
        stated.append(f"branch {act.branch[0].field} {act.branch[0].op}")
    if act.sel.status is not None:
        stated.append("status rule")
    stats = {
        "calls": cpages + ppages + writes,
        "pages": max(cpages, ppages),
        "done": len(done),
        "refused": len(refused),
        "distractors": near,
        "constraints": stated,
        "obscured": act.owner is None or act.owner.sel is not None,
    }
    return replace(act, stats=stats)


def stats_short(stats: dict[str, Any], knobs: Knobs) -> int:
    """How many knobs a draft's expected stats (calls, pages, constraints, obscured, distractors, refused)
    stay below (0: it meets them all)."""
    reached = Difficulty(
        pages=stats["pages"],
        constraints=list(stats["constraints"]),
        obscured=bool(stats["obscured"]),
        distractors=stats["distractors"],
        recovery=stats["refused"],
    )
    return len(reached_shortfalls(stats["calls"], reached, knobs))


def short_of(act: Act, knobs: Knobs) -> int:
    """How many knobs an act stays below (0: it meets them all)."""
    return stats_short(act.stats, knobs)


def ranked(acts: list[Act], knobs: Knobs, rng: random.Random, k: int = 12) -> list[Act]:
    """`k` acts, those meeting the most knobs first (random among equals)."""
    acts = list(acts)
    rng.shuffle(acts)
    deep = 1.5 * knobs.chain_length  # well past the floor: the deepest acts first, among those meeting the knobs
    acts.sort(key=lambda a: (short_of(a, knobs), a.stats["calls"] < deep))
    return acts[:k]


def difficulty(act: Act) -> Difficulty:
    s = act.stats
    return Difficulty(
        chain_length=3,
        constraints=list(s["constraints"]),
        obscured=bool(s["obscured"]),
        distractors=int(s["distractors"]),
        recovery=int(s["refused"]),
    )


def owners(view: EnvView, child: EntitySpec, rng: random.Random, knobs: Knobs) -> list[Owner | None]:
    """The ways an act may pick its rows' parents: none, parents matching a condition, or (when the knobs ask
    for no pages nor obscuring) one parent named by id and read through the list tool's filter."""
    out: list[Owner | None] = [None]
    listed = {e.name: t for e, t in view.listable()}
    for f in child.fields:
        parent = view.entity(f.references.split(".")[0]) if f.references else None
        if parent is None or parent.name == child.name or parent.name not in listed:
            continue
        prows = view.rows(parent)
        for cond in conditions(parent, prows, rng)[:6]:
            if cond.field.endswith("_id"):
                continue
            sel = Selection(
                parent,
                listed[parent.name],  # type: ignore[arg-type]
                replace(cond, label=label(field_of(parent, cond.field))),
                scope=view.scope(parent),
                args=view.scope_args(parent),
            )
            out.append(Owner(parent, f.name, sel=sel))
        if not knobs.obscured:
            ctool = view.list_tool(child)
            filtered = ctool is not None and knobs.pages <= 1 and f.name in (ctool.parameters.get("properties") or {})
            counts: dict[Any, int] = {}
            for r in view.rows(child):
                counts[r.get(f.name)] = counts.get(r.get(f.name), 0) + 1
            for pid, c in sorted(counts.items(), key=lambda kv: -kv[1])[:3]:
                if pid is not None and c >= 2:
                    out.append(Owner(parent, f.name, pid=pid, filtered=filtered))
    return out


def child_conditions(
    view: EnvView, child: EntitySpec, exclude: tuple[str, ...], rng: random.Random
) -> list[Condition | None]:
    conds: list[Condition | None] = [None]
    for c in conditions(child, view.rows(child), rng, exclude=exclude):
        if not c.field.endswith("_id"):
            conds.append(replace(c, label=label(field_of(child, c.field))))  # type: ignore[arg-type]
    return conds


def writer(act: Act, answer: str) -> Any:
    """The gold program of `act` for the selections given (the act's own, or another reading's).

    `answer`: "count" (rows changed), "refused" (ids the move refused), "split" ({new status: rows}). A recovering
    act answers "count" as {"changed": rows changed, "refused": ids} and "split" as {"moved": split, "refused": ids}.
    """

    def write(selections: tuple[Selection, ...]) -> str:
        if len(selections) == 2:
            psel, csel = selections
        else:
            psel, (csel,) = None, selections
        owner, key = act.owner, act.child.primary_key
        lines = []
        tests = [f"({csel.code()})"]
        filters = dict(act.filters)
        if owner is not None and psel is not None:
            lines.append(
                f"wanted = {{p[{owner.entity.primary_key!r}] for p in {psel.fetch(page_size(psel.tool))} "
                f"if {psel.code('p')}}}"
            )
            tests.insert(0, f"row.get({owner.fk!r}) in wanted")
        elif owner is not None:
            if owner.filtered:
                filters[owner.fk] = owner.pid
            else:
                tests.insert(0, f"row.get({owner.fk!r}) == {owner.pid!r}")
        fetch = csel.fetch(page_size(csel.tool))
        if filters:
            fetch = fetch[:-1] + "".join(f", {k}={v!r}" for k, v in filters.items()) + ")"
        lines += [
            "done, refused = [], []",
            "split = {}",
            f"for row in {fetch}:",
            f"    if not ({' and '.join(tests)}):",
        ]
        lines.append("        continue")
        moves_ = [act.move] + ([act.branch[1]] if act.branch else [])
        if act.branch is not None:
            lines.append(f"    move = 1 if ({act.branch[0].code()}) else 0")
        else:
            lines.append("    move = 0")
        if not act.recover:
            allowed = " or ".join(f"(move == {i} and {m.allowed_code()})" for i, m in enumerate(moves_))
            lines += [f"    if not ({allowed}):", "        continue"]
        for i, m in enumerate(moves_):
            args = ", ".join([f"{act.child.name}_id=row[{key!r}]", *(f"{k}={v!r}" for k, v in m.extra)])
            lines.append(f"    {'if' if i == 0 else 'elif'} move == {i}:")
            lines.append(f"        result = tools.{m.tool.name}({args})")
        lines.append("    if isinstance(result, dict) and 'error' in result:")
        if act.recover:
            lines.append(f"        refused.append(row[{key!r}])")
            if act.note is not None and act.note_refused():
                lines.append(f"        {act.note.code(key, NOTE_REFUSED)}")
            lines.append("        continue")
        else:
            lines.append("        _ok(result)")
        if act.note is not None and act.note_done():
            lines.append(f"    {act.note.code(key, NOTE_TEXT)}")
        targets = [m.to_value for m in moves_]
        lines += [
            f"    done.append(row[{key!r}])",
            f"    to = {targets!r}[move]",
            "    split[to] = split.get(to, 0) + 1",
        ]
        returns = {"count": "len(done)", "refused": "sorted(refused)", "split": "split"}
        if act.recover:
            returns.update(
                count="{'changed': len(done), 'refused': sorted(refused)}",
                split="{'moved': split, 'refused': sorted(refused)}",
            )
        lines.append(f"return {returns[answer]}")
        return program("\n".join(lines))

    return write


def where(act: Act) -> str:
    """Which rows, in words: 'orders whose total is above 100 belonging to the customers whose tier is "gold"'."""
    said = [words(act.child.table)]
    if act.sel.condition is not None:
        said.append(act.sel.condition.phrase())
    if act.owner is not None:
        said.append(f"belonging to {act.owner.phrase()}")
    out = " ".join(said)
    if act.sel.status is not None:
        out += f", {act.sel.status.phrase()}"
    return out


def build(view: EnvView, rng: random.Random, mode: str, recover: bool = False) -> list[Act]:
    """Every scored act of one kind on this environment: "move", "notify", "branch" or "recover".

    `recover`: the "move", "notify" and "branch" acts that try every row and meet refusals (what the recovery
    knob asks for): a refused row is left as it is and reported, and a note on it is the fallback."""
    knobs = view.knobs
    recover = recover or mode == "recover"
    out: list[Act] = []
    for child, ctool in view.listable():
        note = note_for(view, child)
        if mode == "notify" and note is None:
            continue
        all_moves = moves(view, child)
        for move in all_moves:
            if recover and move.from_values is None:
                continue
            others = [
                m
                for m in all_moves
                if m.field == move.field and m.to_value != move.to_value and m.from_values == move.from_values
            ]
            if mode == "branch" and not others:
                continue
            conds = child_conditions(view, child, (move.field,), rng)
            for owner in owners(view, child, rng, knobs):
                for cond in conds:
                    if owner is None and cond is None:
                        continue
                    sel = Selection(
                        child, ctool, cond, settled=(move.field,), scope=view.scope(child), args=view.scope_args(child)
                    )
                    branches: list[tuple[Condition, Move] | None] = [None]
                    if mode == "branch":
                        branches = [
                            (c, m)
                            for c in conds
                            if c is not None and (cond is None or c.field != cond.field)
                            for m in others
                        ][:4]
                    for branch in branches:
                        act = Act(
                            child,
                            ctool,
                            move,
                            sel,
                            owner=owner,
                            note=note if mode in ("notify", "recover") else None,
                            recover=recover,
                            notify=recover and mode == "notify",
                            branch=branch,
                        )
                        picked = [r for r in view.rows(child) if sel.test(r)]
                        act = replace(act, sel=sel.ruled(picked, rng))
                        if owner is not None and owner.sel is not None:
                            prows = [p for p in view.rows(owner.entity) if owner.sel.test(p)]
                            act = replace(act, owner=replace(owner, sel=owner.sel.ruled(prows, rng)))
                        scored = score(view, act)
                        if scored is None and act.note is not None and mode == "recover":
                            scored = score(view, replace(act, note=None))  # no fallback note where it is refused
                        if scored is not None:
                            out.append(scored)
    return out


def scoped(act: Act, scope: str) -> str:
    """The rows and the move's scope: "issues whose type is "bug" and whose status is "open"."""
    return (
        f"{where(act)} and {scope}"
        if act.sel.condition is not None or act.owner is not None
        else f"{where(act)} {scope}"
    )


def acts_for(view: EnvView, rng: random.Random, mode: str) -> list[Act]:
    """The acts a family draws from, best first: those that meet refusals too when the recovery knob asks."""
    acts = build(view, rng, mode)
    if view.knobs.recovery >= 1:
        acts += build(view, rng, mode, recover=True)
    return ranked(acts, view.knobs, rng)


REFUSALS = (
    "The system may refuse the change for some of them; leave any refused one as it is and carry on with the rest."
)


def pages_hint(act: Act, knobs: Knobs) -> str:
    return " Check every page of the listings, not only the first." if knobs.pages > 1 else ""


def act_draft(family: str, act: Act, question: str, answer: str, capabilities: list[str]) -> Draft:
    """The draft of an act: its gold answers `answer` ("count", "split", "refused"), and an act that meets
    refusals has the "recovery" capability."""
    write = writer(act, answer)
    if act.recover and "recovery" not in capabilities:
        capabilities = [*capabilities, "recovery"]
    return Draft(
        family=family,
        question=question,
        program=write(act.selections()),
        capabilities=capabilities,
        difficulty=difficulty(act),
        mutates=True,
        selections=act.selections(),
        write=write,
    )
