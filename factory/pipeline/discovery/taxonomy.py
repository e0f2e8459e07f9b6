"""Taxonomy: three levels over the discovered topics, near-duplicates merged; its L1 slugs are the
category partitions of every later stage. Unpartitioned and written only when its content changes."""

from __future__ import annotations

from collections.abc import Iterator

from factory.models import Lineage, Taxonomy, TaxonomyNode
from factory.pipeline.artifacts import Written, load_topics, taxonomy_path
from factory.pipeline.registry import TAXONOMY
from factory.store import Store, hash_value, write_json_if_changed


def classify_topics(store: Store) -> tuple[Taxonomy, Written]:
    """The three-level taxonomy of the discovered topics."""
    from factory.topics import build_taxonomy

    artifact = load_topics(store)
    taxonomy = build_taxonomy(artifact.topics)
    lineage = Lineage(stage=TAXONOMY.name, code_version=TAXONOMY.code_version, inputs={"topics": hash_value(artifact)})
    taxonomy = taxonomy.model_copy(update={"lineage": lineage})
    h, wrote = write_json_if_changed(taxonomy_path(store), taxonomy)
    return taxonomy, Written(h, wrote)


def topics_per_category(taxonomy: Taxonomy) -> dict[str, int]:
    """How many topics each category holds, in taxonomy order."""
    return {c: sum(1 for p in taxonomy.assignments.values() if p.l1 == c) for c in taxonomy.categories()}


def taxonomy_problems(taxonomy: Taxonomy) -> list[str]:
    """What the taxonomy check reports: empty categories and duplicate slugs."""
    problems = [f"category {c!r} has no topics" for c, n in topics_per_category(taxonomy).items() if n == 0]
    seen: set[tuple[str, ...]] = set()
    for root in taxonomy.roots:
        for key in _slug_keys(root, ()):
            if key in seen:
                problems.append(f"duplicate slug {'/'.join(key)}")
            seen.add(key)
    return problems


def _slug_keys(node: TaxonomyNode, prefix: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    key = (*prefix, node.slug)
    yield key
    for child in node.children:
        yield from _slug_keys(child, key)
