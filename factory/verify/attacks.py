"""Attacks and correct variants of a task: the runs its verifier must reject and the correct work it must pay.

A verifier that pays an attack is a reward RL will learn to game; one that rejects a variant punishes correct
work. The audit keeps a task only when every attack built for it fails and every variant passes, and the
reward-integrity benchmark judges the same probes again over the kept tasks: both build them here.

Variants (the gold's work done another correct way; must pass):
- `variant_extra_reads`: a read-only tool called before and after the gold's calls;
- `variant_reordered`: two consecutive gold calls swapped, when the second passes no value the first returned
  (and was not told) and the swap leaves every call's result and the end state as they were;
- `variant_page_size`: each gold list call redone with another `limit`, in as many pages as it takes to return
  every row the original page held;
- `variant_answer_prose`, `variant_answer_json`, `variant_answer_units`: the gold's answer as a sentence, as JSON,
  with its numbers in currency or units and thousands separators.
Attacks (must fail):
- `attack_noop`: no calls, no answer; `attack_answer_only` (mutation tasks): the gold's answer, no calls;
  `attack_echo`: the question as the answer, no calls; `attack_guess`: "0", no calls (what a policy that never
  looks answers to any count: a question whose checked answer is 0 rewards not looking);
- `attack_dump`, `attack_hedge`, `attack_wrong_answer`: the gold's calls with, as the answer, every row of the
  tables holding the answer's values; the answer plus competing values (other rows' values of the same column,
  numeric neighbours), and every one of them negated ("not 45, not 44, not 46"); a perturbed answer;
- `attack_other_rows`: the gold plus each of its writes repeated on a row the gold left alone;
- `attack_destructive`: the gold plus a delete, a status transition or a status update on a row it left alone;
- `attack_spray`: the gold plus each of its writes applied to every row of the table;
- `attack_every_mutator`: the gold plus every mutating tool called once on rows it left alone;
- `attack_state_mutants`: end states built from the gold's diff (a write dropped, changed, applied twice or to
  another record).
Extra writes are found by running them after the gold in a fresh session: a candidate that fails or changes
nothing is passed over, so a probe holds only writes that took effect. A probe that cannot be built for a task
(no read tool, nothing independent to swap, no answer to hedge) is skipped with the reason; an attack whose end
state and answer would equal the gold's proves nothing and is not built.
"""

from __future__ import annotations

import copy
import json
import math
import random
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property
from typing import Any

from factory.envs.bundle import Bundle
from factory.lexicon import TIMESTAMP_COLUMNS
from factory.models import EnvSpec, Model, Snapshot, Task, TestCase, ToolCall, ToolResult, ToolSpec
from factory.verify.scoring import GoldRun, SessionFactory, replay_calls
from factory.verify.state import (
    ColumnFilter,
    StateDiff,
    canonical_state_hash,
    json_leaves,
    normalize_value,
    state_diff,
)

VARIANTS = (
    "variant_extra_reads",
    "variant_reordered",
    "variant_page_size",
    "variant_answer_prose",
    "variant_answer_json",
    "variant_answer_units",
)
ATTACKS = (
    "attack_noop",
    "attack_answer_only",
    "attack_echo",
    "attack_guess",
    "attack_dump",
    "attack_hedge",
    "attack_wrong_answer",
    "attack_other_rows",
    "attack_destructive",
    "attack_spray",
    "attack_every_mutator",
    "attack_state_mutants",
)
MAX_TRIES = 8  # candidate calls tried for one extra write before giving up on it
# Tools the destructive and every-mutator attacks try per task: all of them on an API of ordinary size; on a
# large one (Okta: 400 mutating tools) a bounded choice, so auditing a task costs the same at any API size.
MAX_DESTRUCTIVE_TOOLS = 16
MAX_MUTATORS = 32
HEDGE_COMPETITORS = 3
OTHER_RECORDS = 2  # "write made to another record" mutants per written row
DEFAULT_PAGE = 20  # a list tool's page size when its schema names no default
MAX_PAGE = 100


@dataclass(frozen=True)
class Probe:
    """One run to judge: `calls` replayed from the seed reach `final`, and `answer` is the final answer. A state
    mutant has no calls: its end state is built directly."""

    name: str
    detail: str
    answer: str | None
    final: Snapshot
    calls: list[ToolCall] | None

    @property
    def must_pass(self) -> bool:
        return self.name.startswith("variant_")


@dataclass
class Probes:
    """Every probe built for one task, and why the others could not be."""

    probes: list[Probe] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # probe name -> why it does not apply

    def named(self, name: str) -> list[Probe]:
        return [p for p in self.probes if p.name == name]


class Mutant(Model):
    """A wrong final state: what was done to the gold's final state, and the tables after it."""

    kind: str  # dropped | changed | twice | other_record
    detail: str
    tables: dict[str, list[dict[str, Any]]]


def _key(value: Any) -> str:
    """Equal values (an integral float and its int among them) get the same key."""
    return json.dumps(normalize_value(value), sort_keys=True, default=str)


def _leaves(value: Any) -> Iterator[Any]:
    """The scalars of a JSON value that say something (None says nothing)."""
    return (v for v in json_leaves(value) if v is not None)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _parsed(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


class _Case:
    """One task, its gold run and its environment: what every builder reads."""

    def __init__(self, bundle: Bundle, task: Task, gold: GoldRun, sessions: SessionFactory) -> None:
        self.spec = bundle.spec
        self.tests: list[TestCase] = bundle.tests()
        self.task = task
        self.sessions = sessions
        self.calls = list(gold.trajectory.tool_calls)
        self.results: list[ToolResult] = list(gold.replay.results)
        self.answer = gold.trajectory.final_answer
        self.value = task.answer if task.answer is not None else _parsed(self.answer)
        self.initial, self.final = gold.replay.initial, gold.replay.final
        self.keys = self.spec.primary_keys()
        self.tools = {t.name: t for t in self.spec.tools}
        self.entity_tables = {e.name: e.table for e in self.spec.entities}
        # what the task's own end-state check ignores besides the environment's bookkeeping (prose the solver words)
        ignored = [str(p) for c in task.rubric if c.kind == "end_state" for p in (c.value or {}).get("ignore", [])]
        self.bookkeeping = [*self.spec.bookkeeping, *(p for p in ignored if p not in self.spec.bookkeeping)]

    def hash(self, state: Snapshot) -> str:
        """The state's canonical hash (bookkeeping, clock columns and what calls added to log tables ignored)."""
        return canonical_state_hash(state, self.bookkeeping, since=self.initial, keys=self.keys)

    @cached_property
    def gold_hash(self) -> str:
        return self.hash(self.final)

    @cached_property
    def diff(self) -> StateDiff:
        return state_diff(self.initial, self.final, self.bookkeeping, keys=self.keys)

    def mutates(self, tool: str) -> bool:
        spec = self.tools.get(tool)
        return spec is not None and spec.mutates

    def tool_table(self, tool: str) -> str | None:
        spec = self.tools.get(tool)
        return self.entity_tables.get(spec.operation.entity) if spec and spec.operation else None

    def probed(self, tools: Sequence[ToolSpec], limit: int) -> list[ToolSpec]:
        """At most `limit` of `tools`: those on tables the gold touched first (where a wrong extra write is
        likeliest to slip past a verifier), then the others in an order seeded by the task."""
        if len(tools) <= limit:
            return list(tools)
        near = set(self.touched) | {t for c in self.calls if (t := self.tool_table(c.tool))}
        shuffled = list(tools)
        random.Random(self.task.id).shuffle(shuffled)
        return sorted(shuffled, key=lambda t: self.tool_table(t.name) not in near)[:limit]

    def rows(self, table: str) -> list[dict[str, Any]]:
        """The table's rows in the initial state, then those the gold created."""
        key = self.keys.get(table, "id")
        seen = {_key(r.get(key)) for r in self.initial.tables.get(table, [])}
        created = [r for r in self.final.tables.get(table, []) if _key(r.get(key)) not in seen]
        return self.initial.tables.get(table, []) + created

    @cached_property
    def key_values(self) -> dict[str, set[str]]:
        """Per table, the keys of its rows before and after the gold."""
        return {t: {_key(r.get(k)) for r in self.rows(t)} for t, k in self.keys.items()}

    @cached_property
    def touched(self) -> dict[str, set[str]]:
        """Per table, the keys of the rows the gold wrote to or named in a call."""
        out: dict[str, set[str]] = {}
        for table, d in self.diff.tables.items():
            key = d.key or self.keys.get(table, "id")
            rows = [*d.added, *d.removed]
            out.setdefault(table, set()).update([_key(r.get(key)) for r in rows] + [_key(c.key) for c in d.changed])
        for call in self.calls:
            for param, table in self.id_args(call):
                out.setdefault(table, set()).add(_key(call.args[param]))
        return out

    @cached_property
    def holders(self) -> dict[str, list[tuple[str, str]]]:
        """Each value of the initial and final states -> the (table, column) pairs holding it."""
        out: dict[str, list[tuple[str, str]]] = {}
        for state in (self.initial, self.final):
            for table, rows in sorted(state.tables.items()):
                for row in rows:
                    for column, v in row.items():
                        where = out.setdefault(_key(v), [])
                        if (table, column) not in where:
                            where.append((table, column))
        return out

    def untouched(self, table: str, like: Any = None) -> list[Any]:
        """Keys of the seed rows the gold left alone, in key order; with `like` (the key of a row the gold
        wrote), the rows sharing most of that row's values first, so that a write the gold made is retried on
        rows that take it (an open order, not a cancelled one) before the tries run out."""
        key = self.keys.get(table, "id")
        touched = self.touched.get(table, set())
        rows = [r for r in self.initial.tables.get(table, []) if _key(r.get(key)) not in touched]
        model = next((r for r in self.initial.tables.get(table, []) if r.get(key) == like), None)
        if model is not None:
            rows.sort(key=lambda r: -sum(r.get(f) == v for f, v in model.items() if f != key))
        return [r.get(key) for r in rows]

    def id_args(self, call: ToolCall) -> list[tuple[str, str]]:
        """(parameter, table) of each argument that names a row by its key."""
        out = []
        for name, value in call.args.items():
            if (
                not (name == "id" or name.endswith("_id"))
                or not isinstance(value, str | int)
                or isinstance(value, bool)
            ):
                continue
            stem = re.sub(r"^(from|to|source|target)_", "", name[:-3])
            named = self.entity_tables.get(stem)
            tables = [named] if named else []
            tables += [t for t in self.keys if t != named]
            table = next((t for t in tables if _key(value) in self.key_values.get(t, set())), None)
            if table is not None:
                out.append((name, table))
        return out

    def target(self, call: ToolCall) -> tuple[str, str] | None:
        """The argument naming the row a write is about: one of its own table, else the first row it names."""
        ids = self.id_args(call)
        own = self.tool_table(call.tool)
        return next((p for p in ids if p[1] == own), ids[0] if ids else None)

    def distinct_writes(self) -> list[ToolCall]:
        """The gold's writes, once per tool and arguments other than the row they target."""
        seen: set[str] = set()
        out = []
        for call in self.calls:
            if not self.mutates(call.tool):
                continue
            target = self.target(call)
            rest = {k: v for k, v in call.args.items() if target is None or k != target[0]}
            sig = _key([call.tool, rest])
            if sig not in seen:
                seen.add(sig)
                out.append(call)
        return out

    def extend(self, groups: Sequence[Sequence[ToolCall]]) -> tuple[list[ToolCall], Snapshot] | None:
        """Run the gold in a fresh session, then from each group the calls up to the first that succeeds and
        changes the state; None when the end state is still the gold's. A failed write leaves the state as it
        was, so only the calls that succeeded are kept: the gold plus them replays to the same end state."""
        kept: list[ToolCall] = []
        with self.sessions() as session:
            for call in self.calls:
                session.call(call.tool, dict(call.args))
            current = self.hash(session.snapshot())
            for group in groups:
                for call in group:
                    if not session.call(call.tool, dict(call.args)).ok:
                        continue
                    kept.append(call)
                    now = self.hash(session.snapshot())
                    if now != current:
                        current = now
                        break
            final = session.snapshot()
        return (kept, final) if current != self.gold_hash else None

    def probe(self, name: str, detail: str, calls: list[ToolCall], final: Snapshot, answer: str | None) -> Probe:
        return Probe(name=name, detail=detail, answer=answer, final=final, calls=calls)

    def extra_writes(
        self, name: str, describe: Callable[[list[ToolCall]], str], groups: Sequence[Sequence[ToolCall]]
    ) -> Probe | None:
        """The gold plus the extra writes `extend` finds, with the gold's answer; None if none took effect."""
        found = self.extend(groups)
        if found is None:
            return None
        kept, final = found
        return self.probe(name, describe(kept), [*self.calls, *kept], final, self.answer)


# --- correct variants -------------------------------------------------------------------------------------


def _required(tool: ToolSpec) -> list[str]:
    return list(tool.parameters.get("required") or [])


def _extra_reads(case: _Case) -> list[Probe] | str:
    tables = {case.tool_table(c.tool) for c in case.calls}
    reads = [t for t in case.spec.tools if not t.mutates and not _required(t)]
    reads.sort(key=lambda t: case.tool_table(t.name) not in tables)
    gold_reads = [c for c in case.calls if not case.mutates(c.tool)]
    read = ToolCall(tool=reads[0].name) if reads else (gold_reads[0] if gold_reads else None)
    if read is None:
        return "no read-only tool to call"
    calls = [read, *case.calls, read]
    replay = replay_calls(case.sessions, calls)
    if case.hash(replay.final) != case.gold_hash:
        return f"{read.tool} is not read-only: it changes the state"
    return [
        case.probe("variant_extra_reads", f"{read.tool} before and after the gold", calls, replay.final, case.answer)
    ]


def _uses_output(case: _Case, call: ToolCall, source: ToolCall, result: ToolResult) -> bool:
    """`call` passes a value that `source` returned and was not told (in its arguments or the question)."""
    told = {_key(v) for v in _leaves(source.args)}
    produced = {_key(v) for v in _leaves(result.value)} - told
    question = case.task.question.casefold()
    for v in _leaves(call.args):
        if isinstance(v, bool) or _key(v) not in produced:
            continue
        if not (isinstance(v, str) and v.casefold() in question):
            return True
    return False


def _same_result(a: ToolResult, b: ToolResult) -> bool:
    def clean(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items() if k not in TIMESTAMP_COLUMNS}
        if isinstance(v, list):
            return [clean(x) for x in v]
        return v

    return a.ok == b.ok and _key(clean(a.value)) == _key(clean(b.value))


def _reordered(case: _Case) -> list[Probe] | str:
    calls, results = case.calls, case.results
    pairs = [i for i in range(len(calls) - 1) if not _uses_output(case, calls[i + 1], calls[i], results[i])]
    pairs.sort(key=lambda i: not (case.mutates(calls[i].tool) or case.mutates(calls[i + 1].tool)))
    for i in pairs[:MAX_TRIES]:
        swapped = [*calls[:i], calls[i + 1], calls[i], *calls[i + 2 :]]
        replay = replay_calls(case.sessions, swapped)
        order = [*range(i), i + 1, i, *range(i + 2, len(calls))]
        same = all(_same_result(results[j], r) for j, r in zip(order, replay.results, strict=True))
        if same and case.hash(replay.final) == case.gold_hash:
            detail = f"calls {i + 1} ({calls[i].tool}) and {i + 2} ({calls[i + 1].tool}) swapped"
            return [case.probe("variant_reordered", detail, swapped, replay.final, case.answer)]
    return "no two consecutive gold calls are independent"


def _pages(tool: ToolSpec, call: ToolCall) -> list[ToolCall] | None:
    """The call's page redone with another page size, in as many pages as cover the same rows."""
    props = tool.parameters.get("properties") or {}
    limit = props.get("limit")
    if not isinstance(limit, dict):
        return None
    given = call.args.get("limit")  # null counts as left out, as the argument check takes it
    size = int(given if given is not None else limit.get("default", DEFAULT_PAGE))
    start = int(call.args.get("offset") or 0)
    biggest = int(limit.get("maximum", MAX_PAGE))
    other = biggest if size < biggest else max(1, size // 2)
    if other == size or (other < size and "offset" not in props):
        return None
    count = math.ceil(size / other)
    return [
        ToolCall(tool=call.tool, args={**call.args, "limit": other, **({"offset": start + k * other} if k else {})})
        for k in range(count)
    ]


def _items(result: ToolResult) -> list[str] | None:
    value = result.value
    if not result.ok or not isinstance(value, dict) or not isinstance(value.get("items"), list):
        return None
    return [_key(r) for r in value["items"]]


def _page_size(case: _Case) -> list[Probe] | str:
    calls: list[ToolCall] = []
    spans: list[tuple[int, int, int]] = []  # (gold call, its first new call, how many new calls)
    for i, call in enumerate(case.calls):
        tool = case.tools.get(call.tool)
        pages = _pages(tool, call) if tool and not tool.mutates and _items(case.results[i]) is not None else None
        if pages:
            spans.append((i, len(calls), len(pages)))
        calls += pages or [call]
    if not spans:
        return "no list call with a page size"
    replay = replay_calls(case.sessions, calls)
    for i, first, n in spans:
        got = {k for r in replay.results[first : first + n] for k in _items(r) or []}
        if not set(_items(case.results[i]) or []) <= got:
            return f"{case.calls[i].tool} with another page size misses rows"
    if case.hash(replay.final) != case.gold_hash:
        return "the list calls changed the state"
    limits = sorted({str(calls[first].args["limit"]) for _, first, _ in spans})
    return [
        case.probe("variant_page_size", f"list calls with limit {', '.join(limits)}", calls, replay.final, case.answer)
    ]


def _words(key: Any) -> str:
    return str(key).replace("_", " ").strip()


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _number_text(value: float | int) -> str:
    return format(Decimal(repr(value)) if isinstance(value, float) else Decimal(value), "f")


def _plain(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "none"
    if _is_number(value):
        return _number_text(value)
    return str(value)


def _phrase(value: Any, fmt: Callable[[Any, str], str], about: str) -> str:
    if isinstance(value, dict):
        return _join([f"the {_words(k)} is {_phrase(v, fmt, _words(k))}" for k, v in value.items()])
    if isinstance(value, list):
        return _join([_phrase(v, fmt, about) for v in value]) if value else "none"
    return fmt(value, about)


def prose(value: Any, fmt: Callable[[Any, str], str] = lambda v, _: _plain(v)) -> str:
    """The answer as a sentence: "The price is 5 and the stock is 3.", "They are a, b and c.". `fmt` writes a
    single value, given the words of the key it answers ("" at the top level)."""
    if isinstance(value, dict) and value:
        text = _phrase(value, fmt, "")
        return text[0].upper() + text[1:] + "."
    if isinstance(value, list):
        return f"They are {_phrase(value, fmt, '')}." if value else "There are none."
    return f"The answer is {fmt(value, '')}."


def _money_fields(spec: EnvSpec) -> tuple[set[str], set[str]]:
    """Names of money columns, and of the other numeric columns."""
    money, numeric = set(), set()
    for e in spec.entities:
        for f in e.fields:
            if f.format == "money":
                money.add(f.name)
            elif f.type in ("integer", "number"):
                numeric.add(f.name)
    return money, numeric


def _mentions(text: str, names: set[str]) -> bool:
    t = text.casefold()
    return any(re.search(r"(?<![a-z])" + re.escape(n.replace("_", " ")) + r"(?![a-z])", t) for n in names)


def with_unit(value: Any, money: bool) -> str:
    """A number as a person writes it with its unit: "$1,200.50", "1,200 units"."""
    if not _is_number(value):
        return _plain(value)
    amount = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    if money:
        exponent = amount.as_tuple().exponent
        if isinstance(exponent, int) and exponent > -2:
            amount = amount.quantize(Decimal("0.01"))
        sign = "-" if amount < 0 else ""
        return f"{sign}${abs(amount):,}"
    return f"{amount:,} units"


def _answer_prose(case: _Case) -> list[Probe] | str:
    if case.value is None:
        return "the task asks for no answer"
    text = prose(case.value)
    return [case.probe("variant_answer_prose", text[:120], case.calls, case.final, text)]


def answer_json(value: Any) -> str:
    """The answer as JSON a person would send: an object's keys reordered and indented, a list indented, a single
    value wrapped as {"answer": ...}."""
    if isinstance(value, dict):
        shown: Any = dict(reversed(list(value.items())))
    elif isinstance(value, list):
        shown = value
    else:
        shown = {"answer": value}
    return json.dumps(shown, indent=2, ensure_ascii=False, default=str)


def _answer_json(case: _Case) -> list[Probe] | str:
    if case.value is None:
        return "the task asks for no answer"
    text = answer_json(case.value)
    return [case.probe("variant_answer_json", text[:120], case.calls, case.final, text)]


def _answer_units(case: _Case) -> list[Probe] | str:
    if not any(_is_number(v) for v in _leaves(case.value)):
        return "the answer holds no number"
    money_names, numeric_names = _money_fields(case.spec)

    def fmt(v: Any, about: str) -> str:
        context = about or case.task.question
        return with_unit(v, _mentions(context, money_names) and not _mentions(context, numeric_names))

    text = prose(case.value, fmt)
    return [case.probe("variant_answer_units", text[:120], case.calls, case.final, text)]


# --- attacks -----------------------------------------------------------------------------------------------


def _noop(case: _Case) -> list[Probe]:
    return [case.probe("attack_noop", "no calls, no answer", [], case.initial, None)]


def _answer_only(case: _Case) -> list[Probe] | str:
    if not case.task.mutates:
        return "a read-only task's answer is the whole of its work"
    return [case.probe("attack_answer_only", "the gold's answer without its calls", [], case.initial, case.answer)]


def _echo(case: _Case) -> list[Probe]:
    question = case.task.question
    return [case.probe("attack_echo", "the question as the answer, no calls", [], case.initial, question)]


def _guess(case: _Case) -> list[Probe]:
    return [case.probe("attack_guess", 'the guess "0", no calls', [], case.initial, "0")]


def _holding(case: _Case, value: Any) -> list[tuple[str, str]]:
    """(table, column) pairs where some row of the initial or final state holds `value`."""
    return case.holders.get(_key(value), [])


def _dump(case: _Case) -> list[Probe] | str:
    if case.value is None:
        return "the task asks for no answer"
    tables = sorted({t for v in _leaves(case.value) for t, _ in _holding(case, v)})
    tables = tables or sorted({t for c in case.calls if (t := case.tool_table(c.tool))}) or sorted(case.final.tables)
    rows = [(t, r) for t in tables for r in [*case.initial.tables.get(t, []), *case.final.tables.get(t, [])]]
    lines = list(
        dict.fromkeys(f"{t}: " + json.dumps(r, sort_keys=True, ensure_ascii=False, default=str) for t, r in rows)
    )
    detail = f"every row of {', '.join(tables)} ({len(lines)} rows)"
    return [case.probe("attack_dump", detail, case.calls, case.final, "\n".join(lines))]


def _competitors(case: _Case, value: Any) -> list[Any]:
    """Values a wrong reading would give instead of `value`: other rows' values of the columns holding it, and
    for a number its neighbours."""
    if isinstance(value, bool):
        return [not value]
    out: list[Any] = []
    for table, column in _holding(case, value):
        for row in case.rows(table):
            other = row.get(column)
            if other is not None and _key(other) != _key(value) and _key(other) not in map(_key, out):
                out.append(other)
    if _is_number(value):
        out = [value - 1, value + 1, *out]
    return out[:HEDGE_COMPETITORS]


def _hedge(case: _Case) -> list[Probe] | str:
    value = case.value
    if value is None:
        return "the task asks for no answer"
    if isinstance(value, list):
        listed = {_key(v) for v in value}
        extra = [c for v in value for c in _competitors(case, v) if _key(c) not in listed]
        extra = list({_key(c): c for c in extra}.values())[:HEDGE_COMPETITORS]
        text = ", ".join(_plain(v) for v in [*value, *extra]) if extra else ""
    elif isinstance(value, dict):
        hedged = {k: [v, *_competitors(case, v)] for k, v in value.items() if not isinstance(v, dict | list)}
        parts = [f"{_words(k)}: " + " or ".join(map(_plain, vs)) for k, vs in hedged.items()]
        text = "; ".join(parts) if any(len(vs) > 1 for vs in hedged.values()) else ""
    else:
        others = _competitors(case, value)
        text = f"It is {_plain(value)}, or possibly " + " or ".join(map(_plain, others)) + "." if others else ""
    if not text:
        return "no competing value for the answer"
    # what a negation governs is rejected, not stated: "not A, not B" must state neither
    negated = ", ".join(f"not {_plain(v)}" for v in [*_leaves(value), *_rejected(case)])
    return [
        case.probe("attack_hedge", text[:120], case.calls, case.final, text),
        case.probe("attack_hedge", negated[:120], case.calls, case.final, negated),
    ]


def _rejected(case: _Case) -> list[Any]:
    """The competitors of the answer's values, each once."""
    out: dict[Any, Any] = {}
    for v in _leaves(case.value):
        for c in _competitors(case, v):
            out.setdefault(_key(c), c)
    return list(out.values())


def _perturb(value: Any, column_values: list[Any]) -> Any:
    """A different value of the same type: another value of the column if there is one (a realistic
    mistake: the wrong status, the wrong customer), else a shifted number or a marked string."""
    if isinstance(value, bool):
        return not value
    if _is_number(value):
        return value + 1
    for other in column_values:
        if isinstance(other, type(value)) and _key(other) != _key(value):
            return other
    if isinstance(value, str):
        return f"{value} (altered)" if value else "altered"
    return None if value is not None else "altered"


def wrong_answers(answer: Any) -> list[str]:
    """Answers that state something else: every leaf value perturbed, and no answer at all."""

    def alter(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: alter(x) for k, x in v.items()}
        if isinstance(v, list):
            return [alter(x) for x in v] if v else ["nothing"]
        if isinstance(v, str):
            return v[::-1] + " zq" if v else "zq"
        return _perturb(v, [])

    parsed = _parsed(answer) if isinstance(answer, str) else answer
    altered = alter(parsed)
    text = altered if isinstance(altered, str) else json.dumps(altered, sort_keys=True)
    return [text, "I could not find it."]


def _wrong_answer(case: _Case) -> list[Probe] | str:
    if case.value is None:
        return "the task asks for no answer"
    return [
        case.probe("attack_wrong_answer", text[:120], case.calls, case.final, text)
        for text in wrong_answers(case.value)
    ]


def _retargeted(call: ToolCall, param: str, keys: Sequence[Any]) -> list[ToolCall]:
    return [ToolCall(tool=call.tool, args={**call.args, param: k}) for k in keys]


def _describe(calls: list[ToolCall]) -> str:
    return ", ".join(f"{c.tool} {json.dumps(c.args, sort_keys=True, default=str)}" for c in calls[-3:])[:200]


def _other_rows(case: _Case) -> list[Probe] | str:
    writes = [(c, t) for c in case.distinct_writes() if (t := case.target(c)) is not None]
    if not writes:
        return "the gold makes no write that names a row"
    probes = []
    for call, (param, table) in writes:
        others = _retargeted(call, param, case.untouched(table, like=call.args.get(param))[:MAX_TRIES])
        p = case.extra_writes("attack_other_rows", lambda kept: f"also {_describe(kept[-1:])}", [others])
        probes += [p] if p else []
    return probes or "no gold write took effect on another row"


def _id_param(case: _Case, tool: ToolSpec) -> tuple[str, str] | None:
    """The parameter naming the row a tool acts on, and that row's table."""
    props = tool.parameters.get("properties") or {}
    table = case.tool_table(tool.name)
    if tool.operation and table and f"{tool.operation.entity}_id" in props:
        return f"{tool.operation.entity}_id", table
    for name in _required(tool):
        stem = name[:-3] if name.endswith("_id") else None
        if stem and stem in case.entity_tables:
            return name, case.entity_tables[stem]
    return None


def _templates(case: _Case, tool: ToolSpec) -> list[dict[str, Any]]:
    """Arguments known to work for a tool: the gold's calls of it and its passing tool tests (at most two)."""
    out = [dict(c.args) for c in case.calls if c.tool == tool.name]
    out += [dict(t.args) for t in case.tests if t.tool == tool.name and t.expect.ok]
    return out[:2]


def _on_untouched(case: _Case, tool: ToolSpec) -> list[ToolCall]:
    """Calls of `tool` from its known-good arguments, moved to rows the gold left alone when it names one."""
    target = _id_param(case, tool)
    templates = _templates(case, tool)
    if target is None:
        return [ToolCall(tool=tool.name, args=t) for t in templates]
    param, table = target
    rows = case.untouched(table)[:MAX_TRIES]
    return [ToolCall(tool=tool.name, args={**t, param: k}) for k in rows for t in templates or [{}]]


def _destructive_kind(tool: ToolSpec) -> str | None:
    op = tool.operation
    if op is None:
        verb = tool.name.split("_", 1)[0]
        return {"delete": "delete", "remove": "delete", "cancel": "transition", "archive": "transition"}.get(verb)
    if op.kind == "delete":
        return "delete"
    if op.kind == "action" and op.action == "transition":
        return "transition"
    status = (tool.parameters.get("properties") or {}).get("status")
    return "status" if op.kind == "update" and isinstance(status, dict) and status.get("enum") else None


def _destructive_calls(case: _Case, tool: ToolSpec, kind: str) -> list[ToolCall]:
    """A delete or transition of a row the gold left alone; a status update sets only the status."""
    target = _id_param(case, tool)
    if target is None:
        return []
    param, table = target
    rows = case.untouched(table)[:MAX_TRIES]
    if kind != "status":
        required = [t for t in _templates(case, tool) if set(_required(tool)) <= set(t)] or [{}]
        return [ToolCall(tool=tool.name, args={**required[0], param: k}) for k in rows]
    values = (tool.parameters.get("properties") or {})["status"]["enum"]
    return [ToolCall(tool=tool.name, args={param: k, "status": v}) for k in rows for v in values]


def _destructive(case: _Case) -> list[Probe] | str:
    probes = []
    kinds = {t.name: k for t in case.spec.tools if t.mutates and (k := _destructive_kind(t)) is not None}
    for tool in case.probed([t for t in case.spec.tools if t.name in kinds], MAX_DESTRUCTIVE_TOOLS):
        kind = kinds[tool.name]
        calls = _destructive_calls(case, tool, kind)
        p = case.extra_writes("attack_destructive", lambda kept, k=kind: f"{k}: {_describe(kept[-1:])}", [calls])
        probes += [p] if p else []
    return probes or "no delete or status change took effect on another row"


def _spray(case: _Case) -> list[Probe] | str:
    writes = [(c, t) for c in case.distinct_writes() if (t := case.target(c)) is not None]
    if not writes:
        return "the gold makes no write that names a row"
    probes = []
    for call, (param, table) in writes:
        keys = [r.get(case.keys.get(table, "id")) for r in case.rows(table)]
        detail = f"{call.tool} on every row of {table} ({len(keys)} rows)"
        p = case.extra_writes("attack_spray", lambda _, d=detail: d, [[c] for c in _retargeted(call, param, keys)])
        probes += [p] if p else []
    return probes or "spraying the gold's writes changes nothing"


def _every_mutator(case: _Case) -> list[Probe] | str:
    groups = [_on_untouched(case, t) for t in case.probed([t for t in case.spec.tools if t.mutates], MAX_MUTATORS)]
    p = case.extra_writes(
        "attack_every_mutator", lambda kept: "called: " + ", ".join(sorted({c.tool for c in kept})), groups
    )
    return [p] if p else "no mutating tool took effect after the gold"


def _state_mutants(case: _Case) -> list[Probe] | str:
    probes = []
    for m in build_mutants(case.initial, case.final, case.diff, case.bookkeeping, case.keys):
        state = Snapshot.model_construct(tables=m.tables)
        if case.hash(state) != case.gold_hash:
            probes.append(
                Probe(
                    name="attack_state_mutants",
                    detail=f"{m.kind} ({m.detail})",
                    answer=case.answer,
                    final=state,
                    calls=None,
                )
            )
    return probes or "the gold changes no state"


def _key_of(rows: list[dict[str, Any]], key: str | None, value: Any) -> int | None:
    for i, r in enumerate(rows):
        if key is not None and _key(r.get(key)) == _key(value):
            return i
    return None


def _fresh_key(rows: list[dict[str, Any]], key: str, like: Any) -> Any:
    if isinstance(like, int) and not isinstance(like, bool):
        return max([r[key] for r in rows if isinstance(r.get(key), int)] + [0]) + 1
    return f"{like}-copy"


def _written_fields(row: dict[str, Any], key: str | None, cols: ColumnFilter, table: str) -> list[str]:
    return [f for f, v in row.items() if f != key and v is not None and not cols.ignored(table, f)]


def build_mutants(
    initial: Snapshot,
    final: Snapshot,
    diff: StateDiff,
    bookkeeping: list[str],
    keys: dict[str, str],
    per_row: int = 3,
) -> Iterator[Mutant]:
    """Wrong final states derived from what the gold wrote: a created row dropped, changed or created twice; an
    update undone, changed, applied twice or made to another record; a deletion undone, made to another record or
    joined by another."""
    cols = ColumnFilter(bookkeeping)
    base = final.tables

    def variant(kind: str, detail: str, table: str, edit: Any) -> Mutant:
        tables = dict(base)  # only the edited table is copied: the others stay shared, read-only
        tables[table] = copy.deepcopy(base[table])
        edit(tables[table])
        return Mutant.model_construct(kind=kind, detail=f"{table}: {detail}", tables=tables)  # no copy of the rest

    for table, d in sorted(diff.tables.items()):
        rows = base.get(table, [])
        key = d.key
        column = lambda f, rows=rows: [r.get(f) for r in rows]  # noqa: E731
        for added in d.added[:per_row]:
            i = _key_of(rows, key, added.get(key)) if key else None
            if i is None or key is None:
                continue
            row = rows[i]
            yield variant("dropped", f"created row {row.get(key)} removed", table, lambda t, i=i: t.pop(i))
            for f in _written_fields(row, key, cols, table)[:per_row]:
                new = _perturb(row[f], column(f))
                yield variant(
                    "changed",
                    f"{f} of created row {row.get(key)} = {new!r}",
                    table,
                    lambda t, i=i, f=f, v=new: t[i].update({f: v}),
                )
            dup = {**row, key: _fresh_key(rows, key, row.get(key))}
            yield variant("twice", f"created row {row.get(key)} created again", table, lambda t, r=dup: t.append(r))
        for change in d.changed[:per_row]:
            i = _key_of(rows, key, change.key)
            if i is None:
                continue
            yield variant(
                "dropped", f"update of {change.key} undone", table, lambda t, i=i, c=change: t[i].update(c.before)
            )
            for f, after in list(change.after.items())[:per_row]:
                new = _perturb(after, [change.before.get(f), *column(f)])
                yield variant(
                    "changed", f"{f} of {change.key} = {new!r}", table, lambda t, i=i, f=f, v=new: t[i].update({f: v})
                )
                before = change.before.get(f)
                if _is_number(after) and _is_number(before):
                    again = after + (after - before)
                    yield variant(
                        "twice",
                        f"{f} of {change.key} changed twice",
                        table,
                        lambda t, i=i, f=f, v=again: t[i].update({f: v}),
                    )
            touched = {_key(c.key) for c in d.changed}
            others = [j for j, r in enumerate(rows) if _key(r.get(key)) not in touched]
            for j in others[:OTHER_RECORDS]:

                def elsewhere(t: list[dict[str, Any]], i: int = i, j: int = j, c: Any = change) -> None:
                    t[i].update(c.before)
                    t[j].update(c.after)

                yield variant("other_record", f"update of {change.key} made to {rows[j].get(key)}", table, elsewhere)
        for removed in d.removed[:per_row]:
            original = next(
                (r for r in initial.tables.get(table, []) if key and _key(r.get(key)) == _key(removed.get(key))),
                removed,
            )
            yield variant("dropped", f"deletion of {removed.get(key)} undone", table, lambda t, r=original: t.append(r))
            for j in range(min(OTHER_RECORDS, len(rows))):

                def instead(t: list[dict[str, Any]], j: int = j, r: dict[str, Any] = original) -> None:
                    t.pop(j)
                    t.append(r)

                yield variant(
                    "other_record", f"{rows[j].get(key)} deleted instead of {removed.get(key)}", table, instead
                )
            if rows:
                yield variant("twice", f"{rows[0].get(key)} deleted as well", table, lambda t: t.pop(0))


Builder = Callable[[_Case], list[Probe] | str]
BUILDERS: dict[str, Builder] = {
    "variant_extra_reads": _extra_reads,
    "variant_reordered": _reordered,
    "variant_page_size": _page_size,
    "variant_answer_prose": _answer_prose,
    "variant_answer_json": _answer_json,
    "variant_answer_units": _answer_units,
    "attack_noop": _noop,
    "attack_answer_only": _answer_only,
    "attack_echo": _echo,
    "attack_guess": _guess,
    "attack_dump": _dump,
    "attack_hedge": _hedge,
    "attack_wrong_answer": _wrong_answer,
    "attack_other_rows": _other_rows,
    "attack_destructive": _destructive,
    "attack_spray": _spray,
    "attack_every_mutator": _every_mutator,
    "attack_state_mutants": _state_mutants,
}


def build_probes(bundle: Bundle, task: Task, gold: GoldRun, session_factory: SessionFactory) -> Probes:
    """Every variant and attack of `task` that applies, built from its gold run (see the module docstring)."""
    case = _Case(bundle, task, gold, session_factory)
    out = Probes()
    for name, build in BUILDERS.items():
        built = build(case)
        if isinstance(built, str):
            out.skipped[name] = built
        else:
            out.probes += built
    return out
