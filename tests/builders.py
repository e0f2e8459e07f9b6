"""Builders shared by the tests: catalog bundles built once per test session.

A bundle is built by the real pipeline (`factory.envs.build.build_env`); tests read it and never
write into it (a test that must change a bundle copies it first, `copy_bundle`).
"""

from __future__ import annotations

import shutil
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from factory.envs.build import build_env
from factory.envs.bundle import Bundle
from factory.envs.mcp_server import ServingLimits, http_app
from factory.envs.runtime import Environment
from factory.models import GateReport, StateBackend
from factory.verify.attacks import MAX_TRIES

SHOP = "online-shop"


@dataclass(frozen=True)
class BuiltBundle:
    path: Path
    report: GateReport


@dataclass
class CatalogBundles:
    """Catalog environments built on first request and shared for the rest of the session."""

    root: Path
    built: dict[tuple[str, StateBackend], BuiltBundle] = field(default_factory=dict)

    def get(self, topic_id: str, backend: StateBackend = "sqlite") -> BuiltBundle:
        key = (topic_id, backend)
        if key not in self.built:
            out = self.root / f"{topic_id}-{backend}"
            self.built[key] = BuiltBundle(out, build_env(topic_id, out, backend=backend))
        return self.built[key]

    def kept(self, topic_id: str, backend: StateBackend = "sqlite") -> Path:
        """The bundle's path, asserting the gate kept it."""
        b = self.get(topic_id, backend)
        assert b.report.kept, (topic_id, backend, b.report.reasons)
        return b.path


def copy_bundle(bundle: Path, to: Path) -> Path:
    """A private copy of a shared bundle, for a test that changes files in it."""
    shutil.copytree(bundle, to)
    return to


# --- rows of the online-shop seed picked by property, not by id (the seed's values change) -------------------

CANCELLABLE = ("pending", "paid")  # the statuses cancel_order moves an order from
CLOSED_PRODUCT = ("archived",)  # a product in these takes no more changes


def open_products(seed: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The seed's products that still take changes and hold a stock, in key order."""
    return [p for p in seed["products"] if p["status"] not in CLOSED_PRODUCT and p.get("stock") is not None]


def cancellable_orders(seed: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The seed's orders cancel_order accepts, in key order."""
    return [o for o in seed["orders"] if o["status"] in CANCELLABLE]


def order_to_cancel(seed: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """A cancellable order that leaves another cancellable one among the first `MAX_TRIES` other orders: the rows
    `attack_other_rows` and `attack_destructive` retry a cancel on (in key order), so those probes can be built."""
    for order in cancellable_orders(seed):
        others = [o for o in seed["orders"] if o["id"] != order["id"]][:MAX_TRIES]
        if any(o["status"] in CANCELLABLE for o in others):
            return order
    raise AssertionError(f"no two cancellable orders within {MAX_TRIES + 1} rows of the seed")


@contextmanager
def opened_catalog(catalog: CatalogBundles, topics: Iterable[str]) -> Iterator[dict[str, tuple[Bundle, Environment]]]:
    """Catalog environments by topic, each as its bundle and its opened runtime, closed afterwards."""
    opened = {}
    try:
        for topic in topics:
            path = catalog.kept(topic)
            opened[topic] = (Bundle.open(path), Environment.open(path))
        yield opened
    finally:
        for _, env in opened.values():
            env.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving_http(
    bundle: Path, limits: ServingLimits | None = None, fast_path: bool = True, kept: list[str] | None = None
) -> Iterator[tuple[str, Environment]]:
    """The bundle's MCP HTTP app under uvicorn in a thread of this process, so a test can see the runtime:
    yields (the /mcp URL, the environment)."""
    import uvicorn

    b = Bundle.open(bundle)
    with Environment.open(b.path) as env:
        port = free_port()
        app = http_app(env, b.spec, kept, "127.0.0.1", limits or ServingLimits(), fast_path=fast_path)
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        try:
            yield f"http://127.0.0.1:{port}/mcp", env
        finally:
            server.should_exit = True
            thread.join(20)
