"""Every result a tool returns is valid against the output schema it advertises: derived outputs, the
gate's check, and the official MCP client (which rejects structuredContent that breaks outputSchema)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from jsonschema.validators import Draft202012Validator
from mcp import Client

from factory.envs.build import resolve_topic
from factory.envs.codegen import generate_tools
from factory.envs.entities.outputs import output_schema
from factory.envs.gate import OutputCheck, check_case, run_gate
from factory.envs.mcp_server import SessionBinding, build_server
from factory.envs.runtime import Environment
from factory.envs.state import write_state
from factory.envs.testgen import generate_tests
from factory.mining.datasets import draft_environment
from factory.models import EntitySpec, EnvSpec, FieldSpec, TestCase, TestExpect, ToolOperation, ToolResult
from factory.store import write_json_atomic, write_text_atomic

from .conftest import shop_rows, shop_spec, write_bundle

ONFIDO = Path(__file__).resolve().parents[2].parent / "shared" / "real" / "openapi" / "onfido-openapi.json"

PET = EntitySpec(
    name="pet",
    table="pets",
    fields=[
        FieldSpec(name="id", type="integer", primary_key=True, required=True),
        FieldSpec(name="name", required=True),
        FieldSpec(name="owner_id", references="owner.id"),
        FieldSpec(name="weight", type="integer"),
        FieldSpec(name="extra", format="json"),
    ],
)
# The document's pet: a nested owner object (our `owner_id` column), an object `extra` (our json column).
DOCUMENTED_PET = {
    "type": "object",
    "description": "A pet in the store.",
    "properties": {
        "id": {"type": "integer", "format": "int64"},
        "name": {"type": "string", "description": "The pet's name."},
        "owner": {"type": "object", "description": "Who owns it.", "properties": {"id": {"type": "integer"}}},
        "weight": {"type": "string", "format": "byte", "description": "Weight as text."},
        "extra": {"type": "object"},
    },
}


def _valid(schema: dict, value: object) -> bool:
    return Draft202012Validator(schema).is_valid(value)


def test_derived_output_keeps_what_the_document_says_where_it_still_holds():
    get = output_schema(ToolOperation(kind="get", entity="pet"), PET, documented=DOCUMENTED_PET)
    props = get["properties"]
    assert get["description"] == "A pet in the store." and get["x-entity"] == "pet"
    assert props["id"]["format"] == "int64" and props["name"]["description"] == "The pet's name."
    assert "description" not in props["owner_id"] and props["owner_id"]["x-references"] == "owner.id"
    assert "format" not in props["weight"] and "description" not in props["weight"]  # a string in the document
    row = {"id": 3, "name": "Rex", "owner_id": None, "weight": 12, "extra": '{"a": 1}'}
    assert _valid(get, row) and _valid(get, {**row, "extra": {"a": 1}})  # sqlite gives json text back, files the value
    assert not _valid(get, {**row, "owner_id": {"id": 1}})
    page = output_schema(
        ToolOperation(kind="list", entity="pet"), PET, documented={"type": "array", "items": DOCUMENTED_PET}
    )
    assert page["required"] == ["items", "total", "next_offset"]
    assert page["properties"]["items"]["items"]["properties"]["name"]["description"] == "The pet's name."
    assert _valid(page, {"items": [row], "total": 1, "next_offset": None})


def test_a_delete_result_names_the_key_parameter_with_the_key_type():
    params = {"type": "object", "properties": {"pet_id": {"type": "integer"}}}
    delete = output_schema(ToolOperation(kind="delete", entity="pet"), PET, params, documented=DOCUMENTED_PET)
    assert _valid(delete, {"deleted": True, "pet_id": 3}) and not _valid(delete, {"deleted": True, "pet_id": "3"})
    by_pk = output_schema(ToolOperation(kind="delete", entity="pet"), PET, {"properties": {"id": {}}})
    assert by_pk["required"] == ["deleted", "id"]


def _with_outputs(spec: EnvSpec) -> EnvSpec:
    entities = {e.name: e for e in spec.entities}
    tools = [
        t.model_copy(update={"output": output_schema(t.operation, entities[t.operation.entity], t.parameters)})
        if t.operation
        else t
        for t in spec.tools
    ]
    return spec.model_copy(update={"tools": tools})


def test_every_shop_result_is_valid_against_its_derived_output(backend: str, tmp_path: Path):
    spec = _with_outputs(shop_spec(backend))
    report = run_gate(write_bundle(spec, shop_rows(), tmp_path / "shop"), generate_tests(spec, shop_rows(), seed=0))
    assert set(report.kept_tools) == {t.name for t in spec.tools if t.operation}
    assert all(r.accuracy == 1.0 for r in report.tools.values()), {n: r.failures for n, r in report.tools.items()}
    assert sum(r.results_checked for r in report.tools.values()) > 0
    assert sum(r.results_invalid for r in report.tools.values()) == 0


def test_a_result_breaking_its_output_schema_fails_its_case(tmp_path: Path):
    spec = _with_outputs(shop_spec())
    source = generate_tools(spec)
    find = '    return _find(db, "products", product_id, "product")\n'
    wrong = source.replace(find, '    return {**_find(db, "products", product_id, "product"), "stock": "plenty"}\n', 1)
    assert wrong != source
    cases = [
        TestCase(tool="get_product", args={"product_id": pid}, expect=TestExpect(match={"id": pid}), name=pid)
        for pid in ("pro_0001", "pro_0002")
    ]
    report = run_gate(write_bundle(spec, shop_rows(), tmp_path / "shop", tools_source=wrong), cases)
    get = report.tools["get_product"]
    assert get.passed == 0 and not get.kept and not report.kept
    assert (get.results_checked, get.results_invalid) == (2, 2)
    assert get.failures[0] == (
        "pro_0001: result breaks the output schema at $.stock: 'plenty' is not of type 'integer', 'null'"
    )
    assert any(r.startswith("get_product: dropped, 0/2 tests passed") and "$.stock" in r for r in report.reasons)


def test_an_invalid_output_schema_fails_every_successful_case():
    check = OutputCheck({"type": "object", "properties": {"n": {"type": "no-such-type"}}})
    case = TestCase(tool="t", args={}, expect=TestExpect())
    why = check_case(case, ToolResult(ok=True, value={"n": 1}), output=check)
    assert why is not None and why.startswith("the output schema is not valid JSON Schema")
    assert OutputCheck({"type": "array"}).problem({"items": []}) == (
        "result breaks the output schema at $: {'items': []} is not of type 'array'"
    )


@pytest.mark.skipif(not ONFIDO.is_file(), reason="real OpenAPI documents are not available")
def test_the_official_mcp_client_accepts_every_gate_result_of_onfido(tmp_path: Path):
    spec, rows = draft_environment(resolve_topic(str(ONFIDO)))
    out = tmp_path / "onfido"
    out.mkdir()
    write_state(spec, rows, out)
    write_text_atomic(out / "tools.py", generate_tools(spec))
    write_json_atomic(out / "env.json", spec)
    cases = generate_tests(spec, rows, spec.seed)
    report = run_gate(out, cases)
    assert not [f for r in report.tools.values() for f in r.failures if "output schema" in f]
    rejected: list[str] = []
    accepted = 0
    with Environment.open(out) as env:
        server = build_server(env, spec, SessionBinding(env, process=False))  # every tool, kept or not

        async def main() -> None:
            nonlocal accepted
            for case in cases:
                async with Client(server, mode="legacy") as client:  # a fresh session: the seed, as in the gate
                    try:
                        result = await client.call_tool(case.tool, case.args)
                    except RuntimeError as e:
                        rejected.append(f"{case.tool}: {e}")
                        continue
                    accepted += not result.is_error

        anyio.run(main)
    assert rejected == []
    assert accepted >= 35  # the successful results a client validates (35 when it rejected 24 of them)
