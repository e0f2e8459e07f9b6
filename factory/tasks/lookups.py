"""Reads a released chain skips: the lookup a solver needs before the writes that use what it finds.

A verified chain of the release may write a value that no question states and no earlier call returns: its
author knew the project a parent task is in, or the data of the chart configuration a question names. A solver
has to look such a value up, so the gold does too: before the write, the first read tool whose required
arguments the chain passes elsewhere with values that are grounded there, and whose answer holds the value. A
value no such read finds stays ungrounded, and the filter drops the question with that reason.
"""

from __future__ import annotations

from typing import Any

from factory.models import EnvSpec, ToolCall
from factory.tasks.choices import Rebind
from factory.tasks.filter import Ungrounded, ungrounded_values, value_key, value_keys
from factory.verify.answers import answer_contains
from factory.verify.scoring import SessionFactory, replay_calls, replay_writes

MAX_LOOKUPS = 3
MAX_TRIED = 5  # values looked up per lookup added


def _grounded_args(chain: list[ToolCall], outputs: list[Any], question: str) -> dict[str, Any]:
    """Arguments the chain passes (by parameter name) whose values the question or an output before gives."""
    pool: dict[str, Any] = {}
    seen: set[tuple[str, Any]] = set()
    for call, output in zip(chain, outputs, strict=True):
        for name, value in call.args.items():
            if name not in pool and (answer_contains(question, value) or value_keys(value) <= seen):
                pool[name] = value
        seen |= value_keys(output)
    return pool


def _lookup(
    spec: EnvSpec, session_factory: SessionFactory, chain: list[ToolCall], missing: Ungrounded, question: str
) -> ToolCall | None:
    before = chain[: missing.call - 1]
    prefix = replay_calls(session_factory, before)
    pool = _grounded_args(before, [r.value if r.ok else None for r in prefix.results], question)
    stated = _grounded_args(chain, [None] * len(chain), question)  # the rest of the chain passes them too
    pool.update({k: v for k, v in stated.items() if k not in pool})
    want = value_key(missing.value)
    for tool in spec.tools:
        required = tool.parameters.get("required", [])
        if tool.mutates or not all(p in pool for p in required):
            continue
        call = ToolCall(tool=tool.name, args={p: pool[p] for p in required})
        result = replay_calls(session_factory, [*before, call]).results[-1]
        if result.ok and want in value_keys(result.value):
            return call
    return None


def with_lookups(
    spec: EnvSpec, session_factory: SessionFactory, chain: list[ToolCall], question: str, rebind: Rebind
) -> list[ToolCall]:
    """The chain with the reads it skips (see the module docstring), at most MAX_LOOKUPS of them; only a value
    the data holds can be looked up, the first MAX_TRIED of them each time. `rebind` gives the longer chain the
    ids its creates now draw (one more call before them, another id)."""
    for _ in range(MAX_LOOKUPS):
        replay, writes = replay_writes(session_factory, chain, spec.bookkeeping, spec.primary_keys())
        held = value_keys(replay.initial.tables)
        missing = [
            u
            for u in ungrounded_values(spec, question, chain, replay.results, writes=writes)
            if value_key(u.value) in held
        ]
        found = next(
            ((u, call) for u in missing[:MAX_TRIED] if (call := _lookup(spec, session_factory, chain, u, question))),
            None,
        )
        if found is None:
            break
        at = found[0].call - 1
        chain = rebind([*chain[:at], found[1], *chain[at:]])
    return chain
