"""The tool gate: run each generated test case in a fresh sandbox session and keep the tools that pass.

A tool is kept when its test accuracy is above the threshold; the environment is kept when its tools.py
compiles (imports in the sandbox) and at least one tested tool is kept. Everything dropped gets a reason,
including tools that got no code (no inferred operation) or no tests.

A successful result must also be valid against the output schema the tool advertises (env.json `output`,
MCP `outputSchema`), checked the way the official MCP client checks `structuredContent`: JSON Schema
Draft 2020-12 unless the schema names its own `$schema`, `$ref`s resolved inside the schema only, formats
as annotations. A result a client would reject fails its case. The check runs here, in the
orchestrator, on the result data the sandbox sent back.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from jsonschema import SchemaError
from jsonschema.exceptions import ValidationError, best_match
from jsonschema.protocols import Validator
from jsonschema.validators import Draft202012Validator, validator_for
from referencing import Registry

from factory.envs.bundle import ENV_JSON, REPORT_JSON, TESTS_JSON, Bundle
from factory.envs.codegen import unsupported_tools
from factory.envs.state import Rows
from factory.envs.testgen import generate_tests
from factory.models import (
    EnvSpec,
    GateReport,
    JsonSchema,
    Snapshot,
    StateCheck,
    TestCase,
    ToolReport,
    ToolResult,
)
from factory.sandbox import SandboxPool
from factory.store import write_json_atomic

MAX_FAILURES_LISTED = 5
MAX_MESSAGE = 200


class OutputCheck:
    """One tool's advertised output schema, compiled once: why a result breaks it, or None."""

    def __init__(self, schema: JsonSchema):
        self.validator: Validator | None = None
        self.invalid: str | None = None
        cls = validator_for(schema, default=Draft202012Validator)
        try:
            cls.check_schema(schema)
        except SchemaError as e:
            self.invalid = f"the output schema is not valid JSON Schema: {_clip(e.message)}"
            return
        self.validator = cls(schema, registry=Registry())

    def problem(self, value: Any) -> str | None:
        """Why `value` is not valid against the schema (the error a client would report), or None."""
        if self.validator is None:
            return self.invalid
        error: ValidationError | None = best_match(self.validator.iter_errors(value))
        if error is None:
            return None
        return f"result breaks the output schema at {error.json_path}: {_clip(error.message)}"


def matches(expected: Any, actual: Any) -> bool:
    """Subset match: dict keys recursively, each expected list item somewhere in the list, numbers by value."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and matches(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and all(any(matches(e, a) for a in actual) for e in expected)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected == actual and type(expected) is type(actual)
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return math.isclose(expected, actual, rel_tol=1e-9, abs_tol=1e-9)
    return expected == actual


def check_state(checks: list[StateCheck], snapshot: Snapshot) -> str | None:
    """Why the state after a call does not show the expected effects, or None when it does."""
    for check in checks:
        rows = [
            r
            for r in snapshot.tables.get(check.table, [])
            if all(k in r and matches(v, r[k]) for k, v in check.where.items())
        ]
        if check.count is not None and len(rows) != check.count:
            return f"state: expected {check.count} {check.table} rows like {_short(check.where)}, found {len(rows)}"
        if check.match is not None and not any(matches(check.match, r) for r in rows):
            found = _short(rows[0]) if rows else "no such row"
            return f"state: {check.table} {_short(check.where)} should hold {_short(check.match)}, has {found}"
    return None


def check_case(
    case: TestCase, result: ToolResult, snapshot: Snapshot | None = None, output: OutputCheck | None = None
) -> str | None:
    """Why `result` (and the state after it, `snapshot`, for a case that checks effects) does not meet the
    case's expectation or, on success, the tool's advertised `output` schema; None when it does."""
    expect = case.expect
    if not expect.ok:
        if result.ok:
            return f"expected error {expect.error_code}, got success {_short(result.value)}"
        code = result.error.code if result.error else None
        if expect.error_code and code != expect.error_code:
            return f"expected error {expect.error_code}, got {code}: {result.error.message if result.error else ''}"
        return None
    if not result.ok:
        err = result.error
        return f"expected success, got error {err.code if err else '?'}: {err.message if err else ''}"
    broken = output.problem(result.value) if output is not None else None
    if broken is not None:
        return broken
    if expect.match is not None and not matches(expect.match, result.value):
        return f"result {_short(result.value)} does not contain {_short(expect.match)}"
    if expect.count is not None:
        items = result.value.get("items") if isinstance(result.value, dict) else result.value
        if not isinstance(items, list) or len(items) != expect.count:
            n = len(items) if isinstance(items, list) else "no list"
            return f"expected {expect.count} items, got {n}"
    checks = case.state
    if checks:
        return check_state(checks, snapshot) if snapshot is not None else "state: no snapshot taken after the call"
    return None


def _short(value: Any, limit: int = 160) -> str:
    return _clip(repr(value), limit)


def _clip(text: str, limit: int = MAX_MESSAGE) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _tool_reports(
    cases: list[TestCase],
    results: list[ToolResult],
    threshold: float,
    snapshots: list[Snapshot | None] | None = None,
    outputs: dict[str, JsonSchema] | None = None,
) -> dict[str, ToolReport]:
    by_tool: dict[str, list[tuple[TestCase, ToolResult, Snapshot | None]]] = defaultdict(list)
    for case, result, snapshot in zip(cases, results, snapshots or [None] * len(cases), strict=True):
        by_tool[case.tool].append((case, result, snapshot))
    reports = {}
    for name, pairs in sorted(by_tool.items()):
        schema = (outputs or {}).get(name)
        output = OutputCheck(schema) if schema is not None else None
        failures = []
        checked = invalid = 0
        for case, result, snapshot in pairs:
            broken = output.problem(result.value) if output is not None and result.ok else None
            checked += output is not None and result.ok
            invalid += broken is not None
            # a result already found valid is not validated again
            why = check_case(case, result, snapshot, output if broken is not None else None)
            if why is not None:
                failures.append(f"{case.name or case.tool}: {why}")
        passed = len(pairs) - len(failures)
        accuracy = passed / len(pairs)
        reports[name] = ToolReport(
            cases=len(pairs),
            passed=passed,
            accuracy=round(accuracy, 4),
            kept=accuracy > threshold,
            failures=failures[:MAX_FAILURES_LISTED],
            results_checked=checked,
            results_invalid=invalid,
        )
    return reports


def run_gate(
    bundle_dir: Path, cases: list[TestCase], threshold: float = 0.5, pool: SandboxPool | None = None
) -> GateReport:
    """Gate the bundle at `bundle_dir` with `cases`, each run in a fresh session through the runtime."""
    from factory.envs.runtime import Environment, EnvironmentLoadError

    spec = Bundle.open(bundle_dir).spec
    no_code = unsupported_tools(spec)
    try:
        env = Environment.open(bundle_dir, pool=pool)
    except EnvironmentLoadError as e:
        return GateReport(
            compiled=False,
            compile_error=str(e),
            kept=False,
            reasons=[f"tools.py does not load: {e}"],
            threshold=threshold,
        )
    known = {t.name for t in spec.tools}
    runnable = [c for c in cases if c.tool in known]
    with env:
        results: list[ToolResult] = []
        snapshots: list[Snapshot | None] = []
        with env.session() as session:
            for case in runnable:
                session.reset()
                results.append(session.call(case.tool, case.args))
                snapshots.append(session.snapshot() if case.state and results[-1].ok else None)
    outputs = {t.name: t.output for t in spec.tools if t.output is not None}
    reports = _tool_reports(runnable, results, threshold, snapshots, outputs)
    reasons = []
    for tool in spec.tools:
        if tool.name not in reports and tool.name in no_code:
            reasons.append(f"{tool.name}: dropped, no code generated ({no_code[tool.name]})")
        elif tool.name not in reports:
            reasons.append(f"{tool.name}: dropped, no tests could be generated for it")
        elif not reports[tool.name].kept:
            r = reports[tool.name]
            first = f"; first failure: {r.failures[0]}" if r.failures else ""
            reasons.append(f"{tool.name}: dropped, {r.passed}/{r.cases} tests passed (needs > {threshold:.0%}){first}")
    for name in sorted({c.tool for c in cases} - known):
        reasons.append(f"{name}: tests name a tool the environment does not offer")
    kept_tools = [t.name for t in spec.tools if t.name in reports and reports[t.name].kept]
    if not kept_tools:
        reasons.insert(0, "no tested tool passed the gate")
    return GateReport(
        compiled=True,
        tools=reports,
        kept_tools=kept_tools,
        kept=bool(kept_tools),
        reasons=reasons,
        threshold=threshold,
    )


def gate_environment(spec: EnvSpec, rows: Rows, out: Path, pool: SandboxPool | None = None) -> GateReport:
    """Generate the tool tests into a bundle that has its state and tools.py, run the gate, and write
    env.json (kept tools only), tests.json and report.json."""
    cases = generate_tests(spec, rows, spec.seed)
    write_json_atomic(out / ENV_JSON, spec)
    report = run_gate(out, cases, pool=pool)
    kept = set(report.kept_tools)
    write_json_atomic(out / ENV_JSON, spec.model_copy(update={"tools": [t for t in spec.tools if t.name in kept]}))
    write_json_atomic(out / TESTS_JSON, [c.model_dump(mode="json") for c in cases if c.tool in kept])
    write_json_atomic(out / REPORT_JSON, report)
    return report
