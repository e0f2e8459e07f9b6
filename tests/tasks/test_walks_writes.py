"""No graph task's gold writes one (record, field) twice: later writes never undo earlier ones."""

from __future__ import annotations

import random

import pytest

from factory.envs.bundle import Bundle
from factory.envs.runtime import Environment
from factory.graphs import build_tool_graph
from factory.tasks.difficulty import knobs_for
from factory.tasks.walks import synthesize_graph_tasks

TOPICS = ("online-shop", "retail-banking", "issue-tracker", "procurement")


@pytest.mark.parametrize("topic", TOPICS)
def test_no_gold_writes_a_record_field_twice(catalog_bundles, topic):
    path = catalog_bundles.kept(topic)
    bundle = Bundle.open(path)
    with Environment.open(path) as env:
        graph = build_tool_graph(env.spec)
        keys = {e.name: e for e in env.spec.entities}
        for level in ("easy", "medium", "hard"):
            tasks = synthesize_graph_tasks(bundle, env.session, graph, random.Random(level), 10, knobs_for(level))
            assert tasks
            for t in tasks:
                written: set[tuple[str, str, str]] = set()
                for c in t.gold:
                    tool = env.spec.tool(c.tool)
                    if not tool.mutates or tool.operation is None:
                        continue
                    entity = keys[tool.operation.entity]
                    key = next((v for p, v in c.args.items() if p in (f"{entity.name}_id", entity.primary_key)), None)
                    if key is None:
                        continue  # a create: a new row
                    op = tool.operation
                    fields = [p for p in c.args if p not in (f"{entity.name}_id", entity.primary_key)]
                    if op.kind in ("action", "delete"):
                        fields = [op.field or "*"] if op.kind == "action" else ["*"]
                    for f in fields:
                        slot = (entity.name, str(key), f)
                        assert slot not in written and (entity.name, str(key), "*") not in written, (t.question, c)
                        written.add(slot)
