"""build-env end to end: catalog topics and source files to gated bundles, through the real runtime."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factory.envs import build as build_module
from factory.envs.build import build_bundle, build_env
from factory.envs.bundle import Bundle
from factory.envs.runtime import Environment
from factory.store import hash_dir
from factory.topics import SourceError, get_topic, load_catalog

SOURCES = Path(__file__).resolve().parents[1] / "fixtures" / "sources"


def _tool_for(spec, kind: str, entity: str, action: str | None = None) -> str:
    return next(
        t.name
        for t in spec.tools
        if t.operation and t.operation.kind == kind and t.operation.entity == entity and t.operation.action == action
    )


def test_online_shop_is_kept_and_the_bundle_is_complete(tmp_path: Path):
    out = tmp_path / "shop"
    report = build_env("online-shop", out)
    assert report.compiled and report.kept, report.reasons
    bundle = Bundle.open(out)
    spec = bundle.spec
    assert spec.id == "online-shop" and spec.backend == "sqlite"
    assert [t.name for t in spec.tools] == report.kept_tools
    assert {c.tool for c in bundle.tests()} <= set(report.kept_tools)
    assert bundle.report() == report
    assert (out / "schema.sql").is_file() and (out / "seed.sqlite").is_file()
    assert all(col.split(".")[1] in ("created_at", "updated_at") for col in spec.bookkeeping)
    assert len(report.kept_tools) / len(report.tools) > 0.8


def test_order_exceeding_stock_fails_and_leaves_the_state_unchanged(backend: str, tmp_path: Path):
    build_env("online-shop", tmp_path / "shop", backend=backend)
    spec = Bundle.open(tmp_path / "shop").spec
    create_order = _tool_for(spec, "create", "order")
    new_row = next(c for c in Bundle.open(tmp_path / "shop").tests() if c.name == f"{create_order}: new row")
    with Environment.open(tmp_path / "shop") as env, env.session() as s:
        before = s.snapshot()
        stock = {p["id"]: p["stock"] for p in before.tables["products"] if p["status"] != "archived"}
        product = max(stock, key=lambda k: stock[k])
        args = {**new_row.args, "product_id": product, "quantity": stock[product] + 1}
        result = s.call(create_order, args)
        assert not result.ok and result.error.code == "insufficient_stock", result
        assert s.snapshot() == before
        ok = s.call(create_order, {**args, "quantity": stock[product]})
        assert ok.ok, ok
        after = {p["id"]: p["stock"] for p in s.snapshot().tables["products"]}
        assert after[product] == 0


def test_same_seed_gives_identical_bytes(tmp_path: Path):
    build_env("online-shop", tmp_path / "a", seed=7)
    build_env("online-shop", tmp_path / "b", seed=7)
    assert hash_dir(tmp_path / "a") == hash_dir(tmp_path / "b")
    first = hash_dir(tmp_path / "a")
    build_env("online-shop", tmp_path / "a", seed=7)
    assert hash_dir(tmp_path / "a") == first
    build_env("online-shop", tmp_path / "c", seed=8)
    assert hash_dir(tmp_path / "c") != first


def test_files_backend_bundle(tmp_path: Path):
    report = build_env("event-ticketing", tmp_path / "tickets", backend="files")
    assert report.kept, report.reasons
    assert (tmp_path / "tickets" / "state").is_dir() and not (tmp_path / "tickets" / "seed.sqlite").exists()
    assert Bundle.open(tmp_path / "tickets").spec.backend == "files"


def test_rejected_bundle_is_still_written_with_its_reasons(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(build_module, "generate_tools", lambda spec: "def broken(:\n")
    report = build_env("online-shop", tmp_path / "shop")
    assert not report.kept and not report.compiled
    written = json.loads((tmp_path / "shop" / "report.json").read_text())
    assert written["kept"] is False and "does not load" in written["reasons"][0]
    assert Bundle.open(tmp_path / "shop").spec.tools == []


def test_build_bundle_takes_taxonomy_and_lineage(tmp_path: Path):
    from factory.models import Lineage, TaxonomyPath

    path = TaxonomyPath(l1="commerce", l2="retail", l3="online-shop")
    lineage = Lineage(stage="tool_code", code_version="9", round=2)
    build_bundle(get_topic("online-shop"), tmp_path / "shop", seed=1, taxonomy=path, lineage=lineage)
    spec = Bundle.open(tmp_path / "shop").spec
    assert spec.taxonomy == path and spec.lineage == lineage and spec.seed == 1


def test_source_errors(tmp_path: Path):
    with pytest.raises(SourceError, match="no-such-topic"):
        build_env("no-such-topic", tmp_path / "x")
    with pytest.raises(SourceError):
        build_env(str(tmp_path / "missing.json"), tmp_path / "x")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(SourceError):
        build_env(str(bad), tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_source_file_with_one_topic_builds(tmp_path: Path):
    report = build_env(str(SOURCES / "petstore.openapi.yaml"), tmp_path / "pets")
    assert report.compiled and report.kept, report.reasons


def test_every_catalog_topic_builds(catalog_bundles):
    """The whole catalog through the pipeline (sqlite), a few on the files backend too."""
    topics = load_catalog()
    assert len(topics) >= 40
    kept, tools, kept_tools, built = 0, 0, 0, 0
    for i, topic in enumerate(topics):
        for backend in ("sqlite", "files") if i % 12 == 0 else ("sqlite",):
            report = catalog_bundles.get(topic.id, backend).report
            built += 1
            assert report.compiled, (topic.id, report.compile_error)
            kept += report.kept
            tools += len(report.tools) + sum(1 for r in report.reasons if ": dropped, no " in r)
            kept_tools += len(report.kept_tools)
    assert kept == built
    assert kept_tools / tools > 0.9
