"""The `factory` command: the library's verbs plus the orchestration verbs, which need Dagster and so
live here, next to the assets (factory/ never imports Dagster)."""

from __future__ import annotations

from typing import Annotated

import typer

from factory.cli import app, main
from factory.console import fail


@app.command("run")
def run_cmd(
    category: Annotated[
        list[str] | None, typer.Option(help="Only these categories (repeatable); default: all of the taxonomy.")
    ] = None,
) -> None:
    """Materialize the whole asset graph offline (discovery, then every category) into FACTORY_HOME."""
    from assets.run import run_factory
    from factory.store import Store

    store = Store()
    try:
        summary = run_factory(store, categories=category or [], echo=typer.echo)
    except KeyError as e:
        fail(str(e.args[0]), 2)
    typer.echo(f"\nfinished in {summary.seconds:.0f} s: {len(summary.categories)} categories")
    typer.echo(f"results:   {store.artifacts}")
    typer.echo(f"dagster:   DAGSTER_HOME={store.dagster_home}")
    typer.echo("open the UI: make ui   (then http://127.0.0.1:3000)")
    if not summary.ok:
        fail("failed: " + ", ".join(f"{k} ({v})" for k, v in summary.failed.items()))


__all__ = ["app", "main"]


if __name__ == "__main__":
    main()
