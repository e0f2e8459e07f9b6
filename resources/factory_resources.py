"""The resources, one small class each; all logic lives in factory/. Each hands its object to the
stage functions, which take it as an argument (nothing is swapped in as a process global)."""

from __future__ import annotations

import contextlib

import dagster as dg
from pydantic import Field, PrivateAttr

from factory.environment import env_number
from factory.home_lock import DEFAULT_WAIT_S, home_lock
from factory.sandbox import Limits, SandboxPool, open_pool
from factory.store import Store

CALL_TIMEOUT_VARIABLE = "FACTORY_SANDBOX_CALL_TIMEOUT_S"
DEFAULT_CALL_TIMEOUT_S = 5.0


class StoreResource(dg.ConfigurableResource):
    """Where artifacts live. Empty `home` means FACTORY_HOME (default `.factory/`), read when the run starts.

    A run that writes holds FACTORY_HOME's writer lock from its first write to its end, so a run launched from
    the UI or `dagster asset materialize` waits for `factory run` (or another run) instead of racing it.
    """

    home: str = Field(default="", description="FACTORY_HOME override; empty uses the environment.")
    wait_s: float = Field(
        default=DEFAULT_WAIT_S, description="Seconds a run waits for another writer of FACTORY_HOME before failing."
    )
    _lock: contextlib.ExitStack | None = PrivateAttr(default=None)

    def reader(self) -> Store:
        """The store for reading only (sensors, schedules): takes no lock."""
        return Store(self.home or None)

    def get(self) -> Store:
        """The store, with the writer lock held until the run ends (taken on first use)."""
        store = self.reader()
        if self._lock is None:
            stack = contextlib.ExitStack()
            stack.enter_context(
                home_lock(store.home, wait_s=self.wait_s, on_wait=dg.get_dagster_logger().warning, reentrant=True)
            )
            self._lock = stack
        return store

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None


class SandboxResource(dg.ConfigurableResource):
    """Limits for generated code (tools, tests, programs, verifiers), run in sandbox workers.

    One pool serves every step of a run; its workers start when a step first needs them and stop when
    the run ends.
    """

    workers: int = Field(default=0, description="Worker processes; 0 means one per CPU.")
    call_timeout_s: float | None = Field(
        default=None,
        description=f"Wall-clock limit of one tool call in seconds; empty means {CALL_TIMEOUT_VARIABLE} or "
        f"{DEFAULT_CALL_TIMEOUT_S:g}.",
    )
    _pool: SandboxPool | None = PrivateAttr(default=None)

    def limits(self) -> Limits:
        if self.call_timeout_s is not None:
            return Limits(timeout_s=self.call_timeout_s)
        return Limits(timeout_s=env_number(CALL_TIMEOUT_VARIABLE, DEFAULT_CALL_TIMEOUT_S, float, "a number of seconds"))

    def get(self) -> SandboxPool:
        """The run's pool, opened on first use."""
        if self._pool is None or self._pool.closed:
            self._pool = open_pool(self.workers or None, self.limits())
        return self._pool

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None


def default_resources() -> dict[str, dg.ConfigurableResource]:
    return {"store": StoreResource(), "sandbox": SandboxResource()}
