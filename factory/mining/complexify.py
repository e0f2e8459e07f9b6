"""Complexification: a harder version of an environment, with lineage to the one it came from.

Three moves, chosen by seed: more rows (listing needs more pages), a related entity (a new table
referencing an existing one, with its own tools), or a constraint (a uniqueness or non-negativity
rule the tools must enforce). The new version goes through the same build and gate as any
environment; the old bundle is left untouched.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Literal

from factory import naming
from factory.envs.build import assemble_bundle
from factory.envs.bundle import Bundle
from factory.mining.datasets import draft_environment
from factory.models import EntitySpec, EnvSpec, FieldSpec, GateReport, Lineage, Rule, ToolOperation, ToolSpec, Topic
from factory.pipeline.code_versions import cached_code_version
from factory.store import hash_value

Move = Literal["rows", "entity", "constraint"]
MOVES: tuple[Move, ...] = ("rows", "entity", "constraint")


class ComplexifyError(ValueError):
    """The bundle cannot be made harder by the chosen move."""


def complexify(bundle_path: Path, *, seed: int = 0, out: Path | None = None) -> tuple[Path, GateReport]:
    """Write a complexified version of the bundle (default `<bundle>-v<N>`) and gate it."""
    bundle = Bundle.open(bundle_path)
    spec = bundle.spec
    rng = random.Random(seed)
    moves = list(MOVES)
    rng.shuffle(moves)
    for move in moves:
        changed = _apply(move, spec, rng)
        if changed is not None:
            break
    else:
        raise ComplexifyError(f"{bundle.path}: no move applies (rows, entity, constraint)")
    new_spec, description = changed
    target = Path(out) if out else bundle.path.with_name(f"{bundle.path.name.split('-v')[0]}-v{spec.version + 1}")
    lineage = Lineage(
        stage="complexify",
        code_version=cached_code_version(__name__),
        inputs={"bundle": bundle.content_hash, "seed": hash_value(seed)},
    )
    topic = Topic(
        id=spec.topic_id,
        title=spec.title,
        description=spec.description,
        tools=new_spec.tools,
        entities=new_spec.entities,
    )
    draft, rows = draft_environment(
        topic, seed=spec.seed, backend=spec.backend, taxonomy=spec.taxonomy, lineage=lineage, scale=new_spec.scale
    )
    draft = draft.model_copy(
        update={
            "id": spec.id,
            "version": spec.version + 1,
            "parent": bundle.content_hash,
            "description": f"{spec.description} ({description})",
        }
    )
    return target, assemble_bundle(draft, rows, target)


def _apply(move: Move, spec: EnvSpec, rng: random.Random) -> tuple[EnvSpec, str] | None:
    if move == "rows":
        scale = spec.scale * 2
        return spec.model_copy(update={"scale": scale}), f"rows x{scale:g}"
    if move == "entity":
        return _add_related_entity(spec, rng)
    return _add_constraint(spec, rng)


def _add_related_entity(spec: EnvSpec, rng: random.Random) -> tuple[EnvSpec, str] | None:
    """A note-like child table of an existing entity, with list/get/create/delete tools."""
    names = {e.name for e in spec.entities}
    parents = [e for e in spec.entities if f"{e.name}_note" not in names]
    if not parents:
        return None
    parent = rng.choice(parents)
    child = f"{parent.name}_note"
    key = f"{parent.name}_id"
    entity = EntitySpec(
        name=child,
        table=naming.plural(child),
        primary_key="id",
        id_prefix="note_",
        description=f"Notes attached to a {parent.name.replace('_', ' ')}.",
        fields=[
            FieldSpec(name="id", type="string", primary_key=True, required=True),
            FieldSpec(name=key, type="string", required=True, references=f"{parent.name}.{parent.primary_key}"),
            FieldSpec(name="body", type="string", required=True, description="The note's text."),
            FieldSpec(name="author", type="string", format="name"),
        ],
    )
    label = child.replace("_", " ")
    plural = naming.plural(child)
    id_param = {f"{child}_id": {"type": "string", "description": f"The {label}'s id."}}
    fields = {
        key: {"type": "string", "description": f"The {parent.name.replace('_', ' ')} the note is about."},
        "body": {"type": "string", "description": "The note's text."},
        "author": {"type": "string", "description": "Who wrote it."},
    }
    tools = [
        ToolSpec(
            name=f"list_{plural}",
            description=f"List {label}s, optionally for one {parent.name.replace('_', ' ')}.",
            parameters=_schema({key: fields[key], "limit": {"type": "integer"}, "offset": {"type": "integer"}}, []),
            operation=ToolOperation(kind="list", entity=child),
        ),
        ToolSpec(
            name=f"get_{child}",
            description=f"Get one {label} by id.",
            parameters=_schema(id_param, [f"{child}_id"]),
            operation=ToolOperation(kind="get", entity=child),
        ),
        ToolSpec(
            name=f"create_{child}",
            description=f"Attach a note to a {parent.name.replace('_', ' ')}.",
            parameters=_schema(fields, [key, "body"]),
            mutates=True,
            operation=ToolOperation(kind="create", entity=child),
        ),
        ToolSpec(
            name=f"delete_{child}",
            description=f"Delete a {label}.",
            parameters=_schema(id_param, [f"{child}_id"]),
            mutates=True,
            operation=ToolOperation(kind="delete", entity=child),
        ),
    ]
    updated = spec.model_copy(update={"entities": [*spec.entities, entity], "tools": [*spec.tools, *tools]})
    return updated, f"new entity {child} related to {parent.name}"


def _add_constraint(spec: EnvSpec, rng: random.Random) -> tuple[EnvSpec, str] | None:
    """Make a plain number non-negative, or a plain text field unique."""
    options: list[tuple[str, str]] = []
    for e in spec.entities:
        guarded = {r.field for r in e.rules if r.kind == "non_negative"}
        for f in e.fields:
            if f.primary_key or f.references or f.enum:
                continue
            if (f.type in ("integer", "number") and f.name not in guarded) or (
                f.type == "string" and not f.unique and f.format in ("email", "code", "sku")
            ):
                options.append((e.name, f.name))
    if not options:
        return None
    entity_name, field_name = rng.choice(options)
    entities = []
    what = ""
    for e in spec.entities:
        if e.name != entity_name:
            entities.append(e)
            continue
        field = next(f for f in e.fields if f.name == field_name)
        if field.type == "string":
            fields = [f.model_copy(update={"unique": True}) if f.name == field_name else f for f in e.fields]
            entities.append(e.model_copy(update={"fields": fields}))
            what = f"{e.name}.{field_name} must be unique"
        else:
            entities.append(e.model_copy(update={"rules": [*e.rules, Rule(kind="non_negative", field=field_name)]}))
            what = f"{e.name}.{field_name} may not go below zero"
    return spec.model_copy(update={"entities": entities}), what


def _schema(props: dict, required: list[str]) -> dict:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}
