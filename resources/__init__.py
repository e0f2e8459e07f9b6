"""Dagster resources: configurable wrappers around the factory's store and sandbox.

Each reads its default from the environment when a run starts (FACTORY_HOME,
FACTORY_SANDBOX_CALL_TIMEOUT_S) and can be overridden from run config in the UI or in tests.
"""

from resources.factory_resources import SandboxResource, StoreResource, default_resources

__all__ = ["SandboxResource", "StoreResource", "default_resources"]
