"""One way to spell names: inflection of snake_case nouns, snake_case, slugs and row ids.

Tools, tables, parameters and questions from different sources only line up when every stage
spells a noun the same way: `list_categories` works on the entity `category`, stored in the table
`categories`, named by the parameter `category_id`. Inflection changes only the last word of a
name (`purchase_orders` -> `purchase_order`), and `singular(plural(w)) == w` for table names.
"""

from __future__ import annotations

import re

# singular -> plural where the rules below get it wrong
_IRREGULAR = {
    "person": "people",
    "child": "children",
    "man": "men",
    "woman": "women",
    "mouse": "mice",
    "goose": "geese",
    "tooth": "teeth",
    "foot": "feet",
    "criterion": "criteria",
    "analysis": "analyses",
    "diagnosis": "diagnoses",
    "thesis": "theses",
    "crisis": "crises",
    "hypothesis": "hypotheses",
    "synopsis": "synopses",
    "matrix": "matrices",
    "vertex": "vertices",
    "leaf": "leaves",
    "knife": "knives",
    "wife": "wives",
    "shelf": "shelves",
    "life": "lives",
    "half": "halves",
    "wolf": "wolves",
    "thief": "thieves",
    "movie": "movies",
    "cookie": "cookies",
    "calorie": "calories",
    "cache": "caches",
    "niche": "niches",
    "headache": "headaches",
    "menu": "menus",
    "guru": "gurus",
    "sku": "skus",
    "emu": "emus",
    "tofu": "tofus",
    "haiku": "haikus",
    "hero": "heroes",
    "potato": "potatoes",
    "tomato": "tomatoes",
    "echo": "echoes",
    "excuse": "excuses",
    "fuse": "fuses",
    "abuse": "abuses",
    "quiz": "quizzes",
}
_SINGULAR_OF = {plural: singular for singular, plural in _IRREGULAR.items()} | {"indices": "index"}
# Nouns whose plural is the same word.
_UNCOUNTABLE = frozenset(
    {
        "data",
        "metadata",
        "media",
        "news",
        "series",
        "species",
        "info",
        "information",
        "equipment",
        "feedback",
        "staff",
        "software",
        "sheep",
        "fish",
        "money",
        "weather",
        "music",
        "traffic",
        "analytics",
        "logistics",
        "physics",
        "economics",
        "mathematics",
        "chassis",
        "lens",
        "canvas",
        "atlas",
        "alias",
        "gas",
        "bias",
        "inventory",
        "stock",
        "mail",
        "insurance",
        "payroll",
    }
)


def _split_last(name: str) -> tuple[str, str]:
    """(everything up to the last word, the last word) of a snake_case or space-separated name."""
    cut = max(name.rfind("_"), name.rfind(" "))
    return name[: cut + 1], name[cut + 1 :]


def _like(w: str, form: str) -> str:
    """`form` spelled like `w`: Person -> People."""
    return form.capitalize() if w[:1].isupper() else form


def _is_acronym(w: str) -> bool:
    return len(w) > 1 and w.isupper()


def _singular_word(w: str) -> str:
    if len(w) > 2 and w.endswith("s") and _is_acronym(w[:-1]):  # SKUs -> SKU
        return w[:-1]
    low = w.lower()
    if low in _UNCOUNTABLE or low in _IRREGULAR or _is_acronym(w):
        return w
    if low in _SINGULAR_OF:
        return _like(w, _SINGULAR_OF[low])
    if len(low) <= 2 or low.endswith(("ss", "us", "is")):
        return w
    if low.endswith("ies") and len(low) > 4:
        return w[:-3] + "y"
    if low.endswith(("sses", "xes", "ches", "shes", "zzes")):
        return w[:-2]
    if low.endswith("uses") and len(low) > 4:
        return w[:-1] if low[-5] in "aeiou" else w[:-2]  # houses -> house, buses -> bus
    if low.endswith("s"):
        return w[:-1]
    return w


def _plural_word(w: str) -> str:
    low = w.lower()
    if low in _UNCOUNTABLE or _singular_word(w) != w:
        return w
    if _is_acronym(w):  # SKU -> SKUs
        return w + "s"
    if low in _IRREGULAR:
        return _like(w, _IRREGULAR[low])
    if low.endswith("y") and len(low) > 1 and low[-2] not in "aeiou":
        return w[:-1] + "ies"
    if low.endswith("sis"):
        return w[:-2] + "es"
    if low.endswith(("s", "x", "z", "ch", "sh")):
        return w + "es"
    return w + "s"


def singular(name: str) -> str:
    """Singular of a noun, last word only: `purchase_orders` -> `purchase_order`, `people` -> `person`."""
    head, last = _split_last(name)
    return head + _singular_word(last)


def plural(name: str) -> str:
    """Plural of a noun, last word only: `supplier_item` -> `supplier_items`, `ledger entry` -> `ledger entries`.

    A plural stays as it is (`settings`, `people`), so a name that is already a table name is one.
    """
    head, last = _split_last(name)
    return head + _plural_word(last)


def is_plural(word: str) -> bool:
    """Whether a word names several things: `orders` yes, `status`, `data` and `order` no."""
    return singular(word) != word


def split_words(name: str) -> list[str]:
    """Lower-case words of an identifier in any style: `getIssue`, `issues_list`, `list-open-issues`."""
    return [w for w in snake_case(name).split("_") if w]


def snake_case(name: str) -> str:
    """`findPetsByStatus`, `Pet-Store`, `HTTPServer` -> `find_pets_by_status`, `pet_store`, `http_server`."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    s = re.sub(r"[^0-9a-zA-Z]+", "_", s)
    return s.strip("_").lower()


def slugify(text: str, fallback: str = "topic") -> str:
    """A slug for Dagster partition keys and ids: lowercase letters, digits and single '-'.

    Text with no letter or digit gives `fallback`.
    """
    return re.sub(r"[^a-z0-9]+", "-", snake_case(text)).strip("-") or fallback


def title_from_slug(slug: str) -> str:
    """`retail-and-shopping` -> "Retail And Shopping": a readable title for a slug nobody titled."""
    return " ".join(w.capitalize() for w in re.split(r"[-_]+", slug) if w)


def format_id(prefix: str, n: int) -> str:
    """The id of the n-th row of an entity whose `id_prefix` is `prefix`: ("ord_", 7) -> "ord_0007"."""
    return f"{prefix}{n:04d}"
