"""Documents shaped like large public APIs, generated (no public data copied), for tests and benchmarks.

`stripe_like`: hundreds of resources whose fields are expandable (`anyOf` of an id string and a `$ref` to the
resource), list envelopes, nested objects through `allOf` and `items`, cycles everywhere, ~500 operations with
form bodies. `workos_like`: a `user_id` string next to an embedded `user` object, a common pattern.
"""

from __future__ import annotations

import random
from typing import Any


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _ok(schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "200": {"description": "Successful response.", "content": {"application/json": {"schema": schema}}},
        "default": {"description": "Error response.", "content": {"application/json": {"schema": _ref("error")}}},
    }


def stripe_like(resources: int = 180, seed: int = 0) -> dict[str, Any]:
    """A document of `resources` cyclically linked resources, sub-objects and ~2 operations per resource."""
    rng = random.Random(seed)
    names = [f"res{i:03d}" for i in range(resources)]
    schemas: dict[str, Any] = {
        "error": {
            "type": "object",
            "properties": {"error": {"type": "object", "properties": {"message": {"type": "string"}}}},
        }
    }
    for i, name in enumerate(names):
        others = rng.sample(names, 8)
        props: dict[str, Any] = {
            "id": {"type": "string", "maxLength": 5000},
            "object": {"type": "string", "enum": [name]},
            "created": {"type": "integer", "format": "unix-time"},
            "livemode": {"type": "boolean"},
            "amount": {"type": "integer"},
            "status": {"type": "string", "enum": ["pending", "succeeded", "failed", "canceled"]},
            "metadata": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 500}},
        }
        for o in others[:5]:  # expandable fields: an id or the whole object
            props[o] = {
                "anyOf": [{"type": "string", "maxLength": 5000}, _ref(o), _ref(f"deleted_{o}")],
                "nullable": True,
                "x-expandable": True,
                "x-expansionResources": {"oneOf": [_ref(o)]},
            }
        props["details"] = {"anyOf": [_ref(f"{name}_details")], "nullable": True}
        props["items"] = {
            "type": "object",
            "required": ["data", "has_more", "object", "url"],
            "properties": {
                "data": {"type": "array", "items": _ref(others[5])},
                "has_more": {"type": "boolean"},
                "object": {"type": "string", "enum": ["list"]},
                "url": {"type": "string"},
            },
        }
        schemas[name] = {
            "type": "object",
            "description": f"Resource {name}.",
            "required": ["id", "object", "created"],
            "properties": props,
            "x-resourceId": name,
            "x-expandableFields": others[:5],
        }
        schemas[f"deleted_{name}"] = {
            "type": "object",
            "properties": {"id": {"type": "string"}, "deleted": {"type": "boolean", "enum": [True]}},
        }
        schemas[f"{name}_details"] = {
            "allOf": [
                _ref(f"{names[(i + 1) % resources]}_details") if i % 3 else {"type": "object"},
                {
                    "type": "object",
                    "properties": {
                        "owner": {"anyOf": [{"type": "string"}, _ref(others[6])]},
                        "history": {"type": "array", "items": _ref(others[7])},
                        "address": {"type": "object", "properties": {"line1": {"type": "string"}}},
                    },
                },
            ]
        }
    paths: dict[str, Any] = {}
    for name in names:
        form = {
            "type": "object",
            "properties": {
                "amount": {"type": "integer"},
                "metadata": {"anyOf": [{"type": "object", "additionalProperties": {"type": "string"}}, {"enum": [""]}]},
                "expand": {"type": "array", "items": {"type": "string"}},
            },
        }
        body = {"content": {"application/x-www-form-urlencoded": {"schema": form}}, "required": False}
        listing = {
            "type": "object",
            "properties": {
                "data": {"type": "array", "items": _ref(name)},
                "has_more": {"type": "boolean"},
                "object": {"type": "string", "enum": ["list"]},
                "url": {"type": "string"},
            },
        }
        paths[f"/v1/{name}s"] = {
            "get": {
                "operationId": f"Get{name}s",
                "parameters": [{"name": "limit", "in": "query", "schema": {"type": "integer"}}],
                "responses": _ok(listing),
            },
        }
        paths[f"/v1/{name}s/{{{name}}}"] = {
            "parameters": [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}],
            "get": {"operationId": f"Get{name}", "responses": _ok(_ref(name))},
        }
        if int(name[3:]) % 2 == 0:
            paths[f"/v1/{name}s"]["post"] = {
                "operationId": f"Post{name}s",
                "requestBody": body,
                "responses": _ok(_ref(name)),
            }
        if int(name[3:]) % 4 == 1:
            paths[f"/v1/{name}s/{{{name}}}/cancel"] = {
                "parameters": [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}],
                "post": {"operationId": f"Post{name}Cancel", "requestBody": body, "responses": _ok(_ref(name))},
            }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Stripe-like Payments", "version": "1"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def workos_like() -> dict[str, Any]:
    """Users and organization memberships; a membership has a `user_id` and an embedded `user`."""

    def get(schema: dict[str, Any], params: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        op: dict[str, Any] = {"responses": _ok(schema)}
        if params:
            op["parameters"] = params
        return op

    path_id = [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}]

    def body(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
        schema = {"type": "object", "required": required, "properties": props}
        return {"required": True, "content": {"application/json": {"schema": schema}}}

    def listing(name: str) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"data": {"type": "array", "items": _ref(name)}, "list_metadata": {"type": "object"}},
        }

    return {
        "openapi": "3.0.0",
        "info": {"title": "WorkOS-like Users", "version": "1"},
        "paths": {
            "/user_management/users": {
                "get": {"operationId": "listUsers", **get(listing("User"))},
                "post": {
                    "operationId": "createUser",
                    "requestBody": body({"email": {"type": "string"}, "first_name": {"type": "string"}}, ["email"]),
                    "responses": _ok(_ref("User")),
                },
            },
            "/user_management/users/{id}": {"get": {"operationId": "getUser", **get(_ref("User"), path_id)}},
            "/user_management/organization_memberships": {
                "get": {"operationId": "listOrganizationMemberships", **get(listing("OrganizationMembership"))},
                "post": {
                    "operationId": "createOrganizationMembership",
                    "requestBody": body(
                        {"user_id": {"type": "string"}, "organization_id": {"type": "string"}},
                        ["user_id", "organization_id"],
                    ),
                    "responses": _ok(_ref("OrganizationMembership")),
                },
            },
            "/user_management/organization_memberships/{id}": {
                "get": {"operationId": "getOrganizationMembership", **get(_ref("OrganizationMembership"), path_id)},
                "delete": {
                    "operationId": "deleteOrganizationMembership",
                    "parameters": path_id,
                    "responses": {"204": {"description": "Deleted."}},
                },
            },
        },
        "components": {
            "schemas": {
                "error": {"type": "object", "properties": {"message": {"type": "string"}}},
                "User": {
                    "type": "object",
                    "required": ["object", "id", "email"],
                    "properties": {
                        "object": {"type": "string", "enum": ["user"]},
                        "id": {"type": "string"},
                        "email": {"type": "string"},
                        "first_name": {"type": "string", "nullable": True},
                        "created_at": {"type": "string", "format": "date-time"},
                    },
                },
                "OrganizationMembership": {
                    "type": "object",
                    "required": ["object", "id", "user_id", "organization_id", "status"],
                    "properties": {
                        "object": {"type": "string", "enum": ["organization_membership"]},
                        "id": {"type": "string"},
                        "user_id": {"type": "string"},
                        "organization_id": {"type": "string"},
                        "user": _ref("User"),
                        "status": {"type": "string", "enum": ["active", "inactive", "pending"]},
                        "created_at": {"type": "string", "format": "date-time"},
                    },
                },
            }
        },
    }


# --- tests ------------------------------------------------------------------------------------
