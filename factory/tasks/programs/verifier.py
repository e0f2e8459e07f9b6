"""A program task's verifier: the program verifier's source with the gold's answer and writes as its EXPECTED."""

from __future__ import annotations

import inspect
import json
from functools import cache
from typing import Any

from factory.lexicon import TIMESTAMP_COLUMNS
from factory.models import EnvSpec
from factory.tasks.programs.view import Rows
from factory.verify import program_verifier
from factory.verify.state import state_diff


@cache
def _verifier_module_source() -> str:
    return inspect.getsource(program_verifier)


def ignored_columns(spec: EnvSpec) -> list[str]:
    """fnmatch patterns "table.column" of what a state check ignores: bookkeeping and clock columns."""
    patterns = [p if "." in p else f"*.{p}" for p in spec.bookkeeping]
    return patterns + [f"*.{c}" for c in TIMESTAMP_COLUMNS]


def expected_changes(spec: EnvSpec, initial: dict[str, Rows], final: dict[str, Rows]) -> dict[str, dict[str, Any]]:
    """What the gold run wrote, per table: changed fields by key, rows added (without their key), keys removed."""
    keys = {e.table: e.primary_key for e in spec.entities}
    diff = state_diff(initial, final, bookkeeping=spec.bookkeeping, keys=keys)
    out: dict[str, dict[str, Any]] = {}
    for table, d in diff.tables.items():
        key = keys.get(table, d.key or "id")
        out[table] = {
            "changed": {str(c.key): c.after for c in d.changed},
            "added": [{k: v for k, v in r.items() if k != key} for r in d.added],
            "removed": [r.get(key) for r in d.removed],
        }
    return out


def verifier_source(
    task_id: str, spec: EnvSpec, answer: Any, tables: dict[str, dict[str, Any]], ordered: bool = False
) -> str:
    """The code verifier of a program task: a self-contained program, so that it runs in the sandbox.

    The task's values travel as a JSON string literal (a repr, never code) assigned to EXPECTED after the
    verifier module's source; the task id is JSON-quoted in a comment, so no value can break out of either.
    """
    expected = {
        "answer": answer,
        "ordered": ordered,
        "keys": {e.table: e.primary_key for e in spec.entities},
        "ignore": ignored_columns(spec),
        "tables": tables,
    }
    data = json.dumps(expected, sort_keys=True, default=str)
    return (
        f"# Verifier of program task {json.dumps(task_id)}\n"
        + _verifier_module_source()
        + f"\n\nEXPECTED = json.loads({data!r})\n"
    )
