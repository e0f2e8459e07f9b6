"""A program task's verifier source: the answer module and the program verifier module with the task's EXPECTED
set after them, accepted by the code-verifier contract, judged in the sandbox exactly as the modules judge
in-process, and safe whatever text the task's values hold."""

from __future__ import annotations

import ast
import inspect
import json
from typing import Any

import pytest

from factory.models import EntitySpec, EnvSpec, FieldSpec
from factory.tasks.programs import expected_changes, ignored_columns, verifier_source
from factory.tasks.programs.verifier import competitors
from factory.verify import answers, program_verifier
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
    return {
        "answer": answer,
        "ordered": False,
        "competitors": competitors(answer, INITIAL),
        "keys": keys,
        "ignore": ignored_columns(SPEC),
        "tables": tables,
    }


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
    source = verifier_source("shop-program-join-abc", SPEC, 3, tables, INITIAL)
    assert check_verifier_source(source) == []
    compile(source, "<verifier>", "exec")  # the answer module's __future__ import still comes first
    assert source.startswith('# Verifier of program task "shop-program-join-abc"\n')
    assert _namespace(source)["EXPECTED"] == _expected(3, tables)
    last = ast.parse(source).body[-1]
    assert isinstance(last, ast.Assign) and ast.unparse(last.targets[0]) == "EXPECTED"


def test_the_sandbox_gives_the_modules_verdicts():
    tables = expected_changes(SPEC, INITIAL, FINAL)
    source = verifier_source("shop-program-bulk_update-abc", SPEC, 1, tables, INITIAL)
    expected = _expected(1, tables)
    texts = ["1", "I changed 1 order.", '{"changed": 1}', "2", "1 or 2"]
    for final, answer in [*((FINAL, a) for a in texts), (INITIAL, "1"), (INITIAL, None)]:
        verdict = run_code_verifier(source, INITIAL, final, answer)
        want = program_verifier.check(expected, INITIAL, final, answer)
        assert verdict.model_dump() == {
            "passed": want["passed"],
            "score": want["score"],
            "checks": want["checks"],
        }
    assert run_code_verifier(source, INITIAL, FINAL, "1").passed
    assert not run_code_verifier(source, INITIAL, FINAL, "1 or 2").passed


def test_no_value_can_break_out_of_the_header():
    hostile = "x'''\"\"\"\n__import__('os').system('exit 1')\n# \\ \x00 \u2028 end"
    tables = {"orders": {"changed": {"ord_1": {"status": hostile}}}}
    source = verifier_source(hostile, SPEC, [hostile, "ord_1"], tables, INITIAL)
    assert check_verifier_source(source) == []
    assert source.splitlines()[0] == "# Verifier of program task " + json.dumps(hostile)
    namespace = _namespace(source)
    assert namespace["EXPECTED"]["answer"] == [hostile, "ord_1"]
    assert namespace["EXPECTED"]["tables"]["orders"]["changed"]["ord_1"]["status"] == hostile
    assert "__import__" not in {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}


def test_the_source_imports_the_standard_library_only():
    tree = ast.parse(verifier_source("t", SPEC, 1, {}, INITIAL))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported and not any(m.split(".")[0] == "factory" for m in imported)


def test_the_modules_define_distinct_names():
    """One namespace holds both modules in the verifier: a name defined twice would change the first's meaning."""

    def defined(module: Any) -> set[str]:
        tree = ast.parse(inspect.getsource(module))
        names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
        for n in tree.body:
            targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AnnAssign) else []
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        return names

    assert defined(answers) and not defined(answers) & defined(program_verifier)


SEED = {
    "orders": [
        {"id": "ord_1", "customer_id": "cus_1", "total": 45.5, "quantity": 2},
        {"id": "ord_2", "customer_id": "cus_2", "total": 12.0, "quantity": 3},
        {"id": "ord_3", "customer_id": "cus_1", "total": 45.5, "quantity": 1},
    ],
    "customers": [{"id": "cus_1", "vip": True}, {"id": "cus_2", "vip": False}, {"id": "cus_3", "vip": False}],
}


@pytest.mark.parametrize(
    ("answer", "near"),
    [
        ("ord_2", ["ord_1", "ord_3"]),  # the other ids of its table
        (["ord_1", "ord_3"], ["ord_2"]),
        (4, [3, 5]),  # a count's neighbours
        (3, [2, 4, 1]),  # and the other values of a column that holds it
        (12.0, [11.0, 13.0, 45.5]),  # the other amounts of its column
        (57.5, [56.5, 58.5]),
        ({"customer_id": "cus_1", "total": 2}, ["cus_2", "cus_3", 1, 3]),
        (True, []),
    ],
)
def test_competitors_come_from_the_initial_state(answer, near):
    assert sorted(competitors(answer, SEED), key=str) == sorted(near, key=str)
