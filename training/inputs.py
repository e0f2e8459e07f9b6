"""The training inputs a FACTORY_HOME holds: the train split and the latest targeted tasks with their bundles, the
latest arena rollouts (pass-rate profiles), and earlier rounds' targeted tasks (for replay)."""

from __future__ import annotations

from pathlib import Path

from factory.agents.rollouts import RolloutRow, read_rollouts
from factory.pipeline.artifacts import TASKS_PARQUET, bundles, load_taxonomy
from factory.pipeline.evolve.rollouts import ROLLOUTS_PARQUET
from factory.pipeline.evolve.rounds import kept_rounds, latest_round, round_dir
from factory.pipeline.evolve.targeted import PROFILE_PARQUET, targeted_bundle_dir
from factory.pipeline.registry import ROLLOUTS, TARGETED_TASKS, VERIFIERS
from factory.pipeline.runner import env_dir
from factory.store import Store
from factory.tasks.table import read_tasks
from training.dataset import TrainingItem


def _items(tasks_file: Path, bundle: Path) -> list[TrainingItem]:
    if not tasks_file.is_file():
        return []
    return [TrainingItem(task=t, bundle=bundle) for t in read_tasks(tasks_file) if t.split == "train"]


def store_items(store: Store) -> list[TrainingItem]:
    """Every category's gated bundles' train-split tasks, and the latest targeted tasks on their own bundles."""
    items: list[TrainingItem] = []
    for category in load_taxonomy(store).categories():
        for bundle in bundles(store, category):
            env_id = bundle.spec.id
            items += _items(env_dir(store, VERIFIERS, category, env_id) / TASKS_PARQUET, bundle.path)
            targeted = env_dir(store, TARGETED_TASKS, category, env_id) / TASKS_PARQUET
            items += _items(targeted, targeted_bundle_dir(store, category, env_id))
    return items


def store_rollouts(store: Store) -> list[RolloutRow]:
    """The latest round's rollouts of every category and the profiles of its targeted tasks (empty before the
    first round): the pass rates the export filters on."""
    rows: list[RolloutRow] = []
    for category in load_taxonomy(store).categories():
        for stage, name in ((ROLLOUTS, ROLLOUTS_PARQUET), (TARGETED_TASKS, PROFILE_PARQUET)):
            root = stage.dir(store, category)
            for d in sorted(root.iterdir()) if root.is_dir() else []:
                if (d / name).is_file():
                    rows += read_rollouts(d / name)
    return rows


def earlier_items(store: Store) -> list[TrainingItem]:
    """Targeted tasks of the rounds before the latest, as the round archive keeps them, on the gated bundles."""
    categories = load_taxonomy(store).categories()
    latest = latest_round(store, categories)
    items: list[TrainingItem] = []
    for n in kept_rounds(store):
        if n >= latest:
            continue
        for category in categories:
            folder = round_dir(store, n) / TARGETED_TASKS.name / category
            for f in sorted(folder.glob("*.parquet")) if folder.is_dir() else []:
                items += _items(f, targeted_bundle_dir(store, category, f.stem))
    return items
