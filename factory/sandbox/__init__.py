"""Runs untrusted generated code (tools, verifiers, task programs) in confined, pooled worker processes.

`capabilities()` says what this machine lets the sandbox enforce; the README quotes it.
"""

from __future__ import annotations

from pydantic import BaseModel

from factory.sandbox.docker_runner import DockerRunner
from factory.sandbox.pool import (
    LocalRunner,
    SandboxPool,
    Slot,
    default_pool,
    not_enforced,
    open_pool,
    run_function,
)
from factory.sandbox.schema import compile_schema
from factory.sandbox.worker import Limits, WorkerCrashed, WorkerTimeout


class Capabilities(BaseModel):
    """What the sandbox enforces here, as a pool's session host reported it. `isolation` is the unit that tool
    code cannot see past (a process per session); `session_namespaces`: each session also has its own user,
    mount and pid namespace (a private /tmp, /var/tmp, /dev/shm and /proc, and a process limit of its own)."""

    runner: str
    isolation: str
    session_namespaces: bool
    network_namespace: bool
    mount_isolation: bool
    pid_namespace: bool
    process_limit: bool
    unprivileged_uid: bool
    rlimits: list[str]
    not_enforced: list[str]
    notes: list[str]


def capabilities(pool: SandboxPool | None = None) -> Capabilities:
    """Start (or reuse) a worker and report what it could and could not enforce."""
    pool = pool or default_pool()
    if pool.report is None or "isolation" not in pool.report:
        slot = pool.slots[0]
        with slot.lock:
            slot.ensure_worker()
    report = pool.report or {}
    return Capabilities(
        runner=pool.runner.name,
        isolation=str(report.get("isolation", "unknown")),
        session_namespaces=bool(report.get("session_namespaces")),
        network_namespace=bool(report.get("network_namespace")),
        mount_isolation=bool(report.get("mount_isolation")),
        pid_namespace=bool(report.get("pid_namespace")),
        process_limit=bool(report.get("process_limit")),
        unprivileged_uid=bool(report.get("unprivileged_uid")),
        rlimits=list(report.get("rlimits", [])),
        not_enforced=not_enforced(report),
        notes=list(report.get("notes", [])),
    )


__all__ = [
    "Capabilities",
    "DockerRunner",
    "Limits",
    "LocalRunner",
    "SandboxPool",
    "Slot",
    "WorkerCrashed",
    "WorkerTimeout",
    "capabilities",
    "compile_schema",
    "default_pool",
    "open_pool",
    "run_function",
]
