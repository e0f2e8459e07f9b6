"""The resource tree of an OpenAPI document's paths: which collection, row or sub-path a path addresses.

Version and base prefixes (`/api/v1`) are dropped; a run of literals before a `{param}` names a collection
(`/groups/rules/{groupRuleId}`: the collection `groups/rules`, its item `groupRuleId`); params right after
another one make a composite key whose last param is the item; literals after the item are a sub-collection,
a singleton, a non-resource sub-path (download, preview) or a verb (`lifecycle/activate`, `restore`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from factory.lexicon import DECREMENT_VERBS, INCREMENT_VERBS, TRANSFER_VERBS, TRANSITIONS, WRITE_VERBS
from factory.naming import singular, snake_case

_PREFIX = re.compile(r"^(api|rest|v\d+(\.\d+)*|\d+(\.\d+)+)$", re.IGNORECASE)
_PARAM = re.compile(r"^\{([^{}]+)\}$")
# Verbs an endpoint under an item performs on it, beyond those with a known state change.
_ACTION_VERBS = frozenset(
    {
        "clone",
        "execute",
        "extend",
        "generate",
        "grant",
        "refresh",
        "resend",
        "retry",
        "rotate",
        "key_rotate",
        "run",
        "test",
        "trigger",
        "verify",
    }
)
VERBS = frozenset(TRANSITIONS) | INCREMENT_VERBS | DECREMENT_VERBS | TRANSFER_VERBS | WRITE_VERBS | _ACTION_VERBS
_KEY_SUFFIXES = ("_id", "_uuid", "_key", "_name", "_or_label", "_or_external_id", "_id_or_label")


@dataclass(frozen=True)
class Node:
    """A collection in a path and the params naming one of its rows (the last one is the item)."""

    key: str  # the collection's path with params as `{}`: "groups/rules", "apps/{}/grants"
    lits: tuple[str, ...]
    params: tuple[str, ...]


@dataclass(frozen=True)
class Route:
    """Where one path sits in the tree: the collections it walks, the literals after them, and a verb."""

    nodes: tuple[Node, ...]
    sub: tuple[str, ...]  # literals after the last item (or the whole path when it has no param), verb removed
    verb: str | None  # `lifecycle/<verb>` or a trailing verb word

    @property
    def node(self) -> Node | None:
        return self.nodes[-1] if self.nodes else None

    @property
    def parent(self) -> Node | None:
        return self.nodes[-2] if len(self.nodes) > 1 else None

    def sub_key(self) -> str:
        """The key of what the literals after the last item name (a sub-collection or singleton)."""
        head = self.node.key + "/{}" * len(self.node.params) if self.node else ""
        return "/".join(p for p in (head, *self.sub) if p)


def segments(path: str) -> list[str]:
    """Path segments without a version or base prefix (`/api/v1/users` -> `users`)."""
    segs = [s for s in path.split("/") if s]
    while segs and not _PARAM.match(segs[0]) and _PREFIX.match(segs[0]):
        segs.pop(0)
    return segs


def param_name(segment: str) -> str | None:
    m = _PARAM.match(segment)
    return m.group(1) if m else None


def shape_key(path: str) -> str:
    """A path with params as `{}`, prefix dropped: what paths addressing the same thing share."""
    return "/".join("{}" if param_name(s) else s for s in segments(path))


def collection_keys(paths: list[str]) -> set[str]:
    """Keys followed by a param in some path: collections whose rows are addressed one by one."""
    out: set[str] = set()
    for p in paths:
        parts = shape_key(p).split("/")
        for i, s in enumerate(parts):
            if s == "{}" and (i == 0 or parts[i - 1] != "{}"):
                out.add("/".join(parts[:i]))
    return out


def _verb_of(word: str) -> str | None:
    w = snake_case(word)
    return w if w in VERBS or w.split("_")[0] in VERBS else None


def route(path: str, method: str, collections: set[str]) -> Route:
    """The route of a path; a trailing verb is split off only from a write whose path is no collection."""
    nodes: list[Node] = []
    lits: list[str] = []
    done: list[str] = []
    for s in segments(path):
        name = param_name(s)
        if name is None:
            lits.append(s)
        elif lits or not nodes:
            key = "/".join([*done, *lits])
            nodes.append(Node(key, tuple(lits), (name,)))
            done += [*lits, "{}"]
            lits = []
        else:
            last = nodes[-1]
            nodes[-1] = Node(last.key, last.lits, (*last.params, name))
            done.append("{}")
    sub, verb = tuple(lits), None
    full = "/".join([*done, *lits])
    if sub and method != "get" and full not in collections:
        if len(sub) >= 2 and snake_case(sub[-2]) == "lifecycle":
            sub, verb = sub[:-2], snake_case(sub[-1])
        elif (nodes or len(sub) > 1) and _verb_of(sub[-1]):
            sub, verb = sub[:-1], snake_case(sub[-1])
    return Route(tuple(nodes), sub, verb)


def name_candidates(node: Node | None, sub: tuple[str, ...], parent_entity: str | None) -> tuple[list[str], list[str]]:
    """Entity names a collection may have, most specific first: from its literals, and from its item param."""
    lits = [snake_case(x) for x in (sub or (node.lits if node else ()))]
    words = [singular(w) for w in lits if w and w != "{}"]
    out: list[str] = []
    if len(words) >= 2:
        out.append(f"{words[-2]}_{words[-1]}")
    if words:
        if parent_entity:
            out.append(f"{parent_entity}_{words[-1]}")
        out.append(words[-1])
    from_param: list[str] = []
    if node is not None and not sub:
        p = snake_case(node.params[-1])
        for suffix in _KEY_SUFFIXES:
            if p.endswith(suffix):
                p = p[: -len(suffix)]
                break
        if p and p != "id":
            from_param.append(p)
    return list(dict.fromkeys(snake_case(c) for c in out if c)), from_param
