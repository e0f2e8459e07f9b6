"""The taxonomy: three slug levels, placement of non-catalog topics, near-duplicate merging, determinism."""

from __future__ import annotations

from pathlib import Path

import pytest

from factory.models import Topic
from factory.topics import TaxonomyConfig, build_taxonomy, get_topic, load_catalog, load_source
from factory.topics.taxonomy import SLUG_RE

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sources"


def walk(nodes, depth=1):
    for node in nodes:
        yield depth, node
        yield from walk(node.children, depth + 1)


def near_duplicate(topic: Topic, new_id: str) -> Topic:
    """The same service read from elsewhere: same tools, description slightly reworded."""
    copy = topic.model_copy(deep=True)
    copy.id, copy.source, copy.taxonomy_hint, copy.category_hint = new_id, "mcp", None, None
    copy.description = copy.description.replace("A ", "An online ", 1) + " Hosted version."
    return copy


def test_catalog_taxonomy_levels_and_slugs():
    catalog = load_catalog()
    tax = build_taxonomy(catalog)
    assert len(tax.roots) >= 8 and tax.categories() == sorted(tax.categories())
    assert set(tax.assignments) == {t.id for t in catalog} and tax.merges == []
    for depth, node in walk(tax.roots):
        assert SLUG_RE.match(node.slug) and node.title and depth <= 3
        assert (depth == 3) == (not node.children)
    for t in catalog:
        assert tax.assignments[t.id] == t.taxonomy_hint
    assert next(r for r in tax.roots if r.slug == "finance").title == "Banking & finance"


def test_source_topics_are_placed_by_similarity():
    sources = [t for p in sorted(FIXTURES.glob("*.*")) for t in load_source(p)]
    tax = build_taxonomy(load_catalog() + sources)
    placed = {tid: (p.l1, p.l2) for tid, p in tax.assignments.items() if tid in {t.id for t in sources}}
    assert placed == {
        "community-bank-api": ("finance", "banking"),
        "helpdesk-mcp": ("crm-sales", "customer-service"),
        "linear-tracker": ("dev-tools", "issue-tracking"),
        "pet-store": ("commerce", "retail"),
    }
    assert tax.merges == []


def test_unrelated_topic_goes_to_other_with_its_own_l3():
    odd = Topic(id="Quantum Flux!", title="Zyx", description="Qwerty plugh xyzzy.", tools=[])
    tax = build_taxonomy([odd])
    path = tax.assignments["Quantum Flux!"]
    assert (path.l1, path.l2, path.l3) == ("other", "general", "quantum-flux")
    assert tax.categories() == ["other"]


def test_planted_near_duplicate_is_merged_and_distinct_topics_are_not():
    shop = get_topic("online-shop")
    dup = near_duplicate(shop, "acme-shop")
    tax = build_taxonomy([dup, shop, get_topic("marketplace"), get_topic("procurement")])
    assert [(m.kept, m.merged) for m in tax.merges] == [("online-shop", "acme-shop")]
    assert tax.merges[0].similarity >= 0.85
    assert "acme-shop" not in tax.assignments and {"online-shop", "marketplace", "procurement"} <= set(tax.assignments)


def test_threshold_from_config_and_env(monkeypatch):
    shop, procurement = get_topic("online-shop"), get_topic("procurement")  # related, far below 0.85
    assert build_taxonomy([shop, procurement]).merges == []
    assert build_taxonomy([shop, procurement], TaxonomyConfig(merge_threshold=0.3)).merges[0].merged == "procurement"
    monkeypatch.setenv("FACTORY_TOPIC_MERGE_THRESHOLD", "0.3")
    tax = build_taxonomy([shop, procurement])
    assert tax.merge_threshold == 0.3 and len(tax.merges) == 1
    monkeypatch.setenv("FACTORY_TOPIC_MERGE_THRESHOLD", "high")
    with pytest.raises(ValueError, match="FACTORY_TOPIC_MERGE_THRESHOLD"):
        TaxonomyConfig()
    monkeypatch.delenv("FACTORY_TOPIC_MERGE_THRESHOLD")
    assert TaxonomyConfig().merge_threshold == 0.85 and TaxonomyConfig().rule == "tfidf-cosine"


def test_same_id_twice_is_merged():
    shop = get_topic("online-shop")
    tax = build_taxonomy([shop, shop.model_copy(deep=True)])
    assert [(m.kept, m.merged, m.similarity) for m in tax.merges] == [("online-shop", "online-shop", 1.0)]


def test_deterministic_whatever_the_input_order():
    topics = [*load_catalog(), near_duplicate(get_topic("team-chat"), "chatter")]
    a = build_taxonomy(topics)
    b = build_taxonomy(list(reversed(topics)))
    assert a.model_dump_json() == b.model_dump_json()
    assert [m.merged for m in a.merges] == ["chatter"]
