"""Task synthesis on environments built from real inputs (OpenAPI shapes, MCP tool lists), whose listings may
not page, need a parent's id, or return one page only: both task kinds still come out, questions about a
one-page listing say which rows they mean, walks on a large tool graph stay near their start, and an
environment too thin for tasks says how many attempts were made and why none was kept."""

import json
import random
import re
from collections import Counter
from pathlib import Path

import networkx as nx
import pytest

from benchmarks.api_shapes import workos_like
from factory.envs.build import build_env
from factory.envs.bundle import Bundle
from factory.envs.entities.tools import UNAPPLIED_NOTE
from factory.envs.runtime import Environment
from factory.graphs import NEIGHBOURHOOD_FROM, NEIGHBOURHOOD_RADIUS, weighted_walk
from factory.models import ToolCall
from factory.tasks.difficulty import knobs_for
from factory.tasks.filter import judge
from factory.tasks.synthesize import nothing_kept, synthesize_tasks
from factory.tasks.walks import GraphTaskSynthesizer
from factory.verify.scoring import environment_session_factory, replay_calls

REAL = Path(__file__).resolve().parents[2].parent / "shared" / "real"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real is not here")


@pytest.fixture(scope="module")
def workos(tmp_path_factory) -> Path:
    """The workos-like shape: listings that take no argument (none declares paging, so each answers every row)."""
    root = tmp_path_factory.mktemp("workos")
    source = root / "workos_like.json"
    source.write_text(json.dumps(workos_like()))
    report = build_env(str(source), root / "env")
    assert report.kept, report.reasons
    return root / "env"


@pytest.mark.slow
def test_one_page_listings_give_both_kinds_of_task(workos: Path, monkeypatch):
    monkeypatch.delenv("FACTORY_DIFFICULTY", raising=False)
    result = synthesize_tasks(workos, n=8, seed=0)
    kinds = {t.kind for t in result.tasks}
    assert kinds == {"graph", "program"}, (result.audit_summary, result.misses)
    for t in result.tasks:  # a listing shows every row, so no question is about its first page only
        assert "looking only at the first" not in t.question and "among the first" not in t.question, t.question
    assert all(t.difficulty.pages == 1 for t in result.tasks)  # nothing here pages
    assert "pages" in result.shortfalls  # and the medium floor of 2 pages is reported as missed


@needs_real
def test_a_listing_that_fits_one_page_still_gives_a_graph_task(tmp_path, monkeypatch):
    monkeypatch.delenv("FACTORY_DIFFICULTY", raising=False)
    report = build_env(str(REAL / "openapi" / "oai-v3.0-petstore-expanded.yaml"), tmp_path / "env")
    assert report.kept, report.reasons
    result = synthesize_tasks(tmp_path / "env", n=4, seed=0, kind="graph", knobs=knobs_for("medium"))
    assert result.tasks, result.misses
    assert result.shortfalls["pages"].tasks == len(result.tasks)


@needs_real
def test_an_environment_too_thin_for_tasks_says_what_was_tried(tmp_path):
    """The memory server without its search: writes and a lookup by names, nothing that lists or searches."""
    data = json.loads((REAL / "mcp" / "mcp-memory-tools-list.json").read_text())
    tools = data["result"]["tools"] if "result" in data else data["tools"]
    thin = [t for t in tools if t["name"] not in ("search_nodes", "read_graph")]
    source = tmp_path / "memory-without-search.json"
    source.write_text(json.dumps({"result": {"tools": thin}} if "result" in data else {"tools": thin}))
    report = build_env(str(source), tmp_path / "env")
    assert report.kept, report.reasons
    result = synthesize_tasks(tmp_path / "env", n=4, seed=0)
    assert not result.generated
    message = nothing_kept(result)
    assert "walks attempted, none kept (most often: no listing" in message, message
    assert "no program drafts to try" in message, message
    assert "survived" not in message


def test_walks_on_a_large_graph_stay_near_their_start():
    """A chain of tools 0 -> 1 -> ... -> N, every other tool unrelated: a walk from 0 never leaves 0's
    neighbourhood, though an independent step could reach any tool of a small graph."""
    size = NEIGHBOURHOOD_FROM + 20
    g = nx.DiGraph()
    for i in range(size):
        g.add_node(
            f"t{i}", kind="query", mutates=False, params=[f"p{i}"], output_fields=[f"o{i}"], produces=[], required=[]
        )
    for i in range(size - 1):
        g.add_edge(f"t{i}", f"t{i + 1}", kind="weak", weight=2.0, reasons=[])
    near = {f"t{i}" for i in range(NEIGHBOURHOOD_RADIUS + 1)}
    for seed in range(20):
        walk = weighted_walk(g, random.Random(seed), length=10, start="t0")
        assert set(walk) <= near, walk
        assert len(walk) == len(near)


@needs_real
def test_listings_scoped_by_a_required_field_and_optional_searches_are_goal_listings(tmp_path):
    """git's listings all need `repo_path`, a plain field of their rows: a goal scopes them to one repository.
    Conjur lists resources only through searches whose query is optional: those list, and give tasks."""
    assert build_env(str(REAL / "mcp" / "mcp-git-tools-list.json"), tmp_path / "git").kept
    with Environment.open(tmp_path / "git") as env:
        walker = GraphTaskSynthesizer(Bundle.open(tmp_path / "git"), env.session, nx.DiGraph(), random.Random(0))
        status = walker.entities["status"]
        listed = [t.name for t in walker.goal_listings(status)]
        assert listed == ["git_status"], listed
        assert walker.scope_args(walker.tools["git_status"], status) == ["repo_path"]
        diff = walker.entities["diff"]  # `target` is a field too, but git_diff also needs it: both scope
        assert walker.scope_args(walker.tools["git_diff"], diff) == ["repo_path", "target"]

    assert build_env(str(REAL / "openapi" / "conjur" / "spec" / "openapi.yml"), tmp_path / "conjur").kept
    result = synthesize_tasks(tmp_path / "conjur", n=2, seed=0, kind="graph")
    assert result.tasks, result.misses
    reads = {c.tool for t in result.tasks for c in t.gold}
    assert "show_resources_for_all_accounts" in reads, reads


def _real_env(tmp_path_factory, name: str) -> Path:
    out = tmp_path_factory.mktemp(Path(name).stem) / "env"
    report = build_env(str(REAL / name), out)
    assert report.kept, report.reasons
    return out


@pytest.fixture(scope="module")
def git_env(tmp_path_factory) -> Path:
    return _real_env(tmp_path_factory, "mcp/mcp-git-tools-list.json")


@needs_real
def test_listings_scoped_to_one_repository_give_both_kinds_of_task(git_env: Path, monkeypatch):
    """Every git listing needs `repo_path`: the seed puts several rows of each table in each repository, goals
    read several repositories (one call each), and programs count the rows of one; all pass the audit."""
    monkeypatch.delenv("FACTORY_DIFFICULTY", raising=False)
    with Environment.open(git_env) as env, env.session() as s:
        tables = s.snapshot().tables
    for rows in tables.values():  # a repository holds several rows, and there are several repositories
        per_scope = Counter(r["repo_path"] for r in rows)
        assert 2 <= len(per_scope) < len(rows), per_scope
    repos = set().union(*({r["repo_path"] for r in rows} for rows in tables.values()))
    assert all(len({r["repo_path"] for r in rows}) >= len(repos) // 2 for rows in tables.values())  # one set
    result = synthesize_tasks(git_env, n=6, seed=0)
    assert {t.kind for t in result.tasks} == {"graph", "program"}, (result.audit_summary, result.misses)
    for t in result.tasks:
        if t.kind == "graph":
            paths = [c.args["repo_path"] for c in t.gold]
            assert len(set(paths)) == len(paths) >= 2, paths  # each repository read once
            assert all(p in t.question for p in paths), t.question
        else:
            assert "repo_path=" in t.gold and "repo path" in t.question, (t.question, t.gold)


@needs_real
def test_a_listing_needing_a_scope_and_a_parent_id_reads_them_from_the_parent(tmp_path_factory, monkeypatch):
    """The link example lists pull requests by owner name and repository id together: a goal finds the
    repository through its owner's listing, then lists its pull requests with both of the repository's
    values. The seed keeps them consistent: a repository carries its owner's name, a pull request its
    repository's."""
    monkeypatch.delenv("FACTORY_DIFFICULTY", raising=False)
    link = _real_env(tmp_path_factory, "openapi/oai-v3.0-link-example.yaml")
    with Environment.open(link) as env, env.session() as s:
        t = s.snapshot().tables
    users = {u["id"]: u["username"] for u in t["users"]}
    repos = {r["id"]: r for r in t["repositories"]}
    assert all(r["username"] == users[r["owner_id"]] for r in repos.values())
    assert all(p["username"] == repos[p["repository_id"]]["username"] for p in t["pullrequests"])
    result = synthesize_tasks(link, n=10, seed=0)
    nested = [t for t in result.tasks if t.kind == "graph" and len({c.tool for c in t.gold}) == 2]
    assert nested, (result.audit_summary, result.misses)
    for task in nested:
        first, second = task.gold
        assert (first.tool, second.tool) == ("get_repositories_by_owner", "get_pull_requests_by_repository")
        repo = repos[second.args["repository_id"]]
        assert second.args["username"] == first.args["username"] == repo["username"]
        assert repo["slug"] in task.question and repo["username"] in task.question, task.question
    assert any(t.kind == "program" for t in result.tasks), result.audit_summary


@needs_real
def test_the_memory_server_s_entities_give_program_tasks(tmp_path_factory, monkeypatch):
    """The memory server lists its entities through `read_graph` (all at once) and has nothing to filter them
    by but their free-text `entityType`, which holds a few kinds: a program counts the entities of one kind."""
    monkeypatch.delenv("FACTORY_DIFFICULTY", raising=False)
    memory = _real_env(tmp_path_factory, "mcp/mcp-memory-tools-list.json")
    result = synthesize_tasks(memory, n=4, seed=0)
    programs = [t for t in result.tasks if t.kind == "program"]
    assert programs, nothing_kept(result)
    with Environment.open(memory) as env, env.session() as s:
        entities = s.snapshot().tables["entities"]
    for task in programs:
        kind = re.search(r'entity type is "(\w+)"', task.question)
        assert kind, task.question
        expected = sum(e["entity_type"] == kind.group(1) for e in entities)
        assert 2 <= expected < len(entities) and task.answer == expected, (task.answer, expected)
        assert "tools.read_graph(" in task.gold


@needs_real
def test_the_petstore_s_pets_give_program_tasks_by_tag(tmp_path_factory, monkeypatch):
    """The petstore's pets have nothing to filter on but a free-text tag that several pets share: programs
    count or list the pets of one tag, answered from every pet (the listing's default page shows 10)."""
    monkeypatch.delenv("FACTORY_DIFFICULTY", raising=False)
    petstore = _real_env(tmp_path_factory, "openapi/oai-v3.0-petstore.yaml")
    result = synthesize_tasks(petstore, n=4, seed=0, kind="program")
    assert result.tasks, nothing_kept(result)
    with Environment.open(petstore) as env, env.session() as s:
        pets = s.snapshot().tables["pets"]
    for task in result.tasks:
        tag = re.search(r'tag is "(\w+)"', task.question)
        assert tag, task.question
        ids = sorted(p["id"] for p in pets if p["tag"] == tag.group(1))
        assert 2 <= len(ids) < len(pets)
        assert task.answer in (len(ids), ids), (task.question, task.answer, ids)


@needs_real
def test_memory_walks_add_an_observation_to_the_entity_they_found(tmp_path_factory):
    """A walk over the memory server finds an entity and adds an observation to it through the batch tool
    (`observations=[{entityName, contents}]`); the task holds that entity's list to the text the question
    states, and the same text added to another entity, or another text, fails."""
    memory = _real_env(tmp_path_factory, "mcp/mcp-memory-tools-list.json")
    result = synthesize_tasks(memory, n=4, seed=0, kind="graph", knobs=knobs_for("easy"))
    appends = [t for t in result.tasks if t.gold[-1].tool == "add_observations"]
    assert appends, result.misses
    task = appends[0]
    [item] = task.gold[-1].args["observations"]
    assert item["contents"][0] in task.question and item["entityName"] in task.question
    env, sessions = environment_session_factory(Bundle.open(memory))
    with env:
        with sessions() as s:
            names = [e["name"] for e in s.snapshot().tables["entities"]]
        other = next(n for n in names if n != item["entityName"])
        wrong = [
            [
                *task.gold[:-1],
                ToolCall(tool="add_observations", args={"observations": [{**item, "entityName": other}]}),
            ],
            [*task.gold[:-1], ToolCall(tool="add_observations", args={"observations": [{**item, "contents": ["x"]}]})],
        ]
        for calls, passes in [(task.gold, True), *((w, False) for w in wrong)]:
            run = replay_calls(sessions, calls)
            answer = str(task.answer)
            assert judge(task, run.initial, run.final, answer, "all", None, None).passed is passes, calls[-1].args


@needs_real
def test_git_diffs_keep_context_lines_as_declared_and_do_not_filter_by_it(git_env: Path):
    """`context_lines` (default 3) names no column of a diff: the diff listings pass the gate, keep the option
    as the server declares it, say they do not apply it, and list a repository's diffs with or without it."""
    kept = json.loads((git_env / "report.json").read_text())["kept_tools"]
    assert {"git_diff_staged", "git_diff_unstaged", "git_diff"} <= set(kept), kept
    declared = json.loads((REAL / "mcp" / "mcp-git-tools-list.json").read_text())["result"]["tools"]
    spec = json.loads((git_env / "env.json").read_text())
    tools = {t["name"]: t for t in spec["tools"]}
    with Environment.open(git_env) as env, env.session() as s:
        tables = s.snapshot().tables
        for name, table in (("git_diff_staged", "diff_stageds"), ("git_diff_unstaged", "diff_unstageds")):
            server = next(t for t in declared if t["name"] == name)["inputSchema"]
            option = tools[name]["parameters"]["properties"]["context_lines"]
            assert option["description"].endswith(UNAPPLIED_NOTE)
            assert {k: v for k, v in option.items() if k != "description"} == server["properties"]["context_lines"]
            repo = tables[table][0]["repo_path"]
            expected = sorted(r["id"] for r in tables[table] if r["repo_path"] == repo)
            for extra in ({}, {"context_lines": 8}):
                result = s.call(name, {"repo_path": repo, **extra})
                assert result.ok and sorted(r["id"] for r in result.value["items"]) == expected, (name, extra)
