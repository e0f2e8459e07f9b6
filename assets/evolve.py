"""Evolution: the arena's rollouts per category, the diagnosis over all of them, and targeted tasks for the weak
categories only. The sensors close the loop in the UI (a full arena round is diagnosed; a diagnosis requests
targeted runs for its weak categories); the nightly schedule starts a round."""

from typing import Literal

import dagster as dg

from assets.partitions import category_partitions
from assets.results import progress_logger, stage_result
from assets.tasks import verifiers
from factory.pipeline.artifacts import load_taxonomy
from factory.pipeline.evolve.diagnoses import DiagnosisRecord, diagnose_round, load_diagnosis, round_history
from factory.pipeline.evolve.rollouts import ArenaSettings, default_policy, roll_out_category
from factory.pipeline.evolve.rounds import arena_rounds, current_round, next_round
from factory.pipeline.evolve.targeted import Control, TargetedSettings, synthesize_category_targeted
from factory.pipeline.registry import DIAGNOSES, ROLLOUTS, TARGETED_TASKS
from factory.store import Store
from factory.tasks.difficulty import DifficultyError, Knobs, knobs_for
from resources import SandboxResource, StoreResource

EVOLVE_GROUP = {"group_name": ROLLOUTS.group}
ROUND_TAG = "factory/round"
ROLLOUT_COLUMNS = ["arena_tasks", "episodes", "passed", "pass_rate", "env_faults", "episodes_per_s", "env_share"]
TARGETED_COLUMNS = ["guidelines", "tasks", "needs_pagination", "mutation_tasks", "complexified"]


def _knobs(difficulty: str | None) -> Knobs:
    try:
        return knobs_for(difficulty)
    except DifficultyError as e:
        raise dg.Failure(f"difficulty: {e}") from e


def _categories(store: Store) -> list[str]:
    return load_taxonomy(store).categories()


class ArenaConfig(dg.Config):
    """One arena round. `round` empty: the current round (a rerun reuses it; `factory evolve` and the nightly
    schedule start the next). `policy` empty: FACTORY_POLICY, else the scripted `first-page` profile; `llm`
    reads its endpoint from FACTORY_POLICY_MODEL / _API_BASE / _API_KEY. `samples`: rollouts per task (the k
    of its pass rate). `difficulty` empty: the arena spans the easy and medium presets. `backend`: local
    threads, or Ray (`ray_address` of a cluster; empty starts a local one)."""

    round: int | None = None
    policy: str | None = None
    tasks_per_env: int = 4
    samples: int = 2
    seed: int = 0
    difficulty: str | None = None
    max_turns: int = 64
    history: Literal["full", "window"] = "full"
    window: int = 4
    workers: int = 4
    backend: Literal["local", "ray"] = "local"
    ray_address: str | None = None

    def settings(self, store: Store) -> ArenaSettings:
        policy = self.policy or default_policy()
        policy_config: dict[str, object] = {"max_turns": self.max_turns}
        if policy == "llm":
            policy_config |= {"history": self.history, "window": self.window}
        return ArenaSettings(
            round=self.round or current_round(store, _categories(store)),
            policy=policy,
            policy_config=policy_config,
            tasks_per_env=self.tasks_per_env,
            samples=self.samples,
            seed=self.seed,
            **({"levels": [_knobs(self.difficulty)]} if self.difficulty else {}),
            workers=self.workers,
            backend=self.backend,
            ray_address=self.ray_address,
        )


@dg.asset(
    deps=[verifiers],
    partitions_def=category_partitions,
    code_version=ROLLOUTS.code_version,
    kinds={"parquet"},
    **EVOLVE_GROUP,
)
def rollouts(
    context: dg.AssetExecutionContext, config: ArenaConfig, store: StoreResource, sandbox: SandboxResource
) -> dg.MaterializeResult:
    """Rollouts: the policy in the arena (environments held out from training), on tasks made fresh for the
    round; every episode judged by its task's verifier, environment faults kept apart from the policy's errors."""
    try:
        settings = config.settings(store.get())
        run = roll_out_category(
            store.get(), context.partition_key, settings, pool=sandbox.get(), progress=progress_logger(context)
        )
    except ValueError as e:
        raise dg.Failure(f"rollouts: {e}") from e
    totals = run.manifest.totals()
    counted = totals.get("counted", 0)
    extra = {
        "round": dg.MetadataValue.int(settings.round),
        "policy": dg.MetadataValue.text(settings.policy),
        "arena_pass_rate": dg.MetadataValue.float(totals.get("passed", 0) / counted if counted else 0.0),
    }
    return stage_result(ROLLOUTS, run, ROLLOUT_COLUMNS, extra=extra)


class DiagnosisConfig(dg.Config):
    """When an environment counts as weak: at least `min_rollouts` counted rollouts failing at least
    `min_failure_rate` of the time."""

    min_rollouts: int = 2
    min_failure_rate: float = 0.2


def _table(columns: dict[str, str], rows: list[dict[str, object]]) -> dg.TableMetadataValue:
    """A UI table: `columns` maps each column to its type; rows carry exactly those keys."""
    schema = dg.TableSchema(columns=[dg.TableColumn(name, kind) for name, kind in columns.items()])
    return dg.MetadataValue.table(records=[dg.TableRecord({c: row[c] for c in columns}) for row in rows], schema=schema)


def _failure_table(record: DiagnosisRecord) -> dg.TableMetadataValue:
    columns = {"category": "string", "capability": "string", "rollouts": "int", "failures": "int"}
    return _table(columns | {"failure_rate": "float"}, [c.model_dump() for c in record.failure_table])


def _skills_table(record: DiagnosisRecord) -> dg.TableMetadataValue:
    columns = {"capability": "string", "skill": "string", "first_targeted": "int", "rollouts": "int"}
    rows = [{**t.model_dump(), "skill": "old" if t.first_targeted is not None else "new"} for t in record.skills]
    return _table(columns | {"failure_rate": "float", "failure_rate_when_targeted": "float"}, rows)


def _round_table(history: list[DiagnosisRecord]) -> dg.TableMetadataValue:
    columns = {"round": "int", "policy": "string", "failure_rate": "float", "rollouts": "int"}
    rows = [
        {
            "round": r.round,
            "policy": r.diagnosis.policy_id,
            "failure_rate": r.diagnosis.base_failure_rate,
            "rollouts": r.diagnosis.counted,
            "weak_environments": len(r.diagnosis.weak_envs),
            "weak_categories": ", ".join(r.weak_categories),
        }
        for r in history
    ]
    return _table(columns | {"weak_environments": "int", "weak_categories": "string"}, rows)


def gaps(record: DiagnosisRecord) -> list[dict[str, object]]:
    """The round's guidelines as gaps: which capability, in which environment."""
    return [
        {"capability": g.capability, "env_id": g.env_id, "category": g.category, "knobs": g.knobs}
        for g in record.diagnosis.guidelines
    ]


@dg.asset(deps=[rollouts], code_version=DIAGNOSES.code_version, kinds={"json"}, **EVOLVE_GROUP)
def diagnoses(context: dg.AssetExecutionContext, config: DiagnosisConfig, store: StoreResource) -> dg.MaterializeResult:
    """Diagnoses: where the policy fails in the latest arena round, by environment, category, capability,
    difficulty knob and error kind, with the failed trajectories as evidence; the weak environments ranked and a
    guideline for each. The `failure_rate` plot shows the policy round over round."""
    try:
        record, written = diagnose_round(
            store.get(), min_rollouts=config.min_rollouts, min_failure_rate=config.min_failure_rate
        )
    except (FileNotFoundError, ValueError) as e:
        raise dg.Failure(f"diagnoses: {e}") from e
    d = record.diagnosis
    if record.stale_categories:
        context.log.warning(
            f"round {record.round}: no arena rollouts of this round for {', '.join(record.stale_categories)}"
        )
    return dg.MaterializeResult(
        metadata={
            "round": dg.MetadataValue.int(record.round),
            "policy": dg.MetadataValue.text(d.policy_id),
            "failure_rate": dg.MetadataValue.float(d.base_failure_rate),
            "counted_rollouts": dg.MetadataValue.int(d.counted),
            "weak_categories": dg.MetadataValue.json(record.weak_categories),
            "targeted_categories": dg.MetadataValue.json(record.targeted_categories),
            "weak_environments": dg.MetadataValue.json(d.weak_envs),
            "gaps": dg.MetadataValue.json(gaps(record)),
            "stale_categories": dg.MetadataValue.json(record.stale_categories),
            "failures_by_category_and_capability": _failure_table(record),
            "rounds": _round_table(round_history(store.get())),
            "skills_old_vs_new": _skills_table(record),
        },
        data_version=dg.DataVersion(written.content_hash),
    )


class TargetedConfig(dg.Config):
    """Targeted tasks per weak environment; `control: random` spends the same budget on random knobs instead
    of the diagnosis's guidelines (the control that tells targeting apart from merely making more tasks)."""

    tasks_per_env: int = 4
    seed: int = 0
    control: Control = "diagnosis"
    difficulty: str | None = None


@dg.asset(
    deps=[diagnoses],
    partitions_def=category_partitions,
    code_version=TARGETED_TASKS.code_version,
    kinds={"parquet"},
    **EVOLVE_GROUP,
)
def targeted_tasks(
    context: dg.AssetExecutionContext, config: TargetedConfig, store: StoreResource, sandbox: SandboxResource
) -> dg.MaterializeResult:
    """Targeted tasks: new training tasks for this category's weak environments, at the difficulty the
    diagnosis asks for (the database complexified first where a guideline says so). Each task carries its
    guideline and round in its lineage."""
    settings = TargetedSettings(
        tasks_per_env=config.tasks_per_env, seed=config.seed, control=config.control, knobs=_knobs(config.difficulty)
    )
    try:
        run = synthesize_category_targeted(
            store.get(), context.partition_key, settings, pool=sandbox.get(), progress=progress_logger(context)
        )
    except (FileNotFoundError, ValueError) as e:
        raise dg.Failure(f"targeted_tasks: {e}") from e
    totals = run.manifest.totals()
    tasks = totals.get("tasks", 0)
    extra = {
        "round": dg.MetadataValue.int(run.manifest.lineage.round),
        "control": dg.MetadataValue.text(config.control),
        "share_need_pagination": dg.MetadataValue.float(totals.get("needs_pagination", 0) / tasks if tasks else 0.0),
    }
    return stage_result(TARGETED_TASKS, run, TARGETED_COLUMNS, extra=extra)


# --- the loop: jobs, sensors, schedule -------------------------------------------------------------------------

rollouts_job = dg.define_asset_job(
    "rollouts_job", selection=[rollouts], description="One arena round for the chosen categories."
)
diagnoses_job = dg.define_asset_job(
    "diagnoses_job", selection=[diagnoses], description="Diagnose the latest arena round."
)
targeted_tasks_job = dg.define_asset_job(
    "targeted_tasks_job", selection=[targeted_tasks], description="Targeted tasks for the chosen categories."
)
evolve_jobs = [rollouts_job, diagnoses_job, targeted_tasks_job]


def targeted_run_requests(event: dg.EventLogEntry, run_config: dict | None = None) -> list[dg.RunRequest]:
    """One targeted-tasks run per category the diagnosis wrote a guideline for (none for the others, whose
    targeted tasks keep their data versions). The run key names the diagnosis's data version, so a diagnosis
    requests each category once."""
    materialization = event.asset_materialization
    if materialization is None:
        return []
    meta = materialization.metadata
    targeted = meta["targeted_categories"].value if "targeted_categories" in meta else []
    round = meta["round"].value if "round" in meta else 0
    version = materialization.tags.get("dagster/data_version", "") if materialization.tags else ""
    return [
        dg.RunRequest(
            run_key=f"targeted:{version[:16]}:{category}",
            partition_key=category,
            run_config=run_config or {},
            tags={ROUND_TAG: str(round)},
        )
        for category in targeted
    ]


@dg.asset_sensor(
    asset_key=dg.AssetKey(DIAGNOSES.name),
    job=targeted_tasks_job,
    default_status=dg.DefaultSensorStatus.RUNNING,
)
def targeted_tasks_sensor(context: dg.SensorEvaluationContext, asset_event: dg.EventLogEntry):
    """A new diagnosis requests targeted tasks for its weak categories only (those it wrote guidelines for)."""
    requests = targeted_run_requests(asset_event)
    if not requests:
        return dg.SkipReason("the diagnosis wrote no guideline: nothing to target")
    return requests


def arena_complete(store: Store) -> int | None:
    """The round to diagnose: the latest arena round once every category has reached it and no diagnosis
    of it exists yet; else None."""
    categories = _categories(store)
    rounds = arena_rounds(store, categories)
    if not rounds or set(rounds) != set(categories) or len(set(rounds.values())) != 1:
        return None
    round = next(iter(rounds.values()))
    try:
        diagnosed = load_diagnosis(store).round
    except FileNotFoundError:
        diagnosed = 0
    return round if diagnosed < round else None


@dg.sensor(job=diagnoses_job, minimum_interval_seconds=60, default_status=dg.DefaultSensorStatus.RUNNING)
def arena_round_sensor(context: dg.SensorEvaluationContext, store: StoreResource):
    """Once every category's arena has finished a round, that round is diagnosed."""
    try:
        round = arena_complete(store.reader())
    except FileNotFoundError:
        return dg.SkipReason("no taxonomy yet")
    if round is None:
        return dg.SkipReason("no complete, undiagnosed arena round")
    return dg.RunRequest(run_key=f"diagnose:round-{round}", tags={ROUND_TAG: str(round)})


def round_run_config(round: int, policy: str | None = None) -> dict:
    config: dict[str, object] = {"round": round}
    if policy:
        config["policy"] = policy
    return {"ops": {ROLLOUTS.name: {"config": config}}}


@dg.schedule(
    cron_schedule="0 2 * * *",
    job=rollouts_job,
    default_status=dg.DefaultScheduleStatus.STOPPED,
    description="A nightly evolution round: every category's arena, then (by the sensors) diagnosis and "
    "targeted tasks for the weak categories.",
)
def nightly_evolution(context: dg.ScheduleEvaluationContext, store: StoreResource):
    """Starts the next round: one arena run per category, all with the same round number."""
    s = store.reader()
    categories = _categories(s)
    round = next_round(s, categories)
    return [
        dg.RunRequest(
            run_key=f"round-{round}:{category}",
            partition_key=category,
            run_config=round_run_config(round),
            tags={ROUND_TAG: str(round)},
        )
        for category in categories
    ]
