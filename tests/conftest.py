"""Shared test set-up: every test gets its own temporary FACTORY_HOME and never the network."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("FACTORY_LLM", "offline")


@pytest.fixture(autouse=True)
def factory_home(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("factory-home")
    monkeypatch.setenv("FACTORY_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(home / "dagster"))
    (home / "dagster").mkdir()
    return home
