"""Drafts: a family's proposed task before its gold has run, and the prelude every gold program starts with."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from factory.models import Difficulty
from factory.tasks.programs.conditions import Selection
from factory.tasks.programs.view import EnvView

PROPOSALS_PER_FAMILY = 24
MAX_WRITES = 12  # a task that would change more rows than this is not proposed

PRELUDE = '''def _all(fetch, page_size=None, **filters):
    """Every row a list tool returns, following next_offset page by page."""
    rows, offset = [], 0
    while offset is not None:
        args = dict(filters, offset=offset)
        if page_size is not None:
            args["limit"] = page_size
        page = fetch(**args)
        if not isinstance(page, dict) or "error" in page:
            raise RuntimeError(f"listing failed: {page}")
        rows.extend(page["items"])
        offset = page.get("next_offset")
    return rows


def _ok(result):
    """A write's result; a failed write stops the program."""
    if isinstance(result, dict) and "error" in result:
        raise RuntimeError(f"call failed: {result['error']}")
    return result
'''


def program(body: str) -> str:
    """A gold program: the prelude, then `solve(tools)` with `body` as its code."""
    return PRELUDE + "\n\ndef solve(tools):\n" + "".join(f"    {line}\n" if line else "\n" for line in body.split("\n"))


Writer = Callable[[tuple[Selection, ...]], str]


@dataclass
class Draft:
    """One proposed task before its gold has run.

    `selections` are the rows the gold reads, as the question words them, and `write` makes the gold for other
    selections: synthesis runs the readings the words leave open (a boundary row, voided rows, the list tool's
    own filter) and drops the draft when one of them gives another answer.
    """

    family: str
    question: str
    program: str
    capabilities: list[str]
    difficulty: Difficulty
    mutates: bool = False
    selections: tuple[Selection, ...] = ()
    write: Writer | None = None


Proposer = Callable[[EnvView, random.Random], Iterator[Draft]]


def limited(items: list[Any], rng: random.Random, k: int = PROPOSALS_PER_FAMILY) -> list[Any]:
    """A random `k` of a family's instances, so no family floods the proposals."""
    items = list(items)
    rng.shuffle(items)
    return items[:k]
