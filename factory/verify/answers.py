"""The answer module of every verifier: an answer passes when it states the expected values and no competitor.

A competitor is a value of the same kind that a near-miss reading or another row would give; the caller
names them (the other ids of the table, the other amounts of the column, a count's neighbours). Extra words
and attributes of the right records pass ("Order ord_0003 for $45.00, shipped"); a dump or a hedge states a
competitor and fails, whatever else it says ("either 60, 65 or 70"). Standard library only: program-task
verifiers carry this module's source into the sandbox.

Stating is lenient in form and strict in value:
- numbers: a whole token (70 is not in "170", "1,070", "70.5", "ord_0070" or "ORD-70"), with currency signs
  and codes, thousands separators, units and `%` (15% states 15 and 0.15); trailing zeros do not count; two
  numbers written to different decimals, the shorter to at least 2, are equal when the longer rounds to the
  shorter (33.33 and 33.3333). Digits of dates and times are not numbers, nor are codes with leading zeros
  ("007"). Number words ("seventy") and decimal commas ("70,5") are not read.
- dates and times: ISO, `2024/03/05`, month names ("March 5, 2024", "Tuesday, 5th of Mar 2024"), day/month/year
  with `/`, `.` or `-` only when unambiguous (03/05/2024 could be either and states no date); a datetime needs its
  day and its time ("on March 5, 2024 at 3:30 pm"); a time alone ("10:30") with am/pm read.
- booleans: yes/true and no/false, and every such word in the answer must agree, so "yes or no" states neither
  (nor does "Yes, no items are left": a plain answer avoids the other word).
- text: case, spacing, edge punctuation and `_` as a space; between word boundaries ("order" is not in
  "reorder"); British and American spellings state the same word ("canceled" states "cancelled", "organization"
  "organisation", "color" "colour"), other words do not ("inactive" is not "active"). Equality of two values
  (`answers_match`, state values) stays exact: a status stored as "canceled" is not the enum's "cancelled".
- lists: every item stated, in any order unless the order was asked; a JSON list holds exactly the items.
- named values: every value stated; where the answer names the same key, under that key.
- JSON answers are decoded and read like prose: {"cancelled": 11} states 11.
The one or two words a negation governs ("not succeeded yet", "isn't 5", "instead of ord_0003", "no longer
pending") are rejected, not stated, in a verdict: an honest "still queued, not succeeded" states no competitor,
and "not A, not B" states neither A nor B. Farther words are read ("is not in the succeeded state" states it), and a
value that is itself a negation ("not started") is looked for in the whole text. `answer_contains` reads no
negation: it also tells what a question mentions.

`judge_answer` is the verdict on an answer; `answer_contains` is containment of one value in a text (also used
to see what a question already says); `answers_match` is equality of two values (state values, whole answers).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Sequence
from datetime import date, datetime, time
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation
from functools import lru_cache
from itertools import islice
from typing import Any

TRUE_WORDS = frozenset({"true", "yes"})
FALSE_WORDS = frozenset({"false", "no"})
NONE_WORDS = frozenset({"", "none", "null", "n/a"})
MIN_ROUNDED_DECIMALS = 2  # "33.33" may stand for 33.3333; "33" may not stand for 33.4
MAX_LISTED = 5  # values named in a verdict's detail

_CURRENCY = "$€£¥₹"
_UNIT_WORDS = r"usd|eur|gbp|jpy|inr|cad|aud|chf|cny|dollars?|euros?|pounds?"
_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+"
_NUMBER_TOKEN = re.compile(
    rf"(?<!\w)(?<![A-Za-z_][-\u2212])(?<!\d[.,])(?P<num>{_NUM})(?![\d_])(?![.,]\d)(?P<pct>\s?(?:%|percent\b))?",
    re.IGNORECASE,
)
_DECIMAL_THEN_COMMA = re.compile(r"(\d\.\d+),(?=[-\u2212]?\d)")
_WHOLE_NUMBER = re.compile(
    rf"^(?:(?:{_UNIT_WORDS})\s*)?(?P<sign>[-+\u2212])?\s*[{_CURRENCY}]?\s*(?P<sign2>[-+\u2212])?\s*(?P<num>{_NUM})"
    rf"\s*(?P<pct>%|percent)?\s*(?:{_UNIT_WORDS})?$"
)
_BOOL_WORD = re.compile(r"(?<!\w)(yes|no|true|false)(?!\w)", re.IGNORECASE)
_EDGE_PUNCT = " \t\r\n.,;:!?\"'`()[]{}“”\u2018\u2019«»"
_MONTHS = {
    m: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for m in names
}
_MONTH = r"(?P<mon>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>\d{4})"
_ISO_DT = r"\d{4}-\d{2}-\d{2}(?:[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:[Zz]|[+-]\d{2}:?\d{2})?)?"
_DATE_PATTERNS = [
    re.compile(rf"(?<!\d)(?P<iso>{_ISO_DT})(?!\d)", re.IGNORECASE),
    re.compile(r"(?<!\d)(?P<y>\d{4})/(?P<m>\d{1,2})/(?P<d>\d{1,2})(?!\d)"),
    re.compile(rf"(?<![a-z]){_MONTH}\s+{_DAY},?\s+{_YEAR}(?!\d)", re.IGNORECASE),
    re.compile(rf"(?<!\d){_DAY}(?:\s+of)?\s+{_MONTH},?\s+{_YEAR}(?!\d)", re.IGNORECASE),
    re.compile(r"(?<![\d/.-])(?P<a>\d{1,2})(?P<sep>[/.-])(?P<b>\d{1,2})(?P=sep)(?P<y>\d{4})(?!\d)"),
]
_TIME = re.compile(r"(?<!\d)(?P<h>\d{1,2}):(?P<m>\d{2})(?::(?P<s>\d{2}))?\s*(?P<ampm>am|pm)?(?![\d])", re.IGNORECASE)


# --- reading values -----------------------------------------------------------------------------


def normalize_text(text: str) -> str:
    """Case-folded, `_` as space, whitespace collapsed, edge punctuation stripped."""
    t = unicodedata.normalize("NFKC", text).casefold().replace("_", " ")
    return " ".join(t.split()).strip(_EDGE_PUNCT)


def _to_decimal(value: Any) -> Decimal | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value)) if value == value and abs(value) != float("inf") else None
    if isinstance(value, Decimal):
        return value
    return None


def parse_number(text: str) -> tuple[Decimal, bool, int] | None:
    """A text that is one number: (value, had %, decimals shown). Leading-zero codes ("007") are not numbers."""
    t = unicodedata.normalize("NFKC", text).strip(_EDGE_PUNCT.replace(".", "")).rstrip(".").casefold().strip()
    m = _WHOLE_NUMBER.match(t)
    if m is None:
        return None
    raw = m.group("num").replace(",", "")
    if re.match(r"0\d", raw):
        return None
    value = Decimal(raw)
    if {m.group("sign"), m.group("sign2")} & {"-", "\u2212"}:
        value = -value
    return value, m.group("pct") is not None, _decimals(raw)


def _decimals(raw: str) -> int:
    return len(raw.split(".", 1)[1]) if "." in raw else 0


def numbers_equal(expected: Decimal, shown: Decimal, decimals_shown: int, percent: bool = False) -> bool:
    """`shown` (written with `decimals_shown` decimals) states `expected`; a percent also reads as a fraction,
    with two more decimals."""
    readings = [(shown, decimals_shown)] + ([(shown / 100, decimals_shown + 2)] if percent else [])
    return any(_same_number(expected, got, places) for got, places in readings)


def _same_number(expected: Decimal, got: Decimal, places: int) -> bool:
    if abs(got - expected) <= Decimal("1e-9") * max(Decimal(1), abs(expected)):
        return True
    expected_places = max(0, -int(expected.as_tuple().exponent))
    shorter = min(places, expected_places)
    if places == expected_places or shorter < MIN_ROUNDED_DECIMALS:
        return False
    short, long = (got, expected) if places < expected_places else (expected, got)
    q = Decimal(1).scaleb(-shorter)
    try:
        return short in (long.quantize(q, ROUND_HALF_UP), long.quantize(q, ROUND_HALF_EVEN))
    except InvalidOperation:  # beyond the context's precision: no rounding reads it
        return False


def _valid_date(y: int, m: int, d: int) -> date | None:
    try:
        return date(y, m, d)
    except ValueError:
        return None


def _date_from_match(m: re.Match[str]) -> date | datetime | None:
    g = m.groupdict()
    if g.get("iso"):
        return parse_iso(g["iso"])
    if g.get("mon"):
        return _valid_date(int(g["year"]), _MONTHS[g["mon"].casefold()], int(g["day"]))
    if g.get("a"):
        a, b, y = int(g["a"]), int(g["b"]), int(g["y"])
        readings = {d for d in (_valid_date(y, a, b), _valid_date(y, b, a)) if d is not None}
        return readings.pop() if len(readings) == 1 else None  # ambiguous day/month states no date
    return _valid_date(int(g["y"]), int(g["m"]), int(g["d"]))


def parse_iso(text: str) -> date | datetime | None:
    try:
        if len(text) == 10:
            return date.fromisoformat(text)
        return datetime.fromisoformat(text.upper())
    except ValueError:
        return None


def parse_date(text: str) -> date | datetime | None:
    """A text that is one date or ISO datetime, in any format this module accepts."""
    t = unicodedata.normalize("NFKC", text).strip(_EDGE_PUNCT)
    t = re.sub(r"^(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*,?\s+", "", t, flags=re.IGNORECASE)
    for pattern in _DATE_PATTERNS:
        m = pattern.fullmatch(t)
        if m is not None:
            return _date_from_match(m)
    return None


def _time_from_match(m: re.Match[str]) -> time | None:
    h, mi, s = int(m.group("h")), int(m.group("m")), int(m.group("s") or 0)
    ampm = (m.group("ampm") or "").casefold()
    if ampm and not 1 <= h <= 12:
        return None
    if ampm == "pm" and h < 12:
        h += 12
    elif ampm == "am" and h == 12:
        h = 0
    return time(h, mi, s) if h < 24 and mi < 60 and s < 60 else None


def parse_time(text: str) -> time | None:
    """A text that is one time of day: "10:30", "10:30:15", "3:30 pm"."""
    m = _TIME.fullmatch(unicodedata.normalize("NFKC", text).strip(_EDGE_PUNCT))
    return _time_from_match(m) if m is not None else None


def _dates_equal(a: date | datetime, b: date | datetime) -> bool:
    if isinstance(a, datetime) != isinstance(b, datetime):
        return False
    if isinstance(a, datetime) and isinstance(b, datetime) and (a.tzinfo is None) != (b.tzinfo is None):
        return a.replace(tzinfo=None) == b.replace(tzinfo=None)
    return a == b


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        t = normalize_text(value)
        if t in TRUE_WORDS:
            return True
        if t in FALSE_WORDS:
            return False
    return None


def _as_number(value: Any) -> tuple[Decimal, bool, int] | None:
    d = _to_decimal(value)
    if d is not None:
        return d, False, max(0, -int(d.as_tuple().exponent))
    if isinstance(value, str):
        return parse_number(value)
    return None


# --- equality -----------------------------------------------------------------------------------


def answers_match(expected: Any, actual: Any, *, ordered: bool = False) -> bool:
    """`actual` is the same value as `expected`, as a whole (see the module docstring for what counts)."""
    if isinstance(actual, str) and isinstance(expected, list | dict):
        parsed = _json_or_none(actual)
        if isinstance(parsed, type(expected)):
            actual = parsed
        elif isinstance(expected, list):
            actual = split_list(actual)
        else:
            return all(answer_contains(actual, v) for v in expected.values())
    if expected is None:
        return actual is None or (isinstance(actual, str) and normalize_text(actual) in NONE_WORDS)
    if isinstance(expected, list | tuple):
        return isinstance(actual, list | tuple) and _lists_match(list(expected), list(actual), ordered)
    if isinstance(expected, dict):
        return (
            isinstance(actual, dict)
            and set(expected) == set(actual)
            and all(answers_match(v, actual[k], ordered=ordered) for k, v in expected.items())
        )
    return _scalars_match(expected, actual)


def _scalars_match(expected: Any, actual: Any) -> bool:
    if actual is None or isinstance(actual, list | dict):
        return False
    exp_bool = _as_bool(expected)
    if exp_bool is not None:
        return _as_bool(actual) is exp_bool
    if isinstance(actual, bool):
        return False
    exp_num = _as_number(expected)
    if exp_num is not None:
        got = _as_number(actual)
        return got is not None and numbers_equal(exp_num[0], got[0], got[2], got[1])
    if isinstance(expected, str) and isinstance(actual, str):
        exp_date = parse_date(expected)
        if exp_date is not None:
            got_date = parse_date(actual)
            return got_date is not None and _dates_equal(exp_date, got_date)
        return normalize_text(expected) == normalize_text(actual)
    return normalize_text(str(expected)) == normalize_text(str(actual))


def _lists_match(expected: list[Any], actual: list[Any], ordered: bool) -> bool:
    if len(expected) != len(actual):
        return False
    if ordered:
        return all(answers_match(e, a) for e, a in zip(expected, actual, strict=True))
    return _perfect_matching(expected, actual, lambda e, a: answers_match(e, a))


def _perfect_matching(left: Sequence[Any], right: Sequence[Any], fits: Callable[[Any, Any], bool]) -> bool:
    """Every left item pairs with a distinct right item it fits (augmenting paths; lists are short)."""
    edges = [[j for j, r in enumerate(right) if fits(item, r)] for item in left]
    owner: dict[int, int] = {}

    def place(i: int, seen: set[int]) -> bool:
        for j in edges[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or place(owner[j], seen):
                owner[j] = i
                return True
        return False

    return all(place(i, set()) for i in range(len(left)))


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return None


_LIST_SPLIT = re.compile(r"\n|;|(?<!\d),|,(?!\d)|\s+and\s+|\s+&\s+")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")


def split_list(text: str) -> list[str]:
    """Items of a list written as text: "a, b and c", one per line, bullets or numbering."""
    items = [_BULLET.sub("", part).strip(_EDGE_PUNCT) for part in _LIST_SPLIT.split(text)]
    return [i for i in items if i]


# --- containment --------------------------------------------------------------------------------


def answer_contains(answer_text: str, value: Any) -> bool:
    """`value` is stated somewhere in the text (see the module docstring); a list or dict needs every item."""
    if answer_text is None:
        return False
    return _find(unicodedata.normalize("NFKC", str(answer_text)), value) is not None


def _find(text: str, value: Any) -> int | None:
    """Where `text` first states `value` (its start), or None."""
    if isinstance(value, list | tuple | dict):
        items = list(value.values() if isinstance(value, dict) else value)
        found = [_find(text, v) for v in items]
        return None if not items or None in found else min(p for p in found if p is not None)
    if value is None:
        found = [at for word in sorted(NONE_WORDS - {""}) if (at := _find_string(text, word)) is not None]
        return min(found) if found else None
    as_bool = _as_bool(value)
    if as_bool is not None:
        return _find_bool(text, as_bool)
    number = _as_number(value)
    if number is not None:
        return _find_number(text, number[0])
    if isinstance(value, str):
        as_date = parse_date(value)
        if as_date is not None:
            return _find_date(text, as_date)
        as_time = parse_time(value)
        if as_time is not None:
            return next((m.start() for m in _TIME.finditer(text) if _time_from_match(m) == as_time), None)
    return _find_string(text, str(value))


def _find_bool(text: str, expected: bool) -> int | None:
    words = list(_BOOL_WORD.finditer(text))
    if not words or any((w.group(1).casefold() in TRUE_WORDS) is not expected for w in words):
        return None
    return words[0].start()


# Stems whose British spelling doubles the l before a suffix (cancelled, labelling); other words keep theirs.
_DOUBLED_L = ("cancel", "label", "model", "travel", "total", "fuel", "signal", "level", "channel", "dial", "counsel")


def _spellings(word: str) -> str:
    """A regular expression for `word` in its British and American spellings (see the module docstring)."""
    low = word.casefold()
    for stem in _DOUBLED_L:
        m = re.fullmatch(rf"{stem}l?(ed|ing|er|ers)", low)
        if m is not None:
            return rf"{stem}l?{m.group(1)}"
    m = re.fullmatch(r"(\w{3,}i)[sz](e|ed|es|ing|ation|ations|er|ers)", low)  # organise / organize
    if m is not None:
        return rf"{re.escape(m.group(1))}[sz]{m.group(2)}"
    m = re.fullmatch(r"(\w{2,}o)u?r(s|ed|ing|ful|ite|ites)?", low)  # colour / color, favourite / favorite
    if m is not None:
        return rf"{re.escape(m.group(1))}u?r{m.group(2) or ''}"
    return re.escape(word)


def _find_string(text: str, value: str) -> int | None:
    words = unicodedata.normalize("NFKC", value).replace("_", " ").strip(_EDGE_PUNCT).split()
    if not words:
        return None
    pattern = r"(?<!\w)" + r"[\s_]+".join(_spellings(w) for w in words) + r"(?!\w)"
    m = re.search(pattern, text, re.IGNORECASE)
    return m.start() if m is not None else None


@lru_cache(maxsize=64)
def _numbers(text: str) -> tuple[tuple[int, Decimal, int, bool], ...]:
    """Every number the text states: (start, value, decimals shown, had %), digits of dates and times masked."""
    masked = text
    for pattern in [*_DATE_PATTERNS, _TIME]:
        masked = pattern.sub(lambda m: " " * len(m.group()), masked)
    # a comma after a decimal part separates two numbers ("-122.08406,37.42202"), no thousands
    masked = _DECIMAL_THEN_COMMA.sub(lambda m: m.group(1) + " ", masked)
    out = []
    for m in _NUMBER_TOKEN.finditer(masked):
        raw = m.group("num").replace(",", "")
        if re.match(r"0\d", raw):
            continue  # a code such as "007", not a number
        shown = Decimal(raw)
        before = masked[: m.start("num")].rstrip(_CURRENCY)  # "-$5" is negative; a bullet "- 5" is not
        if before.endswith(("-", "\u2212")) and not before[:-1][-1:].isalnum():
            shown = -shown
        out.append((m.start(), shown, _decimals(raw), m.group("pct") is not None))
    return tuple(out)


def _find_number(text: str, expected: Decimal) -> int | None:
    return next((at for at, shown, places, pct in _numbers(text) if numbers_equal(expected, shown, places, pct)), None)


def _find_date(text: str, expected: date | datetime) -> int | None:
    found: list[tuple[int, date | datetime]] = []
    for pattern in _DATE_PATTERNS:
        for m in pattern.finditer(text):
            d = _date_from_match(m)
            if d is not None:
                found.append((m.start(), d))
    hits = [at for at, d in found if _dates_equal(expected, d)]
    if isinstance(expected, datetime) and any(
        _time_from_match(m) == expected.time().replace(microsecond=0) for m in _TIME.finditer(text)
    ):
        hits += [at for at, d in found if not isinstance(d, datetime) and d == expected.date()]
    return min(hits) if hits else None


# --- the verdict --------------------------------------------------------------------------------


def judge_answer(
    expected: Any, answer: Any, *, competitors: Sequence[Any] = (), ordered: bool = False
) -> tuple[bool, str]:
    """Whether `answer` (text or JSON value) states `expected` and none of `competitors`; the detail says why not.

    A competitor that the expected value itself states (a rounding of it, an expected item) is not held against
    the answer."""
    if answer is None:
        return False, "no answer"
    given = _decoded(answer)
    missing = _missing(expected, given, ordered)
    if missing:
        return False, missing
    text = _as_text(given)
    own = [_as_text(v) for v in _leaves(expected)]
    claimed = (c for c in competitors if not any(answer_contains(t, c) for t in own) and _claims(text, c) is not None)
    stated = list(islice(claimed, MAX_LISTED + 1))  # the detail names MAX_LISTED: a dump of every row stops early
    if stated:
        return False, "also states " + _listed(stated)
    return True, ""


_NEGATED = re.compile(
    r"(?<!\w)(?:not|no|never|neither|nor|without|\w+n[\u2019']t|instead\s+of|rather\s+than)"
    r"((?:[ \t]+[^\s,;:.!?()\[\]{}]+){1,2})",
    re.IGNORECASE,
)


def _claims(text: str, value: Any) -> int | None:
    """Where `text` states `value` other than under a negation (see `_claimed`), or None."""
    return _find(_claimed(text, value), value)


def _claimed(text: str, value: Any) -> str:
    """The text less the words its negations govern, blanked in place; the whole text for a flag or a value that
    is itself a negation."""
    if _as_bool(value) is not None or _NEGATED.search(_as_text(value).replace("_", " ") + " x"):
        return text
    return _unnegated(text)


@lru_cache(maxsize=64)
def _unnegated(text: str) -> str:
    """`text` with the words its negations govern blanked: once per answer, not once per competitor."""
    return _NEGATED.sub(lambda m: m.group()[: m.start(1) - m.start()] + " " * len(m.group(1)), text)


def _decoded(answer: Any) -> Any:
    """An answer given as JSON text (an object, a list or a string), decoded; any other answer as it is."""
    if isinstance(answer, str) and answer.strip()[:1] in ("{", "[", '"'):
        parsed = _json_or_none(answer)
        return answer if parsed is None else parsed
    return answer


def _as_text(value: Any) -> str:
    """A value written as prose reads it: numbers in plain decimals, one line per item, "key: value"."""
    if isinstance(value, str):
        return unicodedata.normalize("NFKC", value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "\n".join(f"{_as_text(k)}: {_as_text(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return "\n".join(_as_text(v) for v in value)
    number = _to_decimal(value)
    return str(value) if number is None else format(number, "f")


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list | tuple):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def _listed(values: Sequence[Any]) -> str:
    more = ", ..." if len(values) > MAX_LISTED else ""
    return ", ".join(json.dumps(v, default=str) for v in values[:MAX_LISTED]) + more


def _missing(expected: Any, given: Any, ordered: bool) -> str:
    """What of `expected` the answer does not state ("" when it states it all)."""
    if expected is None or (isinstance(expected, list | tuple | dict) and not expected):
        if given in ([], {}) or (isinstance(given, str) and _find(given, None) is not None):
            return ""
        return "does not say there is none"
    if isinstance(expected, dict):
        return _missing_named(expected, given)
    if isinstance(expected, list | tuple):
        return _missing_items(list(expected), given, ordered)
    text = _as_text(given)
    return "" if _claims(text, expected) is not None else "does not state " + _listed([expected])


def _missing_named(expected: dict[str, Any], given: Any) -> str:
    keyed = {normalize_text(str(k)): _as_text(v) for k, v in given.items()} if isinstance(given, dict) else {}
    text = _as_text(given)
    absent = [k for k, v in expected.items() if _claims(keyed.get(normalize_text(str(k)), text), v) is None]
    return "" if not absent else "does not state " + ", ".join(f"{k} {_listed([expected[k]])}" for k in absent)


def _missing_items(expected: list[Any], given: Any, ordered: bool) -> str:
    if isinstance(given, list):
        if len(given) != len(expected):
            return f"lists {len(given)} items, not {len(expected)}"
        texts = [_as_text(g) for g in given]
        if ordered:
            ok = all(_claims(t, e) is not None for e, t in zip(expected, texts, strict=True))
        else:
            ok = _perfect_matching(expected, texts, lambda e, t: _claims(t, e) is not None)
        return "" if ok else "the items are not " + _listed(expected)
    text = _as_text(given)
    places = {i: _claims(text, e) for i, e in enumerate(expected)}
    absent = [expected[i] for i, at in places.items() if at is None]
    if absent:
        return "does not state " + _listed(absent)
    starts = [at for at in places.values() if at is not None]
    if ordered and starts != sorted(starts):
        return "does not list them in the asked order"
    return ""
