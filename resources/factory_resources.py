"""The resources, one small class each; all logic lives in factory/."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import dagster as dg
from pydantic import Field

from factory.llm import LLMGateway, configured_model
from factory.sandbox import Limits, SandboxPool, configure_default_pool
from factory.store import Store


class StoreResource(dg.ConfigurableResource):
    """Where artifacts live. Empty `home` means FACTORY_HOME (default `.factory/`)."""

    home: str = Field(default="", description="FACTORY_HOME override; empty uses the environment.")

    def get(self) -> Store:
        return Store(self.home or None)


class LLMResource(dg.ConfigurableResource):
    """The LLM gateway. `offline` (the default) uses the procedural generators and never calls a model."""

    model: str = Field(default_factory=configured_model, description="litellm model name, or 'offline'.")

    def get(self, store: Store) -> LLMGateway:
        return LLMGateway(self.model, store)


class SandboxResource(dg.ConfigurableResource):
    """Limits for generated code (tools, tests, programs, verifiers) run in sandbox workers."""

    workers: int = Field(default=0, description="Worker processes; 0 means one per CPU.")
    call_timeout_s: float = Field(
        default_factory=lambda: float(os.environ.get("FACTORY_SANDBOX_CALL_TIMEOUT_S", "5")),
        description="Wall-clock limit of one tool call.",
    )

    @contextlib.contextmanager
    def pool(self) -> Iterator[SandboxPool]:
        """A sandbox pool with these settings as the process-wide default for the duration of a step."""
        pool = configure_default_pool(self.workers or None, Limits(timeout_s=self.call_timeout_s))
        try:
            yield pool
        finally:
            pool.close()


def default_resources() -> dict[str, dg.ConfigurableResource]:
    return {"store": StoreResource(), "llm": LLMResource(), "sandbox": SandboxResource()}
