"""The `factory` command as a user meets it: help on every verb, call, topics, taxonomy, sandbox."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assets.cli import app

runner = CliRunner()
VERBS = [
    ["topics"],
    ["taxonomy"],
    ["build-env"],
    ["complexify"],
    ["call"],
    ["serve"],
    ["import", "agent-world"],
    ["tasks"],
    ["verify"],
    ["sandbox"],
    ["run"],
]


@pytest.mark.parametrize("verb", VERBS, ids=lambda v: " ".join(v))
def test_every_verb_has_help(verb: list[str]):
    result = runner.invoke(app, [*verb, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output


@pytest.fixture
def shop(shop_bundle: Path) -> Path:
    return shop_bundle


def test_call_prints_the_result_as_json(shop: Path):
    result = runner.invoke(app, ["call", str(shop), "list_products", "--args", '{"limit": 2}'])
    assert result.exit_code == 0, result.output
    value = json.loads(result.output)
    assert len(value["items"]) == 2 and value["next_offset"] == 2


def test_call_exits_one_on_an_error_result(shop: Path):
    result = runner.invoke(app, ["call", str(shop), "get_product", "--args", '{"product_id": "nope"}'])
    assert result.exit_code == 1
    assert json.loads(result.output)["error"]["code"] == "not_found"
    unknown = runner.invoke(app, ["call", str(shop), "no_such_tool"])
    assert unknown.exit_code == 1 and json.loads(unknown.output)["error"]["code"] == "unknown_tool"


@pytest.mark.parametrize("args", ["{not json", "[1, 2]"])
def test_call_rejects_malformed_arguments(shop: Path, args: str):
    result = runner.invoke(app, ["call", str(shop), "list_products", "--args", args])
    assert result.exit_code == 2 and "--args" in result.output


def test_call_on_something_that_is_not_a_bundle(tmp_path: Path):
    result = runner.invoke(app, ["call", str(tmp_path), "list_products"])
    assert result.exit_code == 2 and "not an environment bundle" in result.output


def test_topics_taxonomy_and_sandbox():
    topics = runner.invoke(app, ["topics"])
    assert topics.exit_code == 0 and "online-shop" in topics.output
    assert len([line for line in topics.output.splitlines() if " tools " in line]) >= 40
    taxonomy = json.loads(runner.invoke(app, ["taxonomy"]).output)
    assert len(taxonomy["roots"]) >= 8 and taxonomy["assignments"]["online-shop"]["l1"] == "commerce"
    sandbox = json.loads(runner.invoke(app, ["sandbox"]).output)
    assert {"runner", "network_namespace", "not_enforced", "rlimits"} <= set(sandbox)
