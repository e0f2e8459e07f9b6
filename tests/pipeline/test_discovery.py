"""Discovery stages: topics and taxonomy artifacts, their errors, and the taxonomy check."""

import pytest

from factory.models import Taxonomy, TaxonomyNode, TaxonomyPath
from factory.pipeline import artifacts
from factory.pipeline.discovery.taxonomy import classify_topics, taxonomy_problems
from factory.pipeline.discovery.topics import discover_topics
from factory.store import Store


def test_rerun_with_the_same_topics_writes_nothing(factory_home):
    store = Store()
    _, first = discover_topics(store, include=["online-shop", "team-chat"])
    _, again = discover_topics(store, include=["team-chat", "online-shop"])
    assert first.wrote and not again.wrote and first.content_hash == again.content_hash
    taxonomy, written = classify_topics(store)
    assert written.wrote and taxonomy.categories() == ["commerce", "messaging"]
    assert [t.id for t, _ in artifacts.topics_in_category(store, "messaging")] == ["team-chat"]
    with pytest.raises(KeyError, match="not in the taxonomy"):
        artifacts.topics_in_category(store, "travel")


def test_unknown_ids_and_missing_artifacts_are_clear_errors(factory_home):
    store = Store()
    with pytest.raises(FileNotFoundError, match="materialize topics first"):
        artifacts.load_topics(store)
    with pytest.raises(KeyError, match="unknown catalog topic ids: no-such-topic"):
        discover_topics(store, include=["no-such-topic"])


def test_taxonomy_check_finds_empty_categories_and_duplicate_slugs():
    leaf = TaxonomyNode(slug="retail", title="Retail", children=[TaxonomyNode(slug="shops", title="Shops")])
    taxonomy = Taxonomy(
        roots=[
            TaxonomyNode(slug="commerce", title="Commerce", children=[leaf, leaf]),
            TaxonomyNode(slug="travel", title="Travel"),
        ],
        assignments={"online-shop": TaxonomyPath(l1="commerce", l2="retail", l3="shops")},
    )
    problems = taxonomy_problems(taxonomy)
    assert "category 'travel' has no topics" in problems
    assert "duplicate slug commerce/retail" in problems
    sound = taxonomy.model_copy(update={"roots": [TaxonomyNode(slug="commerce", title="Commerce", children=[leaf])]})
    assert taxonomy_problems(sound) == []


def test_environment_defaults_are_read_when_the_stage_runs(factory_home, monkeypatch):
    store = Store()
    monkeypatch.setenv("FACTORY_TOPICS", "team-chat")
    artifact, _ = discover_topics(store)
    assert [t.id for t in artifact.topics] == ["team-chat"]
    monkeypatch.setenv("FACTORY_TOPICS", "online-shop, team-chat")
    artifact, written = discover_topics(store)
    assert written.wrote and [t.id for t in artifact.topics] == ["online-shop", "team-chat"]
    assert [t.id for t in discover_topics(store, include=["online-shop"])[0].topics] == ["online-shop"]
