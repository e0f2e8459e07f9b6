"""The sandbox on its own: one-off functions, argument schemas, capabilities, and the Docker runner's code path."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from typing import Any

import pytest

from factory.sandbox import DockerRunner, Limits, LocalRunner, SandboxPool, capabilities, compile_schema
from factory.sandbox.worker import WORKER_SCRIPT

LIMITS = Limits(timeout_s=1.0, cpu_s=2, memory_bytes=1 << 30, grace_s=0.5)


@pytest.fixture(scope="module")
def pool():
    p = SandboxPool(size=1, limits=LIMITS)
    yield p
    p.close()


VERIFY = """
def verify(initial, final, answer):
    added = len(final["orders"]) - len(initial["orders"])
    return {"passed": added == 1 and answer == "done", "score": float(added == 1)}
"""


def test_run_function_returns_the_value(pool):
    r = pool.run_function(VERIFY, "verify", {"initial": {"orders": [1]}, "final": {"orders": [1, 2]}, "answer": "done"})
    assert r.ok and r.value == {"passed": True, "score": 1.0}


@pytest.mark.parametrize(
    ("source", "code", "env_error"),
    [
        ("def f(:\n", "load_error", False),
        ("x = 1\n", "not_found", False),
        ("def f():\n    raise KeyError('k')\n", "exception", False),
        ("def f():\n    while True:\n        pass\n", "timeout", True),
        ("def f():\n    return bytearray(8 << 30)\n", "resource_limit", True),
        ("import os\ndef f():\n    os._exit(3)\n", "worker_crashed", True),
    ],
)
def test_run_function_faults_are_clear_errors(pool, source, code, env_error):
    r = pool.run_function(source, "f", {}, Limits(timeout_s=0.5, cpu_s=1, memory_bytes=1 << 30, grace_s=0.5))
    assert not r.ok and r.error.code == code and r.env_error is env_error
    assert pool.run_function("def f(x):\n    return x * 2\n", "f", {"x": 21}).value == 42


def test_run_function_cannot_pollute_the_next_run(pool):
    assert pool.run_function("import json\ndef f():\n    json.dumps = None\n    return 1\n", "f").ok
    r = pool.run_function("import json\ndef f():\n    return json.dumps([1])\n", "f")
    assert r.ok and r.value == "[1]"


def test_capabilities_report_what_is_enforced(pool):
    caps = capabilities(pool)
    assert caps.runner == "local"
    assert "RLIMIT_AS" in caps.rlimits
    flags = {
        "network_namespace": caps.network_namespace,
        "mount_isolation": caps.mount_isolation,
        "pid_namespace": caps.pid_namespace,
        "process_limit": caps.process_limit,
    }
    assert len(caps.not_enforced) == sum(not v for v in flags.values())


def test_unisolated_runner_says_what_it_cannot_enforce():
    p = SandboxPool(size=1, limits=LIMITS, runner=LocalRunner(isolate=False))
    try:
        caps = capabilities(p)
        assert not caps.network_namespace and not caps.mount_isolation
        assert any("network" in n for n in caps.not_enforced)
    finally:
        p.close()


def test_schema_checks():
    validate = compile_schema(
        {
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": 1, "maximum": 5},
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 2},
                "when": {"type": ["string", "null"]},
                "ratio": {"type": "number", "exclusiveMaximum": 1},
                "filter": {"type": "object", "properties": {"k": {"type": "string"}}},
            },
            "required": ["n"],
        },
        max_string_chars=10,
    )
    assert validate({"n": 3, "tags": ["a"], "when": None, "ratio": 0.5, "filter": {"k": "v", "other": 1}}) is None
    shallow = compile_schema(
        {
            "type": "object",
            "properties": {"n": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
            "required": ["n"],
        },
        max_string_chars=10,
        top_level_only=True,
    )
    assert shallow({"n": 1, "tags": [1, None, {"x": True}]}) is None  # what is inside is the tool code's to judge
    assert shallow({"n": "1"}) == "argument 'n' must be integer, got string"
    assert "missing required argument 'n'" in shallow({})
    assert "unexpected argument 'zzz'" in shallow({"n": 1, "zzz": 0})
    assert "is a string of 11" in shallow({"n": 1, "tags": [{"x": "y" * 11}]})  # every string still capped
    assert "finite" in shallow({"n": 1, "tags": [float("inf")]})
    # an optional property sent as null is one left out, nested ones too; a required one must hold a value
    assert validate({"n": 2, "ratio": None, "filter": {"k": None}}) is None
    assert validate({"n": None}) == "argument 'n' must be integer, got null"
    cases = {
        "missing required argument 'n'": {},
        "argument 'n' must be <= 5": {"n": 6},
        "argument 'n' must be integer, got number": {"n": 1.5},
        "argument 'tags[0]' is a string of 4": {"n": 1, "tags": ["abcd"]},
        "must have at most 2 items": {"n": 1, "tags": ["a", "b", "c"]},
        "argument 'ratio' must be < 1": {"n": 1, "ratio": 1},
        "unexpected argument 'zzz'": {"n": 1, "zzz": 0},
        "argument 'filter.k' must be string": {"n": 1, "filter": {"k": 1}},
        "argument 'filter.other' is a string of 11": {"n": 1, "filter": {"other": "x" * 11}},
        "arguments must be an object": [],
        "argument 'when' must be string or null, got integer": {"n": 1, "when": 3},
        "argument 'when' is a string of 11": {"n": 1, "when": "x" * 11},
        "argument 'n' must be integer, got string": {"n": "x" * 11},
    }
    for needle, args in cases.items():
        problem = validate(args)
        assert problem is not None and needle in problem, (needle, problem)


# --- Docker: only the engine's answers are faked -------------------------------------------------


class FakeDockerAPI:
    """Answers like the Docker engine's low-level API; a 'container' is a plain process of the worker script.

    Like the engine it multiplexes the container's stdout on the attach socket (8-byte frame headers).
    """

    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.socks: dict[str, socket.socket] = {}
        self.removed: list[str] = []

    def create_host_config(self, **kw: Any) -> dict[str, Any]:
        return {"fake_host_config": kw}

    def create_container(self, image: str, command: list[str], **kw: Any) -> dict[str, str]:
        cid = f"c{len(self.created)}"
        self.created.append({"image": image, "command": command, **kw})
        return {"Id": cid}

    def attach_socket(self, cid: str, params: dict[str, int]) -> socket.socket:
        ours, theirs = socket.socketpair()
        self.socks[cid] = ours
        return theirs

    def start(self, cid: str) -> None:
        command = self.created[int(cid[1:])]["command"]
        cfg = json.loads(command[-1])
        proc = subprocess.Popen(
            [sys.executable, str(WORKER_SCRIPT), json.dumps(cfg)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        self.procs[cid] = proc
        sock = self.socks[cid]

        def pump_out() -> None:
            while chunk := proc.stdout.read1(1 << 16):
                sock.sendall(bytes([1, 0, 0, 0]) + len(chunk).to_bytes(4, "big") + chunk)
            sock.close()

        def pump_in() -> None:
            while chunk := sock.recv(1 << 16):
                proc.stdin.write(chunk)
                proc.stdin.flush()
            proc.stdin.close()

        threading.Thread(target=pump_out, daemon=True).start()
        threading.Thread(target=pump_in, daemon=True).start()

    def wait(self, cid: str, timeout: float) -> dict[str, int]:
        return {"StatusCode": self.procs[cid].wait(timeout)}

    def remove_container(self, cid: str, force: bool) -> None:
        self.removed.append(cid)
        self.procs[cid].kill()
        self.procs[cid].wait()


class FakeDockerClient:
    def __init__(self, api: FakeDockerAPI):
        self.api = api

    def ping(self) -> bool:
        return True


def test_docker_runner_detected_and_confines_the_container(monkeypatch):
    import docker

    api = FakeDockerAPI()
    monkeypatch.setattr(docker, "from_env", lambda **kw: FakeDockerClient(api))
    runner = DockerRunner.detect()
    assert isinstance(runner, DockerRunner)
    p = SandboxPool(size=1, limits=LIMITS, runner=runner)
    try:
        r = p.run_function("def f(a):\n    return a + 1\n", "f", {"a": 1})
        assert r.ok and r.value == 2
        crashed = p.run_function("import os\ndef f():\n    os._exit(5)\n", "f")
        assert crashed.error.code == "worker_crashed"
        assert capabilities(p).runner == "docker"
    finally:
        p.close()
    host = api.created[0]["host_config"]["fake_host_config"]
    assert host["network_mode"] == "none" and host["read_only"] is True
    assert host["pids_limit"] == LIMITS.nproc and host["mem_limit"] == LIMITS.memory_bytes
    assert api.created[0]["network_disabled"] is True
    assert set(api.removed) == set(api.procs)


def test_docker_absent_falls_back_to_local(monkeypatch):
    import docker

    def no_engine(**kw: Any) -> Any:
        raise docker.errors.DockerException("Error while fetching server API version")

    monkeypatch.setattr(docker, "from_env", no_engine)
    assert isinstance(DockerRunner.detect(), LocalRunner)
