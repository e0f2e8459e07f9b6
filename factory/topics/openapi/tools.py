"""The tools of a read document: parameters, output schema, operation and a unique name for each operation."""

from __future__ import annotations

from factory.envs.interface import declared_names
from factory.models import EntitySpec, ToolOperation, ToolSpec
from factory.naming import plural, snake_case
from factory.topics.openapi.operations import _operation, _single_key
from factory.topics.openapi.reader import _Op, _OpenAPIReader
from factory.topics.openapi.schemas import _snake_properties
from factory.topics.openapi.tree import _Plan


def tools(
    reader: _OpenAPIReader, ops: list[_Op], plans: list[_Plan], entities: dict[str, EntitySpec]
) -> list[ToolSpec]:
    tools: list[ToolSpec] = []
    used: set[str] = set()
    for op, plan in zip(ops, plans, strict=True):
        entity = entities.get(plan.entity or "")
        params, declared = reader._parameters(op, plan.renames, set(reader._components))
        if plan.shape == "single" and entity is not None:
            params = _single_key(params, entity)
            declared[f"{entity.name}_id"] = ""  # the document names no key: its optional default is not shown
        operation = _operation(op, plan, entity, params)
        segments = [s for s in op.path.split("/") if s]
        name = snake_case(op.op["operationId"]) if op.op.get("operationId") else _derived_name(op, segments, operation)
        base_name, n = name, 2
        while name in used:
            name, n = f"{base_name}_{n}", n + 1
        used.add(name)
        summary = op.op.get("summary") or ""
        detail = op.op.get("description") or ""
        description = " ".join(x.strip().rstrip(".") + "." for x in (summary, detail) if x and x.strip())
        output = reader._response_schema(op)
        tools.append(
            ToolSpec(
                name=name,
                description=description or f"{op.method.upper()} {op.path}",
                parameters=params,
                output=_snake_properties(reader.resolver.inline(output, op.base)) if isinstance(output, dict) else None,
                mutates=op.method != "get",
                operation=operation,
                declared_names=declared_names(params, declared),
            )
        )
    return tools


def _derived_name(op: _Op, segments: list[str], operation: ToolOperation | None) -> str:
    if operation is not None:
        if operation.kind in ("list", "search"):
            return f"{operation.kind}_{plural(operation.entity)}"
        if operation.kind == "action":
            return f"{snake_case(segments[-1])}_{operation.entity}"
        if operation.kind == "aggregate":
            return f"{plural(operation.entity)}_summary"
        return f"{operation.kind}_{operation.entity}"
    words = [snake_case(s.strip("{}")) for s in segments]
    return "_".join([op.method, *[w for w in words if w]])
