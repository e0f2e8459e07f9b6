"""The offline diagnosis on real rollouts of scripted skill profiles: each profile's known gap is found where it
fails and named by the capability it lacks, the oracle has none, environment faults never count, and a targeted
round asks for more of what failed than an untargeted one."""

from __future__ import annotations

from pathlib import Path

import pytest

from factory.agents.policies import make_policy
from factory.agents.rollouts import RolloutRow, run_rollouts
from factory.envs.bundle import Bundle
from factory.evolve.diagnosis import CapabilityDiagnosis, TargetedGuideline, diagnose, error_kinds
from factory.evolve.targeting import random_control, synthesize_targeted, targeted_knobs
from factory.models import CheckResult, Guideline, Task, Verdict
from factory.tasks.difficulty import Knobs, knobs_for
from factory.tasks.synthesize import synthesize_tasks

SHOP, PROCUREMENT = "online-shop", "procurement"
CATEGORIES = {SHOP: "commerce", PROCUREMENT: "operations"}
PROFILES = ("oracle", "first-page", "greedy-restock", "no-recovery")
EASY = knobs_for("easy")


@pytest.fixture(scope="module")
def bundles(catalog_bundles) -> dict[str, Path]:
    out = {SHOP: catalog_bundles.kept(SHOP), PROCUREMENT: catalog_bundles.kept(PROCUREMENT)}
    assert {e: Bundle.open(p).spec.id for e, p in out.items()} == {e: e for e in out}
    return out


def _unique(tasks: list[Task]) -> list[Task]:
    return list({t.id: t for t in tasks}.values())


@pytest.fixture(scope="module")
def shop_easy(bundles) -> list[Task]:
    """Untargeted shop tasks at the easy preset: part of the diagnosed set, and the baseline of a targeted round."""
    return synthesize_tasks(bundles[SHOP], n=4, seed=5, knobs=EASY).tasks


@pytest.fixture(scope="module")
def tasks(bundles, shop_easy) -> dict[str, list[Task]]:
    """A mixed set per environment: tasks that read one page and tasks that read more, tasks that meet a refusal
    and recover, and (procurement) constrained purchasing (restock) tasks."""
    shop = shop_easy + synthesize_tasks(bundles[SHOP], n=4, seed=0, knobs=knobs_for("easy", pages=2, recovery=1)).tasks
    procurement = synthesize_tasks(bundles[PROCUREMENT], n=4, seed=0, knobs=EASY).tasks
    procurement += synthesize_tasks(bundles[PROCUREMENT], n=3, seed=2, kind="program", knobs=EASY).tasks
    return {SHOP: _unique(shop), PROCUREMENT: _unique(procurement)}


@pytest.fixture(scope="module")
def all_tasks(tasks) -> list[Task]:
    return [t for env in tasks.values() for t in env]


@pytest.fixture(scope="module")
def rollouts(bundles, tasks) -> dict[str, list[RolloutRow]]:
    """Every profile on every task of both environments, by profile name."""
    return {
        name: [r for env, path in bundles.items() for r in run_rollouts(path, tasks[env], make_policy(name), seed=0)]
        for name in PROFILES
    }


@pytest.fixture(scope="module")
def diagnoses(rollouts, all_tasks) -> dict[str, CapabilityDiagnosis]:
    return {name: diagnose(rows, all_tasks, 1, CATEGORIES) for name, rows in rollouts.items()}


def _top_gap(d: CapabilityDiagnosis, env: str) -> str:
    [g] = [g for g in d.guidelines if isinstance(g, TargetedGuideline) and g.env_id == env]
    return g.capability


def test_the_task_set_has_what_each_profile_lacks(all_tasks):
    assert any("pagination" not in t.capabilities for t in all_tasks), "some tasks read one page"
    assert any("pagination" in t.capabilities for t in all_tasks)
    assert any(t.refusals or t.difficulty.recovery for t in all_tasks), "some tasks meet a refusal"
    restock = [
        t for t in all_tasks if t.env_id == PROCUREMENT and "constraint" in t.capabilities and t.kind == "program"
    ]
    assert restock, "procurement makes constrained purchasing (restock) tasks"


def test_the_oracle_has_no_gap(diagnoses):
    d = diagnoses["oracle"]
    assert d.base_failure_rate == 0.0 and d.weak_envs == [] and d.gaps == [] and d.guidelines == []
    assert d.failure_rate_by_env == {SHOP: 0.0, PROCUREMENT: 0.0}
    assert d.failure_rate_by_category == {"commerce": 0.0, "operations": 0.0}


def test_first_page_lacks_pagination(diagnoses, all_tasks):
    d = diagnoses["first-page"]
    assert d.policy_gaps[0].capability == "pagination", d.policy_gaps
    assert d.policy_gaps[0].lift > 1 and d.policy_gaps[0].risk_difference > 0
    assert SHOP in d.weak_envs, d.failure_rate_by_env
    by_id = {t.id: t for t in all_tasks}
    for env in d.weak_envs:
        assert _top_gap(d, env) == "pagination", d.gaps
        gap = next(g for g in d.gaps if g.env_id == env)
        assert gap.capability == "pagination" and gap.category == CATEGORIES[env]
        assert gap.tasks and all(by_id[t].env_id == env and by_id[t].difficulty.pages > 1 for t in gap.tasks)
        [guide] = [g for g in d.guidelines if g.env_id == env]
        assert guide.knobs["pages"] >= 2 and guide.complexify_db and guide.round == 1
        assert set(gap.trajectories) | set(gap.tasks) == set(guide.evidence)
    assert d.by_knob["pages>=3"].failure_rate > d.base_failure_rate
    assert d.by_error["no_answer"].failures >= 1


def test_no_recovery_lacks_recovery(diagnoses):
    d = diagnoses["no-recovery"]
    assert d.policy_gaps[0].capability == "recovery", d.policy_gaps
    assert d.weak_envs and len(d.guidelines) == len(d.weak_envs)
    for env in d.weak_envs:
        assert _top_gap(d, env) == "recovery", d.gaps
    assert all(set(g.knobs) == {"recovery"} and g.knobs["recovery"] >= 1 for g in d.guidelines)
    assert d.by_error["refused"].failures >= 1 and d.by_error["no_answer"].failures >= 1


def test_greedy_restock_lacks_constraint_handling(diagnoses):
    d = diagnoses["greedy-restock"]
    assert d.policy_gaps[0].capability == "constraint", d.policy_gaps
    assert d.weak_envs == [PROCUREMENT], d.failure_rate_by_env
    assert _top_gap(d, PROCUREMENT) == "constraint", d.gaps
    [guide] = d.guidelines
    assert guide.category == "operations" and guide.knobs["constraints"] >= 2
    assert d.failure_rate_by_env[SHOP] == 0.0 and d.failure_rate_by_category["commerce"] == 0.0


def test_environment_errors_never_count_against_the_policy(rollouts, all_tasks):
    rows = rollouts["first-page"]
    faulty = [
        r.model_copy(update={"env_errors": ["list_orders: worker_crashed: exit 3"]}) if r.env_id == SHOP else r
        for r in rows
    ]
    d = diagnose(faulty, all_tasks, 1, CATEGORIES)
    assert SHOP not in d.failure_rate_by_env and SHOP not in d.weak_envs
    assert all(g.env_id != SHOP for g in d.guidelines)
    assert sorted(d.excluded) == sorted(r.id for r in rows if r.env_id == SHOP)
    assert d.counted == sum(r.env_id == PROCUREMENT for r in rows)


def test_error_kinds_are_read_from_agent_errors_and_failed_checks():
    verdict = Verdict(
        passed=False,
        score=0.0,
        checks=[CheckResult(name="answer", passed=False), CheckResult(name="state: orders", passed=False)],
    )
    row = RolloutRow(
        id="r",
        task_id="t",
        env_id="e",
        policy_id="p",
        final_answer="ord_0001",
        verdict=verdict,
        agent_errors=[
            "get_order: not_found: no order",
            "cancel_order: invalid_state: closed",
            "x: invalid_arguments: y",
        ],
    )
    assert error_kinds(row) == {"not_found", "refused", "invalid_arguments", "wrong_answer", "state_wrong"}
    assert error_kinds(row.model_copy(update={"final_answer": None, "agent_errors": []})) == {
        "no_answer",
        "state_wrong",
    }


def test_bad_input_is_refused(rollouts, all_tasks):
    mixed = rollouts["oracle"] + rollouts["first-page"]
    with pytest.raises(ValueError, match="one policy's rollouts"):
        diagnose(mixed, all_tasks, 1, CATEGORIES)
    with pytest.raises(ValueError, match="no category for environment"):
        diagnose(rollouts["oracle"], all_tasks, 1, {SHOP: "commerce"})
    with pytest.raises(ValueError, match="not in tasks"):
        diagnose(rollouts["oracle"], all_tasks[:1], 1, CATEGORIES)
    with pytest.raises(ValueError, match="guideline g: unknown knob"):
        targeted_knobs(Guideline(id="g", category="c", capability="x", knobs={"speed": 2}), EASY)
    with pytest.raises(ValueError, match="guidelines g name no environment"):
        synthesize_targeted(Path("unused"), [Guideline(id="g", category="c", capability="x")], n=1, seed=0, round=1)


def test_the_diagnosis_round_trips_as_json(diagnoses):
    d = diagnoses["first-page"]
    again = CapabilityDiagnosis.model_validate_json(d.model_dump_json())
    assert again == d and all(isinstance(g, TargetedGuideline) for g in again.guidelines)


def test_targeted_knobs_only_raise_floors():
    g = Guideline(id="g", category="c", capability="pagination", knobs={"pages": 3, "recovery": 0})
    knobs = targeted_knobs(g, Knobs(level="easy", chain_length=2, recovery=1))
    assert knobs.pages == 3 and knobs.recovery == 1 and knobs.chain_length == 2


def test_a_targeted_round_asks_for_more_pagination_on_the_weak_env(bundles, diagnoses, shop_easy):
    guidelines = diagnoses["first-page"].guidelines
    targeted = synthesize_targeted(bundles[SHOP], guidelines, n=4, seed=5, round=1, base_knobs=EASY)
    untargeted = shop_easy  # the same n, seed and base knobs, no guideline
    assert targeted.tasks and untargeted
    [guide] = [g for g in guidelines if g.env_id == SHOP]

    def share(ts: list[Task]) -> float:
        return sum(t.needs_pagination for t in ts) / len(ts)

    assert share(targeted.tasks) > share(untargeted), (share(targeted.tasks), share(untargeted))
    assert all(t.origin.round == 1 and t.origin.guideline_id == guide.id for t in targeted.tasks)
    assert all(t.lineage and t.lineage.round == 1 and t.lineage.guideline_id == guide.id for t in targeted.tasks)
    others = synthesize_targeted(bundles[SHOP], diagnoses["greedy-restock"].guidelines, n=4, seed=5, round=1)
    assert others.tasks == [] and others.runs == {}, "an environment no guideline names gets no task"


def test_the_random_control_spends_the_same_budget_on_random_knobs(bundles, diagnoses):
    guidelines = diagnoses["greedy-restock"].guidelines
    control = random_control(bundles[PROCUREMENT], guidelines, n=1, seed=0, round=1, base_knobs=EASY, kind="graph")
    again = random_control(bundles[PROCUREMENT], guidelines, n=1, seed=0, round=1, base_knobs=EASY, kind="graph")
    assert list(control.runs) == ["control-0"] and control.runs["control-0"].knobs == again.runs["control-0"].knobs
    assert control.runs["control-0"].knobs != EASY
    assert all(t.origin.round == 1 and t.origin.guideline_id is None for t in control.tasks)
