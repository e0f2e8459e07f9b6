"""Environment splits: training, arena and held-out (Agent-World, "arena" for diagnosis).

- held-out: a fixed set that no diagnosis ever reads, so the final evaluation measures generalization and
  not the loop's own targeting. By default the environments whose id hashes lowest in each category, a
  tenth of it (rounded), at least one once a category has `HELDOUT_MIN_CATEGORY` environments. It does not
  depend on the seed: changing the seed of a round must not move environments in or out of it.
- arena: `arena_per_category` environments per top-level category, sampled by seed from the rest; the
  diagnosis reads rollouts on these. Never trained on.
- train: the rest; a category always keeps at least one training environment when it has two or more.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Mapping

from factory.models import Split

ARENA_PER_CATEGORY = 5
HELDOUT_SHARE = 0.10
HELDOUT_MIN_CATEGORY = 3


def _rank(env_id: str) -> str:
    return hashlib.sha256(env_id.encode()).hexdigest()


def default_heldout(envs_by_category: Mapping[str, Iterable[str]], share: float = HELDOUT_SHARE) -> set[str]:
    """A tenth of each category (at least one from `HELDOUT_MIN_CATEGORY` envs on), chosen by id hash."""
    out: set[str] = set()
    for envs in envs_by_category.values():
        ranked = sorted(set(envs), key=_rank)
        if len(ranked) < HELDOUT_MIN_CATEGORY:
            continue
        out.update(ranked[: max(1, round(len(ranked) * share))])
    return out


def assign_splits(
    envs_by_category: Mapping[str, Iterable[str]],
    seed: int = 0,
    arena_per_category: int = ARENA_PER_CATEGORY,
    heldout: Iterable[str] | None = None,
) -> dict[str, Split]:
    """The split of every environment. `heldout` replaces the default held-out set; ids it names that no
    category holds are an error (a typo would silently leak an environment into training)."""
    if arena_per_category < 0:
        raise ValueError("arena_per_category must be >= 0")
    all_envs = {e for envs in envs_by_category.values() for e in envs}
    held = default_heldout(envs_by_category) if heldout is None else set(heldout)
    unknown = sorted(held - all_envs)
    if unknown:
        raise ValueError(f"held-out environments not in any category: {', '.join(unknown)}")
    splits: dict[str, Split] = {}
    for category in sorted(envs_by_category):
        envs = sorted(set(envs_by_category[category]))
        for e in envs:
            if e in held:
                splits[e] = "heldout"
        rest = [e for e in envs if e not in held]
        n_arena = min(arena_per_category, max(0, len(rest) - 1))
        arena = set(random.Random(f"{seed}:{category}").sample(rest, n_arena))
        for e in rest:
            splits.setdefault(e, "arena" if e in arena else "train")
    return splits
