"""Dagster resources: configurable wrappers around the factory's store, sandbox and LLM gateway.

Each reads its default from the environment (FACTORY_HOME, FACTORY_LLM, FACTORY_SANDBOX_*) and
can be overridden from run config in the UI or swapped in tests.
"""

from resources.factory_resources import LLMResource, SandboxResource, StoreResource, default_resources

__all__ = ["LLMResource", "SandboxResource", "StoreResource", "default_resources"]
