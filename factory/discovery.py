"""The discovery stages: topics from the catalog and tool sources, then the taxonomy.

Both are unpartitioned. Their artifacts are rewritten only when their content changes, so an
unchanged rerun keeps the data versions and nothing downstream turns stale.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import Field

from factory.models import Lineage, Model, Taxonomy, TaxonomyPath, Topic
from factory.store import Store, hash_file, hash_value, read_json, write_json_if_changed

M = TypeVar("M", bound=Model)

TOPICS_CODE_VERSION = "1"
TAXONOMY_CODE_VERSION = "1"


class TopicsArtifact(Model):
    topics: list[Topic]
    sources: list[str] = Field(default_factory=list)
    lineage: Lineage


@dataclass
class Written:
    """A content hash (the Dagster data version) and whether anything was written."""

    content_hash: str
    wrote: bool


def topics_path(store: Store) -> Path:
    return store.artifact_dir("topics") / "topics.json"


def taxonomy_path(store: Store) -> Path:
    return store.artifact_dir("taxonomy") / "taxonomy.json"


def env_list(name: str) -> list[str]:
    """A comma-separated environment variable as a list (empty when unset)."""
    return [s.strip() for s in os.environ.get(name, "").split(",") if s.strip()]


def discover_topics(
    store: Store, *, sources: Sequence[str] = (), include: Sequence[str] = ()
) -> tuple[TopicsArtifact, Written]:
    """The bundled catalog (optionally only the `include` ids) plus topics read from `sources` files."""
    from factory.topics import load_catalog, load_source

    topics = load_catalog()
    if include:
        known = {t.id for t in topics}
        missing = sorted(set(include) - known)
        if missing:
            raise KeyError(f"unknown catalog topic ids: {', '.join(missing)}")
        topics = [t for t in topics if t.id in set(include)]
    for src in sources:
        topics.extend(load_source(Path(src)))
    artifact = TopicsArtifact(
        topics=topics,
        sources=list(sources),
        lineage=Lineage(
            stage="topics",
            code_version=TOPICS_CODE_VERSION,
            inputs={"sources": hash_value(list(sources)), "include": hash_value(sorted(include))},
        ),
    )
    h, wrote = write_json_if_changed(topics_path(store), artifact)
    return artifact, Written(h, wrote)


def _load(store: Store, path: Path, model: type[M], asset: str) -> M:
    if not path.is_file():
        raise FileNotFoundError(f"no {asset} under {store.artifacts}: materialize {asset} first")
    return model.model_validate(read_json(path))


def load_topics(store: Store) -> TopicsArtifact:
    return _load(store, topics_path(store), TopicsArtifact, "topics")


def classify_topics(store: Store) -> tuple[Taxonomy, Written]:
    """The three-level taxonomy of the discovered topics, near-duplicates merged."""
    from factory.topics import build_taxonomy

    artifact = load_topics(store)
    taxonomy = build_taxonomy(artifact.topics)
    taxonomy = taxonomy.model_copy(
        update={
            "lineage": Lineage(
                stage="taxonomy",
                code_version=TAXONOMY_CODE_VERSION,
                inputs={"topics": hash_value(artifact)},
            )
        }
    )
    h, wrote = write_json_if_changed(taxonomy_path(store), taxonomy)
    return taxonomy, Written(h, wrote)


def load_taxonomy(store: Store) -> Taxonomy:
    return _load(store, taxonomy_path(store), Taxonomy, "taxonomy")


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


def taxonomy_problems(taxonomy: Taxonomy) -> list[str]:
    """What the taxonomy check reports: empty categories and duplicate slugs."""
    problems: list[str] = []
    used = {p.l1 for p in taxonomy.assignments.values()}
    problems += [f"category {c!r} has no topics" for c in taxonomy.categories() if c not in used]
    seen: set[tuple[str, ...]] = set()
    for root in taxonomy.roots:
        for key in _slug_keys(root, ()):
            if key in seen:
                problems.append(f"duplicate slug {'/'.join(key)}")
            seen.add(key)
    return problems


def _slug_keys(node, prefix: tuple[str, ...]):
    key = (*prefix, node.slug)
    yield key
    for child in node.children:
        yield from _slug_keys(child, key)
