"""Answer judging both ways: every form of the right values accepted; near misses, dumps and hedges rejected."""

from __future__ import annotations

import ast
import inspect
import sys

import pytest

from factory.models import RubricCheck
from factory.verify import answers
from factory.verify.answers import (
    answer_contains,
    answers_match,
    judge_answer,
    parse_date,
    parse_number,
    parse_time,
    split_list,
)
from factory.verify.rubric import run_check


def _rule(name: str, rows: list[tuple]) -> list:
    """Rows (expected, answer, competitors, passes) of one rule, named for the test report."""
    return [pytest.param(*row, id=f"{name}-{'pass' if row[-1] else 'fail'}-{i}") for i, row in enumerate(rows)]


JUDGED = [
    *_rule(
        "numbers",
        [
            (70, "$70", [69, 71], True),
            (70, "USD 70", [], True),
            (1234.5, "It costs 1,234.50 dollars", [], True),
            (12, "12 units", [11, 13], True),
            (0.15, "The rate was 15%.", [], True),  # a percent reads as a fraction
            (15, "15 percent", [], True),
            (0.333333, "33.33%", [], True),
            (33.333333, "about 33.33 per day", [33.3], True),  # rounding shown to 2 decimals
            (1004.07, "1004.0712", [], True),  # more decimals that round to the expected ones
            (-5, "Balance: -$5.00", [], True),
            (5, "- 5 (a bullet, not a sign)", [], True),
            (6, "not 5 but 6", [5, 7], True),  # a number negated is no hedge
            (37.42202, "[-122.08406,37.42202]", [38.42202], True),  # a comma after a decimal part separates
            (-122.08406, "-122.08406,37.42202", [], True),
            (11, '{"cancelled": 11}', [10, 12], True),  # a JSON object reads like prose
            (11, {"cancelled": 11}, [10, 12], True),
            (5, "On 2024-03-05 at 10:04 we had 5 visits", [4, 6], True),  # digits of dates and times are not numbers
            (3, "3 orders: ord_0002, ord_0004 and ORD-4", [2, 4], True),  # nor are digits of ids
            (45.45, "45.45", [45.449], True),  # a competitor the expected value states is not held against it
            (70, "$170", [], False),  # a number inside a bigger number
            (70, "1,070 items", [], False),
            (70, "70.5 kg", [], False),
            (70, "ord_0070", [], False),
            (70, "ORD-70", [], False),
            (70, "-70", [], False),
            (70, "$71", [], False),  # a wrong value
            (0.15, "15", [], False),
            (33.3, "33", [], False),  # rounding needs 2 decimals shown
            (33.336, "33.33", [], False),
            (7, "007", [], False),  # a code, not a number
            (70, "seventy", [], False),  # number words are not read
            (10, "8 9 10 11 12 13", [9, 11], False),  # a dump
            (70, "either 60, 65 or 70", [60, 65], False),  # a hedge
            (70, "70 (or maybe 71)", [71], False),
            (12, "I changed 12 of 13", [11, 13], False),
        ],
    ),
    *_rule(
        "dates",
        [
            ("2024-03-05", "March 5, 2024", ["2024-03-06"], True),
            ("2024-03-05", "5 Mar 2024", [], True),
            ("2024-03-05", "Tuesday, March 5th, 2024", [], True),
            ("2024-03-05", "2024/03/05", [], True),
            ("2024-03-15", "03/15/2024", [], True),
            ("2024-03-15", "15.03.2024", [], True),
            ("2024-03-05T10:00:00", "2024-03-05 10:00", [], True),
            ("2024-03-05T15:30:00", "on March 5, 2024 at 3:30 pm", [], True),
            ("10:30", "It opens at 10:30 am.", [], True),
            ("2024-03-05", "2024-03-06", [], False),
            ("2024-03-05", "03/05/2024", [], False),  # March 5 or May 3: ambiguous states no date
            ("2024-03-05T10:00:00", "on 2024-03-05 at 11:00", [], False),
            ("2024-03-05T10:00:00", "on 2024-03-05", [], False),  # a datetime needs its time
            ("10:30", "at 10:30 pm", [], False),
            ("2024-03-05", "March 5, 2024 or March 6, 2024", ["2024-03-06"], False),  # a hedge
        ],
    ),
    *_rule(
        "booleans",
        [
            (True, "yes", [], True),
            (True, "Yes, it is in stock.", [], True),
            (False, "No.", [], True),
            (True, True, [], True),
            (True, '{"in_stock": true}', [], True),
            ("yes", "True", [], True),
            (True, "not true", [], True),  # negation is not read
            (True, "no", [], False),
            (True, "yes or no", [], False),  # every yes/no/true/false must agree
            (False, "Yes. I checked: no.", [], False),
            (True, 1, [], False),
        ],
    ),
    *_rule(
        "text",
        [
            ("shipped", "Shipped.", ["pending"], True),
            ("in_progress", "It is IN PROGRESS now", [], True),
            ("pro_0001", "It is PRO_0001.", ["pro_0002"], True),
            ("ord_0003", "Order ord_0003 for $45.00, shipped", ["ord_0001", "ord_0002", 44.0], True),
            ("shipped", "not shipped", [], False),  # what a negation governs is rejected, not stated
            ("queued", "Still queued, not succeeded yet.", ["succeeded"], True),  # nor is it a hedge
            ("queued", "It isn't succeeded: queued", ["succeeded"], True),
            ("pro_0001", "not pro_0001, not pro_0002", ["pro_0002"], False),  # negating every one states none
            ("not started", "Status: not started", ["started"], True),  # a value that is a negation itself
            ("not_started", "Status: not started", ["started"], True),
            ("started", "Status: not started", ["not started"], False),
            ("queued", "not in the succeeded state; queued", ["succeeded"], False),  # farther words are read
            ("cancelled", "canceled", [], True),  # British and American spellings state one word
            ("organisation", "The Organization", [], True),
            ("filed", "filled", [], False),  # other words do not
            ("active", "inactive", [], False),
            ("order", "Reorder soon", [], False),
            ("pro_0001", "pro_00012", [], False),
            ("pro_0001", "pro_0001, pro_0002, pro_0003", ["pro_0002", "pro_0003"], False),  # a dump
            ("shipped", "shipped or pending", ["pending"], False),  # a hedge
        ],
    ),
    *_rule(
        "lists",
        [
            (["a", "b", "c"], "c, a and b", [], True),
            (["pro_0001", "pro_0002"], '["pro_0002", "pro_0001"]', ["pro_0003"], True),
            (["pro_0001", "pro_0002"], "PRO_0002 (stock 5) and pro_0001 (stock 9)", ["pro_0003"], True),
            ([{"id": "pro_0001"}, "pro_0002"], [{"id": "pro_0002"}, "pro_0001 (9 left)"], [], True),
            ([5], 5, [4, 6], True),
            (["pro_0001", "pro_0002"], "pro_0001, pro_0002, pro_0003", ["pro_0003"], False),
            (["pro_0001", "pro_0002"], ["pro_0001"], [], False),
            (["pro_0001", "pro_0002"], ["pro_0001", "pro_0001"], [], False),  # each item counts once
            (["a", "b"], ["a", "b", "c"], [], False),  # a JSON list holds exactly the items
            (["a", "b"], "a", [], False),
            (["pro_0001", "pro_0002"], "not pro_0001, not pro_0002, not pro_0003", ["pro_0003"], False),  # negated
            (["pro_0001", "pro_0002"], '["not pro_0001", "not pro_0002"]', ["pro_0003"], False),
            (["pro_0001", "pro_0002"], "pro_0001 and pro_0002, not pro_0003", ["pro_0003"], True),
        ],
    ),
    *_rule(
        "named values",
        [
            ({"customer_id": "cus_0003", "total": 120.5}, {"customer": "cus_0003", "sum": "120.50"}, [], True),
            ({"customer_id": "cus_0003", "total": 120.5}, "Customer cus_0003 spent $120.50.", ["cus_0004"], True),
            ({"customer_id": "cus_0003", "total": 120.5}, '{"customer_id": "cus_0003", "total": 120.5}', [], True),
            ({"customer_id": "cus_0003", "total": 120.5}, "Customer cus_0004 spent $120.50.", [], False),
            ({"customer_id": "cus_0003", "total": 120.5}, {"customer_id": "cus_0003"}, [], False),
            ({"customer_id": "cus_0003", "total": 120.5}, "not cus_0003, not cus_0004; $120.50", ["cus_0004"], False),
            (
                {"customer_id": "cus_0003", "total": 120.5},
                {"customer_id": "cus_0004", "runner_up": "cus_0003", "total": 120.5},
                [],
                False,
            ),  # a value named under its key must be the expected one
            ({"customer_id": "cus_0003", "total": 5}, "cus_0003 with 5, or cus_0004 with 6", ["cus_0004", 6], False),
        ],
    ),
    *_rule(
        "no value",
        [
            (None, "None", [], True),
            ([], "There are none.", [], True),
            ([], "[]", [], True),
            (None, "0", [], False),
            ([], "none, except pro_0001", ["pro_0001"], False),
            (5, None, [], False),
        ],
    ),
]


@pytest.mark.parametrize(("expected", "answer", "competitors", "passes"), JUDGED)
def test_judge_answer(expected, answer, competitors, passes):
    ok, detail = judge_answer(expected, answer, competitors=competitors)
    assert ok is passes and (detail == "") is passes


def test_the_detail_says_why():
    assert judge_answer(70, None) == (False, "no answer")
    assert judge_answer(70, "71") == (False, "does not state 70")
    assert judge_answer(70, "69 or 70", competitors=[69, 71]) == (False, "also states 69")
    assert judge_answer(["a", "b"], "b") == (False, 'does not state "a"')


def test_a_dump_that_states_every_competitor_is_judged_from_the_first_it_states(monkeypatch):
    """A dump of an API-sized state states hundreds of competitors; checking each of them against its half a
    megabyte took 14 s, past the sandboxed verifier's limit, so the probes batched with it failed too. The
    verdict names MAX_LISTED of them, and no more are looked for."""
    looked = []
    claims = answers._claims
    monkeypatch.setattr(answers, "_claims", lambda text, value: looked.append(value) or claims(text, value))
    competitors = list(range(100, 400))
    dump = "\n".join(f'{{"id": "row_{i}", "amount": {c}, "note": "not shipped"}}' for i, c in enumerate(competitors))
    ok, detail = judge_answer(11, dump + "\nThe answer is 11.", competitors=competitors)
    assert (ok, detail) == (False, "also states 100, 101, 102, 103, 104, ...")
    assert [v for v in looked if v in competitors] == competitors[: answers.MAX_LISTED + 1]


def test_the_order_counts_only_when_asked():
    assert judge_answer(["a", "b"], "b, a") == (True, "")
    assert judge_answer(["a", "b"], "First a, then b.", ordered=True) == (True, "")
    assert not judge_answer(["a", "b"], "b, a", ordered=True)[0]
    assert not judge_answer(["a", "b"], ["b", "a"], ordered=True)[0]


def test_the_module_can_be_copied_into_a_sandboxed_verifier():
    """Standard library only; its __future__ import comes right after the docstring, so it stays first."""
    tree = ast.parse(inspect.getsource(answers))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert {m.split(".")[0] for m in imported} <= set(sys.stdlib_module_names) | {"__future__"}
    first = tree.body[1]
    assert isinstance(first, ast.ImportFrom) and first.module == "__future__"


def test_rubric_answer_checks_reject_their_competitors():
    check = RubricCheck(kind="answer_contains", value=70, competitors=[69, 71])
    assert run_check(check, {}, {}, "The total is $70.").passed
    hedge = run_check(check, {}, {}, "Either $70 or $71.")
    assert not hedge.passed and hedge.detail == "also states 71"


EQUAL = [
    (1234.5, "1,234.50"),
    (1234.5, "1234.5"),
    (1234.5, " $1,234.50. "),
    (70, "$70"),
    (70, "70.00"),
    (70, "70 USD"),
    (70, "USD 70"),
    (70, 70.0),
    ("70", 70),
    (-5, "-$5"),
    (-5, "\u22125"),
    ("shipped", "\u2018shipped\u2019"),
    (0.15, "15%"),
    (15, "15%"),
    (15, "15 percent"),
    (33.333333, "33.33"),
    (2 / 3, "0.67"),
    ("shipped", "Shipped."),
    ("in_progress", "In progress"),
    ("New York", "  new   york "),
    (True, "yes"),
    (True, "True"),
    (False, "no"),
    ("yes", True),
    ("2024-03-05", "March 5, 2024"),
    ("2024-03-05", "5 Mar 2024"),
    ("2024-03-05", "Tuesday, March 5th, 2024"),
    ("2024-03-05", "2024/03/05"),
    ("2024-03-15", "03/15/2024"),
    ("2024-03-15", "15.03.2024"),
    ("2024-03-05T10:00:00", "2024-03-05 10:00"),
    (["a", "b", "c"], "c, a and b"),
    (["a", "b", "c"], "- c\n- b\n- a"),
    (["a", "b"], '["b", "a"]'),
    ([1, 2, 3], [3, 1, 2]),
    ([1234.5, 7], "7; 1,234.50"),
    ({"count": 3, "total": 70.0}, {"total": "$70", "count": "3"}),
    (None, None),
    (None, "None"),
]

DIFFERENT = [
    (1234.5, "1243.5"),
    (1234.5, "1234"),
    (70, "170"),
    (70, "$7"),
    (70, "70.4"),
    (70, "-70"),
    (0.15, "15"),
    (33.3, "33"),
    (33.336, "33.33"),
    ("cancelled", "canceled"),  # a state value equals exactly (an answer states either, see the module docstring)
    ("active", "inactive"),
    ("shipped", "not shipped"),
    ("007", "7"),  # a code with leading zeros is a string, not the number 7
    (True, "no"),
    (True, 1),
    (False, "yes"),
    (1, True),
    ("2024-03-05", "2024-03-06"),
    ("2024-03-05", "03/05/2024"),  # March 5 or May 3: ambiguous states no date
    ("2024-03-05", "2024-03-05T00:00:00"),
    (["a", "b"], "a, b, c"),
    (["a", "b"], ["a", "a"]),
    ([1, 2], [2, 1, 2]),
    ({"count": 3}, {"count": 4}),
    ({"count": 3}, {"count": 3, "extra": 1}),
    (None, "0"),
    (5, None),
]


@pytest.mark.parametrize(("expected", "actual"), EQUAL)
def test_equal_forms_match(expected, actual):
    assert answers_match(expected, actual)


@pytest.mark.parametrize(("expected", "actual"), DIFFERENT)
def test_near_misses_do_not_match(expected, actual):
    assert not answers_match(expected, actual)


def test_ordered_lists():
    assert not answers_match(["a", "b"], ["b", "a"], ordered=True)
    assert answers_match(["a", "b"], "a, b", ordered=True)


CONTAINED = [
    ("The order was canceled", "cancelled"),  # American spelling of a British value
    ("Colour: red", "color"),
    ("The labeling job", "labelling"),
    ("The total is $70.", 70),
    ("It costs 1,234.50 dollars", 1234.5),
    ("Revenue: $1,234.50 (up 3%)", "1234.5"),
    ("The growth rate was 15%.", 0.15),
    ("Balance after the transfer: -$5.00", -5),
    ("The average is about 33.33 per day", 33.333333),
    ("Order ORD-1 shipped", "ORD-1"),
    ("The order status is IN_PROGRESS now", "in progress"),
    ("Alice's order ships on March 5, 2024.", "2024-03-05"),
    ("due 2024-03-05", "2024-03-05"),
    ("The meeting is on 2024-03-05 at 10:00 AM", "2024-03-05T10:00:00"),
    ("The meeting is on 2024-03-05 at 3:30 pm", "2024-03-05T15:30:00"),
    ("Yes, it is in stock.", True),
    ("No. It sold out.", False),
    ("Lamp (7 left) and Desk (2 left)", ["desk", "lamp"]),
    ("Found 3 orders worth $210", {"count": 3, "total": 210}),
]

NOT_CONTAINED = [
    ("The total is $170.", 70),  # a number inside a longer number is not the number
    ("Total: 1,070 items", 70),
    ("We have 70.5 kg", 70),
    ("Version 1.70", 70),
    ("Balance: -5", 5),
    ("It costs 1,243.50 dollars", 1234.5),
    ("Order ORD-17 shipped", "ORD-1"),
    ("Reorder soon", "order"),
    ("On 2024-03-05 we sold 3", 5),  # digits of a date are not counts
    ("Opens at 10:30", 30),
    ("Ships on March 6, 2024", "2024-03-05"),
    ("Ships on 03/05/2024", "2024-03-05"),
    ("The meeting is on 2024-03-05 at 11:00", "2024-03-05T10:00:00"),
    ("No, it is not in stock. Yes, I checked.", True),
    ("Lamp only", ["desk", "lamp"]),
    ("", 0),
    ("nothing here", []),
]


@pytest.mark.parametrize(("text", "value"), CONTAINED)
def test_contains(text, value):
    assert answer_contains(text, value)


@pytest.mark.parametrize(("text", "value"), NOT_CONTAINED)
def test_does_not_contain(text, value):
    assert not answer_contains(text, value)


def test_parsers():
    assert parse_number("$1,234.50")[0] == parse_number("1234.5")[0]
    assert parse_number("12%")[1] is True
    assert parse_number("twelve") is None
    assert parse_number("1.2.3") is None
    assert str(parse_date("5th of March 2024")) == "2024-03-05"
    assert parse_date("31/02/2024") is None
    assert split_list("1,234 and 5, 6") == ["1,234", "5", "6"]
    assert str(parse_time("3:30 pm")) == "15:30:00"
    assert parse_time("25:00") is None
