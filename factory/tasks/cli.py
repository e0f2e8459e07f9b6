"""The `tasks` and `verify` verbs of the `factory` command (registered in factory/cli.py).

Exit codes: 0 done; 1 nothing survived the filter and audit; 2 bad input (not a bundle, unknown task id,
a trajectory file, or a line of a trajectories file, that is not the expected JSON). Heavy imports happen inside
the commands.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from factory.console import fail, print_json

if TYPE_CHECKING:
    from pydantic import ValidationError

    from factory.envs.bundle import Bundle
    from factory.models import Task, Trajectory


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
    difficulty: Annotated[
        str | None, typer.Option(help="easy, medium or hard (default: FACTORY_DIFFICULTY, else medium).")
    ] = None,
    chain_length: Annotated[int | None, typer.Option(help="Knob: tool calls each gold makes, at least.")] = None,
    pages: Annotated[int | None, typer.Option(help="Knob: pages of one listing each gold reads, at least.")] = None,
    constraints: Annotated[int | None, typer.Option(help="Knob: constraints each task states, at least.")] = None,
    obscured: Annotated[bool, typer.Option("--obscured", help="Knob: describe records, never name them.")] = False,
    distractors: Annotated[int | None, typer.Option(help="Knob: near-miss rows each task has, at least.")] = None,
    recovery: Annotated[int | None, typer.Option(help="Knob: refused calls each gold recovers from, at least.")] = None,
) -> None:
    """Synthesize tasks for one environment at a difficulty (a preset, with any knob set on top), keep those
    that pass the filter and the audit, write them."""
    from factory.tasks.depth import depth_line
    from factory.tasks.difficulty import DifficultyError, knobs_for
    from factory.tasks.synthesize import nothing_kept, synthesize_tasks
    from factory.tasks.table import write_tasks

    if kind not in ("graph", "program", "both"):
        fail(f"--kind must be graph, program or both, not {kind!r}", 2)
    if n < 1:
        fail("--n must be at least 1", 2)
    try:
        knobs = knobs_for(
            difficulty,
            chain_length=chain_length,
            pages=pages,
            constraints=constraints,
            obscured=obscured or None,  # a floor: unset leaves the preset's
            distractors=distractors,
            recovery=recovery,
        )
    except DifficultyError as e:
        fail(f"--difficulty: {e}" if difficulty is not None else str(e), 2)
    result = synthesize_tasks(_bundle(bundle), n=n, seed=seed, kind=kind, knobs=knobs)  # type: ignore[arg-type]  # kind checked above
    write_tasks(result.tasks, out)
    typer.echo(
        f"{len(result.tasks)}/{result.generated} tasks kept (yield {result.yield_rate:.0%}) "
        f"in {result.seconds:.1f} s -> {out}"
    )
    typer.echo(f"  difficulty {knobs.level}: {depth_line(result.tasks)}")
    for knob, short in result.shortfalls.items():
        typer.echo(f"  fell short of {knob}: {short.tasks} (e.g. {short.example})")
    for reason, count in sorted(result.audit_summary.items(), key=lambda kv: (-kv[1], kv[0])):
        typer.echo(f"  {reason:24} {count}")
    for d in result.dropped:
        typer.echo(f"  dropped {d.id}: {d.reason}", err=True)
    if not result.tasks:
        fail(nothing_kept(result), 1)


def verify_cmd(
    bundle: Annotated[Path, typer.Argument(help="Environment bundle directory.")],
    task_file: Annotated[Path, typer.Argument(help="Tasks table (parquet) written by `factory tasks`.")],
    task: Annotated[str | None, typer.Option("--task", help="Id of the task to score (with --trajectory).")] = None,
    trajectory: Annotated[
        Path | None, typer.Option(help='JSON file: {"tool_calls": [{"tool", "args"}], "final_answer": "..."}.')
    ] = None,
    trajectories: Annotated[
        Path | None,
        typer.Option(help='JSON lines, one trajectory each: {"task", "tool_calls", "final_answer"}.'),
    ] = None,
) -> None:
    """Replay trajectories in fresh sessions and score them with their tasks' verifiers, printing each verdict
    as JSON: one trajectory (--task ID --trajectory FILE), or many (--trajectories FILE.jsonl, one verdict per
    line, in the file's order). Every line of a batch is checked before any is scored: a bad line (not JSON,
    not a trajectory, an unknown task) is reported with its line number, and nothing is scored."""
    from factory.tasks.table import read_tasks

    single = task is not None or trajectory is not None
    if single == (trajectories is not None) or (single and (task is None or trajectory is None)):
        fail("give either --task ID --trajectory FILE, or --trajectories FILE.jsonl", 2)
    b = _bundle(bundle)
    try:
        tasks = {t.id: t for t in read_tasks(task_file)}
    except (ValueError, FileNotFoundError) as e:
        fail(str(e), 2)
    if trajectories is not None:
        runs = _batch(trajectories, tasks, task_file)
    else:
        assert task is not None and trajectory is not None  # checked above
        runs = [(_task(tasks, task, task_file), _trajectory(trajectory))]
    _score(b, runs, lines=trajectories is not None)


def _task(tasks: dict[str, Task], task_id: str, task_file: Path) -> Task:
    chosen = tasks.get(task_id)
    if chosen is None:
        known = ", ".join(sorted(tasks)[:10]) or "none"
        fail(f"no task {task_id!r} in {task_file} (ids: {known})", 2)
    return chosen


def _not_a_trajectory(e: ValidationError) -> str:
    first = e.errors()[0]
    return f"not a trajectory ({first['msg']} at {'.'.join(map(str, first['loc'])) or 'top level'})"


def _trajectory(path: Path) -> Trajectory:
    from pydantic import ValidationError

    from factory.models import Trajectory

    try:
        return Trajectory.model_validate_json(path.read_text())
    except OSError as e:
        fail(f"cannot read trajectory {path}: {e}", 2)
    except ValidationError as e:
        fail(f"{path}: {_not_a_trajectory(e)}", 2)


MAX_REPORTED = 20  # bad lines listed before the rest are only counted


def _batch(path: Path, tasks: dict[str, Task], task_file: Path) -> list[tuple[Task, Trajectory]]:
    """Every line of a JSON-lines file as (task, trajectory); all bad lines are reported at once (exit 2)."""
    from pydantic import ValidationError

    from factory.models import Trajectory

    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        fail(f"cannot read trajectories {path}: {e}", 2)
    runs: list[tuple[Task, Trajectory]] = []
    errors: list[str] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as e:
            errors.append(f"{path}:{number}: not JSON ({e.msg} at column {e.colno})")
            continue
        task_id = data.pop("task", None) if isinstance(data, dict) else None
        if not isinstance(task_id, str):
            errors.append(f'{path}:{number}: not a trajectory (needs "task": the id of a task)')
            continue
        if task_id not in tasks:
            errors.append(f"{path}:{number}: no task {task_id!r} in {task_file}")
            continue
        try:
            runs.append((tasks[task_id], Trajectory.model_validate(data)))
        except ValidationError as e:
            errors.append(f"{path}:{number}: {_not_a_trajectory(e)}")
    if errors:
        more = f"\n... and {len(errors) - MAX_REPORTED} more bad lines" if len(errors) > MAX_REPORTED else ""
        fail("nothing scored; bad lines:\n" + "\n".join(errors[:MAX_REPORTED]) + more, 2)
    if not runs:
        fail(f"{path}: no trajectories", 2)
    return runs


def _score(bundle: Bundle, runs: list[tuple[Task, Trajectory]], lines: bool) -> None:
    """Score every run in one opening of the environment and print each verdict as it comes: indented JSON,
    or with `lines` one JSON object per line."""
    from factory.envs.runtime import EnvironmentLoadError
    from factory.verify.scoring import environment_session_factory, score_trajectory

    try:
        env, sessions = environment_session_factory(bundle)
    except EnvironmentLoadError as e:
        fail(f"{bundle.path}: cannot be served: {e}", 2)
    with env:
        for task, trajectory in runs:
            verdict = score_trajectory(bundle, task, trajectory, sessions)
            payload = {"task": task.id, "reward": verdict.score, **verdict.model_dump(mode="json")}
            if lines:
                typer.echo(json.dumps(payload, ensure_ascii=False, default=str))
            else:
                print_json(payload)
