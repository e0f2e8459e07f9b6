"""The database schema of an environment, declared once as SQLAlchemy metadata.

Tables come from `EntitySpec`s: primary keys, foreign keys, enums as CHECK constraints, NOT NULL
from required fields, UNIQUE, CHECK (x >= 0) for `non_negative` rules and numeric bounds. The DDL
is compiled for the sqlite dialect with named constraints, so the same entities always give the
same `schema.sql` text (its hash is part of the bundle's content hash).
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite
from sqlalchemy.schema import CreateIndex, CreateTable

from factory.models import EntitySpec, FieldSpec

_TYPES: dict[str, type[sa.types.TypeEngine]] = {
    "string": sa.Text,
    "integer": sa.Integer,
    "number": sa.Float,
    "boolean": sa.Boolean,
    "date": sa.Text,  # ISO 8601 text: compares and sorts correctly, and sqlite3 returns it unchanged
    "datetime": sa.Text,
}


class SchemaError(ValueError):
    """Entities that cannot form a database: unknown FK targets, duplicate tables or columns."""


def table_order(entities: list[EntitySpec], strict: bool = True) -> list[EntitySpec]:
    """Entities with every FK parent before its children (ties keep the given order; self-references ignored).

    A schema needs every parent to exist and no cycle (`strict`, else SchemaError); entity inference
    orders what it has found so far and skips a reference that closes a cycle or names no entity.
    """
    by_name = {e.name: e for e in entities}
    out: list[EntitySpec] = []
    state: dict[str, int] = {}  # 1 = visiting, 2 = done

    def visit(e: EntitySpec) -> None:
        if state.get(e.name) == 2:
            return
        if state.get(e.name) == 1:
            if strict:
                raise SchemaError(f"foreign keys form a cycle through {e.name!r}")
            return
        state[e.name] = 1
        for f in e.fields:
            parent = f.references.split(".", 1)[0] if f.references else None
            if not parent or parent == e.name:
                continue
            if parent in by_name:
                visit(by_name[parent])
            elif strict:
                raise SchemaError(f"{e.name}.{f.name} references unknown entity {parent!r}")
        state[e.name] = 2
        out.append(e)

    for e in entities:
        visit(e)
    return out


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _column(entity: EntitySpec, f: FieldSpec, tables: dict[str, str]) -> sa.Column:
    args: list = [_TYPES[f.type]()]
    if f.references:
        parent, _, col = f.references.partition(".")
        args.append(sa.ForeignKey(f"{tables[parent]}.{col or 'id'}", name=f"fk_{entity.table}_{f.name}"))
    is_pk = f.primary_key or f.name == entity.primary_key
    return sa.Column(
        f.name,
        *args,
        primary_key=is_pk,
        nullable=not (f.required or is_pk),
        unique=f.unique and not is_pk,
    )


def _checks(entity: EntitySpec) -> list[sa.CheckConstraint]:
    """CHECK constraints: enums, booleans, numeric bounds and non_negative rules, in field order."""
    non_negative = {r.field for r in entity.rules if r.kind == "non_negative"}
    checks: list[sa.CheckConstraint] = []
    for f in entity.fields:
        col = f'"{f.name}"'
        name = f"ck_{entity.table}_{f.name}"
        if f.enum:
            values = ", ".join(_quote(v) for v in f.enum)
            checks.append(sa.CheckConstraint(f"{col} IN ({values})", name=f"{name}_enum"))
        if f.type == "boolean":
            checks.append(sa.CheckConstraint(f"{col} IN (0, 1)", name=f"{name}_bool"))
        if f.type not in ("integer", "number"):
            continue
        low = f.minimum
        if f.name in non_negative:
            low = max(low, 0.0) if low is not None else 0.0
            checks.append(sa.CheckConstraint(f"{col} >= 0", name=f"{name}_non_negative"))
            if low == 0.0:
                low = None
        if low is not None:
            checks.append(sa.CheckConstraint(f"{col} >= {_number(low)}", name=f"{name}_min"))
        if f.maximum is not None:
            checks.append(sa.CheckConstraint(f"{col} <= {_number(f.maximum)}", name=f"{name}_max"))
    return checks


def _validate(entities: list[EntitySpec]) -> None:
    tables: set[str] = set()
    for e in entities:
        if e.table in tables:
            raise SchemaError(f"two entities use the table {e.table!r}")
        tables.add(e.table)
        names = [f.name for f in e.fields]
        if len(set(names)) != len(names):
            raise SchemaError(f"{e.name} has duplicate fields")
        if e.primary_key not in names:
            raise SchemaError(f"{e.name} has no primary key field {e.primary_key!r}")


def build_metadata(entities: list[EntitySpec]) -> sa.MetaData:
    """SQLAlchemy tables for the entities, parents first; FK columns are indexed."""
    _validate(entities)
    tables = {e.name: e.table for e in entities}
    metadata = sa.MetaData()
    for e in table_order(entities):
        columns = [_column(e, f, tables) for f in e.fields]
        constraints: list[sa.schema.SchemaItem] = list(_checks(e))
        for r in e.rules:
            if r.kind == "unique_together" and r.fields:
                constraints.append(sa.UniqueConstraint(*r.fields, name=f"uq_{e.table}_{'_'.join(r.fields)}"))
        table = sa.Table(e.table, metadata, *columns, *constraints)
        for f in e.fields:
            if f.references:
                sa.Index(f"ix_{e.table}_{f.name}", table.c[f.name])
    return metadata


def schema_sql(entities: list[EntitySpec]) -> str:
    """`schema.sql`: CREATE TABLE and CREATE INDEX statements for sqlite, parents first."""
    metadata = build_metadata(entities)
    dialect = sqlite.dialect()
    statements: list[str] = []
    for e in table_order(entities):
        table = metadata.tables[e.table]
        statements.append(_tidy(CreateTable(table).compile(dialect=dialect)))
        for index in sorted(table.indexes, key=lambda i: i.name or ""):
            statements.append(_tidy(CreateIndex(index).compile(dialect=dialect)))
    return ";\n\n".join(statements) + ";\n"


def _tidy(compiled: object) -> str:
    return "\n".join(line.rstrip() for line in str(compiled).strip().splitlines())
