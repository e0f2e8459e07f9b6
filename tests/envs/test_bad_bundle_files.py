"""Bad bundle files are refused when the bundle is opened, each error naming the file and the problem:
non-UTF-8 or too-deep JSON and Python, a corrupt seed.sqlite, state files that do not parse."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from factory.cli import app
from factory.envs.bundle import Bundle, BundleError
from factory.envs.runtime import Environment, EnvironmentLoadError
from factory.sandbox import Limits, SandboxPool

FIXTURES = Path(__file__).parent.parent / "fixtures" / "bundles"


def copy_bundle(name: str, dest: Path) -> Path:
    out = dest / name
    shutil.copytree(FIXTURES / name, out)
    if (out / "schema.sql").exists():
        with sqlite3.connect(out / "seed.sqlite") as con:
            con.executescript((out / "schema.sql").read_text())
        con.close()
    return out


@pytest.fixture(scope="module")
def pool():
    p = SandboxPool(size=1, limits=Limits(timeout_s=2.0, cpu_s=2, memory_bytes=1 << 30, grace_s=0.5))
    yield p
    p.close()


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    return copy_bundle("shop", tmp_path)


LATIN1 = "# caf\u00e9\n".encode("latin-1")


def corrupt_seed(how: str, seed: Path) -> None:
    data = seed.read_bytes()
    if how == "random bytes":
        seed.write_bytes(os.urandom(len(data)))
    elif how == "truncated":
        seed.write_bytes(data[: len(data) // 2])
    elif how == "empty":
        seed.write_bytes(b"")
    else:  # a page of the orders table overwritten
        seed.write_bytes(data[: 2 * 4096] + os.urandom(4096) + data[3 * 4096 :])


SEED_DAMAGE = ["random bytes", "truncated", "empty", "overwritten page"]


@pytest.mark.parametrize("how", SEED_DAMAGE)
def test_corrupt_seed_is_refused_at_open(shop: Path, how: str):
    corrupt_seed(how, shop / "seed.sqlite")
    with pytest.raises(EnvironmentLoadError, match=r"seed\.sqlite: (corrupt SQLite database|empty file)") as e:
        Environment.open(shop)
    assert str(shop / "seed.sqlite") in str(e.value)


def test_a_seed_changed_after_a_good_open_is_checked_again(shop: Path, pool: SandboxPool):
    with Environment.open(shop, pool=pool) as env, env.session() as s:
        assert s.call("get_order", {"order_id": 1}).ok
    corrupt_seed("random bytes", shop / "seed.sqlite")
    with pytest.raises(EnvironmentLoadError, match="corrupt SQLite database"):
        Environment.open(shop, pool=pool)


@pytest.mark.parametrize("how", ["random bytes", "empty"])
def test_serve_refuses_a_corrupt_seed(shop: Path, how: str):
    corrupt_seed(how, shop / "seed.sqlite")
    result = CliRunner().invoke(app, ["serve", str(shop)])
    assert result.exit_code == 2, result.output
    assert f"error: {shop / 'seed.sqlite'}: " in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("name", ["env.json", "tools.py"])
def test_non_utf8_files_are_refused_at_open(shop: Path, name: str):
    (shop / name).write_bytes(LATIN1 + (shop / name).read_bytes())
    with pytest.raises(EnvironmentLoadError, match="not UTF-8 text") as e:
        Environment.open(shop)
    assert str(shop / name) in str(e.value)


def test_non_utf8_tests_json_names_the_file(shop: Path):
    (shop / "tests.json").write_bytes(b'[{"tool": "get_order", "args": {}, "expect": "caf\xe9"}]')
    with pytest.raises(BundleError, match="not UTF-8 text") as e:
        Bundle.open(shop).tests()
    assert str(shop / "tests.json") in str(e.value)


@pytest.mark.parametrize("name", ["env.json", "tests.json", "report.json"])
def test_deep_json_is_refused(shop: Path, name: str):
    (shop / name).write_text("[" * 100_000 + "]" * 100_000)
    bundle = Bundle.open(shop)
    read = {"env.json": lambda: bundle.spec, "tests.json": bundle.tests, "report.json": bundle.report}[name]
    with pytest.raises(BundleError, match="nested deeper than") as e:
        read()
    assert str(shop / name) in str(e.value)


def test_cli_call_names_the_bad_file(shop: Path):
    (shop / "env.json").write_bytes(LATIN1)
    result = CliRunner().invoke(app, ["call", str(shop), "get_order", "--args", '{"order_id": 1}'])
    assert result.exit_code == 2, result.output
    assert f"error: {shop / 'env.json'}: not UTF-8 text" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("name", "content", "needle"),
    [
        ("notes.json", b'[{"note_id": 1, "title": "caf\xe9"}]', "not UTF-8 text"),
        ("notes.json", b'[{"note_id": 1, "title": ', "invalid JSON"),
        ("tags.csv", b"id,name\n1," + b"x" * 200_000 + b"\n", "invalid CSV: field larger than field limit"),
        ("tags.csv", b"id,name\n1,caf\xe9\n", "not UTF-8 text"),
    ],
)
def test_bad_state_files_are_refused_at_open(tmp_path: Path, name: str, content: bytes, needle: str):
    notes = copy_bundle("notes", tmp_path)
    (notes / "state" / name).write_bytes(content)
    with pytest.raises(EnvironmentLoadError, match=needle) as e:
        Environment.open(notes)
    assert str(notes / "state" / name) in str(e.value)


def test_good_state_files_open(tmp_path: Path, pool: SandboxPool):
    notes = copy_bundle("notes", tmp_path)
    (notes / "state" / "tags.csv").write_text("id,name\n1,urgent\n")
    with Environment.open(notes, pool=pool) as env, env.session() as s:
        assert s.snapshot().tables["tags"] == [{"id": "1", "name": "urgent"}]
