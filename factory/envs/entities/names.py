"""Tool names read as verb + noun: `list_open_issues` -> ("list", ["issues"]), `issues_list` too.

A server's namespace word (`git_` of git_status, git_log...) is not the verb; what a name leaves out
after it (`git_status` has no verb, `git_log` no noun) the description's first words give.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from dataclasses import dataclass

from factory.lexicon import (
    AGGREGATE_VERBS,
    COMPOUND_WORDS,
    CREATE_VERBS,
    CUT_WORDS,
    DECREMENT_VERBS,
    DELETE_VERBS,
    DERIVED_CREATES,
    DESCRIPTION_STOPS,
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


def namespace_of(names: list[str]) -> str | None:
    """The first word at least two thirds of a server's tools share, when it is not a verb: `git`."""
    firsts = [words[0] for words in map(split_words, names) if len(words) > 1]
    if len(names) < 3 or not firsts:
        return None
    word, count = Counter(firsts).most_common(1)[0]
    if word in ALL_VERBS or count * 3 < len(names) * 2:
        return None
    return word


def _verb_form(word: str) -> str | None:
    """A description's verb in its base form: "Shows" -> show, "Creates" -> create, "List" -> list."""
    for base in (word, word[:-1] if word.endswith("s") else "", word[:-2] if word.endswith("es") else ""):
        if base in ALL_VERBS:
            return base
    return None


def parse_description(text: str, namespace: str | None = None) -> ToolName:
    """The verb a description opens with and its object: "Shows the commit logs" -> ("show", ["commit", "logs"])."""
    words = re.findall(r"[a-z]+", re.split(r"[.;:\n(]", text.lower(), maxsplit=1)[0])
    verb = _verb_form(words[0]) if words else None
    if verb is None:
        return ToolName(None, [])
    noun: list[str] = []
    for w in words[1:]:
        if w in DESCRIPTION_STOPS or len(noun) == 3:
            break
        if w != namespace and (noun or w not in LEADING_FILLERS):
            noun.append(w)
    return ToolName(verb, noun)


def read_tool(name: str, description: str, namespace: str | None = None) -> ToolName:
    """The name read as verb + noun with the namespace word set aside, completed by the description."""
    words = split_words(name)
    spaced = namespace is not None and len(words) > 1 and words[0] == namespace
    parsed = parse_tool_name("_".join(words[1:]) if spaced else name)
    if parsed.verb is not None and (parsed.noun or not spaced):
        return parsed  # `deposit(account_id, amount)`: the parameters name the row
    said = parse_description(description, namespace)
    noun = parsed.noun or said.noun or ([namespace] if spaced and namespace else [])
    verb = parsed.verb or said.verb
    return ToolName(verb, noun, parsed.tail, parsed.trailing) if verb else parsed
