"""Answer leniency both ways: equal forms accepted, near misses rejected."""

from __future__ import annotations

import pytest

from factory.verify.answers import answer_contains, answers_match, parse_date, parse_number, split_list

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
    ("cancelled", "canceled"),  # spelling variants are different values (see the module docstring)
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
    ("The order was canceled", "cancelled"),
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
