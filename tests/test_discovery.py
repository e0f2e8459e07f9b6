"""Discovery stages: topics and taxonomy artifacts, their errors, and the taxonomy check."""

import pytest

from factory import discovery
from factory.models import Taxonomy, TaxonomyNode, TaxonomyPath
from factory.store import Store


def test_rerun_with_the_same_topics_writes_nothing(factory_home):
    store = Store()
    _, first = discovery.discover_topics(store, include=["online-shop", "team-chat"])
    _, again = discovery.discover_topics(store, include=["team-chat", "online-shop"])
    assert first.wrote and not again.wrote and first.content_hash == again.content_hash
    taxonomy, written = discovery.classify_topics(store)
    assert written.wrote and taxonomy.categories() == ["commerce", "messaging"]
    assert [t.id for t, _ in discovery.topics_in_category(store, "messaging")] == ["team-chat"]
    with pytest.raises(KeyError, match="not in the taxonomy"):
        discovery.topics_in_category(store, "travel")


def test_unknown_ids_and_missing_artifacts_are_clear_errors(factory_home):
    store = Store()
    with pytest.raises(FileNotFoundError, match="materialize topics first"):
        discovery.load_topics(store)
    with pytest.raises(KeyError, match="unknown catalog topic ids: no-such-topic"):
        discovery.discover_topics(store, include=["no-such-topic"])


def test_taxonomy_check_finds_empty_categories_and_duplicate_slugs():
    leaf = TaxonomyNode(slug="retail", title="Retail", children=[TaxonomyNode(slug="shops", title="Shops")])
    taxonomy = Taxonomy(
        roots=[
            TaxonomyNode(slug="commerce", title="Commerce", children=[leaf, leaf]),
            TaxonomyNode(slug="travel", title="Travel"),
        ],
        assignments={"online-shop": TaxonomyPath(l1="commerce", l2="retail", l3="shops")},
    )
    problems = discovery.taxonomy_problems(taxonomy)
    assert "category 'travel' has no topics" in problems
    assert "duplicate slug commerce/retail" in problems
    sound = taxonomy.model_copy(update={"roots": [TaxonomyNode(slug="commerce", title="Commerce", children=[leaf])]})
    assert discovery.taxonomy_problems(sound) == []
