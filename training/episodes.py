"""Episodes of a verl trajectory in our runtime: one session per trajectory, keyed by verl's request id.

verl's tool agent loop creates and releases a tool instance around every single call, so no state can live in a
tool instance; the trajectory's session lives here instead, opened by the agent loop before the first
generation and found by the tools through `agent_data.request_id`. Environments are opened once per bundle in
each process (an agent-loop worker serves many trajectories) and run tool code in the sandbox pool's processes,
as everywhere else.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from factory.envs.runtime import Environment, PreparedCall, Session
from factory.models import Snapshot, Task, ToolCall, ToolResult

_environments: dict[Path, Environment] = {}
_episodes: dict[str, Episode] = {}
_lock = threading.Lock()


@dataclass
class Episode:
    """A trajectory's task, its session, the state it started from, and every call it made with its result."""

    task: Task
    session: Session
    initial: Snapshot
    executed: list[tuple[ToolCall, ToolResult]] = field(default_factory=list)

    def call(self, tool: str, args: dict) -> ToolResult:
        call = self.session.prepare_declared(tool, args)  # the policy names parameters as declared
        result = self.session.run(call)
        self.executed.append((ToolCall(tool=tool, args=call.args if isinstance(call, PreparedCall) else args), result))
        return result


def environment(bundle: str | Path) -> Environment:
    """This process's opened runtime of `bundle` (opened on first use, in the process's sandbox pool)."""
    path = Path(bundle).resolve()
    with _lock:
        if path not in _environments:
            _environments[path] = Environment.open(path)
        return _environments[path]


def open_episode(request_id: str, bundle: str | Path, task: Task) -> Episode:
    """A fresh session on `bundle` for the trajectory `request_id`, with its initial state taken."""
    session = environment(bundle).session()
    episode = Episode(task=task, session=session, initial=session.snapshot())
    with _lock:
        if request_id in _episodes:
            session.close()
            raise ValueError(f"trajectory {request_id} already has an episode")
        _episodes[request_id] = episode
    return episode


def episode(request_id: str) -> Episode:
    """The episode of a running trajectory; KeyError when none was opened for it."""
    with _lock:
        found = _episodes.get(request_id)
    if found is None:
        raise KeyError(f"no episode open for trajectory {request_id}")
    return found


def close_episode(request_id: str) -> None:
    """Close the trajectory's session and forget it (a trajectory closed twice is a no-op)."""
    with _lock:
        found = _episodes.pop(request_id, None)
    if found is not None:
        found.session.close()


def open_count() -> int:
    with _lock:
        return len(_episodes)


def close_environments() -> None:
    """Close every environment this process opened (end of a worker, end of a test)."""
    with _lock:
        opened = list(_environments.values())
        _environments.clear()
    for env in opened:
        env.close()
