"""Task synthesis on environments built from real inputs (OpenAPI shapes, MCP tool lists), whose listings may
not page, need a parent's id, or return one page only: both task kinds still come out, questions about a
one-page listing say which rows they mean, walks on a large tool graph stay near their start, and an
environment too thin for tasks says how many attempts were made and why none was kept."""

import json
import random
from pathlib import Path

import networkx as nx
import pytest

from benchmarks.api_shapes import workos_like
from factory.envs.build import build_env
from factory.envs.bundle import Bundle
from factory.envs.runtime import Environment
from factory.graphs import NEIGHBOURHOOD_FROM, NEIGHBOURHOOD_RADIUS, weighted_walk
from factory.tasks.difficulty import knobs_for
from factory.tasks.synthesize import nothing_kept, synthesize_tasks
from factory.tasks.walks import GraphTaskSynthesizer

REAL = Path(__file__).resolve().parents[2].parent / "shared" / "real"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real is not here")


@pytest.fixture(scope="module")
def workos(tmp_path_factory) -> Path:
    """The workos-like shape: listings that take no argument and return one page of a larger table."""
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
    for t in result.tasks:
        if t.kind == "program" and "['items']" in str(t.gold):  # read one page: the question says which rows
            assert "looking only at the first" in t.question, t.question
        if t.kind == "graph":  # every listing here shows 10 of more rows: a goal is about those 10
            assert "among the first 10 listed" in t.question, t.question
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
    report = build_env(str(REAL / "mcp" / "mcp-memory-tools-list.json"), tmp_path / "env")
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
