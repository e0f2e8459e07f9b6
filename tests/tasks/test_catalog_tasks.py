"""The issue's bar on every bundled catalog environment, at default settings (n=20, seed 0, the medium
difficulty): at least 10 audited tasks when it has 5 or more tools, both kinds present, gold chains of at
least 4 calls on average, program tasks with loops or aggregation, and questions that name no raw field
and make no reference nothing defines."""

import statistics

import pytest

from factory.envs.bundle import Bundle
from factory.tasks.phrasing import phrasing_report
from factory.tasks.synthesize import synthesize_tasks
from factory.topics import load_catalog

CATALOG = [t.id for t in load_catalog()]


@pytest.mark.slow
@pytest.mark.parametrize("topic_id", CATALOG)
def test_catalog_environment_meets_the_task_bar(topic_id: str, catalog_bundles, monkeypatch):
    monkeypatch.delenv("FACTORY_DIFFICULTY", raising=False)
    built = catalog_bundles.get(topic_id)
    report = built.report
    assert report.kept, report.reasons
    result = synthesize_tasks(built.path, n=20, seed=0)
    graph = [t for t in result.tasks if t.kind == "graph"]
    program = [t for t in result.tasks if t.kind == "program"]
    if len(report.kept_tools) >= 5:
        assert len(result.tasks) >= 10, result.audit_summary
    assert graph and program, result.audit_summary
    assert all(t.difficulty.level == "medium" and t.gold_calls >= 1 for t in result.tasks)
    assert statistics.mean(t.gold_calls for t in result.tasks) >= 4
    assert all({"loops", "aggregation"} & set(t.capabilities) for t in program)
    phrasing = phrasing_report([t.question for t in result.tasks], Bundle.open(built.path).spec)
    assert (phrasing["raw_field_names"], phrasing["undefined_references"]) == (0, 0), phrasing
