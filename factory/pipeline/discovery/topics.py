"""Topics: the bundled catalog (or a subset of it) plus topics read from MCP / OpenAPI source files.

Unpartitioned. topics.json is rewritten only when its content changes, so an unchanged rerun keeps
the data version and nothing downstream turns stale.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from factory.environment import env_list
from factory.models import Lineage, TopicsArtifact
from factory.pipeline.artifacts import Written, topics_path
from factory.pipeline.registry import TOPICS
from factory.store import Store, hash_value, write_json_if_changed

SOURCES_VARIABLE = "FACTORY_TOPIC_SOURCES"
INCLUDE_VARIABLE = "FACTORY_TOPICS"


def discover_topics(
    store: Store, *, sources: Sequence[str] | None = None, include: Sequence[str] | None = None
) -> tuple[TopicsArtifact, Written]:
    """The bundled catalog (optionally only the `include` ids) plus topics read from `sources` files.

    None means the environment's default: FACTORY_TOPIC_SOURCES and FACTORY_TOPICS (comma-separated).
    """
    from factory.topics import load_catalog, load_source

    sources = env_list(SOURCES_VARIABLE) if sources is None else list(sources)
    include = env_list(INCLUDE_VARIABLE) if include is None else list(include)
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
        sources=sources,
        lineage=Lineage(
            stage=TOPICS.name,
            code_version=TOPICS.code_version,
            inputs={"sources": hash_value(sources), "include": hash_value(sorted(include))},
        ),
    )
    h, wrote = write_json_if_changed(topics_path(store), artifact)
    return artifact, Written(h, wrote)
