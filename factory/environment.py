"""Defaults read from environment variables when they are used, never at import, with errors naming the variable."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T", int, float)


def env_number(name: str, default: T, kind: Callable[[str], T], what: str) -> T:
    """`name` parsed with `kind` (int or float), or `default` when unset or blank; `what` says what it must be."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return kind(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not {what}") from None


def env_list(name: str) -> list[str]:
    """A comma-separated variable as a list (empty when unset)."""
    return [s.strip() for s in os.environ.get(name, "").split(",") if s.strip()]
