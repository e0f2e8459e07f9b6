"""Large and tricky OpenAPI documents: shared `$ref` expansion, cycles, budgets, and the real inputs.

The Stripe-like and WorkOS-like documents come from benchmarks/api_shapes.py (the shapes of the real ones, no
public data copied). Okta's full build (about two minutes) is measured by `make bench`, not here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.api_shapes import stripe_like, workos_like
from factory.envs.build import build_env
from factory.topics import load_source
from factory.topics.openapi import MAX_NODES, _Resolver

REAL = Path(__file__).resolve().parents[2].parent / "shared" / "real" / "openapi"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real is not here")


def tree_size(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + sum(tree_size(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(tree_size(v) for v in value)
    return 1


def refs_left(value: Any) -> bool:
    if isinstance(value, dict):
        return "$ref" in value or any(refs_left(v) for v in value.values())
    return isinstance(value, list) and any(refs_left(v) for v in value)


def write(tmp_path: Path, name: str, doc: dict[str, Any]) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def test_stripe_like_document_loads_fast_with_bounded_schemas(tmp_path):
    doc = stripe_like()
    n_ops = sum(len([m for m in item if m != "parameters"]) for item in doc["paths"].values())
    assert n_ops >= 450 and len(doc["components"]["schemas"]) >= 500
    [topic] = load_source(write(tmp_path, "stripe-like.json", doc))
    assert len(topic.tools) == n_ops
    assert sum(t.operation is not None for t in topic.tools) >= n_ops * 0.9
    for tool in topic.tools:
        assert not refs_left(tool.output) and not refs_left(tool.parameters)
        assert tree_size(tool.output) <= 2 * MAX_NODES
    res = next(e for e in topic.entities if e.name == "res000")
    assert res.primary_key == "id" and len(res.fields) >= 10


@pytest.mark.slow
def test_stripe_like_document_builds_and_keeps_most_tools(tmp_path):
    """Build time and peak memory are measured by `make bench` (benchmarks/results/real_inputs.json)."""
    report = build_env(str(write(tmp_path, "stripe-like.json", stripe_like())), tmp_path / "b")
    assert len(report.kept_tools) >= 300


def test_cyclic_schemas_resolve_to_finite_schemas(tmp_path):
    schemas = {
        "Node": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "parent": {"$ref": "#/components/schemas/Node"},
                "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}},
                "owner": {"anyOf": [{"type": "string"}, {"$ref": "#/components/schemas/Owner"}]},
            },
        },
        "Owner": {
            "allOf": [
                {"$ref": "#/components/schemas/Base"},
                {
                    "type": "object",
                    "properties": {"nodes": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}},
                },
            ]
        },
        "Base": {
            "type": "object",
            "properties": {"id": {"type": "string"}, "owner": {"$ref": "#/components/schemas/Owner"}},
        },
    }
    ok = {
        "200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Node"}}}}
    }
    doc = {
        "openapi": "3.0.0",
        "info": {"title": "Cycles", "version": "1"},
        "paths": {
            "/nodes/{id}": {
                "get": {
                    "operationId": "getNode",
                    "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
                    "responses": ok,
                }
            }
        },
        "components": {"schemas": schemas},
    }
    [topic] = load_source(write(tmp_path, "cycles.json", doc))
    out = topic.tools[0].output
    text = json.dumps(out)  # finite: no shared cycle in the value
    assert "$ref" not in text and "recursive reference, not expanded" in text
    assert out["properties"]["parent"]["type"] == "object"
    owner = out["properties"]["owner"]["anyOf"][1]
    assert set(owner["properties"]) == {"id", "owner", "nodes"}  # allOf through a cycle, flattened

    # each referenced schema is expanded once and shared
    resolver = _Resolver(tmp_path / "cycles.json", {(tmp_path / "cycles.json").resolve(): doc})
    a = resolver.inline({"$ref": "#/components/schemas/Owner"}, (tmp_path / "cycles.json").resolve())
    b = resolver.inline({"$ref": "#/components/schemas/Owner"}, (tmp_path / "cycles.json").resolve())
    assert a is b and len(resolver._memo) == 3


def test_budget_cuts_wide_schemas_to_stand_ins(tmp_path):
    # 40 schemas, each with 40 properties referring to the next: far over the node budget when inlined
    schemas = {
        f"S{i}": {
            "type": "object",
            "properties": {f"p{j}": {"$ref": f"#/components/schemas/S{i + 1}"} for j in range(40)},
        }
        for i in range(40)
    }
    schemas["S40"] = {"type": "object", "properties": {f"v{j}": {"type": "string"} for j in range(40)}}
    path = tmp_path / "wide.json"
    resolver = _Resolver(path, {path.resolve(): {"components": {"schemas": schemas}}})
    out = resolver.inline({"$ref": "#/components/schemas/S0"}, path.resolve())
    assert tree_size(out) <= 2 * MAX_NODES
    assert "large schema, not expanded" in json.dumps(out)


def test_workos_like_user_id_next_to_embedded_user_builds(tmp_path):
    src = write(tmp_path, "workos-like.json", workos_like())
    [topic] = load_source(src)
    membership = next(e for e in topic.entities if e.name == "organization_membership")
    [user_id] = [f for f in membership.fields if f.name == "user_id"]
    assert user_id.references == "user.id" and user_id.required
    report = build_env(str(src), tmp_path / "b")
    assert report.kept and "create_organization_membership" in report.kept_tools


def test_boolean_enum_is_not_a_string_enum(tmp_path):
    doc = workos_like()
    doc["components"]["schemas"]["User"]["properties"]["deleted"] = {"type": "boolean", "enum": [True]}
    [topic] = load_source(write(tmp_path, "b.json", doc))
    user = next(e for e in topic.entities if e.name == "user")
    deleted = next(f for f in user.fields if f.name == "deleted")
    assert deleted.type == "boolean" and not deleted.enum


@needs_real
def test_conjur_multi_file_refs_resolve():
    [topic] = load_source(REAL / "conjur" / "spec" / "openapi.yml")
    assert len(topic.tools) == 41
    assert not any(refs_left(t.parameters) or refs_left(t.output) for t in topic.tools)
    # parameters defined in another file come through with their schemas
    assert sum(len(t.parameters.get("properties") or {}) for t in topic.tools) > 41


@needs_real
def test_okta_topic_is_read_whole():
    [topic] = load_source(REAL / "okta-management-minimal.yaml")
    assert len(topic.tools) == 732
    assert sum(t.operation is not None for t in topic.tools) >= 452  # measured before the resolver was shared
    assert len(topic.entities) >= 332


@needs_real
def test_onfido_kept_tools_do_not_go_down(tmp_path):
    report = build_env(str(REAL / "onfido-openapi.json"), tmp_path / "b")
    assert len(report.kept_tools) >= 41  # 41 of 84 when measured before this change
