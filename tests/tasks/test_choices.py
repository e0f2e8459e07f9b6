"""What a changed replay shows a chain's free choices decide."""

from __future__ import annotations

from factory.tasks.choices import differing_fields
from factory.verify.state import state_diff


def _written(**row) -> object:
    return state_diff({"entries": []}, {"entries": [{"id": "e1", "kind": "audit", **row}]})


def test_a_choice_decides_the_scalar_fields_it_changes_but_not_part_of_a_structure():
    assert differing_fields(_written(pk="a"), _written(pk="a2"), whole=True) == ["entries.pk"]
    # the note inside the attributes is the solver's, the table named beside it is not: no field can go unchecked
    one = _written(attributes={"note": "x", "table": "orders"})
    other = _written(attributes={"note": "x2", "table": "orders"})
    assert differing_fields(one, other, whole=True) is None
    assert differing_fields(one, other) == ["entries.attributes"]  # an id a longer path draws: the whole field
    assert differing_fields(_written(pk="a"), state_diff({"entries": []}, {"entries": []}), whole=True) is None
