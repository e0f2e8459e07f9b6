"""Turn a factory stage run into what the Dagster UI shows: data version, counts, a table per environment."""

from __future__ import annotations

from collections.abc import Callable

import dagster as dg

from factory.pipeline.registry import Stage
from factory.pipeline.runner import (
    DROP_PREFIX,
    CheckOutcome,
    StageManifest,
    StageRun,
    summary_rows,
)
from factory.tasks.depth import Depth, DepthReport
from factory.tasks.difficulty import Knobs, Shortfall


def progress_logger(context: dg.AssetExecutionContext) -> Callable[[int, int, str], None]:
    """Log `n of N environments` so the run view shows where a long stage is."""

    def log(i: int, n: int, message: str) -> None:
        context.log.info(f"[{i}/{n} environments] {message}")

    return log


def environment_table(manifest: StageManifest, columns: list[str]) -> dg.TableMetadataValue:
    """One row per environment: kept, the stage's counts, and why it was dropped."""
    schema = dg.TableSchema(
        columns=[
            dg.TableColumn("environment", "string"),
            dg.TableColumn("kept", "bool"),
            *(dg.TableColumn(c, "float") for c in columns),
            dg.TableColumn("reason", "string"),
        ]
    )
    records = [dg.TableRecord(row) for row in summary_rows(manifest, columns)]
    return dg.MetadataValue.table(records=records, schema=schema)


def depth_metadata(report: DepthReport) -> dict[str, dg.MetadataValue]:
    """How deep the tasks are: gold calls (mean, p90, share over 20) up top, and a table per kind and level
    with the gold-call histogram and the shares that mutate and need pagination."""
    groups = {"all": report.overall}
    groups.update({f"kind={k}": d for k, d in report.by_kind.items()})
    groups.update({f"level={k}": d for k, d in report.by_level.items()})
    buckets = list(report.overall.histogram)
    numbers = [n for n in Depth.model_fields if n != "histogram"]
    schema = dg.TableSchema(
        columns=[
            dg.TableColumn("group", "string"),
            *(dg.TableColumn(n, "float") for n in numbers),
            *(dg.TableColumn(f"calls {b}", "int") for b in buckets),
        ]
    )
    records = [
        dg.TableRecord(
            {"group": g, **{n: float(getattr(d, n)) for n in numbers}}
            | {f"calls {b}": d.histogram.get(b, 0) for b in buckets}
        )
        for g, d in groups.items()
    ]
    overall = report.overall
    return {
        "gold_calls_mean": dg.MetadataValue.float(overall.gold_calls_mean),
        "gold_calls_p90": dg.MetadataValue.float(overall.gold_calls_p90),
        "share_over_20_calls": dg.MetadataValue.float(overall.share_over_20),
        "share_mutate": dg.MetadataValue.float(overall.share_mutate),
        "share_need_pagination": dg.MetadataValue.float(overall.share_need_pagination),
        "depth": dg.MetadataValue.table(records=records, schema=schema),
    }


def stage_metadata(stage: Stage, run: StageRun, columns: list[str]) -> dict[str, dg.MetadataValue]:
    manifest = run.manifest
    envs = len(manifest.envs)
    kept = len(manifest.kept)
    totals = manifest.totals()
    meta: dict[str, dg.MetadataValue] = {
        "environments": dg.MetadataValue.int(envs),
        "kept": dg.MetadataValue.int(kept),
        "pass_rate": dg.MetadataValue.float(kept / envs if envs else 0.0),
        "rebuilt": dg.MetadataValue.int(len(run.rebuilt)),
        "reused_unchanged": dg.MetadataValue.int(len(run.reused)),
        "per_environment": environment_table(manifest, columns),
    }
    if stage.row_count:
        meta["dagster/row_count"] = dg.MetadataValue.int(int(totals.get(stage.row_count, 0)))
    drops: dict[str, int] = {}
    for name, value in sorted(totals.items()):
        if name.startswith(DROP_PREFIX):
            drops[name.removeprefix(DROP_PREFIX)] = int(value)
        else:
            meta[f"total_{name}"] = dg.MetadataValue.float(float(value))
    if drops:
        schema = dg.TableSchema(columns=[dg.TableColumn("reason", "string"), dg.TableColumn("tasks_dropped", "int")])
        records = [dg.TableRecord({"reason": r, "tasks_dropped": n}) for r, n in drops.items()]
        meta["drops_by_reason"] = dg.MetadataValue.table(records=records, schema=schema)
    return meta


def shortfall_metadata(short: dict[str, Shortfall], knobs: Knobs) -> dict[str, dg.MetadataValue]:
    """The difficulty asked for, and per knob the tasks that stayed below it with an example of why."""
    schema = dg.TableSchema(
        columns=[
            dg.TableColumn("knob", "string"),
            dg.TableColumn("tasks_below_it", "int"),
            dg.TableColumn("example", "string"),
        ]
    )
    records = [dg.TableRecord({"knob": k, "tasks_below_it": s.tasks, "example": s.example}) for k, s in short.items()]
    return {
        "difficulty": dg.MetadataValue.json(knobs.model_dump()),
        "fell_short_by_knob": dg.MetadataValue.table(records=records, schema=schema),
    }


def gate_result(check_name: str, gate: CheckOutcome) -> dg.AssetCheckResult:
    """A blocking gate's verdict as an asset check result."""
    return dg.AssetCheckResult(
        check_name=check_name, passed=gate.passed, metadata={"detail": dg.MetadataValue.md(gate.detail)}
    )


def stage_result(
    stage: Stage,
    run: StageRun,
    columns: list[str],
    check_results: list[dg.AssetCheckResult] | None = None,
    extra: dict[str, dg.MetadataValue] | None = None,
) -> dg.MaterializeResult:
    return dg.MaterializeResult(
        metadata=stage_metadata(stage, run, columns) | (extra or {}),
        data_version=dg.DataVersion(run.data_version),
        check_results=check_results or [],
    )
