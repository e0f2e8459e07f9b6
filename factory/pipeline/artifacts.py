"""Where each stage's outputs live and how later stages read them.

Stages read their inputs through these functions rather than through each other's modules, so the
code version of a stage covers its own code, not that of the stages before it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from factory.envs.bundle import ENV_JSON, Bundle
from factory.envs.state import Rows
from factory.models import EnvSpec, Model, Taxonomy, TaxonomyPath, Topic, TopicsArtifact
from factory.pipeline.registry import MINED_DATASETS, TAXONOMY, TOOL_TESTS, TOPICS
from factory.pipeline.runner import EnvOutcome, EnvWork, env_dir, env_input_hash, require_manifest
from factory.store import Store, hash_file, read_json

M = TypeVar("M", bound=Model)

TOPICS_JSON = "topics.json"
TAXONOMY_JSON = "taxonomy.json"
ROWS_JSON = "rows.json"
GRAPH_JSON = "graph.json"
CANDIDATES_PARQUET = "candidates.parquet"
DROPPED_JSON = "dropped.json"
TASKS_PARQUET = "tasks.parquet"
AUDIT_JSON = "audit.json"


@dataclass
class Written:
    """A content hash (the Dagster data version) and whether anything was written."""

    content_hash: str
    wrote: bool


def topics_path(store: Store) -> Path:
    return TOPICS.dir(store) / TOPICS_JSON


def taxonomy_path(store: Store) -> Path:
    return TAXONOMY.dir(store) / TAXONOMY_JSON


def _load(store: Store, path: Path, model: type[M], asset: str) -> M:
    if not path.is_file():
        raise FileNotFoundError(f"no {asset} under {store.artifacts}: materialize {asset} first")
    return model.model_validate(read_json(path))


def load_topics(store: Store) -> TopicsArtifact:
    return _load(store, topics_path(store), TopicsArtifact, TOPICS.name)


def load_taxonomy(store: Store) -> Taxonomy:
    return _load(store, taxonomy_path(store), Taxonomy, TAXONOMY.name)


def topics_hash(store: Store) -> str:
    return hash_file(topics_path(store))


def taxonomy_hash(store: Store) -> str:
    return hash_file(taxonomy_path(store))


def topics_in_category(store: Store, category: str) -> list[tuple[Topic, TaxonomyPath]]:
    """The (non-merged) topics whose taxonomy L1 is `category`, in id order."""
    taxonomy = load_taxonomy(store)
    if category not in taxonomy.categories():
        raise KeyError(f"category {category!r} is not in the taxonomy ({', '.join(taxonomy.categories())})")
    by_id = {t.id: t for t in load_topics(store).topics}
    return [
        (by_id[tid], path) for tid, path in sorted(taxonomy.assignments.items()) if path.l1 == category and tid in by_id
    ]


def load_dataset(store: Store, category: str, env_id: str) -> tuple[EnvSpec, Rows]:
    """A mined dataset: the draft env.json (every tool) and its seeded rows."""
    d = env_dir(store, MINED_DATASETS, category, env_id)
    return EnvSpec.model_validate(read_json(d / ENV_JSON)), read_json(d / ROWS_JSON)


def bundles(store: Store, category: str) -> list[Bundle]:
    """The gated environment bundles of a category (kept by the tool-test gate)."""
    manifest = require_manifest(store, TOOL_TESTS, category)
    return [Bundle.open(env_dir(store, TOOL_TESTS, category, e)) for e in manifest.kept]


def dataset_work(store: Store, category: str, make: Callable[[EnvSpec, Rows, Path], dict[str, float]]) -> list[EnvWork]:
    """One job per kept mined dataset, rebuilt when that dataset changes; `make` writes and returns counts."""

    def job(env_id: str) -> EnvWork:
        def build(out: Path) -> EnvOutcome:
            spec, rows = load_dataset(store, category, env_id)
            return EnvOutcome(env_id=env_id, counts=make(spec, rows, out))

        return EnvWork(env_id, {"dataset": env_input_hash(store, MINED_DATASETS, category, env_id)}, build)

    return [job(e) for e in require_manifest(store, MINED_DATASETS, category).kept]
