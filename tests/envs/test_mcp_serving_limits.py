"""`factory serve --http` at RL scale: idle sessions are reaped (their environment state closed), the
session cap refuses one session more with an error naming the limit, and the official client still works."""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import AbstractContextManager
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client
from typer.testing import CliRunner

from benchmarks.mcp_load import LoadError, McpSession
from benchmarks.runtime_bench import read_probe
from factory.cli import app
from factory.envs.bundle import Bundle
from factory.envs.mcp_server import ServingLimits
from factory.envs.runtime import Environment
from tests.builders import serving_http


def serving(bundle: Path, limits: ServingLimits) -> AbstractContextManager[tuple[str, Environment]]:
    return serving_http(bundle, limits)


def _wait_for(condition, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_an_abandoned_session_is_reaped_and_its_state_closed(shop_bundle: Path) -> None:
    probe = read_probe(shop_bundle)
    with serving(shop_bundle, ServingLimits(idle_timeout_s=0.5)) as (url, env):

        async def abandon() -> McpSession:
            session = await McpSession.open(url)
            await session.call_tool(probe.tool, probe.args)
            await session.close(delete=False)  # the rollout died: no DELETE
            return session

        abandoned = asyncio.run(abandon())
        assert len(env._sessions) == 1
        assert _wait_for(lambda: not env._sessions, 10), "the idle session's runtime state was not closed"

        async def reuse() -> None:
            session = await McpSession.open(url)
            session.session_id = abandoned.session_id
            try:
                await session.call_tool(probe.tool, probe.args)
            finally:
                await session.close(delete=False)

        with pytest.raises(LoadError, match="HTTP 404"):
            asyncio.run(reuse())


def test_a_busy_session_outlives_the_idle_timeout(shop_bundle: Path) -> None:
    probe = read_probe(shop_bundle)
    with serving(shop_bundle, ServingLimits(idle_timeout_s=0.6)) as (url, env):

        async def busy() -> None:
            session = await McpSession.open(url)
            try:
                for _ in range(12):  # 1.2 s of calls, each gap well under the timeout
                    await session.call_tool(probe.tool, probe.args)
                    await asyncio.sleep(0.1)
            finally:
                await session.close()

        asyncio.run(busy())
        assert _wait_for(lambda: not env._sessions, 5)  # the DELETE closed it


def test_the_cap_refuses_one_session_more_with_the_limit_named(shop_bundle: Path) -> None:
    with serving(shop_bundle, ServingLimits(max_sessions=3, idle_timeout_s=60)) as (url, _env):

        async def main() -> None:
            held = [await McpSession.open(url) for _ in range(3)]
            with pytest.raises(LoadError, match=r"HTTP 503.*at most 3 .*--max-sessions"):
                await McpSession.open(url)
            response = httpx.post(
                url,
                json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
                headers={"Accept": "application/json, text/event-stream"},
            )
            assert response.status_code == 503
            assert "--idle-timeout" in response.json()["error"]["message"]
            await held.pop().close()  # a DELETE frees a place
            again = await McpSession.open(url)
            await again.close()
            for session in held:
                await session.close()

        asyncio.run(main())


def test_the_official_client_lists_and_calls_with_structured_content(shop_bundle: Path) -> None:
    probe = read_probe(shop_bundle)
    spec = Bundle.open(shop_bundle).spec
    with serving(shop_bundle, ServingLimits()) as (url, env):
        with env.session() as direct:
            expected = direct.call(probe.tool, probe.args).value
        assert isinstance(expected, dict)

        async def main() -> None:
            async with Client(url, mode="legacy") as client:
                tools = (await client.list_tools()).tools
                assert {t.name for t in tools} == {t.name for t in spec.tools}
                result = await client.call_tool(probe.tool, probe.args)
                assert not result.is_error
                assert result.structured_content == expected
                assert json.loads(result.content[0].text) == expected
            async with Client(url) as client:  # mode "auto" falls back to the handshake
                assert not (await client.call_tool(probe.tool, probe.args)).is_error

        anyio.run(main)
        assert _wait_for(lambda: not env._sessions, 5)


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [("--idle-timeout", "0", "--idle-timeout must be a positive"), ("--max-sessions", "-1", "--max-sessions must be")],
)
def test_serve_refuses_bad_limits(shop_bundle: Path, option: str, value: str, message: str) -> None:
    result = CliRunner().invoke(app, ["serve", str(shop_bundle), "--http", "127.0.0.1:1", option, value])
    assert result.exit_code == 2
    assert message in result.output
