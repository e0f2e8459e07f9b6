"""The resource tree of the paths: each collection's entity and each operation's plan on it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from factory.lexicon import DEFAULT_INITIAL_STATE, TRANSITIONS
from factory.models import EntitySpec, FieldSpec, Rule
from factory.naming import plural, snake_case
from factory.topics.openapi import paths
from factory.topics.openapi.fields import _merge_fields, field_spec
from factory.topics.openapi.reader import _Op, _OpenAPIReader
from factory.topics.openapi.schemas import _SCALARS, _main_type, _ref_name, _value_type


@dataclass
class _Plan:
    """What the resource tree says an operation does: its entity, its shape, and how its path params are named.

    shape: "item" (one row, named by `<entity>_id`), "single" (the one row of an API-wide singleton, its key
    optional), "many" (list or create over a collection), "link" (list or create the links of a row to related
    rows), "verb" (a verb on a whole collection: only a transfer between two of its rows is one), or None (no
    operation: a bulk write, an unassignment, which names its link by the linked rows' keys, not its own)."""

    entity: str | None = None
    shape: str | None = None
    verb: str | None = None
    searchy: bool = False
    renames: dict[str, str] = field(default_factory=dict)


_CREATING_VERBS = frozenset({"generate"})  # a POST of `<collection>/<verb>` that adds a row (a new key)


def _value_field(schema: dict[str, Any], read: bool) -> FieldSpec | None:
    """The one column of a row whose schema names no property: a scalar value, or the free-form document a GET
    reads (a `.well-known` file) when it is no typed map, kept as JSON."""
    t, description = _value_type(schema), str(schema.get("description") or "")
    if t in _SCALARS:
        return FieldSpec(name="value", description=description)
    typed_map = isinstance(schema.get("additionalProperties"), dict)  # a map of counts is a report, not a row
    if read and t == "object" and not schema.get("properties") and not typed_map:
        return FieldSpec(name="value", format="json", description=description)
    return None


class _Tree:
    """The paths' resource tree: each collection key's entity, from the components its operations return
    (then its names, then a new entity made from its schemas), and each operation's plan on it."""

    def __init__(self, reader: _OpenAPIReader, ops: list[_Op], entities: dict[str, tuple[str, EntitySpec]]):
        self.reader = reader
        self.entities = entities
        self.by_name = {e: n for n, (e, _) in entities.items()}
        self.collections = paths.collection_keys([o.path for o in ops])
        self.at: dict[str, list[tuple[_Op, bool, list[str]]]] = {}
        for op in ops:
            many, refs = reader._evidence(op)
            self.at.setdefault(paths.shape_key(op.path), []).append((op, many, refs))
        self._resolved: dict[str, str | None] = {}
        self.singletons: set[str] = set()  # entities the API keeps one row of
        self.depth: dict[str, int] = {}  # entity -> params before its shallowest collection
        self.made: dict[str, EntitySpec] = {}
        self.made_at: dict[str, str] = {}  # made entity -> the key it was made for
        self.extra: dict[str, dict[str, FieldSpec]] = {}  # entity -> fields the paths add (parents, states)
        self.links: dict[str, str] = {}  # sub-collection key -> the link entity its PUT of an item makes

    # --- entities of keys -----------------------------------------------------------------

    def _votes(self, keys: list[str], many_only: bool = False) -> Counter[str]:
        votes: Counter[str] = Counter()
        for key in keys:
            for op, many, refs in self.at.get(key, []):
                if op.method == "delete" or (many_only and op.method == "get" and not many):
                    continue
                for r in dict.fromkeys(refs):
                    if r in self.entities:
                        votes[r] += 2 if op.method == "get" else 1
        return votes

    def _item_keys(self, key: str) -> list[str]:
        return [k for k in self.at if k.startswith(key + "/{}") and not k[len(key) + 3 :].replace("/{}", "")]

    def entity_of(self, key: str, node: paths.Node | None, sub: tuple[str, ...], parent: str | None) -> str:
        """The entity of a collection (or singleton) key; a new one when no component and no name fits."""
        if key in self._resolved:
            return self._resolved[key] or ""
        votes = self._votes([key], many_only=key in self.collections) + self._votes(self._item_keys(key))
        from_lits, from_param = paths.name_candidates(node, sub, parent)
        name = None
        if votes:
            named = {c: v for c, v in votes.items() if self.entities[c][0] in (*from_lits, *from_param)}
            pool = named or votes  # a component the path names wins over richer views of it (BrandWithEmbedded)
            name = self.entities[max(pool, key=lambda c: pool[c])][0]
        if name is None:
            name = next((c for c in from_lits if c in self.by_name or c in self.made), None)
        if name is None:
            name = next((c for c in from_param if c in self.by_name), None)
        if name is None and (from_lits or from_param):
            name = self._make(key, [*from_lits, *from_param][0], parent)
        self._resolved[key] = name
        if name and (key in self.at or self._item_keys(key)):
            self.depth[name] = min(self.depth.get(name, key.count("{}")), key.count("{}"))
        return name or ""

    def singleton_of(self, key: str) -> str | None:
        """The entity a sub-path of an item names when it is a resource of its own (its GET or write returns one)."""
        votes = self._votes([key])
        if not votes:
            return None
        return self.entities[votes.most_common(1)[0][0]][0]

    def _make(self, key: str, name: str, parent: str | None) -> str | None:
        """A new entity for a collection no component describes, with the fields its schemas show."""
        if parent and name in self.made and self.made_at[name] != key:
            name = f"{parent}_{name}"
        tables = {spec.table: e for e, spec in self.entities.values()} | {m.table: n for n, m in self.made.items()}
        if name in self.made or plural(name) in tables:
            return tables.get(plural(name), name)
        props: dict[str, Any] = {}
        required: set[str] = set()
        value: FieldSpec | None = None
        for k in [key, *self._item_keys(key)]:
            for op, _, _ in self.at.get(k, []):
                for schema in (self.reader._response_schema(op), self.reader._body_schema(op)[0]):
                    if schema is None:
                        continue
                    many, _ = self.reader._listing(schema, op.base)
                    node, nbase = self.reader.resolver.deref(schema, op.base)
                    if many and isinstance(node, dict) and _main_type(node) == "array":
                        schema, nbase = node.get("items"), nbase
                    p, r = self.reader.resolver.merged_props(schema, nbase)
                    for pk, pv in p.items():
                        props.setdefault(pk, pv)
                    required |= r
                    inlined = self.reader.resolver.inline(schema, op.base)
                    if not p and value is None and isinstance(inlined, dict):
                        value = _value_field(inlined, op.method == "get")
        if not props and value is None and key not in self.collections:
            return None  # no field and no row addressed: a map of counts, a file, an empty answer
        pk = "id" if any(snake_case(k) == "id" for k in props) else f"{name}_id"
        by_entity = {e: c for c, (e, _) in self.entities.items()}
        pks = {c: spec.primary_key for c, (_, spec) in self.entities.items()}
        fields = [
            field_spec(self.reader.resolver, k, v, b, k in required, name, pk, by_entity, pks)
            for k, (v, b) in props.items()
        ]
        fields = [f for f in _merge_fields(fields) if not f.primary_key]
        fields.insert(0, FieldSpec(name=pk, primary_key=True, unique=True, required=True))
        if value is not None:
            fields.append(value)
        desc = f"Rows of /{key} (no component schema describes them; fields from its requests and responses)."
        self.made[name] = EntitySpec(name=name, table=plural(name), fields=fields, primary_key=pk, description=desc)
        self.made_at[name] = key
        return name

    def _add_field(self, entity: str, name: str, references: str | None) -> None:
        self.extra.setdefault(entity, {}).setdefault(
            name, FieldSpec(name=name, references=references, description="A path parameter of its endpoints.")
        )

    # --- plans ----------------------------------------------------------------------------

    def plan(self, op: _Op) -> _Plan:
        """An operation's plan: an item path acts on its row, a collection lists or creates, literals under an
        item are a sub-collection, a singleton of the item, or a part of the item itself."""
        r = paths.route(op.path, op.method, self.collections)
        names: list[str] = []  # the entity of each node of the route
        renames: dict[str, str] = {}
        for i, node in enumerate(r.nodes):
            parent = names[-1] if names else None
            names.append(self.entity_of(node.key, node, (), parent))
            if i < len(r.nodes) - 1 and names[-1]:
                renames[node.params[-1]] = f"{names[-1]}_id"
        searchy = self._searchy(op, r)
        if not r.sub and not r.nodes:
            return self._root(op)
        if not r.sub:
            return self._on_node(op, r, names, renames, searchy)
        key = r.sub_key()
        parent = names[-1] if names else None
        gets = [m for o, m, _ in self.at.get(key, []) if o.method == "get"]
        many = any(gets)
        if not r.nodes and key not in self.collections and not searchy and gets and not many:
            return self._single(op, r, key)
        if not r.nodes and not r.verb and len(r.sub) > 1 and op.method != "get" and not gets:
            head = "/".join(r.sub[:-1])
            heads = [m for o, m, _ in self.at.get(head, []) if o.method == "get"]
            if head not in self.collections and heads and not any(heads):  # a write named under a singleton
                return self._single(op, paths.Route((), r.sub[:-1], snake_case(r.sub[-1])), head)
        if key in self.collections or not r.nodes or many or (searchy and op.method in ("get", "post")):
            entity = self.entity_of(key, None, r.sub, parent)
            if r.node is not None and entity and parent:
                renames[r.node.params[-1]] = f"{parent}_id"
            return self._on_collection(op, r, entity, renames, searchy)
        own = self.singleton_of(key)
        if own and own != parent:
            renames[r.node.params[-1]] = f"{own}_id"
            return _Plan(own, "item", r.verb, searchy, self._scoped(own, r, renames, key=r.node.params[-1]))
        if not parent:
            return _Plan()
        renames[r.node.params[-1]] = f"{parent}_id"
        if op.method == "delete":
            return _Plan()  # removes a part of the row (a logo, a token set), not the row
        verb = r.verb or (None if op.method == "get" else "update")
        return _Plan(parent, "item", verb, searchy, self._scoped(parent, r, renames, key=r.node.params[-1]))

    def _root(self, op: _Op) -> _Plan:
        """The API's root (`GET /`): a listing of the component it returns, when that is an entity."""
        name = _ref_name(self.reader._response_schema(op)) if op.method == "get" else None
        if name not in self.entities:
            return _Plan()
        return _Plan(self.entities[name][0], "many")

    def _single(self, op: _Op, r: paths.Route, key: str) -> _Plan:
        """A singleton of the whole API (`/org/captcha`): one row, read, replaced or deleted without a path key."""
        entity = self.entity_of(key, None, r.sub, None)
        if not entity:
            return _Plan()
        self.singletons.add(entity)
        verb = r.verb or ("update" if op.method == "post" else None)
        return _Plan(entity, "single", verb, self._searchy(op, r), {})

    def prepare(self, ops: list[_Op]) -> None:
        """Resolve every collection of every path first, so that each entity's home (its shallowest collection)
        is known before a nested path is read as a relationship to it."""
        for op in ops:
            parent: str | None = None
            for node in paths.route(op.path, op.method, self.collections).nodes:
                parent = self.entity_of(node.key, node, (), parent) or None
        for op in ops:
            r = paths.route(op.path, op.method, self.collections)
            if op.method == "put" and len(r.nodes) > 1 and not r.sub and not r.verb:
                self._link(r)

    def _related(self, entity: str, key: str) -> bool:
        """Whether a nested collection lists rows that live in a shallower collection (a group's users): a write
        on it (un)assigns a row rather than creating, replacing or deleting one."""
        return self.depth.get(entity, 0) < key.count("{}")

    def _link(self, r: paths.Route) -> None:
        """A PUT of a related row under another one (`PUT /groups/{g}/users/{u}`) links the two: rows of a new
        entity (`group_user`) holding a key of each, one per pair, which the sub-collection's GET lists."""
        node, parent = r.nodes[-1], self._resolved.get(r.nodes[-2].key)
        entity = self._resolved.get(node.key)
        if not entity or not parent or entity == parent or not self._related(entity, node.key):
            return
        name = f"{parent}_{entity}"
        taken = {spec.table for _, spec in self.entities.values()} | {m.table for m in self.made.values()}
        if self.links.get(node.key) == name or plural(name) in taken:
            return
        desc = f"Links of a {parent.replace('_', ' ')} to a {entity.replace('_', ' ')} (PUT and GET of /{node.key})."
        pk = FieldSpec(name="id", primary_key=True, unique=True, required=True)
        self.made[name] = EntitySpec(name=name, table=plural(name), fields=[pk], description=desc, id_prefix=f"{name}_")
        self.made_at[name] = node.key
        self.links[node.key] = name

    def _on_link(self, r: paths.Route, names: list[str], renames: dict[str, str]) -> _Plan:
        """The plan on a link entity: its path params are its fields (keys of the linked rows), unique together."""
        join = self.links[r.nodes[-1].key]
        for node, name in zip(r.nodes, names, strict=True):
            if name:
                renames[node.params[-1]] = f"{name}_id"
        scoped = self._scoped(join, r, renames, key=None)
        columns = list(dict.fromkeys(scoped.values()))
        spec = self.made[join]
        if r.nodes[-1].params and len(columns) > 1 and not spec.rules:  # a PUT names a whole pair
            self.made[join] = spec.model_copy(update={"rules": [Rule(kind="unique_together", fields=columns)]})
        return _Plan(join, "link", None, False, scoped)

    def _on_node(self, op: _Op, r: paths.Route, names: list[str], renames: dict[str, str], searchy: bool) -> _Plan:
        """A path ending in an item (`/xs/{id}`, `/xs/{id}/lifecycle/activate`)."""
        entity, node = names[-1], r.nodes[-1]
        if not entity:
            return _Plan()
        many = any(m for o, m, _ in self.at.get(paths.shape_key(op.path), []) if o.method == "get")
        if many and not r.verb:
            if op.method not in ("get", "post"):
                return _Plan()
            if len(r.nodes) > 1 and names[-2]:
                renames[r.nodes[-2].params[-1]] = f"{names[-2]}_id"
            return _Plan(entity, "many", None, searchy, self._scoped(entity, r, renames, key=None))
        if op.method != "get" and not r.verb and self._related(entity, node.key):
            return self._on_link(r, names, renames) if op.method == "put" and node.key in self.links else _Plan()
        renames[node.params[-1]] = f"{entity}_id"
        return _Plan(entity, "item", r.verb, searchy, self._scoped(entity, r, renames, key=node.params[-1]))

    def _on_collection(self, op: _Op, r: paths.Route, entity: str, renames: dict[str, str], searchy: bool) -> _Plan:
        if not entity:
            return _Plan()
        key = paths.shape_key(op.path)
        if op.method == "get" and not r.verb and not searchy and key in self.links and r.node is not None:
            names = [self._resolved.get(n.key) or "" for n in r.nodes]
            return self._on_link(paths.Route((*r.nodes, paths.Node(key, r.sub, ())), (), None), [*names, ""], renames)
        if r.verb in _CREATING_VERBS and op.method == "post" and not searchy:
            return _Plan(entity, "many", None, searchy, self._scoped(entity, r, renames, key=None))
        if r.verb and not searchy:
            return _Plan(entity, "verb", r.verb, searchy, self._scoped(entity, r, renames, key=None))
        if op.method != "get" and not searchy and self._related(entity, paths.shape_key(op.path)):
            return _Plan()
        return _Plan(entity, "many", None, searchy, self._scoped(entity, r, renames, key=None))

    def _scoped(self, entity: str, r: paths.Route, renames: dict[str, str], key: str | None) -> dict[str, str]:
        """Renames for the path params, one name each (the key's first), each one not the key becoming a field
        of the entity (a parent reference, a scope such as an account)."""
        out = {key: renames[key]} if key in renames else {}
        used = set(out.values())
        for node in r.nodes:
            for p in node.params:
                if p == key:
                    continue
                name = renames.get(p, snake_case(p))
                if name in used:
                    name = snake_case(p)
                n = 2
                while name in used:
                    name, n = f"{snake_case(p)}_{n}", n + 1
                used.add(name)
                out[p] = name
                ref = name[:-3] if name.endswith("_id") and name[:-3] in self._names() else None
                self._add_field(entity, name, f"{ref}.{self._pk(ref)}" if ref and ref != entity else None)
        return out

    def _names(self) -> set[str]:
        return set(self.by_name) | set(self.made)

    def _pk(self, entity: str) -> str:
        if entity in self.made:
            return self.made[entity].primary_key
        return self.entities[self.by_name[entity]][1].primary_key

    def _searchy(self, op: _Op, r: paths.Route) -> bool:
        """A documented search: a `q`/`query`/`search` parameter, or a path or verb saying search."""
        names = {snake_case(str(p.get("name"))) for p in op.params}
        words = [snake_case(w) for w in (*r.sub, r.verb or "", str(op.op.get("operationId") or ""))]
        return bool(names & {"q", "query", "search"}) or any("search" in w for w in words)

    def states(self, plans: list[_Plan], entities: dict[str, EntitySpec]) -> None:
        """Entities acted on by lifecycle verbs but with no enum status get the states those verbs imply."""
        verbs: dict[str, list[str]] = {}
        for p in plans:
            if p.entity and p.verb in TRANSITIONS and TRANSITIONS[p.verb][0]:
                verbs.setdefault(p.entity, []).append(p.verb)
        for entity, vs in verbs.items():
            spec = entities.get(entity)
            if spec is None or any(f.enum for f in spec.fields if f.name in ("status", "state")):
                continue
            states = [TRANSITIONS[v][0][0] for v in vs]
            for v in vs:
                sources = TRANSITIONS[v][1]
                states.append(sources[0] if sources else DEFAULT_INITIAL_STATE)
            enum = list(dict.fromkeys(s.upper() for s in states))
            desc = f"State implied by the {', '.join(sorted(set(vs)))} endpoints (the document gives no status enum)."
            old = next((f for f in spec.fields if f.name == "status"), None)
            status = (old or FieldSpec(name="status")).model_copy(
                update={"enum": enum, "type": "string", "format": None, "description": desc}
            )
            fields = [status if f.name == "status" else f for f in spec.fields]
            entities[entity] = spec.model_copy(update={"fields": fields if old else [*fields, status]})
