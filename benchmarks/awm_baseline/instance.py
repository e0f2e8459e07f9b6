"""Start and drive AWM-style environment instances: one server process each, called through the MCP SDK.

AWM's agent loop (`MCPToolExecutor.call_tool`) opens a new MCP session for every tool call: it
enters the MCP app and the agent, which connect, run the initialize handshake, call the tool and
tear the session down. `call_fresh` does that with the official SDK client; `ReusedSession` keeps
one session open, the fairer number for a client that would reuse its connection.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
import mcp_types as types
from mcp import Client

from benchmarks.awm_baseline.database import dump_seed_sql, rebuild_database
from factory.envs.bundle import SCHEMA_SQL, Bundle

REPO_ROOT = Path(__file__).resolve().parents[2]


class BaselineError(RuntimeError):
    """The baseline server did not start or did not answer."""


def _client(url: str) -> Client:
    # "legacy": the initialize handshake, as AWM's (2025) MCP client does; no response cache.
    return Client(url, mode="legacy", cache=None)


async def call_fresh(url: str, tool: str, args: dict[str, Any]) -> types.CallToolResult:
    """One tool call the AWM way: a new MCP session (connect, initialize, call, close)."""
    async with _client(url) as client:
        return await client.call_tool(tool, args)


class ReusedSession:
    """One MCP session kept open across calls (not what AWM's loop does; reported as a separate number)."""

    def __init__(self, url: str):
        self._client = _client(url)

    async def __aenter__(self) -> ReusedSession:
        await self._client.__aenter__()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._client.__aexit__(et, e, tb)

    async def call(self, tool: str, args: dict[str, Any]) -> types.CallToolResult:
        return await self._client.call_tool(tool, args)


def _free_port() -> int:
    """A free local port, as AWM picks one (`get_random_available_port`).

    Not a passed, pre-bound socket: uvicorn takes an inherited fd for a UNIX socket, and asyncio then
    leaves TCP_NODELAY off, which would add ~40 ms of delayed-ACK stall to every baseline request.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class AwmInstance:
    """One environment instance: its own database file, built from SQL, and its own server process."""

    def __init__(self, bundle_dir: Path, workdir: Path):
        self.bundle_dir = Path(bundle_dir)
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        bundle = Bundle.open(self.bundle_dir)
        self.schema_sql = (bundle.path / SCHEMA_SQL).read_text()
        self.seed_sql = dump_seed_sql(bundle.seed_bytes())
        (self.workdir / "seed.sql").write_text(self.seed_sql)
        self.db_path = self.workdir / "env.db"
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def pid(self) -> int:
        if self.process is None:
            raise BaselineError("the server is not running")
        return self.process.pid

    def reset(self) -> None:
        """AWM's reset: the database file rebuilt from schema.sql + the seed SQL."""
        rebuild_database(self.db_path, self.schema_sql, self.seed_sql)

    def start(self) -> None:
        """Start the server process on a free port (returns at once); the database is built first if missing."""
        if not self.db_path.exists():
            self.reset()
        self.port = _free_port()
        cmd = [sys.executable, "-m", "benchmarks.awm_baseline.server", "--bundle", str(self.bundle_dir)]
        cmd += ["--db", str(self.db_path), "--port", str(self.port)]
        with open(self.workdir / "server.log", "wb") as log:
            self.process = subprocess.Popen(
                cmd, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True
            )

    async def wait_ready(self, tool: str, args: dict[str, Any], timeout_s: float = 60.0) -> types.CallToolResult:
        """Call `tool` until the server answers (AWM polls its port the same way); the first answer."""
        deadline = time.monotonic() + timeout_s
        while True:
            if self.process is not None and self.process.poll() is not None:
                raise BaselineError(f"server exited with {self.process.returncode}: {self._log_tail()}")
            try:
                return await call_fresh(self.url, tool, args)
            except Exception as e:  # connection refused until uvicorn serves; the SDK wraps it variously
                if time.monotonic() > deadline:
                    raise BaselineError(f"no answer within {timeout_s:g}s: {e}; {self._log_tail()}") from e
                await anyio.sleep(0.01)

    def _log_tail(self) -> str:
        log = self.workdir / "server.log"
        return log.read_text(errors="replace")[-2000:] if log.exists() else ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)
