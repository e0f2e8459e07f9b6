"""What every verb of the `factory` command prints: JSON results on stdout, `error: ...` and an exit code."""

from __future__ import annotations

import json
from typing import Any, NoReturn

import typer


def fail(message: str, code: int = 1) -> NoReturn:
    """Print `error: message` on stderr and exit with `code` (2: bad input, 1: the work failed)."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def print_json(value: Any) -> None:
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))
