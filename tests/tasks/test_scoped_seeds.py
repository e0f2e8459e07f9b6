"""Seeds of APIs whose calls all name one scope (git's `repo_path`, an owner's `username`): several rows of
each table share a scope, every table draws from the same scopes, and a row takes its parent's scope."""

from factory.envs.entities import infer_entities
from factory.mining.procedural import generate_rows, shared_fields
from factory.models import EntitySpec, FieldSpec
from factory.topics import load_catalog


def _entity(name: str, *fields: FieldSpec) -> EntitySpec:
    return EntitySpec(
        name=name, table=f"{name}s", primary_key="id", fields=[FieldSpec(name="id", primary_key=True), *fields]
    )


REPO = FieldSpec(name="repo_path")
OWNER = _entity("owner", FieldSpec(name="repo_path"), FieldSpec(name="label"))
COMMIT = _entity("commit", REPO, FieldSpec(name="message"), FieldSpec(name="count", type="integer"))
BRANCH = _entity("branch", REPO, FieldSpec(name="owner_id", references="owner.id"))


def test_a_field_every_entity_has_is_shared_and_its_values_repeat():
    assert shared_fields([OWNER, COMMIT, BRANCH]) == ["repo_path"]
    tag = _entity("tag", REPO, FieldSpec(name="title"))
    rows = generate_rows([COMMIT, tag], seed=0)
    paths = {t: [r["repo_path"] for r in table] for t, table in rows.items()}
    for table in paths.values():
        assert 2 <= len(set(table)) <= len(table) // 2, table  # several rows per scope, several scopes
    assert set(paths["commits"]) & set(paths["tags"])  # the tables agree on the scopes
    assert generate_rows([COMMIT, tag], seed=0) == rows  # deterministic


def test_a_row_takes_the_scope_of_the_parent_it_points_at():
    rows = generate_rows([OWNER, BRANCH], seed=1)
    owners = {o["id"]: o["repo_path"] for o in rows["owners"]}
    assert len(set(owners.values())) == len(owners)  # the parent gives each of its rows its own
    assert all(b["repo_path"] == owners[b["owner_id"]] for b in rows["branchs"])


def test_fields_only_some_entities_have_are_not_shared():
    assert shared_fields([COMMIT, _entity("tag", FieldSpec(name="title"))]) == []
    assert shared_fields([COMMIT]) == []


def test_no_catalog_environment_has_a_shared_field():
    """So the catalog's seeds (and tasks) are what they were before scopes were shared."""
    assert [t.id for t in load_catalog() if shared_fields(infer_entities(t)[0])] == []
