"""Turn a factory stage run into what the Dagster UI shows: data version, counts, a table per environment."""

from __future__ import annotations

from collections.abc import Callable

import dagster as dg

from factory.pipeline.registry import Stage
from factory.pipeline.runner import DROP_PREFIX, CheckOutcome, StageManifest, StageRun, summary_rows


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


def drops_table(drops: dict[str, int]) -> dg.TableMetadataValue:
    schema = dg.TableSchema(columns=[dg.TableColumn("reason", "string"), dg.TableColumn("tasks_dropped", "int")])
    records = [dg.TableRecord({"reason": r, "tasks_dropped": n}) for r, n in drops.items()]
    return dg.MetadataValue.table(records=records, schema=schema)


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
        meta["drops_by_reason"] = drops_table(drops)
    return meta


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
) -> dg.MaterializeResult:
    return dg.MaterializeResult(
        metadata=stage_metadata(stage, run, columns),
        data_version=dg.DataVersion(run.data_version),
        check_results=check_results or [],
    )
