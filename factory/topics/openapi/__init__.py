"""OpenAPI 3.0 / 3.1 documents -> a topic with typed entities and tools whose operations are known.

Component schemas that are resources (they have an id, or an endpoint returns them) become
EntitySpecs; each operation becomes a tool named from its operationId (snake_case) or from its
method and path, with path, query and body parameters merged into one JSON schema, and a
ToolOperation read from the method and the operation's place in the resource tree of the paths
(`paths.py`): the collection's entity is the component its endpoints return, else the one its
literals or item parameter name, else an entity made from its schemas.

Modules: `refs` resolves `$ref`s, `schemas` reads plain schemas, `fields` turns properties into columns,
`reader` reads operations, components and parameters, `paths` and `tree` place each operation in the
resource tree, `operations` turns plans into ToolOperations, `tools` assembles the ToolSpecs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from factory.models import Topic
from factory.naming import slugify
from factory.topics.documents import SourceError
from factory.topics.openapi.fields import with_parameter_patterns
from factory.topics.openapi.operations import _acyclic, _created_fields
from factory.topics.openapi.reader import _OpenAPIReader
from factory.topics.openapi.refs import MAX_NODES, _Resolver
from factory.topics.openapi.tools import tools as build_tools
from factory.topics.openapi.tree import _Tree

__all__ = ["MAX_NODES", "_Resolver", "topics_from_openapi"]


def topics_from_openapi(doc: Any, path: str | Path) -> list[Topic]:
    """One topic per OpenAPI document."""
    p = Path(path)
    if not isinstance(doc, dict):
        raise SourceError(p, "an OpenAPI document must be an object")
    reader = _OpenAPIReader(doc, p)
    reader.check()
    ops = reader.operations()
    components = reader.entities(ops)
    reader._components = set(components)
    tree = _Tree(reader, ops, components)
    tree.prepare(ops)
    plans = [tree.plan(op) for op in ops]
    entities = {e: spec for e, spec in components.values()}
    entities.update({n: spec for n, spec in tree.made.items() if n not in entities})
    for name, extra in tree.extra.items():
        spec = entities.get(name)
        if spec is not None:
            have = {f.name for f in spec.fields}
            added = [f for n, f in extra.items() if n not in have]
            entities[name] = spec.model_copy(update={"fields": [*spec.fields, *added]})
    tree.states(plans, entities)
    for op, plan in zip(ops, plans, strict=True):
        if plan.shape == "many" and op.method == "post" and not plan.searchy and plan.entity in entities:
            params = reader._parameters(op, plan.renames, reader._components)[0]["properties"]
            entities[plan.entity] = _created_fields(entities[plan.entity], params)
    for name in tree.singletons & set(entities):
        entities[name] = entities[name].model_copy(update={"id_prefix": f"{name}_"})
    entities = _acyclic(entities)
    tools = build_tools(reader, ops, plans, entities)
    entities = with_parameter_patterns(entities, tools)
    info = doc["info"]
    title = str(info["title"])
    return [
        Topic(
            id=slugify(title),
            title=title,
            description=str(info.get("description") or info.get("summary") or title).strip(),
            source="openapi",
            tools=tools,
            entities=entities,
            origin=str(path),
        )
    ]
