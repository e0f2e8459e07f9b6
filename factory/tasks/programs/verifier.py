"""A program task's verifier: the answer module's and the program verifier's source with the gold's answer, its
competitors and its writes as EXPECTED."""

from __future__ import annotations

import ast
import inspect
import json
from collections.abc import Mapping
from functools import cache
from typing import Any

from factory.lexicon import TIMESTAMP_COLUMNS
from factory.models import EnvSpec
from factory.tasks.programs.view import Rows
from factory.verify import answers, program_verifier
from factory.verify.state import state_diff


@cache
def _verifier_module_source() -> str:
    """The modules a program verifier runs, in order, as one standard-library program."""
    return "\n\n".join(_without_project_imports(inspect.getsource(m)) for m in (answers, program_verifier))


def _without_project_imports(source: str) -> str:
    """`source` less its top-level imports from this project: the verifier holds those modules as source."""
    lines = source.splitlines(keepends=True)
    for node in reversed(ast.parse(source).body):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "factory":
            del lines[node.lineno - 1 : node.end_lineno]
    return "".join(lines)


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def _kind(value: Any) -> str | None:
    """What a competitor must share with the value it competes with: being text, or being a number."""
    if isinstance(value, str):
        return "text"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "number"
    return None


def competitors(answer: Any, initial: Mapping[str, Rows]) -> list[Any]:
    """Values a near-miss answer would state instead of the gold's: a number's neighbours (a count off by one),
    and the other values of each column of the initial state that holds a value (the other ids of its table,
    the other amounts of its column). Never one of the answer's own values."""
    own = [v for v in _leaves(answer) if _kind(v) is not None]
    near: list[Any] = []
    for value in own:
        if _kind(value) == "number":
            near += [value - 1, value + 1]
        for table in sorted(initial):
            rows = initial[table]
            columns = {k for r in rows for k, v in r.items() if v == value and _kind(v) == _kind(value)}
            near += [r.get(c) for c in sorted(columns) for r in rows]
    found: dict[str, Any] = {}
    for value in near:
        if _kind(value) is not None and not any(_kind(o) == _kind(value) and o == value for o in own):
            found.setdefault(json.dumps(value), value)
    return list(found.values())


def ignored_columns(spec: EnvSpec) -> list[str]:
    """fnmatch patterns "table.column" of what a state check ignores: bookkeeping and clock columns."""
    patterns = [p if "." in p else f"*.{p}" for p in spec.bookkeeping]
    return patterns + [f"*.{c}" for c in TIMESTAMP_COLUMNS]


def expected_changes(spec: EnvSpec, initial: dict[str, Rows], final: dict[str, Rows]) -> dict[str, dict[str, Any]]:
    """What the gold run wrote, per table: changed fields by key, rows added (without their key), keys removed."""
    keys = spec.primary_keys()
    touched = {t for t in set(initial) | set(final) if initial.get(t) != final.get(t)}  # the rest cannot differ
    diff = state_diff(
        {t: initial.get(t, []) for t in touched if t in initial},
        {t: final.get(t, []) for t in touched if t in final},
        bookkeeping=spec.bookkeeping,
        keys=keys,
    )
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
    task_id: str,
    spec: EnvSpec,
    answer: Any,
    tables: dict[str, dict[str, Any]],
    initial: Mapping[str, Rows],
    ordered: bool = False,
) -> str:
    """The code verifier of a program task: a self-contained program, so that it runs in the sandbox.

    The task's values travel as a JSON string literal (a repr, never code) assigned to EXPECTED after the
    verifier module's source; the task id is JSON-quoted in a comment, so no value can break out of either.
    """
    expected = {
        "answer": answer,
        "ordered": ordered,
        "competitors": competitors(answer, initial),
        "keys": spec.primary_keys(),
        "ignore": ignored_columns(spec),
        "tables": tables,
    }
    data = json.dumps(expected, sort_keys=True, default=str)
    return (
        f"# Verifier of program task {json.dumps(task_id)}\n"
        + _verifier_module_source()
        + f"\n\nEXPECTED = json.loads({data!r})\n"
    )
