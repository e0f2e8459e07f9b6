"""The three-level taxonomy (l1/l2/l3 slugs) over topics, and the merging of near-duplicate topics.

Catalog topics carry their own placement. Any other topic is placed by TF-IDF cosine similarity
(pure Python, offline, deterministic) of its title, description and tool names to the catalog's
categories: the best l1, then the best l2 inside it, then the closest catalog l3 when it is
close enough, else an l3 of its own. Topics whose similarity to an earlier kept topic reaches the
merge threshold (0.85, as AWM does) are merged into it and recorded in `Taxonomy.merges`.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from factory.environment import env_number
from factory.models import Taxonomy, TaxonomyNode, TaxonomyPath, Topic, TopicMerge
from factory.naming import singular, slugify, snake_case, title_from_slug
from factory.topics.bundled import load_catalog, load_categories

MERGE_THRESHOLD_ENV = "FACTORY_TOPIC_MERGE_THRESHOLD"
OTHER_L1 = "other"
SLUG_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "of",
        "to",
        "in",
        "for",
        "with",
        "by",
        "on",
        "its",
        "their",
        "from",
        "is",
        "are",
        "be",
        "as",
        "at",
        "that",
        "this",
        "it",
        "e",
        "g",
        "eg",
        "such",
        "like",
        "one",
        "each",
        "per",
        "any",
        "all",
        "can",
        "may",
        "your",
        "you",
        "our",
        "we",
        "they",
        "them",
        "who",
        "what",
        "when",
        "where",
        "which",
        "how",
        "not",
        "no",
    ]
)

Vector = dict[str, float]


def _env_threshold() -> float:
    return env_number(MERGE_THRESHOLD_ENV, 0.85, float, "a number between 0 and 1")


class TaxonomyConfig(BaseModel):
    """How topics are compared and placed; `merge_threshold` defaults to $FACTORY_TOPIC_MERGE_THRESHOLD or 0.85."""

    model_config = ConfigDict(extra="forbid")

    rule: Literal["tfidf-cosine"] = "tfidf-cosine"
    merge_threshold: float = Field(default_factory=_env_threshold, ge=0.0, le=1.0)
    # Below this similarity to every catalog category a topic goes to the `other` category.
    min_category_similarity: float = Field(default=0.05, ge=0.0, le=1.0)
    # A topic joins the closest catalog l3 only at or above this similarity; else it gets its own l3.
    min_l3_similarity: float = Field(default=0.3, ge=0.0, le=1.0)


def tokens(text: str) -> list[str]:
    """Lowercase word stems: camelCase and snake_case split, plurals folded, stop words dropped."""
    words = re.findall(r"[a-z0-9]+", snake_case(text).replace("_", " "))
    return [singular(w) for w in words if len(w) > 1 and w not in _STOPWORDS]


def topic_text(topic: Topic) -> str:
    return " ".join([topic.title, topic.description, *(t.name for t in topic.tools)])


def _idf(docs: Iterable[Sequence[str]]) -> dict[str, float]:
    df: Counter[str] = Counter()
    n = 0
    for doc in docs:
        df.update(set(doc))
        n += 1
    return {term: math.log((1 + n) / (1 + count)) + 1.0 for term, count in df.items()}


def _vector(words: Sequence[str], idf: dict[str, float]) -> Vector:
    counts = Counter(words)
    vec = {w: (1.0 + math.log(c)) * idf.get(w, 1.0) for w, c in sorted(counts.items())}
    norm = math.sqrt(sum(v * v for v in vec.values()))
    return {w: v / norm for w, v in vec.items()} if norm else {}


def _sum(vectors: Iterable[Vector]) -> Vector:
    total: dict[str, float] = {}
    for vec in vectors:
        for w, v in vec.items():
            total[w] = total.get(w, 0.0) + v
    norm = math.sqrt(sum(v * v for v in total.values()))
    return {w: v / norm for w, v in sorted(total.items())} if norm else {}


def cosine(a: Vector, b: Vector) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b[w] for w, v in sorted(a.items()) if w in b)


def _ordered(topics: Sequence[Topic]) -> list[Topic]:
    """Catalog topics first, then by id: the merge keeps the same topic whatever the input order."""
    return sorted(topics, key=lambda t: (t.source != "catalog", t.id))


def _check_slug(slug: str, what: str) -> str:
    if not SLUG_RE.match(slug):
        raise ValueError(f"{what} {slug!r} is not a slug (lowercase letters, digits and single '-')")
    return slug


def build_taxonomy(topics: Sequence[Topic], config: TaxonomyConfig | None = None) -> Taxonomy:
    """Place every topic at l1/l2/l3 and merge near-duplicates (see the module docstring)."""
    config = config or TaxonomyConfig()
    reference = [t for t in load_catalog() if t.taxonomy_hint is not None]
    ordered = _ordered(topics)
    words = {("in", t.id): tokens(topic_text(t)) for t in ordered}
    words.update({("ref", t.id): tokens(topic_text(t)) for t in reference})
    idf = _idf(words.values())
    vectors = {key: _vector(w, idf) for key, w in words.items()}

    kept: list[Topic] = []
    merges: list[TopicMerge] = []
    for topic in ordered:
        vec = vectors[("in", topic.id)]
        best, best_sim = None, -1.0
        for other in kept:
            sim = 1.0 if other.id == topic.id else cosine(vec, vectors[("in", other.id)])
            if sim > best_sim:
                best, best_sim = other, sim
        if best is not None and (best.id == topic.id or best_sim >= config.merge_threshold):
            merges.append(TopicMerge(kept=best.id, merged=topic.id, similarity=round(best_sim, 4)))
        else:
            kept.append(topic)

    placer = _Placer(reference, vectors, config)
    assignments = {t.id: placer.place(t, vectors[("in", t.id)]) for t in kept}
    return Taxonomy(
        roots=_tree(assignments, placer.l1_titles),
        assignments=dict(sorted(assignments.items())),
        merges=merges,
        merge_threshold=config.merge_threshold,
    )


class _Placer:
    """Places topics without a catalog hint by similarity to the catalog's l1, l2 and l3 groups."""

    def __init__(self, reference: list[Topic], vectors: dict[tuple[str, str], Vector], config: TaxonomyConfig) -> None:
        self.config = config
        self.refs = [(t.taxonomy_hint, vectors[("ref", t.id)]) for t in reference if t.taxonomy_hint]
        self.l1_titles = {c.l1: c.title for c in load_categories()}
        by_l1: dict[str, list[Vector]] = {}
        by_l2: dict[tuple[str, str], list[Vector]] = {}
        for path, vec in self.refs:
            by_l1.setdefault(path.l1, []).append(vec)
            by_l2.setdefault((path.l1, path.l2), []).append(vec)
        self.l1 = {k: _sum(v) for k, v in sorted(by_l1.items())}
        self.l2 = {k: _sum(v) for k, v in sorted(by_l2.items())}

    def place(self, topic: Topic, vec: Vector) -> TaxonomyPath:
        if topic.taxonomy_hint is not None:
            h = topic.taxonomy_hint
            return TaxonomyPath(l1=_check_slug(h.l1, "l1"), l2=_check_slug(h.l2, "l2"), l3=_check_slug(h.l3, "l3"))
        own = slugify(topic.id)
        if not self.l1:
            return TaxonomyPath(l1=OTHER_L1, l2="general", l3=own)
        l1, sim = max(((k, cosine(vec, v)) for k, v in self.l1.items()), key=lambda kv: (kv[1], kv[0]))
        if sim < self.config.min_category_similarity:
            return TaxonomyPath(l1=OTHER_L1, l2="general", l3=own)
        l2, _ = max(((k[1], cosine(vec, v)) for k, v in self.l2.items() if k[0] == l1), key=lambda kv: (kv[1], kv[0]))
        candidates = [(cosine(vec, v), p.l3) for p, v in self.refs if p.l1 == l1 and p.l2 == l2]
        best_sim, best_l3 = max(candidates)
        return TaxonomyPath(l1=l1, l2=l2, l3=best_l3 if best_sim >= self.config.min_l3_similarity else own)


def _tree(assignments: dict[str, TaxonomyPath], l1_titles: dict[str, str]) -> list[TaxonomyNode]:
    levels: dict[str, dict[str, set[str]]] = {}
    for path in assignments.values():
        levels.setdefault(path.l1, {}).setdefault(path.l2, set()).add(path.l3)
    return [
        TaxonomyNode(
            slug=l1,
            title=l1_titles.get(l1, title_from_slug(l1)),
            children=[
                TaxonomyNode(
                    slug=l2,
                    title=title_from_slug(l2),
                    children=[TaxonomyNode(slug=l3, title=title_from_slug(l3)) for l3 in sorted(l3s)],
                )
                for l2, l3s in sorted(l2s.items())
            ],
        )
        for l1, l2s in sorted(levels.items())
    ]
