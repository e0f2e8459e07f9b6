"""The verifier audit and trajectory scoring on a built catalog bundle (online-shop)."""

from __future__ import annotations

import pytest

from factory.models import RubricCheck, Snapshot, Task, ToolCall, Trajectory
from factory.verify.audit import audit_task, build_mutants, primary_keys, wrong_answers
from factory.verify.scoring import run_gold, score_trajectory
from factory.verify.state import state_diff

ACCEPT_ANYTHING = 'def verify(initial, final, answer):\n    return {"passed": True, "score": 1.0}\n'
NON_EMPTY_ANSWER = (
    "def verify(initial, final, answer):\n    ok = bool(answer)\n    return {'passed': ok, 'score': float(ok)}\n"
)
ANSWER_ONLY = (
    "def verify(initial, final, answer):\n"
    "    ok = answer is not None and '{value}' in answer\n"
    "    return {{'passed': ok, 'score': 1.0 if ok else 0.0}}\n"
)


@pytest.fixture
def shop(shop_runtime):
    return shop_runtime


def cancel_order(order: dict) -> Task:
    oid = order["id"]
    return Task(
        id="cancel",
        env_id="online-shop",
        kind="graph",
        question=f"Cancel order {oid} and tell me its new status.",
        answer="cancelled",
        gold=[ToolCall(tool="cancel_order", args={"order_id": oid})],
        rubric=[
            RubricCheck(kind="field_equals", table="orders", where={"id": oid}, field="status", value="cancelled"),
            RubricCheck(kind="answer_contains", value="cancelled"),
        ],
        mutates=True,
    )


def open_order(seed: dict) -> dict:
    return next(o for o in seed["orders"] if o["status"] not in ("cancelled", "delivered", "shipped"))


def restock_program(pid: str, stock: int) -> Task:
    return Task(
        id="restock",
        env_id="online-shop",
        kind="program",
        question=f"Add 5 units to the stock of product {pid}; what is the stock now?",
        answer=stock + 5,
        gold=(
            "def solve(tools):\n"
            f"    p = tools.get_product(product_id={pid!r})\n"
            "    return tools.update_product(product_id=p['id'], stock=p['stock'] + 5)['stock']\n"
        ),
        verifier=(
            "def verify(initial, final, answer):\n"
            f"    row = [r for r in final['products'] if r['id'] == {pid!r}][0]\n"
            f"    ok = row['stock'] == {stock + 5} and answer is not None and str({stock + 5}) in answer\n"
            "    return {'passed': ok, 'score': 1.0 if ok else 0.0}\n"
        ),
        mutates=True,
    )


def test_a_sound_rubric_task_passes_every_check(shop):
    bundle, sessions, seed = shop
    result = audit_task(bundle, cancel_order(open_order(seed)), sessions)
    assert result.kept, result.reasons
    assert [c.name for c in result.checks] == [
        "gold_passes",
        "noop_fails",
        "answer_only_fails",
        "mutants_fail",
        "replay_stable",
    ]


def test_a_planted_accept_anything_verifier_is_caught(shop):
    bundle, sessions, seed = shop
    task = cancel_order(open_order(seed)).model_copy(update={"verifier": ACCEPT_ANYTHING})
    result = audit_task(bundle, task, sessions)
    assert not result.kept
    failed = {c.name for c in result.checks if not c.passed}
    assert failed == {"noop_fails", "answer_only_fails", "mutants_fail"}


def test_an_answer_only_verifier_is_caught_by_answer_only_and_mutants(shop):
    bundle, sessions, seed = shop
    task = cancel_order(open_order(seed)).model_copy(update={"verifier": ANSWER_ONLY.format(value="cancelled")})
    result = audit_task(bundle, task, sessions)
    failed = {c.name for c in result.checks if not c.passed}
    assert failed == {"answer_only_fails", "mutants_fail"}


def test_a_read_only_verifier_that_accepts_any_answer_is_caught(shop):
    bundle, sessions, seed = shop
    p = seed["products"][0]
    task = Task(
        id="price",
        env_id="online-shop",
        kind="graph",
        question=f"What is the price of product {p['id']}?",
        answer=p["price"],
        gold=[ToolCall(tool="get_product", args={"product_id": p["id"]})],
        verifier=NON_EMPTY_ANSWER,
    )
    result = audit_task(bundle, task, sessions)
    assert [c.name for c in result.checks if not c.passed] == ["wrong_answers_fail"]
    honest = task.model_copy(
        update={"verifier": None, "rubric": [RubricCheck(kind="answer_contains", value=p["price"])]}
    )
    assert audit_task(bundle, honest, sessions).kept


def test_mutants_cover_dropped_changed_twice_and_other_record(shop):
    bundle, sessions, seed = shop
    gold = run_gold(restock_program(seed["products"][0]["id"], seed["products"][0]["stock"]), sessions)
    initial, final = gold.replay.initial, gold.replay.final
    keys = primary_keys(bundle.spec)
    mutants = list(build_mutants(initial, final, state_diff(initial, final, keys=keys), bundle.spec.bookkeeping, keys))
    assert {m.kind for m in mutants} == {"dropped", "changed", "twice", "other_record"}
    pid, stock = seed["products"][0]["id"], seed["products"][0]["stock"]
    twice = next(m for m in mutants if m.kind == "twice")
    assert next(r for r in twice.tables["products"] if r["id"] == pid)["stock"] == stock + 10
    for m in mutants:
        assert Snapshot(tables=m.tables) != final


def test_program_task_audit_and_one_zero_reward(shop):
    bundle, sessions, seed = shop
    p = seed["products"][1]
    task = restock_program(p["id"], p["stock"])
    assert audit_task(bundle, task, sessions).kept
    gold = run_gold(task, sessions)
    assert gold.error is None and [c.tool for c in gold.trajectory.tool_calls] == ["get_product", "update_product"]
    assert score_trajectory(bundle, task, gold.trajectory, sessions).score == 1.0
    wrong = Trajectory(tool_calls=gold.trajectory.tool_calls[:1], final_answer=gold.trajectory.final_answer)
    verdict = score_trajectory(bundle, task, wrong, sessions, rubric_reward="mean")
    assert (verdict.passed, verdict.score) == (False, 0.0)


def test_rubric_reward_all_by_default_mean_on_request(shop, monkeypatch):
    bundle, sessions, seed = shop
    task = cancel_order(open_order(seed))
    half = Trajectory(tool_calls=list(task.gold), final_answer="done")
    assert score_trajectory(bundle, task, half, sessions).score == 0.0
    assert score_trajectory(bundle, task, half, sessions, rubric_reward="mean").score == 0.5
    monkeypatch.setenv("FACTORY_RUBRIC_REWARD", "mean")
    assert score_trajectory(bundle, task, half, sessions).score == 0.5
    monkeypatch.setenv("FACTORY_RUBRIC_REWARD", "most")
    with pytest.raises(ValueError, match="all' or 'mean"):
        score_trajectory(bundle, task, half, sessions)


def test_score_replays_from_the_seed_state_without_a_session_factory(shop):
    bundle, _, seed = shop
    task = cancel_order(open_order(seed))
    full = Trajectory(tool_calls=list(task.gold), final_answer="It is cancelled now.")
    # Twice in a row: each replay starts from the seed, so the second is not a no-op on a cancelled order.
    assert score_trajectory(bundle.path, task, full).passed
    assert score_trajectory(bundle.path, task, full).passed
    assert not score_trajectory(bundle.path, task, Trajectory(final_answer="It is cancelled now.")).passed


def test_wrong_answers_differ_from_the_answer():
    from factory.verify.answers import answer_contains

    for answer in ["Blue Mug", "191.91", '{"count": 3, "names": ["a", "b"]}']:
        for wrong in wrong_answers(answer):
            assert not answer_contains(wrong, answer)
