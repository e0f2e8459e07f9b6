"""The issue's bar on every bundled catalog environment, at default settings (n=20, seed 0):
at least 10 audited tasks when it has 5 or more tools, both kinds present, graph tasks averaging at
least 4 tool calls, program tasks with loops or aggregation."""

import pytest

from factory.tasks.synthesize import synthesize_tasks
from factory.topics import load_catalog

CATALOG = [t.id for t in load_catalog()]


@pytest.mark.slow
@pytest.mark.parametrize("topic_id", CATALOG)
def test_catalog_environment_meets_the_task_bar(topic_id: str, catalog_bundles):
    built = catalog_bundles.get(topic_id)
    report = built.report
    assert report.kept, report.reasons
    result = synthesize_tasks(built.path, n=20, seed=0)
    graph = [t for t in result.tasks if t.kind == "graph"]
    program = [t for t in result.tasks if t.kind == "program"]
    if len(report.kept_tools) >= 5:
        assert len(result.tasks) >= 10, result.audit_summary
    assert graph and program, result.audit_summary
    assert sum(len(t.gold) for t in graph) / len(graph) >= 4
    assert all({"loops", "aggregation"} & set(t.capabilities) for t in program)
