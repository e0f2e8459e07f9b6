"""Tool dependency graph and weighted walks (Agent-World, "tool graph" task synthesis).

A node is a tool; an edge A -> B says B can consume a value A returns:
- strong (weight 3): a REQUIRED parameter of B is produced by A's output,
- weak (weight 2): only OPTIONAL parameters of B can use A's output,
- independent (weight 1): no data flows; kept implicit (not stored) so the graph says only what
  depends on what, and `edge_weight` supplies it when a walk needs a low-weight fallback.
Every weight gets `NAME_MATCH_BONUS` per parameter of B whose name A also uses (Agent-World's rule).

Values are matched by name, entity and type: the field `id` of a product record is the value
`product_id`, so it feeds a parameter `product_id` (or `from_product_id`); `items[].customer_id` of an
order list feeds `customer_id`; a plain field such as `email` feeds a parameter `email` only within
the same entity. Each strong/weak edge stores its reasons (output field -> parameter).

Walks start at tools that return data and need no value another tool must produce first, and a tool
whose required ids come from other tools is only visited after one of those tools: a chain never
writes an id that no earlier call returned (a known flaw of τ²-bench gold chains, FACTS.md).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import networkx as nx

from factory.models import EnvSpec, JsonSchema, ToolSpec
from factory.naming import singular

ToolKind = Literal["query", "mutation", "mutation+query"]
EdgeKind = Literal["strong", "weak", "independent"]

STRONG_WEIGHT = 3.0
WEAK_WEIGHT = 2.0
INDEPENDENT_WEIGHT = 1.0
NEIGHBOURHOOD_FROM = 60  # tools: in a larger graph a walk stays within NEIGHBOURHOOD_RADIUS edges of its start
NEIGHBOURHOOD_RADIUS = 2
NAME_MATCH_BONUS = 0.5  # per parameter of B whose name A shares (as a parameter or an output field)

# Parameters every list tool has; sharing them says nothing about data flow.
GENERIC_PARAMS = frozenset(
    {"limit", "offset", "page", "page_size", "per_page", "cursor", "query", "q", "sort", "order_by"}
)
# Output fields that describe a response, not an entity.
GENERIC_OUTPUTS = frozenset({"total", "count", "next_offset", "next_cursor", "has_more", "deleted", "error"})
_VERB_PREFIXES = (
    "get_",
    "list_",
    "search_",
    "find_",
    "fetch_",
    "create_",
    "add_",
    "new_",
    "update_",
    "edit_",
    "set_",
    "delete_",
    "remove_",
    "cancel_",
    "count_",
    "aggregate_",
)


@dataclass(frozen=True)
class Produced:
    """A value a tool's output carries: where it is, and what it means."""

    path: str  # e.g. "id", "items[].customer_id", "order.product_id"
    name: str  # the field's own name
    key: str  # canonical value name: "<entity>_id" for identifiers, else the field name
    entity: str | None  # entity the record belongs to (for plain fields) or the id points at
    types: frozenset[str]


@dataclass(frozen=True)
class Wanted:
    """A parameter of a tool, and what value it wants."""

    name: str
    key: str
    entity: str | None
    types: frozenset[str]
    required: bool


def _schema_types(schema: JsonSchema | None) -> frozenset[str]:
    """Base JSON types a schema allows (empty = unknown, compatible with anything)."""
    if not isinstance(schema, dict):
        return frozenset()
    t = schema.get("type")
    if isinstance(t, str):
        types = {t}
    elif isinstance(t, list):
        types = {x for x in t if isinstance(x, str)}
    else:
        types = set()
        for alt in schema.get("anyOf", []) + schema.get("oneOf", []):
            types |= _schema_types(alt)
    types.discard("null")
    if "integer" in types:
        types.add("number")
    return frozenset(types)


def _types_compatible(a: frozenset[str], b: frozenset[str]) -> bool:
    return not a or not b or bool(a & b)


def tool_entity(tool: ToolSpec, spec: EnvSpec) -> str | None:
    """The entity a tool works on: its operation's, else the known entity its name ends with or mentions
    (`get_customer_orders` works on orders), else its name without the verb, singular."""
    if tool.operation is not None:
        return tool.operation.entity
    rest = tool.name.lower()
    for prefix in _VERB_PREFIXES:
        if rest.startswith(prefix):
            rest = rest[len(prefix) :]
            break
    tokens = rest.split("_")
    known = {form: e.name for e in spec.entities for form in (e.name, e.table)}
    for i in range(len(tokens)):  # longest token-aligned suffix first
        suffix = "_".join(tokens[i:])
        if suffix in known:
            return known[suffix]
    for size in range(len(tokens), 0, -1):  # else any token-aligned mention, longest first
        for i in range(len(tokens) - size + 1):
            part = "_".join(tokens[i : i + size])
            if part in known:
                return known[part]
    return singular(rest) if rest and rest != tool.name.lower() else None


def _id_key(field: str, entity: str | None, spec: EnvSpec) -> tuple[str, str | None] | None:
    """Canonical `<entity>_id` for an identifier field of a record of `entity`, else None."""
    if field == "id":
        return (f"{entity}_id", entity) if entity else None
    if entity:
        for e in spec.entities:
            if e.name != entity:
                continue
            if field == e.primary_key:
                return f"{entity}_id", entity
            for f in e.fields:
                if f.name == field and f.references:
                    target = f.references.split(".", 1)[0]
                    return f"{target}_id", target
    if field.endswith("_id") and len(field) > 3:
        target = field[:-3]
        return field, target
    return None


def _is_create(tool: ToolSpec) -> bool:
    if tool.operation is not None:
        return tool.operation.kind == "create"
    return tool.name.startswith(("create_", "add_", "new_", "register_"))


def _is_delete(tool: ToolSpec) -> bool:
    if tool.operation is not None:
        return tool.operation.kind == "delete"
    return tool.name.startswith(("delete_", "remove_"))


def produced_values(tool: ToolSpec, spec: EnvSpec) -> list[Produced]:
    """Values in a tool's output schema. A delete returns the id of a record that is gone: nothing usable."""
    if tool.output is None or _is_delete(tool):
        return []
    out: list[Produced] = []
    _walk_output(tool.output, "", tool_entity(tool, spec), spec, out, depth=0)
    return out


def _walk_output(
    schema: JsonSchema, prefix: str, entity: str | None, spec: EnvSpec, out: list[Produced], depth: int
) -> None:
    if depth > 6 or not isinstance(schema, dict):
        return
    if isinstance(schema.get("x-entity"), str):  # the environment builder names each record's entity
        entity = schema["x-entity"]
    if isinstance(schema.get("items"), dict):
        _walk_output(schema["items"], prefix + "[]", entity, spec, out, depth + 1)
        return
    props = schema.get("properties")
    if not isinstance(props, dict):
        return
    for name, sub in props.items():
        path = f"{prefix}.{name}" if prefix else name
        types = _schema_types(sub)
        if types & {"object", "array"} or (isinstance(sub, dict) and ("properties" in sub or "items" in sub)):
            inner = entity if name in ("items", "results", "data", "records") else singular(name)
            _walk_output(sub, path, inner, spec, out, depth + 1)
            continue
        if name in GENERIC_OUTPUTS:
            continue
        ref = sub.get("x-references") if isinstance(sub, dict) else None
        if isinstance(ref, str) and "." in ref:
            target = ref.split(".", 1)[0]
            out.append(Produced(path, name, f"{target}_id", target, types))
            continue
        ident = _id_key(name, entity, spec)
        if ident is not None:
            out.append(Produced(path, name, ident[0], ident[1], types))
        else:
            out.append(Produced(path, name, name, entity, types))


def wanted_values(tool: ToolSpec, spec: EnvSpec) -> list[Wanted]:
    """The parameters of a tool with the value each wants."""
    props = tool.parameters.get("properties") or {}
    required = set(tool.parameters.get("required") or [])
    entity = tool_entity(tool, spec)
    out: list[Wanted] = []
    op = tool.operation
    for name, sub in props.items():
        if name in GENERIC_PARAMS:
            continue
        if op is not None and name == op.batch_param and op.key_field is not None and op.kind != "create":
            # a batch naming rows by a field (`entityNames`, `observations[].entityName`) wants that field's values
            out.append(Wanted(name, op.key_field, entity, frozenset({"string"}), name in required))
            continue
        ident = _id_key(name, entity, spec)
        key, target = ident if ident is not None else (name, entity)
        out.append(Wanted(name, key, target, _schema_types(sub), name in required))
    return out


def _feeds(p: Produced, w: Wanted) -> bool:
    if not _types_compatible(p.types, w.types):
        return False
    if w.key.endswith("_id"):
        # `from_account_id` wants an account id as much as `account_id` does.
        return w.key == p.key or (w.name.endswith("_" + p.key) and p.key.endswith("_id"))
    return w.key == p.key and p.entity is not None and p.entity == w.entity


def _producers(by_key: dict[str, list[tuple[int, int, Produced]]], w: Wanted) -> list[tuple[int, int, Produced]]:
    """The fields that may feed `w` (`_feeds` decides): those with its value name and, for an id, those whose
    id name ends the parameter's name. An index instead of every pair of tools: Okta has 700 tools."""
    found = list(by_key.get(w.key, ()))
    if w.key.endswith("_id"):
        parts = w.name.split("_")
        for i in range(1, len(parts)):
            suffix = "_".join(parts[i:])
            if suffix != w.key and suffix.endswith("_id"):
                found += by_key.get(suffix, ())
    return found


def _needs(tool: ToolSpec, w: Wanted) -> bool:
    """A required parameter needs an existing value, except plain fields of a record being created
    (a new customer's name is new, though copying one is possible: that is a weak use)."""
    return w.required and (w.key.endswith("_id") or not _is_create(tool))


def _shared_names(a: ToolSpec, b: ToolSpec, produced: list[Produced]) -> list[str]:
    names_a = {n for n in (a.parameters.get("properties") or {}) if n not in GENERIC_PARAMS}
    names_a |= {p.name for p in produced}
    return sorted(n for n in (b.parameters.get("properties") or {}) if n in names_a and n not in GENERIC_PARAMS)


def build_tool_graph(spec: EnvSpec) -> nx.DiGraph:
    """The dependency graph of an environment's tools: strong and weak edges with reasons; nodes carry kinds."""
    g = nx.DiGraph(env_id=spec.id)
    produced = {t.name: produced_values(t, spec) for t in spec.tools}
    wanted = {t.name: wanted_values(t, spec) for t in spec.tools}
    for t in spec.tools:
        g.add_node(
            t.name,
            mutates=t.mutates,
            entity=tool_entity(t, spec),
            params=sorted((t.parameters.get("properties") or {}).keys()),
            required=sorted(t.parameters.get("required") or []),
            produces=sorted({p.key for p in produced[t.name]}),
            output_fields=sorted({p.name for p in produced[t.name]}),
        )
    tools = spec.tools
    by_key: dict[str, list[tuple[int, int, Produced]]] = {}  # value name -> (tool index, field index, field)
    for i, a in enumerate(tools):
        for j, p in enumerate(produced[a.name]):
            by_key.setdefault(p.key, []).append((i, j, p))
    pairs: dict[tuple[int, int], list[tuple[int, int, dict[str, Any]]]] = {}
    for bi, b in enumerate(tools):
        for wi, w in enumerate(wanted[b.name]):
            for ai, pj, p in _producers(by_key, w):
                if ai != bi and _feeds(p, w):
                    reason = {"field": p.path, "param": w.name, "value": w.key, "strong": _needs(b, w)}
                    pairs.setdefault((ai, bi), []).append((wi, pj, reason))
    for ai, bi in sorted(pairs):  # the order a scan of every pair would add them in
        a, b = tools[ai], tools[bi]
        reasons = [r for _, _, r in sorted(pairs[ai, bi], key=lambda x: x[:2])]
        kind: EdgeKind = "strong" if any(r["strong"] for r in reasons) else "weak"
        shared = _shared_names(a, b, produced[a.name])
        base = STRONG_WEIGHT if kind == "strong" else WEAK_WEIGHT
        g.add_edge(a.name, b.name, kind=kind, weight=base + NAME_MATCH_BONUS * len(shared), reasons=reasons)
    for name in g.nodes:
        g.nodes[name]["kind"] = _classify(g, name)
    return g


def _classify(g: nx.DiGraph, name: str) -> ToolKind:
    """query: reads only; mutation+query: writes and returns something a later tool can use; mutation: writes only."""
    node = g.nodes[name]
    if not node["mutates"]:
        return "query"
    feeds_downstream = any(d["kind"] in ("strong", "weak") for _, _, d in g.out_edges(name, data=True))
    return "mutation+query" if feeds_downstream else "mutation"


def edge_weight(g: nx.DiGraph, a: str, b: str) -> float:
    """Weight of A -> B: the stored strong/weak weight, else independent plus the name bonus."""
    data = g.get_edge_data(a, b)
    if data is not None:
        return float(data["weight"])
    params_a = set(g.nodes[a]["params"]) | set(g.nodes[a]["output_fields"])
    shared = [n for n in g.nodes[b]["params"] if n in params_a and n not in GENERIC_PARAMS]
    return INDEPENDENT_WEIGHT + NAME_MATCH_BONUS * len(shared)


def edge_kind(g: nx.DiGraph, a: str, b: str) -> EdgeKind:
    data = g.get_edge_data(a, b)
    return data["kind"] if data is not None else "independent"


def strong_producers(g: nx.DiGraph, name: str) -> dict[str, set[str]]:
    """Required parameter of `name` -> tools whose output can supply it."""
    out: dict[str, set[str]] = {}
    for a, _, d in g.in_edges(name, data=True):
        for r in d["reasons"]:
            if r["strong"]:
                out.setdefault(r["param"], set()).add(a)
    return out


def start_tools(g: nx.DiGraph) -> list[str]:
    """Tools a walk may start at: they return data and no other tool must run first."""
    return sorted(
        n
        for n, d in g.nodes(data=True)
        if d["kind"] != "mutation" and not any(e["kind"] == "strong" for _, _, e in g.in_edges(n, data=True))
    )


def _callable_after(g: nx.DiGraph, name: str, visited: set[str]) -> bool:
    """Every required parameter another tool can produce has a producer among the visited tools."""
    return all(producers & visited for producers in strong_producers(g, name).values())


def weighted_walk(g: nx.DiGraph, rng: random.Random, length: int, start: str | None = None) -> list[str]:
    """A chain of up to `length` distinct tools; each step picks a callable next tool with probability
    proportional to the edge weight from the current tool. Stops early when no tool can follow."""
    if length <= 0 or g.number_of_nodes() == 0:
        return []
    if start is None:
        starts = start_tools(g)
        if not starts:
            return []
        start = rng.choice(starts)
    elif start not in g:
        raise KeyError(start)
    near = neighbourhood(g, start).nodes if g.number_of_nodes() > NEIGHBOURHOOD_FROM else g.nodes
    walk = [start]
    visited = {start}
    while len(walk) < length:
        current = walk[-1]
        candidates = sorted(n for n in near if n not in visited and _callable_after(g, n, visited))
        if not candidates:
            break
        weights = [edge_weight(g, current, n) for n in candidates]
        nxt = rng.choices(candidates, weights=weights, k=1)[0]
        walk.append(nxt)
        visited.add(nxt)
    return walk


def neighbourhood(g: nx.DiGraph, start: str, radius: int = NEIGHBOURHOOD_RADIUS) -> nx.DiGraph:
    """The tools within `radius` data-flow edges of `start`, either way: what a walk from it explores, so that
    a step's cost and its chance of reaching a related tool do not shrink as the API grows."""
    near = nx.single_source_shortest_path_length(g.to_undirected(as_view=True), start, cutoff=radius)
    return g.subgraph(near)


def walk_edges(g: nx.DiGraph, walk: list[str]) -> Iterator[tuple[str, str, EdgeKind]]:
    """The consecutive steps of a walk with their edge kinds (for difficulty knobs such as weak-edge share)."""
    for a, b in itertools.pairwise(walk):
        yield a, b, edge_kind(g, a, b)


def graph_to_json(g: nx.DiGraph) -> dict[str, Any]:
    """Node-link JSON (DESIGN.md: tool graphs are stored as node-link JSON)."""
    return nx.node_link_data(g, edges="edges")


def graph_from_json(data: dict[str, Any]) -> nx.DiGraph:
    g = nx.node_link_graph(data, directed=True, multigraph=False, edges="edges")
    return nx.DiGraph(g)
