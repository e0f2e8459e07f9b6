"""The verifier audit as a gate (which probes drop a task, and how the reasons name them) and trajectory scoring,
on a built catalog bundle (online-shop)."""

from __future__ import annotations

import pytest

from factory.models import RubricCheck, Task, ToolCall, Trajectory
from factory.tasks.synthesize import reason_code, synthesize_tasks
from factory.verify.attacks import ATTACKS, VARIANTS
from factory.verify.audit import audit_task
from factory.verify.scoring import environment_session_factory, run_gold, score_trajectory
from tests.builders import open_products, order_to_cancel

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
    """An order cancel_order accepts, with another one left among the rows the attacks retry the cancel on."""
    return order_to_cancel(seed)


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


def codes(result) -> set[str]:
    return {reason_code(r) for r in result.reasons}


def built(result, prefix: str) -> set[str]:
    return {c.name for c in result.checks if c.name.startswith(prefix) and not c.detail.startswith("skipped")}


def test_every_attack_passes_on_a_planted_accept_anything_verifier(shop):
    bundle, sessions, seed = shop
    task = cancel_order(open_order(seed)).model_copy(update={"verifier": ACCEPT_ANYTHING})
    result = audit_task(bundle, task, sessions)
    assert not result.kept
    assert [c.name for c in result.checks] == ["gold", *VARIANTS, *ATTACKS, "replay"]
    assert codes(result) == {f"{name}_passes" for name in built(result, "attack_")}
    assert built(result, "attack_") >= {"attack_noop", "attack_spray", "attack_every_mutator", "attack_state_mutants"}


def test_an_answer_only_verifier_is_caught_by_every_attack_on_the_state(shop):
    bundle, sessions, seed = shop
    task = cancel_order(open_order(seed)).model_copy(update={"verifier": ANSWER_ONLY.format(value="cancelled")})
    result = audit_task(bundle, task, sessions)
    assert codes(result) == {
        "attack_answer_only_passes",
        "attack_dump_passes",
        "attack_hedge_passes",
        "attack_other_rows_passes",
        "attack_destructive_passes",
        "attack_spray_passes",
        "attack_every_mutator_passes",
        "attack_state_mutants_passes",
    }
    assert next(r for r in result.reasons if r.startswith("attack_state_mutants")).startswith(
        "attack_state_mutants_passes: accepted "
    )


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
    assert codes(result) == {
        "attack_echo_passes",
        "attack_guess_passes",
        "attack_dump_passes",
        "attack_hedge_passes",
        "attack_wrong_answer_passes",
        "attack_destructive_passes",
        "attack_every_mutator_passes",
    }


def test_a_read_whose_checked_answer_is_0_is_caught_by_a_guess(shop):
    """A reply of "0" with no calls is what a policy that never looks says: a question whose checks it meets
    (nothing found, by the reference's count) rewards not looking."""
    bundle, sessions, seed = shop
    task = Task(
        id="none",
        env_id="online-shop",
        kind="graph",
        question="How many products are there whose name contains zzz?",
        answer=0,
        gold=[ToolCall(tool="list_products", args={})],
        rubric=[RubricCheck(kind="answer_contains", value=0, competitors=[1, 2])],
    )
    result = audit_task(bundle, task, sessions)
    assert "attack_guess_passes" in codes(result) and not result.kept
    p = seed["products"][0]
    priced = task.model_copy(
        update={
            "question": f"What is the price of product {p['id']}?",
            "answer": p["price"],
            "gold": [ToolCall(tool="get_product", args={"product_id": p["id"]})],
            "rubric": [RubricCheck(kind="answer_contains", value=p["price"], competitors=[p["price"] + 1])],
        }
    )
    assert "attack_guess_passes" not in codes(audit_task(bundle, priced, sessions))


def test_a_rubric_that_checks_only_the_written_row_is_dropped_for_writes_elsewhere(shop):
    bundle, sessions, seed = shop
    result = audit_task(bundle, cancel_order(open_order(seed)), sessions)
    assert not result.kept
    assert codes(result) >= {
        "attack_other_rows_passes",
        "attack_destructive_passes",
        "attack_spray_passes",
        "attack_every_mutator_passes",
    }


def test_a_verifier_that_rejects_the_gold_stops_the_audit(shop):
    bundle, sessions, seed = shop
    task = cancel_order(open_order(seed)).model_copy(update={"verifier": ANSWER_ONLY.format(value="never said")})
    result = audit_task(bundle, task, sessions)
    assert [c.name for c in result.checks] == ["gold"]
    assert result.reasons == ["gold_rejected: the gold run fails"]


def test_synthesized_catalog_tasks_are_kept_only_with_every_check_passed(shop):
    bundle, _, _ = shop
    result = synthesize_tasks(bundle, n=4, seed=3)
    known = {"gold_rejected", "replay_unstable", *(f"{a}_passes" for a in ATTACKS), *(f"{v}_fails" for v in VARIANTS)}
    seen = {reason_code(r) for d in result.dropped for r in d.reasons}
    assert {c for c in seen if c.startswith(("attack_", "variant_", "gold_rejected", "replay_"))} <= known
    env, sessions = environment_session_factory(bundle)
    with env:
        for task in result.tasks:
            audit = audit_task(bundle, task, sessions)
            assert audit.kept and all(c.passed for c in audit.checks)
            assert [c.name for c in audit.checks] == ["gold", *VARIANTS, *ATTACKS, "replay"]


def test_program_task_pays_one_or_zero(shop):
    bundle, sessions, seed = shop
    p = open_products(seed)[1]  # an archived product refuses the update
    task = restock_program(p["id"], p["stock"])
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
