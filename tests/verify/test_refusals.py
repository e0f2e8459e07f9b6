"""Expected refusals: a gold chain may meet a refusal on purpose, exactly where and how the task says."""

from __future__ import annotations

from factory.models import Refusal, Task, ToolCall
from factory.verify.scoring import run_gold


def _orders(seed, states):
    return [o["id"] for o in seed["orders"] if o["status"] in states]


def _task(calls, refusals=()):
    return Task(
        id="t",
        env_id="online-shop",
        kind="graph",
        question="Cancel the orders; where that is refused, say which.",
        gold=calls,
        refusals=list(refusals),
        mutates=True,
    )


def test_only_the_refusals_the_task_expects_are_allowed(shop_runtime):
    _, sessions, seed = shop_runtime
    done, open_ = _orders(seed, {"cancelled", "delivered"})[0], _orders(seed, {"pending", "paid"})[0]
    calls = [
        ToolCall(tool="cancel_order", args={"order_id": done}),
        ToolCall(tool="cancel_order", args={"order_id": open_}),
    ]
    code = "invalid_transition"
    assert run_gold(_task(calls, [Refusal(call=0, code=code)]), sessions).error is None
    unexpected = run_gold(_task(calls), sessions).error
    assert unexpected is not None and unexpected.startswith(f"call 1 cancel_order: {code}")
    other_code = run_gold(_task(calls, [Refusal(call=0, code="not_found")]), sessions).error
    assert other_code is not None and other_code.startswith(f"call 1 cancel_order: {code}")
    not_refused = run_gold(_task(calls, [Refusal(call=0, code=code), Refusal(call=1, code=code)]), sessions).error
    assert not_refused == f"call 2 cancel_order: expected to be refused with {code}, it was not"
