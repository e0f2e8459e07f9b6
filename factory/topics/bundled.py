"""The bundled catalog: topics written for this project, one JSON file per top-level category.

Like a real MCP `tools/list`, catalog tools carry only names, descriptions and JSON schemas (no
`operation`): entity and operation inference works from those, as it must for any MCP server.
"""

from __future__ import annotations

import difflib
import functools
from importlib import resources

from pydantic import BaseModel, ConfigDict, ValidationError

from factory.models import TaxonomyPath, ToolSpec, Topic
from factory.topics.documents import SourceError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CatalogPlacement(_Strict):
    """Where a catalog topic sits below its file's l1 category."""

    l2: str
    l3: str


class CatalogTopic(_Strict):
    id: str
    title: str
    description: str
    taxonomy: CatalogPlacement
    tools: list[ToolSpec]


class CatalogCategory(_Strict):
    """One catalog file: an l1 category and its topics."""

    l1: str
    title: str
    description: str
    topics: list[CatalogTopic]


@functools.cache
def load_categories() -> tuple[CatalogCategory, ...]:
    """Every catalog file, parsed and validated once per process."""
    folder = resources.files("factory.topics") / "catalog"
    categories = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".json"):
            continue
        try:
            categories.append(CatalogCategory.model_validate_json(entry.read_text(encoding="utf-8")))
        except ValidationError as e:
            raise SourceError(f"catalog/{entry.name}", f"invalid catalog file: {e}") from None
    return tuple(categories)


@functools.cache
def _catalog() -> tuple[Topic, ...]:
    topics = []
    for cat in load_categories():
        for t in cat.topics:
            topics.append(
                Topic(
                    id=t.id,
                    title=t.title,
                    description=t.description,
                    source="catalog",
                    category_hint=cat.l1,
                    taxonomy_hint=TaxonomyPath(l1=cat.l1, l2=t.taxonomy.l2, l3=t.taxonomy.l3),
                    tools=t.tools,
                    origin=f"catalog/{cat.l1}.json",
                )
            )
    return tuple(topics)


def load_catalog() -> list[Topic]:
    """All bundled topics, in file then file-order; callers get their own copies to change."""
    return [t.model_copy(deep=True) for t in _catalog()]


def get_topic(topic_id: str) -> Topic:
    """One bundled topic by id; a KeyError that lists the closest ids when there is none."""
    for t in _catalog():
        if t.id == topic_id:
            return t.model_copy(deep=True)
    ids = [t.id for t in _catalog()]
    close = difflib.get_close_matches(topic_id, ids, n=5, cutoff=0.5)
    hint = f"did you mean: {', '.join(close)}?" if close else f"known ids include: {', '.join(ids[:8])}, ..."
    raise KeyError(f"no catalog topic {topic_id!r}; {hint}")
