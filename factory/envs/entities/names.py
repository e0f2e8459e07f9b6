"""Tool names read as verb + noun: `list_open_issues` -> ("list", ["issues"]), `issues_list` too."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from factory.lexicon import (
    AGGREGATE_VERBS,
    COMPOUND_WORDS,
    CREATE_VERBS,
    CUT_WORDS,
    DECREMENT_VERBS,
    DELETE_VERBS,
    DERIVED_CREATES,
    DUAL_VERBS,
    GET_VERBS,
    INCREMENT_VERBS,
    LEADING_FILLERS,
    LIST_VERBS,
    SEARCH_VERBS,
    TRAILING_AGGREGATE,
    TRAILING_FILLERS,
    TRAILING_LIST,
    TRANSFER_VERBS,
    TRANSITIONS,
    UPDATE_VERBS,
)
from factory.naming import split_words

ALL_VERBS = (
    LIST_VERBS
    | GET_VERBS
    | SEARCH_VERBS
    | CREATE_VERBS
    | set(DERIVED_CREATES)
    | UPDATE_VERBS
    | DELETE_VERBS
    | AGGREGATE_VERBS
    | INCREMENT_VERBS
    | DECREMENT_VERBS
    | TRANSFER_VERBS
    | DUAL_VERBS
    | set(TRANSITIONS)
)


@dataclass(frozen=True)
class ToolName:
    """A tool name read as verb + noun: `list_open_issues` -> ("list", ["issues"])."""

    verb: str | None
    noun: list[str]
    tail: list[str] = dataclasses.field(default_factory=list)  # words cut after "by/for/as...", e.g. mark_x_as_<state>
    trailing: str | None = None  # "list" or "aggregate" from list_orders_summary-like endings


def _merge_compounds(words: list[str]) -> list[str]:
    """Two-word verbs and states as one word: top up -> top_up, check in -> check_in."""
    merged: list[str] = []
    i = 0
    while i < len(words):
        pair = (words[i], words[i + 1]) if i + 1 < len(words) else None
        if pair in COMPOUND_WORDS:
            merged.append(COMPOUND_WORDS[pair])
            i += 2
        else:
            merged.append(words[i])
            i += 1
    return merged


def parse_tool_name(name: str) -> ToolName:
    """The first known verb, and the noun after it (before it when the verb ends the name)."""
    words = _merge_compounds(split_words(name))
    verb_at = next((k for k, w in enumerate(words) if w in ALL_VERBS), None)
    if verb_at is None:
        return ToolName(None, words)
    verb = words[verb_at]
    rest = words[verb_at + 1 :] if verb_at + 1 < len(words) else words[:verb_at]
    noun: list[str] = []
    tail: list[str] = []
    for k, w in enumerate(rest):
        if w in CUT_WORDS and noun:
            tail = rest[k + 1 :]
            break
        noun.append(w)
    while len(noun) > 1 and noun[0] in LEADING_FILLERS:
        noun.pop(0)
    trailing = None
    while noun and noun[-1] in TRAILING_FILLERS | TRAILING_LIST | TRAILING_AGGREGATE:
        last = noun.pop()
        if last in TRAILING_LIST:
            trailing = "list"
        elif last in TRAILING_AGGREGATE:
            trailing = "aggregate"
    return ToolName(verb, noun, tail, trailing)
