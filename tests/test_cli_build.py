"""`factory build-env` through typer's CliRunner: exit 0 when kept, non-zero with reasons otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from factory.cli import app
from factory.envs import build as build_module


def test_build_env_kept_exits_zero(tmp_path: Path):
    result = CliRunner().invoke(app, ["build-env", "online-shop", "--out", str(tmp_path / "shop"), "--seed", "3"])
    assert result.exit_code == 0, result.output
    assert "kept:" in result.output and (tmp_path / "shop" / "report.json").is_file()


def test_build_env_files_backend(tmp_path: Path):
    args = ["build-env", "meeting-rooms", "--out", str(tmp_path / "rooms"), "--backend", "files"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "rooms" / "state").is_dir()


def test_unknown_topic_and_bad_file_are_errors(tmp_path: Path):
    runner = CliRunner()
    unknown = runner.invoke(app, ["build-env", "no-such-topic", "--out", str(tmp_path / "x")])
    assert unknown.exit_code == 2 and "no-such-topic" in unknown.output
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    broken = runner.invoke(app, ["build-env", str(bad), "--out", str(tmp_path / "y")])
    assert broken.exit_code == 2 and "error:" in broken.output
    backend = runner.invoke(app, ["build-env", "online-shop", "--out", str(tmp_path / "z"), "--backend", "csv"])
    assert backend.exit_code == 2
    # a checkout of an API's repository, as users pass it: the error names the files it holds
    (tmp_path / "repo" / "spec").mkdir(parents=True)
    (tmp_path / "repo" / "spec" / "openapi.yml").write_text("openapi: 3.0.0")
    folder = runner.invoke(app, ["build-env", str(tmp_path / "repo"), "--out", str(tmp_path / "w")])
    assert folder.exit_code == 2 and "is a directory" in folder.output and "spec/openapi.yml" in folder.output


def test_rejected_environment_exits_non_zero_with_reasons(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(build_module, "generate_tools", lambda spec: "def broken(:\n")
    result = CliRunner().invoke(app, ["build-env", "online-shop", "--out", str(tmp_path / "shop")])
    assert result.exit_code == 1
    assert "gate rejected the environment" in result.output and "does not load" in result.output
    assert (tmp_path / "shop" / "report.json").is_file()


def test_build_env_scale_option_and_env_var(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from factory.envs.bundle import Bundle

    monkeypatch.delenv("FACTORY_SEED_SCALE", raising=False)
    runner = CliRunner()
    base = runner.invoke(app, ["build-env", "online-shop", "--out", str(tmp_path / "a")])
    big = runner.invoke(app, ["build-env", "online-shop", "--out", str(tmp_path / "b"), "--scale", "2.0"])
    assert base.exit_code == 0 and big.exit_code == 0, big.output
    assert Bundle.open(tmp_path / "a").spec.scale == 1.0
    assert Bundle.open(tmp_path / "b").spec.scale == 2.0
    monkeypatch.setenv("FACTORY_SEED_SCALE", "1.5")
    env = runner.invoke(app, ["build-env", "online-shop", "--out", str(tmp_path / "c")])
    assert env.exit_code == 0, env.output
    assert Bundle.open(tmp_path / "c").spec.scale == 1.5


def test_build_env_bad_scale_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("FACTORY_SEED_SCALE", raising=False)
    runner = CliRunner()
    bad = runner.invoke(app, ["build-env", "online-shop", "--out", str(tmp_path / "x"), "--scale", "0"])
    assert bad.exit_code == 2 and "--scale" in bad.output
    monkeypatch.setenv("FACTORY_SEED_SCALE", "many")
    env = runner.invoke(app, ["build-env", "online-shop", "--out", str(tmp_path / "y")])
    assert env.exit_code == 2 and "FACTORY_SEED_SCALE" in env.output
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


def test_a_tool_that_gets_no_code_is_named_with_the_reason_when_the_rest_is_kept(tmp_path: Path):
    tools = [
        {
            "name": "list_widgets",
            "description": "Lists the widgets",
            "inputSchema": {"type": "object", "properties": {"limit": {"type": "integer"}}},
        },
        {
            "name": "git_reset",
            "description": "Unstages all staged changes",
            "inputSchema": {
                "type": "object",
                "properties": {"repo_path": {"type": "string"}},
                "required": ["repo_path"],
            },
        },
    ]
    source = tmp_path / "tools-list.json"
    source.write_text(json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}))
    result = CliRunner().invoke(app, ["build-env", str(source), "--out", str(tmp_path / "widgets")])
    assert result.exit_code == 0, result.output
    assert "git_reset: dropped, no code generated (no operation was inferred for this tool)" in result.output
    assert "kept: 1 tools" in result.output
