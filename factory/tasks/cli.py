"""The `tasks` and `verify` verbs of the `factory` command (registered in factory/cli.py).

Exit codes: 0 done; 1 nothing survived the filter and audit; 2 bad input (not a bundle, unknown task id,
a trajectory file that is not the expected JSON). Heavy imports happen inside the commands.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from factory.console import fail, print_json

if TYPE_CHECKING:
    from factory.envs.bundle import Bundle


def _bundle(path: Path) -> Bundle:
    from factory.envs.bundle import Bundle, BundleError

    try:
        bundle = Bundle.open(path)
        bundle.spec  # noqa: B018 - reading env.json is the check
    except BundleError as e:
        fail(str(e), 2)
    return bundle


def tasks_cmd(
    bundle: Annotated[Path, typer.Argument(help="Environment bundle directory.")],
    out: Annotated[Path, typer.Option(help="Parquet file to write the kept tasks to.")],
    n: Annotated[int, typer.Option("--n", help="How many tasks to generate before filtering.")] = 20,
    seed: Annotated[int, typer.Option(help="Seed for walks, phrasing and programs.")] = 0,
    kind: Annotated[str, typer.Option(help="graph, program or both.")] = "both",
) -> None:
    """Synthesize tasks for one environment, keep those that pass the filter and the audit, write them."""
    from factory.tasks.synthesize import synthesize_tasks
    from factory.tasks.table import write_tasks

    if kind not in ("graph", "program", "both"):
        fail(f"--kind must be graph, program or both, not {kind!r}", 2)
    if n < 1:
        fail("--n must be at least 1", 2)
    result = synthesize_tasks(_bundle(bundle), n=n, seed=seed, kind=kind)  # type: ignore[arg-type]  # kind checked above
    write_tasks(result.tasks, out)
    typer.echo(
        f"{len(result.tasks)}/{result.generated} tasks kept (yield {result.yield_rate:.0%}) "
        f"in {result.seconds:.1f} s -> {out}"
    )
    for reason, count in sorted(result.audit_summary.items(), key=lambda kv: (-kv[1], kv[0])):
        typer.echo(f"  {reason:24} {count}")
    for d in result.dropped:
        typer.echo(f"  dropped {d.id}: {d.reason}", err=True)
    if not result.tasks:
        fail("no task survived the filter and the audit", 1)


def verify_cmd(
    bundle: Annotated[Path, typer.Argument(help="Environment bundle directory.")],
    task_file: Annotated[Path, typer.Argument(help="Tasks table (parquet) written by `factory tasks`.")],
    task: Annotated[str, typer.Option("--task", help="Id of the task to score.")],
    trajectory: Annotated[
        Path, typer.Option(help='JSON file: {"tool_calls": [{"tool", "args"}], "final_answer": "..."}.')
    ],
) -> None:
    """Replay a trajectory in a fresh session, score it with the task's verifier, print the verdict as JSON."""
    from pydantic import ValidationError

    from factory.envs.runtime import EnvironmentLoadError
    from factory.models import Trajectory
    from factory.tasks.table import read_tasks
    from factory.verify.scoring import score_trajectory

    b = _bundle(bundle)
    try:
        tasks = {t.id: t for t in read_tasks(task_file)}
    except (ValueError, FileNotFoundError) as e:
        fail(str(e), 2)
    chosen = tasks.get(task)
    if chosen is None:
        known = ", ".join(sorted(tasks)[:10]) or "none"
        fail(f"no task {task!r} in {task_file} (ids: {known})", 2)
    try:
        traj = Trajectory.model_validate_json(trajectory.read_text())
    except OSError as e:
        fail(f"cannot read trajectory {trajectory}: {e}", 2)
    except ValidationError as e:
        first = e.errors()[0]
        fail(f"{trajectory}: not a trajectory ({first['msg']} at {'.'.join(map(str, first['loc'])) or 'top level'})", 2)
    try:
        verdict = score_trajectory(b, chosen, traj)
    except EnvironmentLoadError as e:
        fail(f"{bundle}: cannot be served: {e}", 2)
    payload = {"task": chosen.id, "reward": verdict.score, **verdict.model_dump(mode="json")}
    print_json(payload)
