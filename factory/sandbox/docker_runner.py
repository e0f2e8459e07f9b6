"""Workers inside Docker containers, used when a Docker engine answers.

Each worker is a container of the sandbox image (network disabled, memory and pids limits, read-only
root, a tmpfs for scratch) running the same `_worker.py`, talking over the container's attached
stdin/stdout. Docker multiplexes stdout/stderr on the attach socket (8-byte frame headers when no TTY
is allocated); `DockerTransport` strips those so the worker protocol sees plain bytes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import select
import socket
import struct
import time
from pathlib import Path
from typing import Any

from factory.sandbox.worker import WORKER_SCRIPT, Limits, WorkerCrashed, WorkerTimeout

log = logging.getLogger(__name__)
DEFAULT_IMAGE = "python:3.11-slim"
CONTAINER_SCRIPT = "/opt/sandbox/_worker.py"
_MUX = struct.Struct(">BxxxI")


class DockerTransport:
    """The byte pipe to a worker in a container: raw writes to its stdin, demultiplexed reads of its stdout."""

    def __init__(self, api: Any, container_id: str, sock: Any):
        self.api = api
        self.container_id = container_id
        self.sock = sock
        raw = getattr(sock, "_sock", sock)
        self.raw: socket.socket = raw
        self.pending = bytearray()  # multiplexed bytes not yet split into frames
        self.closed = False

    def write_all(self, data: bytes) -> None:
        try:
            self.raw.sendall(data)
        except OSError as e:
            raise WorkerCrashed(f"container stdin closed: {e}") from e

    def read_some(self, deadline: float) -> bytes:
        while True:
            out = self._take_stdout()
            if out:
                return out
            wait = deadline - time.monotonic()
            if wait <= 0:
                raise WorkerTimeout("no answer from the container before the deadline")
            ready, _, _ = select.select([self.raw], [], [], wait)
            if ready:
                chunk = self.raw.recv(1 << 16)
                if not chunk:
                    return b""
                self.pending += chunk

    def _take_stdout(self) -> bytes:
        out = bytearray()
        while len(self.pending) >= _MUX.size:
            stream, n = _MUX.unpack_from(self.pending)
            if len(self.pending) < _MUX.size + n:
                break
            if stream == 1:
                out += self.pending[_MUX.size : _MUX.size + n]
            del self.pending[: _MUX.size + n]
        return bytes(out)

    def kill(self) -> None:
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(Exception):
            self.raw.close()
        with contextlib.suppress(Exception):
            self.api.remove_container(self.container_id, force=True)

    def exit_status(self) -> int | None:
        with contextlib.suppress(Exception):
            return int(self.api.wait(self.container_id, timeout=1)["StatusCode"])
        return None


class DockerRunner:
    """Starts workers as containers through the engine's low-level API (`docker.APIClient`)."""

    name = "docker"

    def __init__(self, api: Any, image: str = DEFAULT_IMAGE):
        self.api = api
        self.image = image

    @classmethod
    def detect(cls, image: str = DEFAULT_IMAGE) -> Any:
        """A DockerRunner when an engine answers a ping, else the local runner."""
        from factory.sandbox.pool import LocalRunner

        try:
            import docker

            client = docker.from_env(timeout=2)
            client.ping()
            return cls(client.api, image)
        except Exception as e:
            log.debug("no Docker engine (%s): using the local runner", e)
            return LocalRunner()

    def host_config(self, limits: Limits) -> dict[str, Any]:
        return self.api.create_host_config(
            network_mode="none",
            mem_limit=limits.memory_bytes,
            memswap_limit=limits.memory_bytes,
            pids_limit=limits.nproc,
            read_only=True,
            tmpfs={"/tmp": "rw,size=256m"},
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            binds={str(Path(WORKER_SCRIPT).parent): {"bind": str(Path(CONTAINER_SCRIPT).parent), "mode": "ro"}},
        )

    def spawn(self, limits: Limits, host: bool = False) -> DockerTransport:
        cfg = {
            "rfd": 0,
            "wfd": 1,
            "host": host,
            "limits": limits.model_dump(),
            "uid": None,
            "isolate": False,  # the container is the isolation
            "private_dir": "/tmp",
        }
        container = self.api.create_container(
            self.image,
            command=["python", "-s", "-B", CONTAINER_SCRIPT, json.dumps(cfg)],
            stdin_open=True,
            tty=False,
            user="65534:65534",
            network_disabled=True,
            environment={"PYTHONHASHSEED": "0", "HOME": "/tmp"},
            working_dir="/tmp",
            host_config=self.host_config(limits),
        )
        cid = container["Id"]
        sock = self.api.attach_socket(cid, params={"stdin": 1, "stdout": 1, "stream": 1})
        self.api.start(cid)
        return DockerTransport(self.api, cid, sock)
