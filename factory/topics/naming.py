"""Name conventions shared by the topic sources: slugs, snake_case, singular and plural nouns.

Tools, entities and fields from different sources only line up when they are spelled the same
way, so every loader goes through these helpers.
"""

from __future__ import annotations

import re

_IRREGULAR_PLURALS = {
    "person": "people",
    "child": "children",
    "man": "men",
    "woman": "women",
    "mouse": "mice",
    "datum": "data",
    "analysis": "analyses",
    "criterion": "criteria",
}
_IRREGULAR_SINGULARS = {v: k for k, v in _IRREGULAR_PLURALS.items()}
_UNCOUNTABLE = {"inventory", "news", "series", "species", "status", "metadata", "info", "feedback", "equipment"}


def snake_case(name: str) -> str:
    """`findPetsByStatus`, `Pet-Store`, `HTTPServer` -> `find_pets_by_status`, `pet_store`, `http_server`."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    s = re.sub(r"[^0-9a-zA-Z]+", "_", s)
    return s.strip("_").lower()


def slugify(text: str) -> str:
    """A slug for Dagster partition keys and ids: lowercase letters, digits and single '-'."""
    s = re.sub(r"[^a-z0-9]+", "-", snake_case(text).lower())
    return s.strip("-") or "topic"


def title_from_slug(slug: str) -> str:
    return " ".join(w.capitalize() for w in re.split(r"[-_]+", slug) if w)


def _last_word(name: str) -> tuple[str, str]:
    head, _, last = name.rpartition("_")
    return (head + "_" if head else ""), last


def singular(name: str) -> str:
    """Singular of a snake_case noun (only the last word changes): `purchase_orders` -> `purchase_order`."""
    head, w = _last_word(name)
    if w in _IRREGULAR_SINGULARS:
        return head + _IRREGULAR_SINGULARS[w]
    if w in _UNCOUNTABLE or w in _IRREGULAR_PLURALS or len(w) <= 3:
        return head + w
    if w.endswith("ies") and len(w) > 4:
        return head + w[:-3] + "y"
    if re.search(r"(ss|x|z|ch|sh|us)es$", w) or w.endswith("statuses") or w.endswith("addresses"):
        return head + w[:-2]
    if w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return head + w[:-1]
    return head + w


def plural(name: str) -> str:
    """Plural of a snake_case noun: `supplier_item` -> `supplier_items`, `category` -> `categories`."""
    head, w = _last_word(name)
    if w in _IRREGULAR_PLURALS:
        return head + _IRREGULAR_PLURALS[w]
    if w in _UNCOUNTABLE and w != "status":
        return head + w
    if re.search(r"[^aeiou]y$", w):
        return head + w[:-1] + "ies"
    if re.search(r"(s|x|z|ch|sh)$", w):
        return head + w + "es"
    return head + w + "s"
