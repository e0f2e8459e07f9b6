"""List tools page the way their document says: page numbers, offsets under other names, opaque cursors.

Each style's second page holds the next rows, its result says where the next page starts as the output
schema advertises, the gate's cases fail a tool that ignores its paging position, and a parameter the
code does not apply says so in its description."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema.validators import Draft202012Validator

from factory.envs.build import resolve_topic
from factory.envs.codegen import generate_tools
from factory.envs.entities.outputs import Paging, output_schema, paging_style
from factory.envs.entities.tools import UNAPPLIED_NOTE, noted_unapplied
from factory.envs.gate import check_case
from factory.envs.testgen import generate_tests
from factory.mining.datasets import draft_environment
from factory.models import EntitySpec, EnvSpec, FieldSpec, Snapshot, ToolError, ToolOperation, ToolResult, ToolSpec

from .conftest import load_state

ONFIDO = Path(__file__).resolve().parents[2].parent / "shared" / "real" / "openapi" / "onfido-openapi.json"

INT, S = {"type": "integer"}, {"type": "string"}
APPLICANT = EntitySpec(
    name="applicant",
    table="applicants",
    fields=[FieldSpec(name="id", primary_key=True), FieldSpec(name="name", required=True)],
)
ROWS = {"applicants": [{"id": f"app_{i:04d}", "name": f"Applicant {i}"} for i in range(1, 8)]}
# tool -> (parameters, its paging style, the position asking for the second page of 3 rows)
STYLES: dict[str, tuple[dict[str, Any], Paging]] = {
    "list_by_page": (
        {"page": {**INT, "default": 1}, "per_page": {**INT, "default": 20}},
        Paging("page", "per_page", "page", 1),
    ),
    "list_by_page_from_0": ({"page": {**INT, "minimum": 0}, "pageSize": INT}, Paging("page", "pageSize", "page", 0)),
    "list_by_skip": ({"skip": INT, "max_results": INT}, Paging("offset", "max_results", "skip")),
    "list_by_start": ({"start": INT, "count": INT}, Paging("offset", "count", "start")),
    "list_by_offset": ({"limit": INT, "offset": INT}, Paging("offset", "limit", "offset")),
    "list_by_cursor": ({"cursor": S, "limit": INT}, Paging("cursor", "limit", "cursor")),
    "list_by_after": ({"starting_after": S, "limit": INT}, Paging("cursor", "limit", "starting_after")),
    "list_by_token": ({"pageToken": S, "pageSize": INT}, Paging("cursor", "pageSize", "pageToken")),
}


def _spec(backend: str) -> EnvSpec:
    tools = [
        ToolSpec(
            name=name,
            description=f"{name}.",
            parameters={"type": "object", "properties": props},
            operation=ToolOperation(kind="list", entity="applicant"),
            output=output_schema(ToolOperation(kind="list", entity="applicant"), APPLICANT, {"properties": props}),
        )
        for name, (props, _) in STYLES.items()
    ]
    return EnvSpec(
        id="kyc",
        title="KYC",
        topic_id="kyc",
        description="Applicants.",
        backend=backend,
        tools=tools,
        entities=[APPLICANT],
    )


class Bound:
    """The generated tools of the synthetic spec, each call in a fresh copy of the rows."""

    def __init__(self, spec: EnvSpec, tmp: Path, source: str | None = None):
        self.spec, self.tmp, self.calls = spec, tmp, 0
        self.ns: dict[str, Any] = {}
        exec(compile(source or generate_tools(spec), "tools.py", "exec"), self.ns)

    def state(self) -> Any:
        self.calls += 1
        return load_state(self.spec, json.loads(json.dumps(ROWS)), self.tmp / f"s{self.calls}")

    def call(self, tool: str, **args: Any) -> dict[str, Any]:
        return self.ns[tool](self.state(), **args)


def _ids(page: dict[str, Any]) -> list[str]:
    return [r["id"] for r in page["items"]]


def test_the_paging_style_comes_from_the_parameters():
    for name, (props, paging) in STYLES.items():
        assert paging_style(props) == paging, name
    assert paging_style({"after": {"type": "string", "format": "date-time"}}).style == "offset"  # a time bound
    assert paging_style({"include_deleted": {"type": "boolean"}}).params == ()
    assert paging_style(STYLES["list_by_token"][0]).next_key == "next_cursor"


@pytest.mark.parametrize("tool", list(STYLES))
def test_the_second_page_holds_the_next_rows_on_both_backends(tool: str, backend: str, tmp_path: Path):
    spec = _spec(backend)
    tools = Bound(spec, tmp_path)
    paging = STYLES[tool][1]
    check = Draft202012Validator(next(t.output for t in spec.tools if t.name == tool))
    seen: list[str] = []
    args: dict[str, Any] = {paging.size: 3} if paging.size else {}
    if paging.style == "page":
        args[paging.position or ""] = paging.first
    while True:
        page = tools.call(tool, **args)
        assert not list(check.iter_errors(page)), page
        assert page["total"] == 7 and len(page["items"]) <= 3
        seen += _ids(page)
        following = page[paging.next_key]
        if following is None:
            break
        args[paging.position or ""] = following
    assert seen == [r["id"] for r in ROWS["applicants"]]


def test_a_page_before_the_first_or_a_made_up_cursor_is_refused(backend: str, tmp_path: Path):
    tools = Bound(_spec(backend), tmp_path)
    assert tools.call("list_by_page", page=0)["error"]["code"] == "invalid_arguments"
    assert _ids(tools.call("list_by_page_from_0", page=0, pageSize=2)) == ["app_0001", "app_0002"]
    assert tools.call("list_by_cursor", cursor="app_0003")["error"]["code"] == "invalid_arguments"
    assert tools.call("list_by_after", starting_after="")["next_cursor"] is None  # 7 rows fit the default page


def _failures(spec: EnvSpec, source: str, tmp: Path) -> dict[str, str]:
    """Case name -> why it failed, for the generated cases run in-process against `source`."""
    tools = Bound(spec, tmp, source)
    failures = {}
    for case in generate_tests(spec, ROWS, seed=0):
        value = tools.call(case.tool, **case.args)
        error = value.get("error")
        result = ToolResult(ok=False, error=ToolError(**error)) if error else ToolResult(ok=True, value=value)
        why = check_case(case, result, Snapshot(tables=ROWS))
        if why:
            failures[case.name] = why
    return failures


def test_gate_cases_pass_and_catch_a_tool_that_ignores_its_position(backend: str, tmp_path: Path):
    spec = _spec(backend)
    source = generate_tools(spec)
    assert _failures(spec, source, tmp_path / "right") == {}
    ignoring = {
        "list_by_page": ("_numbered_page(rows, per_page, page, 1)", "_numbered_page(rows, per_page, None, 1)"),
        "list_by_skip": ("_page(rows, max_results, skip)", "_page(rows, max_results, None)"),
        "list_by_token": ("_cursor_page(rows, pageSize, pageToken)", "_cursor_page(rows, pageSize, None)"),
        "list_by_after": ("_cursor_page(rows, limit, starting_after)", "_cursor_page(rows, limit, None)"),
    }
    for tool, (right, wrong) in ignoring.items():
        assert right in source, tool
        failed = _failures(spec, source.replace(right, wrong), tmp_path / tool)
        assert any(name.startswith(f"{tool}: page at") for name in failed), tool


def test_a_parameter_the_code_does_not_apply_says_so():
    op = ToolOperation(kind="list", entity="applicant")
    props = {
        "page": INT,
        "per_page": INT,
        "name": S,
        "include_deleted": {"type": "boolean", "description": "Deleted too."},
    }
    noted = noted_unapplied(op, APPLICANT, {"type": "object", "properties": props})["properties"]
    assert noted["include_deleted"]["description"] == f"Deleted too. {UNAPPLIED_NOTE}"
    assert all(noted[p] == props[p] for p in ("page", "per_page", "name"))
    again = noted_unapplied(op, APPLICANT, {"properties": noted})["properties"]
    assert again == noted  # noting twice says it once


@pytest.mark.skipif(not ONFIDO.is_file(), reason="real OpenAPI documents are not available")
def test_onfido_list_applicants_pages_by_number_and_notes_include_deleted():
    spec, rows = draft_environment(resolve_topic(str(ONFIDO)))
    tool = next(t for t in spec.tools if t.name == "list_applicants")
    props = tool.parameters["properties"]
    assert paging_style(props) == Paging("page", "per_page", "page", 1)
    assert props["include_deleted"]["description"].endswith(UNAPPLIED_NOTE)
    assert "next_page" in tool.output["required"]
    assert "return _numbered_page(rows, per_page, page, 1)" in generate_tools(spec)
    names = {c.name for c in generate_tests(spec, rows, spec.seed) if c.tool == "list_applicants"}
    assert "list_applicants: page at page=2" in names
