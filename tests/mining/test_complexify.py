"""Complexification: each move yields a gated, harder version with lineage; the old bundle is untouched."""

import sqlite3
from pathlib import Path

import pytest

from factory.envs.bundle import Bundle
from factory.envs.runtime import Environment
from factory.mining.complexify import complexify


@pytest.fixture
def shop(shop_bundle: Path) -> Path:
    return shop_bundle


def _count(bundle: Path, table: str) -> int:
    con = sqlite3.connect(bundle / "seed.sqlite")
    try:
        return con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    finally:
        con.close()


def _version(shop: Path, tmp_path: Path, seed: int):
    before = Bundle.open(shop).content_hash
    new, report = complexify(shop, seed=seed, out=tmp_path / f"v{seed}")
    assert report.kept, report.reasons
    assert Bundle.open(shop).content_hash == before, "the old bundle is left untouched"
    spec = Bundle.open(new).spec
    assert spec.version == 2 and spec.parent == before
    assert spec.lineage and spec.lineage.stage == "complexify" and spec.lineage.inputs["bundle"] == before
    return new, spec


def test_more_rows(shop: Path, tmp_path: Path):
    new, spec = _version(shop, tmp_path, 0)
    assert spec.scale == 2.0
    assert _count(new, "products") > _count(shop, "products")


def test_related_entity_with_enforced_foreign_key(shop: Path, tmp_path: Path):
    new, spec = _version(shop, tmp_path, 1)
    assert "customer_note" in {e.name for e in spec.entities}
    with Environment.open(new) as env, env.session() as s:
        bad = s.call("create_customer_note", {"customer_id": "nobody", "body": "hi"})
        assert not bad.ok and bad.error and bad.error.code == "invalid_reference"
        customer = s.call("list_customers", {"limit": 1}).value["items"][0]
        ok = s.call("create_customer_note", {"customer_id": customer["id"], "body": "call back"})
        assert ok.ok and ok.value["customer_id"] == customer["id"]


def test_constraint_is_enforced(shop: Path, tmp_path: Path):
    new, spec = _version(shop, tmp_path, 4)
    product = next(e for e in spec.entities if e.name == "product")
    assert any(r.kind == "non_negative" and r.field == "price" for r in product.rules)
    with Environment.open(new) as env, env.session() as s:
        pid = s.call("list_products", {"limit": 1}).value["items"][0]["id"]
        before = s.snapshot()
        bad = s.call("update_product", {"product_id": pid, "price": -5})
        assert not bad.ok
        assert s.snapshot() == before


def test_cli_complexify(shop: Path, tmp_path: Path):
    from typer.testing import CliRunner

    from factory.cli import app

    result = CliRunner().invoke(app, ["complexify", str(shop), "--seed", "2", "--out", str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    assert "kept" in result.output and (tmp_path / "c" / "env.json").is_file()
