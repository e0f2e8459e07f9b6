"""The `factory` command. Each verb is a thin call into the library; heavy imports happen lazily
so `factory --help` stays fast."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from factory.console import fail, print_json
from factory.tasks.cli import tasks_cmd, verify_cmd

app = typer.Typer(
    help="Agent World Factory: build executable tool-use environments, tasks and verifiers.",
    no_args_is_help=True,
    add_completion=False,
)
import_app = typer.Typer(help="Import environments from other systems.", no_args_is_help=True)
app.add_typer(import_app, name="import")
app.command("tasks")(tasks_cmd)
app.command("verify")(verify_cmd)


def _parse_args_json(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        fail(f"--args is not valid JSON: {e}", 2)
    if not isinstance(value, dict):
        fail("--args must be a JSON object of argument names to values", 2)
    return value


@app.command("topics")
def topics_cmd(
    source: Annotated[
        Path | None,
        typer.Option(help="Read topics from this file (MCP tools/list, server.json, OpenAPI) instead."),
    ] = None,
) -> None:
    """List the bundled catalog's topics (or those of a source file)."""
    from factory.topics import SourceError, load_catalog, load_source

    try:
        topics = load_source(source) if source else load_catalog()
    except SourceError as e:
        fail(str(e), 2)
    for t in topics:
        typer.echo(f"{t.id:32} {len(t.tools):3} tools  {t.title}")
    typer.echo(f"{len(topics)} topics", err=True)


@app.command("taxonomy")
def taxonomy_cmd() -> None:
    """Build the three-level taxonomy of the bundled catalog and print it as JSON."""
    from factory.topics import build_taxonomy, load_catalog

    print_json(build_taxonomy(load_catalog()))


@app.command("build-env")
def build_env_cmd(
    source: Annotated[str, typer.Argument(help="A catalog topic id, an OpenAPI file or an MCP tools/list file.")],
    out: Annotated[Path, typer.Option(help="Directory to write the bundle to.")],
    seed: Annotated[int, typer.Option(help="Seed for data and code generation.")] = 0,
    backend: Annotated[str, typer.Option(help="State backend: sqlite or files.")] = "sqlite",
    scale: Annotated[
        float | None,
        typer.Option(help="Row-count multiplier of the seeded data (default: $FACTORY_SEED_SCALE, else 1.0)."),
    ] = None,
) -> None:
    """Build an environment bundle and gate it. Exit 0 when the gate keeps it."""
    from factory.envs.build import build_env
    from factory.mining.datasets import seed_scale
    from factory.topics import SourceError

    if backend not in ("sqlite", "files"):
        fail(f"--backend must be sqlite or files, not {backend!r}", 2)
    try:
        rows_scale = seed_scale(scale, what="--scale")
    except ValueError as e:
        fail(str(e), 2)
    try:
        report = build_env(source, out, seed=seed, backend=backend, scale=rows_scale)
    except SourceError as e:
        fail(str(e), 2)
    _report_gate(out, report)


def _report_gate(out: Path, report: Any) -> None:
    for name, tr in sorted(report.tools.items()):
        mark = "kept" if tr.kept else "DROPPED"
        typer.echo(f"  {name:32} {tr.passed}/{tr.cases} tests  {mark}")
    if report.kept:
        for reason in report.reasons:  # tools that got no code, so no gate line above
            typer.echo(f"  {reason}")
        typer.echo(f"kept: {len(report.kept_tools)} tools -> {out}")
        return
    fail("gate rejected the environment: " + "; ".join(report.reasons))


@app.command("complexify")
def complexify_cmd(
    bundle: Annotated[Path, typer.Argument(help="Bundle directory to complexify.")],
    seed: Annotated[int, typer.Option(help="Seed choosing the change.")] = 0,
    out: Annotated[Path | None, typer.Option(help="Where to write the new version (default: BUNDLE-v<N>).")] = None,
) -> None:
    """Add rows, a related entity or a constraint; re-gate; write a new bundle version."""
    from factory.mining.complexify import complexify

    new_path, report = complexify(bundle, seed=seed, out=out)
    _report_gate(new_path, report)


@app.command("call")
def call_cmd(
    bundle: Annotated[Path, typer.Argument(help="Bundle directory.")],
    tool: Annotated[str, typer.Argument(help="Tool name.")],
    args: Annotated[str, typer.Option("--args", help="Arguments as a JSON object.")] = "{}",
) -> None:
    """Call one tool in a fresh session; print the result as JSON; exit 1 on an error result."""
    from factory.envs.bundle import BundleError
    from factory.envs.runtime import Environment, EnvironmentLoadError

    arguments = _parse_args_json(args)
    try:
        with Environment.open(bundle) as env, env.session() as session:
            result = session.call_declared(tool, arguments)
    except (BundleError, EnvironmentLoadError) as e:
        fail(str(e), 2)
    if result.ok:
        print_json(result.value)
        return
    print_json({"error": result.error.model_dump() if result.error else None})
    raise typer.Exit(1)


@app.command("serve")
def serve_cmd(
    bundle: Annotated[Path, typer.Argument(help="Bundle directory.")],
    http: Annotated[str | None, typer.Option(help="Serve streamable HTTP on HOST:PORT instead of stdio.")] = None,
    idle_timeout: Annotated[
        float,
        typer.Option(help="HTTP: end a session (and free its state) after this many seconds without a request."),
    ] = 300.0,
    max_sessions: Annotated[
        int, typer.Option(help="HTTP: refuse new sessions (HTTP 503) while this many are open.")
    ] = 2000,
) -> None:
    """Serve one environment over MCP (stdio, or streamable HTTP). One MCP session = one env session."""
    import math

    from factory.envs.bundle import BundleError
    from factory.envs.mcp_server import ServingLimits, serve
    from factory.envs.runtime import EnvironmentLoadError

    if not (math.isfinite(idle_timeout) and idle_timeout > 0):
        fail(f"--idle-timeout must be a positive number of seconds, not {idle_timeout:g}", 2)
    if max_sessions <= 0:
        fail(f"--max-sessions must be a positive number of sessions, not {max_sessions}", 2)
    try:
        serve(bundle, http=http, limits=ServingLimits(idle_timeout_s=idle_timeout, max_sessions=max_sessions))
    except (BundleError, EnvironmentLoadError) as e:
        fail(str(e), 2)


@import_app.command("agent-world")
def import_agent_world_cmd(
    env_dir: Annotated[
        Path, typer.Argument(help="environment_mix/<id> of the Agent-World release, or a whole environment_mix/.")
    ],
    out: Annotated[Path, typer.Option(help="Bundle directory (a whole mix: one bundle per environment under it).")],
    questions: Annotated[
        bool, typer.Option(help="Also import questions/<id>.json (written beside the bundle).")
    ] = True,
) -> None:
    """Turn Agent-World release environments into files-backend bundles, and their questions into tasks."""
    from factory.envs.importers import CHECKPOINT_SUFFIX, AgentWorldImportError, import_agent_world

    if not env_dir.is_dir():
        fail(f"{env_dir.resolve()}: not a directory", 2)
    mix = not (env_dir.parent / f"{env_dir.name}{CHECKPOINT_SUFFIX}").is_file()
    if not mix:
        try:
            report = import_agent_world(env_dir, out)
        except AgentWorldImportError as e:
            fail(str(e), 2)
        for reason in report.reasons:
            typer.echo(f"  {reason}")
        if report.kept and questions:
            row = _import_questions(env_dir, out)
            if row:
                typer.echo(f"questions: {row[0]}/{row[1]} kept" + (f" ({row[2]})" if row[2] else ""))
        _report_gate(out, report)
        return
    ids = sorted(p.name[: -len(CHECKPOINT_SUFFIX)] for p in env_dir.glob(f"*{CHECKPOINT_SUFFIX}"))
    ids = [i for i in ids if (env_dir / i).is_dir()]
    if not ids:
        fail(f"{env_dir}: no <id>/ directory with an <id>{CHECKPOINT_SUFFIX} next to it", 2)
    typer.echo(f"{'environment':12} {'tools kept':>10} {'questions kept':>14}  dropped")
    kept_envs = 0
    for env_id in ids:
        try:
            report = import_agent_world(env_dir / env_id, out / env_id)
        except AgentWorldImportError as e:
            typer.echo(f"{env_id:12} {'-':>10} {'-':>14}  not imported: {e}")
            continue
        declared = len(report.tools)
        row = _import_questions(env_dir / env_id, out / env_id) if report.kept and questions else None
        kept_envs += bool(report.kept)
        qs = f"{row[0]}/{row[1]}" if row else "-"
        why = row[2] if row else ("environment rejected: " + "; ".join(report.reasons[:2]) if not report.kept else "")
        typer.echo(f"{env_id:12} {len(report.kept_tools):>4}/{declared:<5} {qs:>14}  {why}")
    typer.echo(f"kept: {kept_envs}/{len(ids)} environments -> {out}")
    if not kept_envs:
        raise typer.Exit(1)


def _import_questions(env_dir: Path, bundle: Path) -> tuple[int, int, str] | None:
    """Import an environment's questions into its bundle: (kept, released, dropped reasons counted)."""
    from factory.store import write_json_atomic
    from factory.tasks.agent_world import import_agent_world_tasks, questions_path
    from factory.tasks.table import write_tasks

    path = questions_path(env_dir)
    if not path.is_file():
        return None
    result = import_agent_world_tasks(bundle, path)
    # next to the bundle, not in it: the bundle's content hash is what its tasks' lineage names
    write_tasks(result.tasks, bundle.with_name(f"{bundle.name}.tasks.parquet"))
    write_json_atomic(bundle.with_name(f"{bundle.name}.questions.json"), result)
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(result.audit_summary.items()) if k != "kept")
    return len(result.tasks), result.generated, reasons


@app.command("sandbox")
def sandbox_cmd() -> None:
    """Show what the sandbox enforces here (isolation unit, namespaces, process limit, rlimits) and what not."""
    from factory.sandbox import capabilities

    print_json(capabilities())


def main() -> None:
    try:
        app()
    except BrokenPipeError:
        sys.exit(1)


if __name__ == "__main__":
    main()
