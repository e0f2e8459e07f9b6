"""Shared set-up of the training tests: catalog tasks, a verl dataset of them, and a tiny local model."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("verl", reason="the training extra (verl) is not installed: make install-train")

from factory.models import Task
from factory.tasks.difficulty import knobs_for
from factory.tasks.synthesize import synthesize_tasks
from training.dataset import TrainingItem


@pytest.fixture(scope="session")
def shop_items(shop_bundle) -> list[TrainingItem]:
    tasks = synthesize_tasks(shop_bundle, n=6, seed=0, knobs=knobs_for("easy")).tasks
    return [TrainingItem(task=t, bundle=shop_bundle) for t in tasks]


@pytest.fixture(scope="session")
def write_task(shop_items) -> Task:
    """A graph task of the shop whose gold writes (a listing read, then changes)."""
    return next(i.task for i in shop_items if i.task.kind == "graph" and i.task.mutates and len(i.task.gold) <= 3)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory, shop_items) -> Path:
    from training.smoke.tiny_model import build_tiny_model

    return build_tiny_model([i.task.question for i in shop_items], tmp_path_factory.mktemp("tiny-model"))
