"""The `tasks` and `verify` verbs of the `factory` command (registered in factory/cli.py).

Exit codes: 0 done; 1 nothing survived the filter and audit; 2 bad input (not a bundle, unknown task id,
a trajectory file that is not the expected JSON). Heavy imports happen inside the commands.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

if TYPE_CHECKING:
    from factory.envs.bundle import Bundle


def _fail(message: str, code: int = 2) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def _bundle(path: Path) -> Bundle:
    from factory.envs.bundle import Bundle, BundleError

    try:
        bundle = Bundle.open(path)
        bundle.spec  # noqa: B018 - reading env.json is the check
    except BundleError as e:
        _fail(str(e))
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
        _fail(f"--kind must be graph, program or both, not {kind!r}")
    if n < 1:
        _fail("--n must be at least 1")
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
        _fail("no task survived the filter and the audit", 1)


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
        _fail(str(e))
    chosen = tasks.get(task)
    if chosen is None:
        known = ", ".join(sorted(tasks)[:10]) or "none"
        _fail(f"no task {task!r} in {task_file} (ids: {known})")
    try:
        traj = Trajectory.model_validate_json(trajectory.read_text())
    except OSError as e:
        _fail(f"cannot read trajectory {trajectory}: {e}")
    except ValidationError as e:
        first = e.errors()[0]
        _fail(f"{trajectory}: not a trajectory ({first['msg']} at {'.'.join(map(str, first['loc'])) or 'top level'})")
    try:
        verdict = score_trajectory(b, chosen, traj)
    except EnvironmentLoadError as e:
        _fail(f"{bundle}: cannot be served: {e}")
    payload = {"task": chosen.id, "reward": verdict.score, **verdict.model_dump(mode="json")}
    typer.echo(json.dumps(payload, indent=2, ensure_ascii=False))
