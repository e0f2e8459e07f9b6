"""The Agent-World importer: release fixtures (tests/fixtures/agent_world) -> gated files-backend bundles whose
released tools run in the sandbox against each session's private state."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from factory.cli import app
from factory.envs.bundle import Bundle
from factory.envs.importers import (
    AgentWorldImportError,
    _py_string,
    candidate_args,
    import_agent_world,
    infers_mutation,
)
from factory.envs.runtime import Environment
from factory.models import ToolSpec
from factory.store import hash_dir
from factory.tasks.agent_world import answer_checks

MIX = Path(__file__).resolve().parents[1] / "fixtures" / "agent_world" / "environment_mix"
LIBRARY = MIX / "0731001"
RECIPES = MIX / "0822002"


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("aw") / "library"
    import_agent_world(LIBRARY, out)
    return out


@pytest.fixture(scope="module")
def recipes(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("aw") / "recipes"
    import_agent_world(RECIPES, out)
    return out


def test_library_bundle_is_complete_and_gated(library: Path) -> None:
    b = Bundle.open(library)
    spec = b.spec
    assert spec.id == "agent-world-0731001" and spec.backend == "files"
    assert spec.title == "Riverside Library Loans"
    assert spec.taxonomy is not None and spec.taxonomy.l2 == "libraries"
    mutates = {t.name: t.mutates for t in spec.tools}
    assert mutates == {
        "search_books": False,
        "get_member": False,
        "checkout_book": True,
        "return_book": True,
        "list_member_loans": False,
    }
    assert {e.table: e.primary_key for e in spec.entities} == {
        "books": "book_id",
        "loans": "loan_id",
        "members": "member_id",
    }
    assert sorted(p.name for p in b.state_dir.iterdir()) == ["books.json", "loans.json", "members.json"]
    assert json.loads((b.state_dir / "books.json").read_text()) == json.loads((LIBRARY / "books.json").read_text())
    assert {c.tool for c in b.tests()} == set(mutates)
    report = b.report()
    assert report is not None and report.compiled and report.kept
    assert sorted(report.kept_tools) == sorted(mutates)
    assert report.reasons == []


def test_broken_implementations_are_dropped_with_their_reason(recipes: Path) -> None:
    report = Bundle.open(recipes).report()
    assert report is not None and report.kept
    assert sorted(report.kept_tools) == ["add_pantry_item", "get_recipe", "missing_ingredients", "search_recipes"]
    reasons = "\n".join(report.reasons)
    assert "scale_recipe: dropped, implementation does not compile: SyntaxError" in reasons
    assert "rate_recipe: dropped" in reasons and "NameError" in reasons
    assert report.tools["scale_recipe"].failures[0].startswith("implementation does not compile")
    assert "def scale_recipe" not in (recipes / "tools.py").read_text()
    spec = Bundle.open(recipes).spec
    assert spec.bookkeeping == ["pantry.updated_at"]  # stamped from the clock by add_pantry_item
    assert spec.taxonomy is None  # "Food & Drink > Cooking" names two levels, not three


def test_sessions_have_private_state_and_ignore_the_orchestrators_db_dir(library: Path, tmp_path, monkeypatch) -> None:
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    for name in ("books", "members", "loans"):
        (decoy / f"{name}.json").write_text("[]")
    monkeypatch.setenv("MCP_DB_DIR", str(decoy))
    decoy_hash, release_hash = hash_dir(decoy), hash_dir(LIBRARY)

    with Environment.open(library) as env, env.session() as s1, env.session() as s2:
        lent = s1.call("checkout_book", {"member_id": "M001", "book_id": "B002"})
        assert lent.ok, lent.error
        assert lent.value["loan"]["loan_id"] == "L0006" and lent.value["available_copies"] == 1
        assert s1.call("list_member_loans", {"member_id": "M001"}).value["count"] == 2
        assert s2.call("list_member_loans", {"member_id": "M001"}).value["count"] == 1
        # the other session lends the same copy independently and gets the same new loan id
        again = s2.call("checkout_book", {"member_id": "M001", "book_id": "B002"})
        assert again.ok and again.value["loan"]["loan_id"] == "L0006"
        books = {b["book_id"]: b for b in s1.snapshot().tables["books"]}
        assert books["B002"]["available_copies"] == 1
        refused = s1.call("checkout_book", {"member_id": "M003", "book_id": "B005"})
        assert not refused.ok and refused.error.code == "invalid_transition" and not refused.env_error
        s1.reset()
        assert s1.call("list_member_loans", {"member_id": "M001"}).value["count"] == 1

    assert hash_dir(decoy) == decoy_hash
    assert hash_dir(LIBRARY) == release_hash


def test_a_tool_that_crashes_is_not_offered_and_the_rest_works(recipes: Path) -> None:
    assert "rate_recipe" not in {t.name for t in Bundle.open(recipes).spec.tools}
    with Environment.open(recipes) as env, env.session() as s:
        before = s.snapshot().tables["recipes"]
        r = s.call("rate_recipe", {"recipe_id": "R01", "stars": 3})
        assert not r.ok and r.error.code == "unknown_tool"
        assert s.snapshot().tables["recipes"] == before
        added = s.call("add_pantry_item", {"name": "Salmon", "quantity": 300, "unit": "g"})
        assert added.ok and added.value["item_id"] == "P005"
        assert s.call("missing_ingredients", {"recipe_id": "R03"}).value["missing"] == [
            {"ingredient": "miso", "unit": "g", "missing": 30}
        ]


def _copy_release(tmp_path: Path, env_id: str = "0731001") -> Path:
    mix = tmp_path / "environment_mix"
    shutil.copytree(MIX / env_id, mix / env_id)
    shutil.copyfile(MIX / f"{env_id}_step4_checkpoint.json", mix / f"{env_id}_step4_checkpoint.json")
    return mix / env_id


def test_bad_releases_name_the_file_and_the_problem(tmp_path: Path) -> None:
    env_dir = _copy_release(tmp_path)
    checkpoint = env_dir.parent / "0731001_step4_checkpoint.json"
    out = tmp_path / "out"

    (env_dir / "loans.json").write_text('[{"loan_id": ')
    with pytest.raises(AgentWorldImportError, match=r"loans\.json: malformed JSON"):
        import_agent_world(env_dir, out)
    (env_dir / "loans.json").write_text("[]")

    data = json.loads(checkpoint.read_text())
    data["data"]["ToolDesignAgent"]["tool_schemas"][1]["name"] = "search_books"
    checkpoint.write_text(json.dumps(data))
    with pytest.raises(AgentWorldImportError, match="repeats"):
        import_agent_world(env_dir, out)

    del data["data"]["ToolDesignAgent"]
    checkpoint.write_text(json.dumps(data))
    with pytest.raises(AgentWorldImportError, match=r"_step4_checkpoint\.json: no data\.ToolDesignAgent"):
        import_agent_world(env_dir, out)

    checkpoint.write_text("{not json")
    with pytest.raises(AgentWorldImportError, match="malformed JSON"):
        import_agent_world(env_dir, out)

    checkpoint.unlink()
    with pytest.raises(AgentWorldImportError, match=r"0731001_step4_checkpoint\.json: missing"):
        import_agent_world(env_dir, out)
    assert not out.exists()


def test_cli_imports_and_reports_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "recipes"
    ok = runner.invoke(app, ["import", "agent-world", str(RECIPES), "--out", str(out)])
    assert ok.exit_code == 0, ok.output
    assert "scale_recipe" in ok.output and "DROPPED" in ok.output and (out / "report.json").is_file()
    missing = runner.invoke(app, ["import", "agent-world", str(tmp_path / "nope"), "--out", str(tmp_path / "x")])
    assert missing.exit_code == 2 and "not a directory" in missing.output


@pytest.mark.parametrize(
    ("source", "writes"),
    [
        ("import json\ndef f():\n    json.dump({}, open('a.json', 'w'))\n", True),
        ("from pathlib import Path\ndef f(p):\n    Path(p).write_text('x')\n", True),
        ("import os\ndef f(a, b):\n    os.replace(a, b)\n", True),
        ("def f(p):\n    with open(p, mode='a') as fh:\n        fh.write('x')\n", True),
        ("def f(p, name):\n    with open(p) as fh:\n        return fh.read().replace(name, '')\n", False),
        ("def f(items):\n    items.remove(1)\n    return items.copy()\n", False),
    ],
)
def test_mutation_is_read_from_the_implementation(source: str, writes: bool) -> None:
    assert infers_mutation("lookup", source) is writes


def test_mutation_falls_back_to_the_verb_when_the_source_does_not_parse() -> None:
    assert infers_mutation("cancel_order", "def cancel_order(:") is True
    assert infers_mutation("get_order", "def get_order(:") is False


@pytest.mark.parametrize("source", ['x = """a"""\n', "s = '\\\\n'\n", 'end = "q"', "a = 1\\\n+ 2\n", "plain\n"])
def test_sources_are_embedded_exactly(source: str) -> None:
    assert ast.literal_eval(_py_string(source)) == source


def test_answer_checks_prefer_values_that_tell_one_record_from_another() -> None:
    rows = {"datasets": [{"id": "d1", "tags": ["region:us"]}, {"id": "d2", "tags": ["region:us"]}]}
    reference = '{"id": "d1", "tags": ["region:us"]}'
    criteria = ["The dataset is tagged region:us"]
    checks = answer_checks(reference, ["d1", "region:us"], criteria, "Find a US dataset.", rows)
    # every record carries the tag: the id, which another record would answer differently, is checked instead
    assert [(c.value, c.competitors) for c in checks] == [("d1", ["d2"])]
    assert [c.value for c in answer_checks(reference, ["d1", "region:us"], criteria)] == ["region:us"]


def test_credentials_and_free_text_come_from_the_data() -> None:
    keys = [{"id": "k1", "key": "ak_old", "status": "revoked"}, {"id": "k2", "key": "ak_live", "status": "active"}]
    slack = {"messages": [{"ts": "17.5", "channel_id": "C1"}], "channels": [{"id": "C1", "name": "ops"}]}
    collections = {"api_keys": keys, "world": {"slack": slack}}
    quote = ToolSpec(
        name="get_quote",
        description="",
        parameters={"type": "object", "properties": {"api_key": {"type": "string"}}, "required": ["api_key"]},
        mutates=False,
    )
    assert candidate_args(quote, collections)[0] == {"api_key": "ak_live"}  # the active key, not a made-up one
    react = ToolSpec(
        name="add_reaction",
        description="",
        parameters={
            "type": "object",
            "properties": {p: {"type": "string"} for p in ("channel_id", "message_ts", "name")},
            "required": ["channel_id", "message_ts", "name"],
        },
        mutates=True,
    )
    # a record nested in a keyed object gives the message's ts; the name comes from a field of that name
    assert candidate_args(react, collections)[0] == {"channel_id": "C1", "message_ts": "17.5", "name": "ops"}
