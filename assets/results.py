"""Turn a factory stage run into what the Dagster UI shows: data version, counts, a table per environment."""

from __future__ import annotations

from collections.abc import Callable

import dagster as dg

from factory.stages import StageRun, summary_table, totals
from factory.tasks.stages import DROP_PREFIX


def progress_logger(context: dg.AssetExecutionContext) -> Callable[[int, int, str], None]:
    """Log `n of N environments` so the run view shows where a long stage is."""

    def log(i: int, n: int, message: str) -> None:
        context.log.info(f"[{i}/{n} environments] {message}")

    return log


def stage_metadata(run: StageRun, columns: list[str]) -> dict[str, dg.MetadataValue]:
    manifest = run.manifest
    envs = len(manifest.envs)
    kept = len(manifest.kept)
    meta: dict[str, dg.MetadataValue] = {
        "environments": dg.MetadataValue.int(envs),
        "kept": dg.MetadataValue.int(kept),
        "pass_rate": dg.MetadataValue.float(kept / envs if envs else 0.0),
        "rebuilt": dg.MetadataValue.int(len(run.rebuilt)),
        "reused_unchanged": dg.MetadataValue.int(len(run.reused)),
        "per_environment": dg.MetadataValue.md(summary_table(manifest, columns)),
    }
    drops: dict[str, int] = {}
    for name, value in sorted(totals(manifest).items()):
        if name.startswith(DROP_PREFIX):
            drops[name.removeprefix(DROP_PREFIX)] = int(value)
        else:
            meta[f"total_{name}"] = dg.MetadataValue.float(float(value))
    if drops:
        rows = ["| reason | tasks dropped |", "|---|---|", *(f"| {r} | {n} |" for r, n in drops.items())]
        meta["drops_by_reason"] = dg.MetadataValue.md("\n".join(rows))
    return meta


def stage_result(
    run: StageRun,
    columns: list[str],
    check_results: list[dg.AssetCheckResult] | None = None,
) -> dg.MaterializeResult:
    return dg.MaterializeResult(
        metadata=stage_metadata(run, columns),
        data_version=dg.DataVersion(run.data_version),
        check_results=check_results or [],
    )
