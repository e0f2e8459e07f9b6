"""Operations from the resource tree of an OpenAPI document's paths, not from tool-name heuristics.

Collections are named by literal runs before a `{param}` (`/groups/rules/{groupRuleId}` is the group rule),
`lifecycle/<verb>` and `<item>/<verb>` act on the item, literals under an item are a sub-collection, a
singleton or a sub-path of the item, and a collection no component describes gets an entity of its own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from factory.envs.interface import contract_args, interface_schema
from factory.topics import load_source
from factory.topics.openapi import paths

REAL = Path(__file__).resolve().parents[2].parent / "shared" / "real" / "openapi"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real is not here")

S = "#/components/schemas/"


def ref(name: str) -> dict[str, str]:
    return {"$ref": S + name}


def ok(schema: dict[str, Any] | None = None) -> dict[str, Any]:
    if schema is None:
        return {"204": {"description": "Done."}}
    return {"200": {"description": "OK.", "content": {"application/json": {"schema": schema}}}}


def body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def param(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


def obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {k: v if isinstance(v, dict) else {"type": v} for k, v in props.items()}}


def load(tmp_path: Path, doc_paths: dict[str, Any], schemas: dict[str, Any]):
    doc = {
        "openapi": "3.0.3",
        "info": {"title": "Directory", "version": "1"},
        "paths": doc_paths,
        "components": {"schemas": schemas},
    }
    p = tmp_path / "directory.json"
    p.write_text(json.dumps(doc))
    [topic] = load_source(p)
    return topic, {t.name: t for t in topic.tools}, {e.name: e for e in topic.entities}


def op(tool) -> tuple[str, str] | None:
    return (tool.operation.kind, tool.operation.entity) if tool.operation else None


def test_segments_and_routes():
    assert paths.segments("/api/v1/groups/rules/{groupRuleId}") == ["groups", "rules", "{groupRuleId}"]
    assert paths.segments("/2.0/users/{u}") == ["users", "{u}"]
    r = paths.route("/api/v1/groups/rules/{groupRuleId}/lifecycle/activate", "post", set())
    assert (r.node.key, r.node.params, r.sub, r.verb) == ("groups/rules", ("groupRuleId",), (), "activate")
    r = paths.route("/secrets/{account}/{kind}/{identifier}", "get", set())
    assert r.node.params == ("account", "kind", "identifier") and not r.sub
    r = paths.route("/apps/{appId}/connections/default/lifecycle/deactivate", "post", set())
    assert (r.sub, r.verb, r.sub_key()) == (("connections", "default"), "deactivate", "apps/{}/connections/default")
    keys = paths.collection_keys(["/api/v1/groups/rules/{id}", "/apps/{a}/grants/{g}", "/users/{u}/{v}"])
    assert keys == {"groups/rules", "apps", "apps/{}/grants", "users"}


def directory_paths() -> dict[str, Any]:
    item = [param("groupRuleId")]
    return {
        "/api/v1/groups": {
            "get": {"operationId": "listGroups", "responses": ok({"type": "array", "items": ref("Group")})}
        },
        "/api/v1/groups/{groupId}": {
            "parameters": [param("groupId")],
            "get": {"operationId": "getGroup", "responses": ok(ref("Group"))},
            "delete": {"operationId": "deleteGroup", "responses": ok()},
        },
        "/api/v1/groups/rules": {
            "get": {"operationId": "listGroupRules", "responses": ok({"type": "array", "items": ref("GroupRule")})},
            "post": {
                "operationId": "createGroupRule",
                "requestBody": body(ref("GroupRule")),
                "responses": ok(ref("GroupRule")),
            },
        },
        "/api/v1/groups/rules/{groupRuleId}": {
            "parameters": item,
            "get": {"operationId": "getGroupRule", "responses": ok(ref("GroupRule"))},
            "delete": {"operationId": "deleteGroupRule", "responses": ok()},
        },
        "/api/v1/groups/rules/{groupRuleId}/lifecycle/activate": {
            "post": {"operationId": "activateGroupRule", "parameters": item, "responses": ok()}
        },
        "/api/v1/groups/rules/{groupRuleId}/lifecycle/deactivate": {
            "post": {"operationId": "deactivateGroupRule", "parameters": item, "responses": ok()}
        },
        "/api/v1/groups/search": {
            "post": {
                "operationId": "searchGroups",
                "requestBody": body(obj(q="string")),
                "responses": ok({"type": "array", "items": ref("Group")}),
            }
        },
        "/api/v1/groups/{groupId}/owners": {
            "parameters": [param("groupId")],
            "get": {"operationId": "listGroupOwners", "responses": ok({"type": "array", "items": ref("GroupOwner")})},
            "post": {
                "operationId": "assignGroupOwner",
                "requestBody": body(ref("GroupOwner")),
                "responses": ok(ref("GroupOwner")),
            },
        },
        "/api/v1/groups/{groupId}/logo": {
            "parameters": [param("groupId")],
            "get": {
                "operationId": "downloadGroupLogo",
                "responses": {
                    "200": {
                        "description": "PNG.",
                        "content": {"image/png": {"schema": {"type": "string", "format": "binary"}}},
                    }
                },
            },
        },
        "/api/v1/groups/{groupId}/settings/default": {
            "parameters": [param("groupId")],
            "get": {"operationId": "getGroupSettings", "responses": ok(ref("GroupSettings"))},
            "put": {
                "operationId": "replaceGroupSettings",
                "requestBody": body(ref("GroupSettings")),
                "responses": ok(ref("GroupSettings")),
            },
        },
        "/api/v1/authenticators": {
            "post": {
                "operationId": "createAuthenticator",
                "requestBody": body(
                    {
                        "oneOf": [ref("PasswordAuthenticator"), ref("PhoneAuthenticator")],
                        "discriminator": {"propertyName": "key"},
                    }
                ),
                "responses": ok(ref("Authenticator")),
            }
        },
        "/api/v1/authenticators/{authenticatorId}": {
            "get": {
                "operationId": "getAuthenticator",
                "parameters": [param("authenticatorId")],
                "responses": ok(ref("Authenticator")),
            }
        },
        "/api/v1/users/{userId}": {
            "get": {"operationId": "getUser", "parameters": [param("userId")], "responses": ok(ref("User"))},
            "delete": {"operationId": "deleteUser", "parameters": [param("userId")], "responses": ok()},
        },
        "/api/v1/groups/{groupId}/users": {
            "get": {
                "operationId": "listGroupUsers",
                "parameters": [param("groupId")],
                "responses": ok({"type": "array", "items": ref("User")}),
            }
        },
        "/api/v1/groups/{groupId}/users/{userId}": {
            "parameters": [param("groupId"), param("userId")],
            "put": {"operationId": "assignUserToGroup", "responses": ok()},
            "delete": {"operationId": "unassignUserFromGroup", "responses": ok()},
        },
        "/api/v1/org/captcha": {
            "get": {"operationId": "getOrgCaptchaSettings", "responses": ok(ref("OrgCaptchaSettings"))},
            "put": {
                "operationId": "replaceOrgCaptchaSettings",
                "requestBody": body(ref("OrgCaptchaSettings")),
                "responses": ok(ref("OrgCaptchaSettings")),
            },
        },
        "/api/v1/secrets/{account}/{kind}/{identifier}": {
            "parameters": [param("account"), param("kind"), param("identifier")],
            "get": {
                "operationId": "getSecret",
                "responses": {
                    "200": {"description": "The value.", "content": {"text/plain": {"schema": {"type": "string"}}}}
                },
            },
        },
    }


def directory_schemas() -> dict[str, Any]:
    return {
        "Group": obj(id="string", name="string"),
        "GroupRule": obj(id="string", name="string", conditions="object"),
        "GroupOwner": obj(id="string", type="string"),
        "GroupSettings": obj(theme="string", locale="string"),
        "User": obj(id="string", login="string"),
        "OrgCaptchaSettings": obj(captcha_id="string", enabled_pages={"type": "array", "items": {"type": "string"}}),
        "Authenticator": {"oneOf": [ref("PasswordAuthenticator"), ref("PhoneAuthenticator")]},
        "PasswordAuthenticator": obj(id="string", key="string", name="string", min_length="integer"),
        "PhoneAuthenticator": obj(id="string", key="string", name="string", channel="string"),
    }


def test_multi_literal_collection_decides_the_table_and_key(tmp_path):
    _, tools, _ = load(tmp_path, directory_paths(), directory_schemas())
    assert op(tools["delete_group_rule"]) == ("delete", "group_rule")  # not a group
    assert op(tools["get_group_rule"]) == ("get", "group_rule")
    assert op(tools["list_group_rules"]) == ("list", "group_rule")
    assert op(tools["create_group_rule"]) == ("create", "group_rule")
    assert op(tools["delete_group"]) == ("delete", "group")
    for name in ("delete_group_rule", "activate_group_rule"):
        params = tools[name].parameters
        assert "group_rule_id" in params["properties"] and params["required"][0] == "group_rule_id"


def test_lifecycle_verbs_are_transitions_with_implied_states(tmp_path):
    _, tools, entities = load(tmp_path, directory_paths(), directory_schemas())
    activate, deactivate = tools["activate_group_rule"].operation, tools["deactivate_group_rule"].operation
    assert (activate.kind, activate.entity, activate.action, activate.to_value) == (
        "action",
        "group_rule",
        "transition",
        "ACTIVE",
    )
    assert deactivate.to_value == "INACTIVE" and "ACTIVE" in deactivate.from_values
    status = {f.name: f for f in entities["group_rule"].fields}["status"]
    assert set(status.enum) >= {"ACTIVE", "INACTIVE"} and "implied" in status.description


def test_post_is_a_search_only_when_documented(tmp_path):
    _, tools, _ = load(tmp_path, directory_paths(), directory_schemas())
    assert op(tools["search_groups"]) == ("search", "group")
    assert op(tools["create_group_rule"]) == ("create", "group_rule")


def test_nested_sub_collection_filters_by_its_parent(tmp_path):
    _, tools, entities = load(tmp_path, directory_paths(), directory_schemas())
    assert op(tools["list_group_owners"]) == ("list", "group_owner")
    assert op(tools["assign_group_owner"]) == ("create", "group_owner")
    assert tools["list_group_owners"].parameters["required"] == ["group_id"]
    owner = {f.name: f for f in entities["group_owner"].fields}
    assert owner["group_id"].references == "group.id"


def test_item_sub_paths_read_the_item_and_singletons_are_rows(tmp_path):
    _, tools, _ = load(tmp_path, directory_paths(), directory_schemas())
    assert op(tools["download_group_logo"]) == ("get", "group")
    assert tools["download_group_logo"].parameters["required"] == ["group_id"]
    assert op(tools["get_group_settings"]) == ("get", "group_settings")
    assert op(tools["replace_group_settings"]) == ("update", "group_settings")
    assert "group_settings_id" in tools["replace_group_settings"].parameters["required"]


def test_union_body_creates_with_the_variants_fields(tmp_path):
    _, tools, entities = load(tmp_path, directory_paths(), directory_schemas())
    assert op(tools["create_authenticator"]) == ("create", "authenticator")
    assert {"key", "name", "min_length", "channel"} <= set(tools["create_authenticator"].parameters["properties"])
    assert {"id", "key", "min_length", "channel"} <= {f.name for f in entities["authenticator"].fields}


def test_collection_without_component_gets_an_entity_from_the_path(tmp_path):
    _, tools, entities = load(tmp_path, directory_paths(), directory_schemas())
    get = tools["get_secret"]
    assert op(get) == ("get", "secret")
    assert get.parameters["required"] == ["account", "kind", "secret_id"]
    secret = {f.name: f for f in entities["secret"].fields}
    assert secret["secret_id"].primary_key and {"account", "kind", "value"} <= set(secret)


def test_writes_on_a_relationship_are_links_not_the_related_rows(tmp_path):
    _, tools, entities = load(tmp_path, directory_paths(), directory_schemas())
    assert op(tools["assign_user_to_group"]) == ("create", "group_user")  # not a replace of the user
    assert tools["assign_user_to_group"].parameters["required"] == ["group_id", "user_id"]
    assert op(tools["list_group_users"]) == ("list", "group_user")
    assert tools["list_group_users"].parameters["required"] == ["group_id"]
    link = entities["group_user"]
    assert {f.name: f.references for f in link.fields if not f.primary_key} == {
        "group_id": "group.id",
        "user_id": "user.id",
    }
    assert [(r.kind, r.fields) for r in link.rules] == [("unique_together", ["group_id", "user_id"])]
    assert "group_id" not in {f.name for f in entities["user"].fields}
    assert op(tools["delete_user"]) == ("delete", "user")
    assert tools["unassign_user_from_group"].operation is None  # names its link by the pair, not by its own key


def test_api_singleton_is_one_row_named_by_default(tmp_path):
    _, tools, entities = load(tmp_path, directory_paths(), directory_schemas())
    settings = entities["org_captcha_settings"]
    assert op(tools["get_org_captcha_settings"]) == ("get", "org_captcha_settings")
    assert op(tools["replace_org_captcha_settings"]) == ("update", "org_captcha_settings")
    key = tools["get_org_captcha_settings"].parameters["properties"]["org_captcha_settings_id"]
    assert key["default"] == f"{settings.id_prefix}0001"
    for name in ("get_org_captcha_settings", "replace_org_captcha_settings"):  # clients are not shown the key
        assert "org_captcha_settings_id" not in interface_schema(tools[name])["properties"], name
        assert isinstance(contract_args(tools[name], {"org_captcha_settings_id": key["default"]}), str)


def share(topic) -> float:
    return sum(t.operation is not None for t in topic.tools) / len(topic.tools)


@needs_real
def test_okta_operations_come_from_paths():
    [topic] = load_source(REAL / "okta-management-minimal.yaml")
    tools = {t.name: t for t in topic.tools}
    assert share(topic) >= 0.9
    assert op(tools["delete_group_rule"]) == ("delete", "group_rule")
    assert op(tools["get_user_type"]) == ("get", "user_type")
    assert op(tools["delete_application"]) == ("delete", "application")
    assert tools["activate_group_rule"].operation.to_value == "ACTIVE"
    for name in ("activate_authorization_server", "activate_identity_provider", "activate_network_zone"):
        operation = tools[name].operation
        assert operation is not None and f"{operation.entity}_id" in tools[name].parameters["required"], name
    for t in topic.tools:
        if t.operation and t.operation.kind in ("get", "update", "delete", "action"):
            key = f"{t.operation.entity}_id"
            assert key in t.parameters.get("required", []) or "default" in t.parameters["properties"][key], t.name


@needs_real
def test_onfido_conjur_and_link_example():
    [onfido] = load_source(REAL / "onfido-openapi.json")
    tools = {t.name: t for t in onfido.tools}
    assert share(onfido) >= 0.9
    assert op(tools["download_document"]) == ("get", "document")
    assert op(tools["find_report"]) == ("get", "report") and op(tools["list_reports"]) == ("list", "report")
    assert tools["complete_task"].operation.kind == "action"
    assert op(tools["generate_sdk_token"]) == ("create", "sdk_token")
    [conjur] = load_source(REAL / "conjur" / "spec" / "openapi.yml")
    assert share(conjur) >= 0.9
    [link] = load_source(REAL / "oai-v3.0-link-example.yaml")
    merge = {t.name: t for t in link.tools}["merge_pull_request"].operation
    assert (merge.kind, merge.entity, merge.action) == ("action", "pullrequest", "transition")


def test_objects_held_by_ref_or_union_are_json_columns_and_prose_defaults_go(tmp_path):
    doc_paths = {
        "/api/v1/groups": {
            "post": {"operationId": "addGroup", "requestBody": body(ref("Group")), "responses": ok(ref("Group"))}
        },
        "/api/v1/groups/{groupId}": {
            "get": {"operationId": "getGroup", "parameters": [param("groupId")], "responses": ok(ref("Group"))}
        },
    }
    priority = {"type": "integer", "default": "Last / Lowest Priority, for example `1`"}
    schemas = {
        "Group": obj(id="string", profile=ref("GroupProfile"), labels=ref("Labels"), priority=priority),
        "GroupProfile": {"anyOf": [ref("OktaProfile"), ref("AdProfile")]},
        "OktaProfile": obj(name="string"),
        "AdProfile": obj(dn="string"),
        "Labels": {"type": "object", "additionalProperties": {"type": "string"}},
    }
    _, tools, entities = load(tmp_path, doc_paths, schemas)
    group = {f.name: f for f in entities["group"].fields}
    assert group["profile"].format == "json" and group["labels"].format == "json"
    assert group["priority"].type == "integer" and group["priority"].format is None
    assert "default" not in tools["add_group"].parameters["properties"]["priority"]


def test_generate_verb_creates_and_free_form_documents_are_read(tmp_path):
    key = {"name": "keyId", "in": "path", "required": True, "schema": {"type": "string"}}
    doc_paths = {
        "/api/v1/apps/{appId}": {
            "get": {"operationId": "getApp", "parameters": [param("appId")], "responses": ok(ref("App"))}
        },
        "/api/v1/apps/{appId}/keys/{keyId}": {
            "get": {"operationId": "getKey", "parameters": [param("appId"), key], "responses": ok(ref("Key"))}
        },
        "/api/v1/apps/{appId}/keys/generate": {
            "post": {"operationId": "generateKey", "parameters": [param("appId")], "responses": ok(ref("Key"))}
        },
        "/.well-known/webauthn": {
            "get": {"operationId": "getWellKnownDocument", "responses": ok({"type": "object", "description": "Doc."})}
        },
    }
    _, tools, entities = load(tmp_path, doc_paths, {"App": obj(id="string"), "Key": obj(id="string", kid="string")})
    assert op(tools["generate_key"]) == ("create", "key")
    assert tools["generate_key"].parameters["required"] == ["app_id"]
    read = tools["get_well_known_document"]
    assert read.operation is not None and read.operation.kind == "get"
    value = {f.name: f for f in entities[read.operation.entity].fields}["value"]
    assert value.format == "json"
