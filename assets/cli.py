"""The `factory` command: the library's verbs plus the orchestration verbs, which need Dagster and so
live here, next to the assets (factory/ never imports Dagster)."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from types import FrameType
from typing import Annotated

import typer

from factory.cli import app, main
from factory.console import fail
from factory.home_lock import DEFAULT_WAIT_S
from training.cli import train_cmd


@app.command("run")
def run_cmd(
    category: Annotated[
        list[str] | None, typer.Option(help="Only these categories (repeatable); default: all of the taxonomy.")
    ] = None,
    wait: Annotated[
        bool, typer.Option(help="When another run holds FACTORY_HOME, wait for it (else refuse at once).")
    ] = True,
    wait_timeout: Annotated[
        float, typer.Option(help="Seconds to wait for another run before refusing.", min=0)
    ] = DEFAULT_WAIT_S,
) -> None:
    """Materialize the whole asset graph offline (discovery, then every category) into FACTORY_HOME."""
    from assets.run import run_factory
    from factory.store import Store

    store = Store()
    stop_on_signals()
    with writer_exits():
        try:
            summary = run_factory(store, categories=category or [], echo=typer.echo, wait_s=wait_timeout if wait else 0)
        except KeyError as e:
            fail(str(e.args[0]), 2)
    if summary.evolution and summary.evolution.round:
        e = summary.evolution
        typer.echo(
            f"evolution round {e.round}: weak categories {', '.join(e.weak_categories) or 'none'}, "
            f"{e.targeted_tasks} targeted tasks"
        )
    typer.echo(f"\nfinished in {summary.seconds:.0f} s: {len(summary.categories)} categories")
    typer.echo(f"results:   {store.artifacts}")
    typer.echo(f"dagster:   DAGSTER_HOME={store.dagster_home}")
    typer.echo("open the UI: make ui   (then http://127.0.0.1:3000)")
    if not summary.ok:
        fail("failed: " + ", ".join(f"{k} ({v})" for k, v in summary.failed.items()))


@app.command("evolve")
def evolve_cmd(
    policy: Annotated[
        str | None, typer.Option(help="The policy in the arena; default: FACTORY_POLICY, else first-page.")
    ] = None,
    control: Annotated[
        str, typer.Option(help="diagnosis: target the weak spots; random: the same budget on random knobs.")
    ] = "diagnosis",
    round: Annotated[
        int | None, typer.Option(help="The round to run (a kept one is reused); default: the next round.", min=1)
    ] = None,
    category: Annotated[
        list[str] | None, typer.Option(help="Only these categories (repeatable); default: all of the taxonomy.")
    ] = None,
    tasks_per_env: Annotated[int, typer.Option(help="Fresh arena tasks per arena environment.", min=1)] = 4,
    samples: Annotated[int, typer.Option(help="Rollouts per arena task (the k of its pass rate).", min=1)] = 2,
    targeted_per_env: Annotated[int, typer.Option(help="Targeted tasks per weak environment.", min=1)] = 4,
    wait_timeout: Annotated[
        float, typer.Option(help="Seconds to wait for another writer of FACTORY_HOME.", min=0)
    ] = DEFAULT_WAIT_S,
) -> None:
    """One evolution round on what `factory run` built: the arena, the diagnosis, targeted tasks for the weak
    categories. Ends with one JSON line: round, weak_categories, gaps, targeted_tasks, rematerialized_partitions."""
    from assets.evolve_round import evolve_round
    from assets.run import writer
    from factory.agents.policies import POLICIES
    from factory.pipeline.artifacts import load_taxonomy
    from factory.pipeline.evolve.rounds import next_round
    from factory.pipeline.registry import VERIFIERS
    from factory.pipeline.runner import load_manifest
    from factory.store import Store

    if policy is not None and policy not in POLICIES:
        fail(f"--policy: unknown policy {policy!r}; known policies: {', '.join(sorted(POLICIES))}", 2)
    if control not in ("diagnosis", "random"):
        fail(f"--control must be diagnosis or random, not {control!r}", 2)
    store = Store()
    try:
        known = load_taxonomy(store).categories()
    except FileNotFoundError:
        fail(f"nothing built under {store.home}: run `factory run` first", 2)
    unknown = sorted(set(category or []) - set(known))
    if unknown:
        fail(f"unknown categories: {', '.join(unknown)} (known: {', '.join(known)})", 2)
    categories = [c for c in (category or known) if load_manifest(store, VERIFIERS, c) is not None]
    if not categories:
        fail(f"no verified tasks under {store.artifacts}: run `factory run` first", 2)
    stop_on_signals()
    with writer_exits(), writer(store, typer.echo, wait_timeout) as runner:
        summary = evolve_round(
            runner,
            store,
            categories,
            round=round or next_round(store, known),
            policy=policy,
            control=control,  # type: ignore[arg-type]
            arena={"tasks_per_env": tasks_per_env, "samples": samples},
            targeted={"tasks_per_env": targeted_per_env},
            echo=typer.echo,
        )
    typer.echo(summary.json_line())
    if summary.failed:
        raise typer.Exit(1)


app.command("train")(train_cmd)


@contextlib.contextmanager
def writer_exits() -> Iterator[None]:
    """A writer's ends as exit codes: another writer holds FACTORY_HOME (1), a signal stopped the run (130)."""
    from assets.run import RunInterrupted
    from factory.home_lock import HomeLocked

    try:
        yield
    except HomeLocked as e:
        fail(str(e))
    except RunInterrupted as e:
        fail(f"interrupted: run {e.run_id} is recorded as failed; FACTORY_HOME is free again", 130)
    except KeyboardInterrupt:
        fail("interrupted; FACTORY_HOME is free again", 130)


def stop_on_signals() -> None:
    """SIGTERM and a hangup stop the run the way Ctrl-C does: Dagster records the run failed, the sandbox
    pool's workers are torn down and the home's lock is released. An ignored hangup (nohup) stays ignored."""
    signal.signal(signal.SIGTERM, _as_interrupt)
    if signal.getsignal(signal.SIGHUP) is signal.SIG_DFL:
        signal.signal(signal.SIGHUP, _as_interrupt)


def _as_interrupt(signum: int, frame: FrameType | None) -> None:
    """Hand the signal to whatever handles SIGINT now: Dagster defers it while it must, raises it in steps."""
    handler = signal.getsignal(signal.SIGINT)
    if not callable(handler):
        raise KeyboardInterrupt
    handler(signum, frame)


__all__ = ["app", "main"]


if __name__ == "__main__":
    main()
