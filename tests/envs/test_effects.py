"""Effects the catalog's tool descriptions state are implemented and gate-tested: cancelling gives stock, seats
and budget back, money movements write ledger rows, closed rows refuse changes and new rows pointing at them.
A tools.py with the effect removed fails the generated effect tests."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from factory.envs.build import build_env
from factory.envs.bundle import TESTS_JSON, TOOLS_PY
from factory.envs.gate import run_gate
from factory.envs.testgen import generate_tests
from factory.topics import load_catalog

# (topic, tool, what its description states)
STATED = [
    ("online-shop", "cancel_order", "gives back"),
    ("food-delivery", "cancel_delivery_order", "gives back"),
    ("loyalty-program", "cancel_redemption", "gives back"),
    ("marketplace", "reject_offer", "gives back"),
    ("learning-management", "cancel_enrollment", "gives back"),
    ("library-loans", "complete_loan", "gives back"),
    ("procurement", "cancel_purchase_order", "gives back"),
    ("manufacturing-orders", "cancel_work_order", "gives back"),
    ("meeting-rooms", "cancel_booking", "gives back"),
    ("event-ticketing", "cancel_ticket", "gives back"),
    ("flight-booking", "cancel_booking", "gives back"),
    ("hotel-reservations", "cancel_reservation", "gives back"),
    ("tour-activities", "cancel_booking", "gives back"),
    ("retail-banking", "deposit_account", "ledger"),
    ("retail-banking", "withdraw_account", "ledger"),
    ("retail-banking", "transfer_account", "ledger"),
    ("retail-banking", "deposit_account", "takes no amount change"),
    ("retail-banking", "transfer_account", "to a closed account"),
    ("learning-management", "create_enrollment", "names a closed course"),
    ("community-forum", "create_post", "names a closed thread"),
    ("recruiting", "create_application", "names a"),
    ("marketplace", "create_offer", "names a"),
]
# Tools whose stated effect shows in what other tools then refuse.
COVERED_BY = {
    ("marketplace", "archive_listing"): ("marketplace", "create_offer"),
    ("retail-banking", "close_account"): ("retail-banking", "deposit_account"),
    ("learning-management", "close_course"): ("learning-management", "create_enrollment"),
}
EFFECT_WORDS = re.compile(r"goes? back|given back|freed?\b|become available|records? a|released|takes no more|no more")


@pytest.mark.parametrize(("topic", "tool", "effect"), STATED)
def test_each_stated_effect_has_a_passing_gate_test(topic: str, tool: str, effect: str, tmp_path: Path):
    report = build_env(topic, tmp_path / "env", backend="files")
    from factory.mining.datasets import draft_environment
    from factory.topics import get_topic

    spec, rows = draft_environment(get_topic(topic), backend="files")
    cases = [c for c in generate_tests(spec, rows, spec.seed) if c.tool == tool and effect in c.name]
    assert cases, f"no generated test for {tool}: {effect}"
    assert report.tools[tool].kept and report.tools[tool].passed == report.tools[tool].cases, report.tools[tool]
    written = json.loads((tmp_path / "env" / TESTS_JSON).read_text())
    mine = [w for w in written if w["tool"] == tool and effect in w["name"]]
    assert mine == [c.model_dump(mode="json") for c in cases]
    if effect in ("gives back", "ledger"):
        assert all(c.state for c in cases), "the effect is checked on the state, and tests.json keeps the check"


def test_every_catalog_description_that_states_an_effect_is_covered():
    stated = {
        (t.id, tool.name)
        for t in load_catalog()
        for tool in t.tools
        if tool.mutates and EFFECT_WORDS.search(tool.description.lower())
    }
    covered = {(topic, tool) for topic, tool, _ in STATED}
    covered |= {k for k, v in COVERED_BY.items() if v in covered}
    assert stated <= covered, sorted(stated - covered)


@pytest.mark.parametrize(
    ("topic", "tool", "cut"),
    [
        ("online-shop", "cancel_order", "_return_supply("),
        ("retail-banking", "deposit_account", "_post_entry("),
        ("retail-banking", "withdraw_account", "_check_open("),
    ],
)
def test_tools_without_the_effect_fail_their_gate_tests(topic: str, tool: str, cut: str, tmp_path: Path):
    out = tmp_path / "env"
    build_env(topic, out, backend="files")
    module = ast.parse((out / TOOLS_PY).read_text())
    function = next(n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == tool)
    kept = [n for n in function.body if cut not in ast.unparse(n)]
    assert len(kept) < len(function.body)
    function.body = kept
    (out / TOOLS_PY).write_text(ast.unparse(module))
    from factory.mining.datasets import draft_environment
    from factory.topics import get_topic

    spec, rows = draft_environment(get_topic(topic), backend="files")
    cases = [c for c in generate_tests(spec, rows, spec.seed) if c.tool == tool]
    report = run_gate(out, cases)
    assert report.tools[tool].passed < report.tools[tool].cases, report.tools[tool]
    assert any(c.state for c in cases) or cut == "_check_open("
