"""Lenient answer comparison: equal in meaning counts, a wrong value never does.

Verifiers in the wild fail both ways (reasoning-gym's answer scorers among them): they accept wrong answers or reject
right ones for formatting. The rules here normalize formatting only:
- numbers: thousands separators, currency symbols and codes, a trailing `%` (15% equals 15 and 0.15),
  trailing zeros; rounding shown to at least 2 decimals within half a unit of the last digit
  (33.33 for 33.3333). A number is a whole token: 70 is not found in "170", "1,070" or "70.5".
- strings: case, surrounding whitespace and punctuation, runs of spaces, `_` as a space. Spelling
  variants are different values ("cancelled" is not "canceled"): a string similarity that accepted
  them would also accept "inactive" for "active".
- dates: ISO, `2024/03/05`, month names ("March 5, 2024", "5 Mar 2024"); day/month/year with slashes
  only when unambiguous (03/05/2024 could be either and proves nothing).
- booleans: yes/true and no/false.
- lists: order does not matter unless `ordered=True`; text lists split on commas, semicolons, lines, "and".
Not handled (rejected): number words ("seventy"), decimal commas ("70,5"). `answer_contains` is containment:
it does not read negation ("not shipped" contains "shipped"); state checks carry that meaning.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Sequence
from datetime import date, datetime
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

TRUE_WORDS = frozenset({"true", "yes"})
FALSE_WORDS = frozenset({"false", "no"})
NONE_WORDS = frozenset({"", "none", "null", "n/a"})
MIN_ROUNDED_DECIMALS = 2  # "33.33" may stand for 33.3333; "33" may not stand for 33.4

_CURRENCY = "$€£¥₹"
_UNIT_WORDS = r"usd|eur|gbp|jpy|inr|cad|aud|chf|cny|dollars?|euros?|pounds?"
_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+"
_NUMBER_TOKEN = re.compile(
    rf"(?<!\d)(?<!\d[.,])(?P<num>{_NUM})(?!\d)(?![.,]\d)(?P<pct>\s?(?:%|percent\b))?", re.IGNORECASE
)
_WHOLE_NUMBER = re.compile(
    rf"^(?:(?:{_UNIT_WORDS})\s*)?(?P<sign>[-+\u2212])?\s*[{_CURRENCY}]?\s*(?P<sign2>[-+\u2212])?\s*(?P<num>{_NUM})"
    rf"\s*(?P<pct>%|percent)?\s*(?:{_UNIT_WORDS})?$"
)
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


# --- normalization ------------------------------------------------------------------------------


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
    """`shown` (as written, with `decimals_shown` decimals) states `expected`. A percent also reads as a fraction."""
    readings = [shown, shown / 100] if percent else [shown]
    for got in readings:
        if got == expected or abs(got - expected) <= Decimal("1e-9") * max(Decimal(1), abs(expected)):
            return True
        if percent and got is not shown:
            continue
        if decimals_shown >= MIN_ROUNDED_DECIMALS and -expected.as_tuple().exponent > decimals_shown:
            q = Decimal(1).scaleb(-decimals_shown)
            if got in (expected.quantize(q, ROUND_HALF_UP), expected.quantize(q, ROUND_HALF_EVEN)):
                return True
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
        return d, False, max(0, -d.as_tuple().exponent)
    if isinstance(value, str):
        return parse_number(value)
    return None


# --- equality -----------------------------------------------------------------------------------


def answers_match(expected: Any, actual: Any, *, ordered: bool = False) -> bool:
    """`actual` states the same value as `expected` (see the module docstring for what counts)."""
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
    """`value` is stated somewhere in the answer text (a number as a whole token, a string between word
    boundaries, a date in any accepted format); lists and dicts need every item stated."""
    if answer_text is None:
        return False
    text = str(answer_text)
    if isinstance(value, list | tuple):
        return bool(value) and all(answer_contains(text, v) for v in value)
    if isinstance(value, dict):
        return bool(value) and all(answer_contains(text, v) for v in value.values())
    if value is None:
        return _contains_string(text, "none") or _contains_string(text, "null")
    as_bool = _as_bool(value)
    if as_bool is not None:
        first = re.search(r"(?<!\w)(yes|no|true|false)(?!\w)", text, re.IGNORECASE)
        return first is not None and (first.group(1).casefold() in TRUE_WORDS) is as_bool
    number = _as_number(value)
    if number is not None:
        return _contains_number(text, number[0])
    if isinstance(value, str):
        as_date = parse_date(value)
        if as_date is not None:
            return _contains_date(text, as_date)
    return _contains_string(text, str(value))


def _contains_string(text: str, value: str) -> bool:
    needle = normalize_text(value)
    if not needle:
        return False
    hay = " ".join(unicodedata.normalize("NFKC", text).casefold().replace("_", " ").split())
    return re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", hay) is not None


def _contains_number(text: str, expected: Decimal) -> bool:
    masked = re.sub(_ISO_DT, " ", unicodedata.normalize("NFKC", text))
    masked = _TIME.sub(" ", masked)
    for m in _NUMBER_TOKEN.finditer(masked):
        raw = m.group("num").replace(",", "")
        try:
            shown = Decimal(raw)
        except InvalidOperation:
            continue
        start = m.start("num")
        before = masked[:start].rstrip().rstrip(_CURRENCY).rstrip()
        if before.endswith(("-", "\u2212")) and not before[:-1][-1:].isalnum():
            shown = -shown
        if numbers_equal(expected, shown, _decimals(raw), m.group("pct") is not None):
            return True
    return False


def _contains_date(text: str, expected: date | datetime) -> bool:
    t = unicodedata.normalize("NFKC", text)
    found: list[date | datetime] = []
    for pattern in _DATE_PATTERNS:
        for m in pattern.finditer(t):
            d = _date_from_match(m)
            if d is not None:
                found.append(d)
    if any(_dates_equal(expected, d) for d in found):
        return True
    if isinstance(expected, datetime):
        same_day = any(not isinstance(d, datetime) and d == expected.date() for d in found)
        return same_day and _contains_time(t, expected)
    return False


def _contains_time(text: str, expected: datetime) -> bool:
    for m in _TIME.finditer(text):
        h, mi = int(m.group("h")), int(m.group("m"))
        ampm = (m.group("ampm") or "").casefold()
        if ampm == "pm" and h < 12:
            h += 12
        elif ampm == "am" and h == 12:
            h = 0
        if (h, mi) == (expected.hour, expected.minute) and int(m.group("s") or 0) == expected.second:
            return True
    return False
