"""The `factory` command: the library's verbs plus the orchestration verbs, which need Dagster and so
live here, next to the assets (factory/ never imports Dagster)."""

from __future__ import annotations

import signal
from types import FrameType
from typing import Annotated

import typer

from factory.cli import app, main
from factory.console import fail
from factory.home_lock import DEFAULT_WAIT_S


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
    from assets.run import RunInterrupted, run_factory
    from factory.home_lock import HomeLocked
    from factory.store import Store

    store = Store()
    stop_on_signals()
    try:
        summary = run_factory(store, categories=category or [], echo=typer.echo, wait_s=wait_timeout if wait else 0)
    except KeyError as e:
        fail(str(e.args[0]), 2)
    except HomeLocked as e:
        fail(str(e))
    except RunInterrupted as e:
        fail(f"interrupted: run {e.run_id} is recorded as failed; FACTORY_HOME is free again", 130)
    except KeyboardInterrupt:
        fail("interrupted; FACTORY_HOME is free again", 130)
    typer.echo(f"\nfinished in {summary.seconds:.0f} s: {len(summary.categories)} categories")
    typer.echo(f"results:   {store.artifacts}")
    typer.echo(f"dagster:   DAGSTER_HOME={store.dagster_home}")
    typer.echo("open the UI: make ui   (then http://127.0.0.1:3000)")
    if not summary.ok:
        fail("failed: " + ", ".join(f"{k} ({v})" for k, v in summary.failed.items()))


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
