"""Clients see a tool's parameters as its source declared them: the OpenAPI document's `id`, `slug` and `pid`,
an MCP server's `issueId`, not the contract's `pet_id` or `repository_id`. Calls in the declared names run (the
runtime translates them at the boundary) and the contract's own names, never shown, are refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from mcp import Client
from typer.testing import CliRunner

from assets.cli import app
from factory.agents.policies import tool_schema
from factory.envs.build import build_env
from factory.envs.interface import contract_args, declared_names, interface_schema
from factory.envs.mcp_server import mcp_tools
from factory.envs.runtime import Environment
from factory.models import EnvSpec, Task, ToolSpec
from factory.naming import snake_case
from factory.topics import load_source
from tests.builders import serving_http
from training.episodes import close_episode, open_episode

REAL = Path(__file__).resolve().parents[2].parent / "shared" / "real" / "openapi"
pytestmark = pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real is not here")


def _declared_by_document(path: Path) -> dict[str, set[str]]:
    """Each operation's parameter names as the document writes them: path, query and body properties."""
    doc = yaml.safe_load(path.read_text())
    schemas = (doc.get("components") or {}).get("schemas") or {}
    out: dict[str, set[str]] = {}
    for item in doc["paths"].values():
        for method, op in item.items():
            if method == "parameters":
                continue
            names = {p["name"] for p in [*item.get("parameters", []), *op.get("parameters", [])]}
            for media in ((op.get("requestBody") or {}).get("content") or {}).values():
                body = media.get("schema") or {}
                ref = body.get("$ref", "").rsplit("/", 1)[-1]
                names |= set(schemas.get(ref, body).get("properties") or {})
            out[op["operationId"]] = names
    return out


@pytest.mark.parametrize("document", ["oai-v3.0-link-example.yaml", "oai-v3.0-petstore-expanded.yaml"])
def test_openapi_tools_show_the_documents_parameter_names(document: str) -> None:
    declared = _declared_by_document(REAL / document)
    [topic] = load_source(REAL / document)
    renamed = 0
    for tool in topic.tools:
        operation_id = next(k for k in declared if snake_case(k) == tool.name)
        shown = interface_schema(tool)
        assert set(shown["properties"]) == declared[operation_id], tool.name
        assert set(shown.get("required", [])) <= set(shown["properties"])
        [mcp] = mcp_tools(EnvSpec.model_construct(tools=[tool]))
        assert set(mcp.input_schema["properties"]) == declared[operation_id]
        assert set(tool_schema(tool)["function"]["parameters"]["properties"]) == declared[operation_id]
        renamed += bool(tool.declared_names)
    assert renamed >= 2  # the contract did rename some (`id` -> `pet_id`, `slug` -> `repository_id`)


def test_declared_names_never_let_two_parameters_look_alike() -> None:
    params = {"type": "object", "properties": {"pet_id": {}, "id": {}, "tag": {}}}
    assert declared_names(params, {"pet_id": "id", "tag": "Tag"}) == {"tag": "Tag"}
    assert declared_names(params, {"pet_id": "pet_id"}) is None
    tool = ToolSpec(name="t", description="", parameters=params, declared_names={"tag": "Tag"})
    assert contract_args(tool, {"Tag": "x", "id": 1}) == {"tag": "x", "id": 1}
    assert "unknown parameter 'tag'" in str(contract_args(tool, {"tag": "x"}))


@pytest.fixture(scope="module")
def petstore(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("petstore") / "env"
    report = build_env(str(REAL / "oai-v3.0-petstore-expanded.yaml"), out)
    assert {"find_pet_by_id", "delete_pet"} <= set(report.kept_tools), report.reasons
    return out


def _a_pet(env: Environment) -> dict[str, Any]:
    with env.session() as s:
        return s.snapshot().tables["pets"][0]


def test_calls_in_the_declared_names_run_and_the_contracts_names_are_refused(petstore: Path) -> None:
    with Environment.open(petstore) as env, env.session() as s:
        pet = _a_pet(env)
        found = s.call_declared("find_pet_by_id", {"id": pet["id"]})
        assert found.ok and found.value["name"] == pet["name"]
        hidden = s.call_declared("find_pet_by_id", {"pet_id": pet["id"]})
        assert not hidden.ok and hidden.error.code == "invalid_arguments"
        assert "'id'" in hidden.error.message  # the name the client was shown
        assert s.call_declared("delete_pet", {"id": pet["id"]}).ok
        assert s.journal == [("delete_pet", {"pet_id": pet["id"]})]  # replays speak the contract
        assert not s.call_declared("find_pet_by_id", {"id": pet["id"]}).ok
    runner = CliRunner()
    result = runner.invoke(app, ["call", str(petstore), "find_pet_by_id", "--args", json.dumps({"id": pet["id"]})])
    assert result.exit_code == 0 and json.loads(result.output)["id"] == pet["id"]
    result = runner.invoke(app, ["call", str(petstore), "find_pet_by_id", "--args", json.dumps({"pet_id": 1})])
    assert result.exit_code == 1 and "invalid_arguments" in result.output


@pytest.mark.filterwarnings("ignore:ping is removed")
def test_an_mcp_client_lists_and_calls_the_declared_names(petstore: Path) -> None:
    for fast_path in (True, False):
        with serving_http(petstore, fast_path=fast_path) as (url, env):
            pet = _a_pet(env)

            async def main(pet: dict[str, Any]) -> None:
                async with Client(url, mode="legacy") as client:
                    listed = {t.name: t for t in (await client.list_tools()).tools}
                    assert set(listed["find_pet_by_id"].input_schema["properties"]) == {"id"}
                    assert listed["find_pet_by_id"].input_schema["required"] == ["id"]
                    found = await client.call_tool("find_pet_by_id", {"id": pet["id"]})
                    assert not found.is_error and found.structured_content["name"] == pet["name"]
                    hidden = await client.call_tool("find_pet_by_id", {"pet_id": pet["id"]})
                    assert hidden.is_error

            anyio.run(main, pet)


def test_a_training_episode_records_the_contracts_call(petstore: Path) -> None:
    task = Task(id="t", env_id="e", kind="graph", question="q", gold=[])
    episode = open_episode("declared-names", petstore, task)
    try:
        pet = episode.initial.tables["pets"][0]
        assert episode.call("find_pet_by_id", {"id": pet["id"]}).ok
        assert [c.args for c, _ in episode.executed] == [{"pet_id": pet["id"]}]
    finally:
        close_episode("declared-names")


def test_an_mcp_servers_camel_case_names_are_kept(tmp_path: Path) -> None:
    """A recorded tools/list in the style of real servers: `issueId`, `repoPath`."""
    string = {"type": "string"}
    tools = [
        ("create_issue", {"repoPath": string, "title": string, "body": string}, ["repoPath", "title"]),
        ("get_issue", {"issueId": string}, ["issueId"]),
        ("update_issue", {"issueId": string, "title": string}, ["issueId"]),
        ("delete_issue", {"issueId": string}, ["issueId"]),
        ("list_issues", {"repoPath": string}, []),
    ]
    schemas = [(n, {"type": "object", "properties": p, "required": r}) for n, p, r in tools]
    listed = [{"name": n, "description": n.replace("_", " "), "inputSchema": s} for n, s in schemas]
    source = tmp_path / "issues.json"
    source.write_text(json.dumps({"tools": listed}))
    report = build_env(str(source), tmp_path / "env")
    assert {"get_issue", "update_issue", "delete_issue"} <= set(report.kept_tools), report.reasons
    spec = EnvSpec.model_validate_json((tmp_path / "env" / "env.json").read_text())
    for tool in spec.tools:
        declared = next(t["inputSchema"] for t in listed if t["name"] == tool.name)
        shown = interface_schema(tool)
        assert set(shown["properties"]) == set(declared["properties"]), tool.name
        assert set(shown.get("required", [])) == set(declared["required"]), tool.name
    with Environment.open(tmp_path / "env") as env, env.session() as s:
        issue = s.snapshot().tables["issues"][0]
        updated = s.call_declared("update_issue", {"issueId": issue["id"], "title": "renamed"})
        assert updated.ok and updated.value["title"] == "renamed"
        assert s.call_declared("get_issue", {"issueId": issue["id"]}).value["title"] == "renamed"
