"""Shared test set-up: every test gets its own temporary FACTORY_HOME and never the network."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.builders import SHOP, CatalogBundles

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("FACTORY_LLM", "offline")


@pytest.fixture(autouse=True)
def factory_home(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("factory-home")
    monkeypatch.setenv("FACTORY_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(home / "dagster"))
    (home / "dagster").mkdir()
    return home


@pytest.fixture(scope="session")
def catalog_bundles(tmp_path_factory) -> CatalogBundles:
    """Catalog environments built once for the whole session (read them, never write into them)."""
    return CatalogBundles(tmp_path_factory.mktemp("catalog-bundles"))


@pytest.fixture(scope="session")
def shop_bundle(catalog_bundles: CatalogBundles) -> Path:
    """The online-shop catalog environment, sqlite backend, seed 0, kept by the gate."""
    return catalog_bundles.kept(SHOP)


@pytest.fixture(scope="session")
def shop_runtime(shop_bundle: Path):
    """The shop opened in the runtime: (bundle, its session factory, the seed tables)."""
    from factory.envs.bundle import Bundle
    from factory.envs.runtime import Environment

    with Environment.open(shop_bundle) as env:
        with env.session() as s:
            seed = s.snapshot().tables
        yield Bundle.open(shop_bundle), env.session, seed
