"""A program task's verifier source: the program verifier module with the task's EXPECTED set after it,
accepted by the code-verifier contract, judged in the sandbox exactly as the module judges in-process, and
safe whatever text the task's values hold."""

from __future__ import annotations

import ast
import json
from typing import Any

from factory.models import EntitySpec, EnvSpec, FieldSpec
from factory.tasks.programs import expected_changes, ignored_columns, verifier_source
from factory.verify import program_verifier
from factory.verify.code import check_verifier_source, run_code_verifier

F = FieldSpec
SPEC = EnvSpec(
    id="shop",
    title="Shop",
    topic_id="shop",
    description="A shop.",
    tools=[],
    entities=[
        EntitySpec(name="order", table="orders", fields=[F(name="id", primary_key=True), F(name="status")]),
        EntitySpec(
            name="ticket",
            table="tickets",
            fields=[F(name="code", primary_key=True), F(name="state")],
            primary_key="code",
        ),
    ],
    bookkeeping=["audit_log.*", "touched"],
)
INITIAL = {
    "orders": [{"id": "ord_1", "status": "open"}, {"id": "ord_2", "status": "open"}],
    "tickets": [{"code": "T1", "state": "new"}, {"code": "T2", "state": "new"}],
}
FINAL = {
    "orders": [
        {"id": "ord_1", "status": "closed"},
        {"id": "ord_2", "status": "open"},
        {"id": "ord_3", "status": "new"},
    ],
    "tickets": [{"code": "T1", "state": "new"}],
}


def _expected(answer: Any, tables: dict[str, Any]) -> dict[str, Any]:
    keys = {"orders": "id", "tickets": "code"}
    return {"answer": answer, "ordered": False, "keys": keys, "ignore": ignored_columns(SPEC), "tables": tables}


def _namespace(source: str) -> dict[str, Any]:
    """The verifier loaded in-process: trusted here, since the test made it from the module's own source."""
    namespace: dict[str, Any] = {}
    exec(compile(source, "<verifier>", "exec"), namespace)
    return namespace


def test_ignored_columns_are_bookkeeping_and_clock_columns():
    patterns = ignored_columns(SPEC)
    assert patterns[:2] == ["audit_log.*", "*.touched"]
    assert "*.updated_at" in patterns


def test_expected_changes_are_the_gold_runs_writes():
    changes = expected_changes(SPEC, INITIAL, FINAL)
    assert changes["orders"]["changed"] == {"ord_1": {"status": "closed"}}
    assert changes["orders"]["added"] == [{"status": "new"}]  # matched by content, so without its key
    assert changes["tickets"] == {"changed": {}, "added": [], "removed": ["T2"]}


def test_the_source_is_the_module_with_the_tasks_expected():
    tables = expected_changes(SPEC, INITIAL, FINAL)
    source = verifier_source("shop-program-join-abc", SPEC, 3, tables)
    assert check_verifier_source(source) == []
    assert source.startswith('# Verifier of program task "shop-program-join-abc"\n')
    assert _namespace(source)["EXPECTED"] == _expected(3, tables)
    last = ast.parse(source).body[-1]
    assert isinstance(last, ast.Assign) and ast.unparse(last.targets[0]) == "EXPECTED"


def test_the_sandbox_gives_the_modules_verdicts():
    tables = expected_changes(SPEC, INITIAL, FINAL)
    source = verifier_source("shop-program-bulk_update-abc", SPEC, 1, tables)
    expected = _expected(1, tables)
    for final, answer in [(FINAL, "1"), (FINAL, "I changed 1 order."), (FINAL, "2"), (INITIAL, "1"), (INITIAL, None)]:
        verdict = run_code_verifier(source, INITIAL, final, answer)
        want = program_verifier.check(expected, INITIAL, final, answer)
        assert verdict.model_dump() == {
            "passed": want["passed"],
            "score": want["score"],
            "checks": want["checks"],
        }
    assert run_code_verifier(source, INITIAL, FINAL, "1").passed


def test_no_value_can_break_out_of_the_header():
    hostile = "x'''\"\"\"\n__import__('os').system('exit 1')\n# \\ \x00 \u2028 end"
    source = verifier_source(hostile, SPEC, [hostile, "ord_1"], {"orders": {"changed": {"ord_1": {"status": hostile}}}})
    assert check_verifier_source(source) == []
    assert source.splitlines()[0] == "# Verifier of program task " + json.dumps(hostile)
    namespace = _namespace(source)
    assert namespace["EXPECTED"]["answer"] == [hostile, "ord_1"]
    assert namespace["EXPECTED"]["tables"]["orders"]["changed"]["ord_1"]["status"] == hostile
    assert "__import__" not in {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
