"""Facts a released question asks for that its success criteria name by field: "Step 0 returns an open issue
(e.g., issue_number 214) and includes a non-null source_url" with a question that wants "the GitHub URLs".

The release's reference answer is often only the chain's last output (an empty file search), so the values it
states leave a read question's asked facts unchecked: answering "0" passed. A criterion says which step it
speaks of ("Step 2", 0- or 1-based as the question's criteria count, or a tool's name) and which fields of that
step's output matter; a field whose last word the question asks for (`source_url` for "URLs", `commit_sha` for
"SHA") is a fact the answer must state, taken from the one record of that output the field is on, or the one
record the criterion or the question names a value of. Ids, statuses and types are never asked this way (a
user wants the thing, not its bookkeeping), nor are prose, timestamps, or values the question states
(a name run together in a handle it gives counts as stated).
"""

from __future__ import annotations

import re
from typing import Any

from factory.models import ToolCall
from factory.naming import singular, snake_case
from factory.verify.answers import answer_contains, parse_date
from factory.verify.state import json_leaves

_STEP = re.compile(r"\bsteps?\s*#?(\d+)\b", re.IGNORECASE)
_STEP_ZERO = re.compile(r"\bsteps?\s*#?0\b", re.IGNORECASE)
_NOT_ALNUM = re.compile(r"[^a-z0-9]")
# Words of a field name that say what a record is or where it stands, not a fact someone asks for.
_NOT_ASKED = {"id", "ids", "key", "status", "state", "type", "kind", "at", "is", "has", "data", "items", "item"}


def _asked_words(question: str) -> set[str]:
    """The question's words that stand alone: "the commit SHA+URL" asks for a sha and a url, "when blob_sha
    differs" for neither."""
    return {singular(w) for w in re.findall(r"[a-z0-9_-]+", question.lower()) if re.fullmatch(r"[a-z0-9]+", w)}


def _mentions(criterion: str, chain: list[ToolCall], base: int) -> list[tuple[int, int | None]]:
    """(where, step) for each step number and tool name in a criterion; a tool the chain calls more than once
    names no one step (None)."""
    mentions: list[tuple[int, int | None]] = [(m.start(), int(m.group(1)) - base) for m in _STEP.finditer(criterion)]
    for tool in {c.tool for c in chain}:
        m = re.search(rf"(?<![\w.]){re.escape(tool)}(?!\w)", criterion)
        if m is not None:
            calls = [i for i, c in enumerate(chain) if c.tool == tool]
            mentions.append((m.start(), calls[0] if len(calls) == 1 else None))
    return mentions


def _subject_step(criterion: str, chain: list[ToolCall], base: int) -> int | None:
    """The step a criterion speaks of: its first step number or tool name (a tool the chain calls once)."""
    mentions = _mentions(criterion, chain, base)
    if not mentions:
        return None
    step = min(mentions, key=lambda m: m[0])[1]
    return step if step is not None and 0 <= step < len(chain) else None


def _objects(value: Any) -> list[dict[str, Any]]:
    """Every object inside a JSON value, the value itself included."""
    found: list[dict[str, Any]] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            found.append(v)
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return found


def _named_record(records: list[dict[str, Any]], texts: list[str]) -> dict[str, Any] | None:
    """The one record, or the one of several that a text names by a value of its own (a number or text of 3+
    characters that not every record has there: "commit" names no commit of a commit list)."""
    if len(records) == 1:
        return records[0]

    def names(record: dict[str, Any]) -> bool:
        return any(
            not isinstance(v, bool)
            and isinstance(v, str | int | float)
            and len(str(v)) >= 3
            and any(r.get(k) != v for r in records)
            and any(answer_contains(t, v) for t in texts)
            for k, v in record.items()
        )

    named = [r for r in records if names(r)]
    return named[0] if len(named) == 1 else None


def question_gives(question: str, value: Any) -> bool:
    """Whether the question states `value`, or a name of two or more words run together in one of its words: the
    handle jayrivera.bsky.social gives the display name "Jay Rivera" away, so stating it shows no lookup."""
    if answer_contains(question, value):
        return True
    if not isinstance(value, str) or len(value.split()) < 2:
        return False
    joined = _NOT_ALNUM.sub("", value.lower())
    return len(joined) >= 6 and any(joined in _NOT_ALNUM.sub("", w) for w in question.lower().split())


def _statable(value: Any, question: str) -> bool:
    """A value an answer states as it is: no prose, timestamp or flag, nor one the question already gives."""
    if value is None or isinstance(value, bool | dict | list):
        return False
    if isinstance(value, str) and (len(value.strip()) < 2 or len(value.split()) >= 3 or parse_date(value)):
        return False
    return not question_gives(question, value)


def asked_facts(criteria: list[str], chain: list[ToolCall], outputs: list[Any], question: str) -> list[tuple[Any, str]]:
    """(value, criterion) for each field a criterion names on its step's output and the question asks for.

    `outputs` are the chain's results in order (None where a call failed)."""
    base = 0 if any(_STEP_ZERO.search(c) for c in criteria) else 1
    asked = _asked_words(question)
    facts: list[tuple[Any, str]] = []
    seen: set[str] = set()
    for criterion in criteria:
        step = _subject_step(criterion, chain, base)
        if step is None or outputs[step] is None:
            continue
        text = _STEP.sub(" ", criterion)
        objects = _objects(outputs[step])
        for key in sorted({k for o in objects for k in o}):
            attribute = singular(key.lower().split("_")[-1])  # source_url: a url
            if attribute in _NOT_ASKED or attribute not in asked:
                continue
            if len(key) < 3 or not re.search(rf"(?<!\w){re.escape(key)}(?!\w)", text):
                continue
            record = _named_record([o for o in objects if key in o], [text, question])
            value = record.get(key) if record is not None else None
            if _statable(value, question) and repr(value) not in seen:
                seen.add(repr(value))
                facts.append((value, criterion))
    return facts


def stated_facts(
    reference: str, chain: list[ToolCall], outputs: list[Any], question: str, criteria: list[str]
) -> list[tuple[Any, str]]:
    """(value, criterion or description) for each value of an output field that the question asks for by its
    whole name and the reference answer states: "the last 2 closes with a 3-day SMA" wants the SMA values too,
    which no criterion names. An argument the chain passed ("limit output to 200") is no fact a tool found."""
    asked = _asked_words(question)
    passed = {repr(v) for c in chain for v in json_leaves(c.args)}
    facts: list[tuple[Any, str]] = []
    seen: set[str] = set()
    for output in outputs:
        for record in _objects(output) if output is not None else []:
            for key, value in sorted(record.items()):
                words = {singular(w) for w in snake_case(key).split("_") if w}
                if not words or words <= _NOT_ASKED or not words <= asked or repr(value) in seen | passed:
                    continue
                if _statable(value, question) and answer_contains(reference, value):
                    seen.add(repr(value))
                    named = next((c for c in criteria if answer_contains(_STEP.sub(" ", c), value)), "")
                    facts.append((value, named or f"the answer states the {key} {value}"))
    return facts


# `status = "succeeded"`, `status="succeeded"`, `status == 'closed'`, `state: open`, `status is "queued"`: a word a
# criterion wants a field of its step's output to read ("id is the one..." is prose: `is` only with quotes).
_QUOTED = r"(?:\"([A-Za-z][\w -]*)\"|'([A-Za-z][\w -]*)')"
_WANTS = re.compile(rf"\b([a-z][a-z0-9_]*)\s*(?:(?:==?|:)\s*(?:{_QUOTED}|([A-Za-z]\w*)\b)|\s\bis\s+{_QUOTED})")
# Fields whose values are a few words a record moves through: what a criterion's "status = succeeded" can be
# held to (an "id = the id from step 1" is prose).
_STANDING = {"status", "state", "outcome", "phase", "result", "conclusion", "verdict"}
_EVERY_CALL = re.compile(r"^\W*(?:each|every|all)\b[^.]*\b(?:calls?|steps?|tools?)\b", re.IGNORECASE)


def contradicted(criteria: list[str], chain: list[ToolCall], outputs: list[Any]) -> str | None:
    """Where the replay shows what a criterion says a step does not: "Step 3 returns an operation with status =
    "succeeded"" and the replayed step's operation reads `failed` (the released chain lost the coordinates it
    was to pass on, so the provider refused them). Such a chain replays, every call answers, and it still fails
    its own rubric on the released data: its reference answer is that failure. Only a criterion that opens with
    its step ("Step 3 ...", "get_directions returns ...", "Each tool call ...") is read this way: "the session
    expired in step 2 is closed in the final list" speaks of another. Only a field that says where a record
    stands (a status, a state) is compared, and only where no record of the step's output reads the wanted word
    or a part of it."""
    base = 0 if any(_STEP_ZERO.search(c) for c in criteria) else 1
    for criterion in criteria:
        mentions = _mentions(criterion, chain, base)
        opening = min(mentions, key=lambda m: m[0], default=None)
        if opening is not None and criterion[: opening[0]].strip(" \t-*•"):
            opening = None
        if opening is not None:
            steps = [opening[1]] if opening[1] is not None and 0 <= opening[1] < len(chain) else []
        else:
            steps = range(len(chain)) if _EVERY_CALL.search(criterion) else []
        for field, *words in _WANTS.findall(criterion):
            wanted = next(w for w in words if w)
            if field.split("_")[-1] not in _STANDING:
                continue
            for i in steps:
                found = [o[field] for o in _objects(outputs[i]) if isinstance(o.get(field), str)]
                if found and not any(answer_contains(wanted, v) or answer_contains(v, wanted) for v in found):
                    return f"call {i + 1} {chain[i].tool}: {field} is {found[0]!r} where a criterion wants {wanted!r}"
    return None
