"""Snapshots share the tables nothing wrote, so hashing, diffing and judging a state cost what changed."""

from __future__ import annotations

from factory.envs.runtime import Environment
from factory.verify.state import canonical_state_hash, state_diff


def test_fresh_sessions_share_the_seed_snapshot(shop_bundle):
    with Environment.open(shop_bundle) as env, env.session() as a, env.session() as b:
        first = a.snapshot()
        assert b.snapshot() is first
        product = first.tables["products"][0]["id"]
        assert a.call("get_product", {"product_id": product}).ok
        assert a.snapshot() is first  # a read changes no row: still the seed, no worker round trip


def test_a_write_keeps_the_other_tables_shared(shop_bundle):
    with Environment.open(shop_bundle) as env, env.session() as s:
        seed = s.snapshot()
        product = seed.tables["products"][0]
        assert s.call("update_product", {"product_id": product["id"], "stock": product["stock"] + 3}).ok
        after = s.snapshot()
        assert after.tables["products"] is not seed.tables["products"]
        assert after.tables["products"][0]["stock"] == product["stock"] + 3
        assert all(after.tables[t] is rows for t, rows in seed.tables.items() if t != "products")
        assert s.snapshot() is after  # nothing written since
        assert list(state_diff(seed, after).tables) == ["products"]
        assert canonical_state_hash(after) != canonical_state_hash(seed)
        s.reset()
        assert s.snapshot() is seed
