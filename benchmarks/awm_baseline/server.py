"""One AWM-style environment server: a FastAPI app whose endpoints are the tools, exposed over MCP.

This is the serving design of Agent World Model (AWM): per environment a FastAPI app backed by a
SQLite file through SQLAlchemy sessions, with MCP mounted on the same app at `/mcp` (streamable
HTTP); an MCP `tools/call` is forwarded to the tool's endpoint in-process over an ASGI transport,
which is how AWM's `fastapi_mcp` mount does it. One OS process serves one environment instance.

The endpoints run OUR bundle's tools.py functions on the session's sqlite3 connection, so both sides
execute the same queries on the same rows; only the serving design differs. Run as
`python -m benchmarks.awm_baseline.server --bundle DIR --db FILE --port N`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
from fastapi import Body, FastAPI
from fastapi.responses import JSONResponse
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from sqlalchemy import create_engine
from sqlalchemy.orm import Session, sessionmaker
from starlette.routing import Route

from factory.envs.bundle import Bundle
from factory.models import ToolSpec


def _is_error(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get("error"), dict)


def _endpoint(tool: ToolSpec, fn: Callable[..., Any], sessions: sessionmaker[Session]) -> Callable[..., Any]:
    """An `async def` endpoint as AWM generates them: open a SQLAlchemy session, query, commit writes, close."""

    async def endpoint(args: dict[str, Any] = Body(default_factory=dict)) -> Any:
        session = sessions()
        try:
            conn = session.connection().connection.driver_connection
            value = fn(conn, **args)
            if _is_error(value):
                session.rollback()
                return JSONResponse(value, status_code=404 if value["error"].get("code") == "not_found" else 400)
            if tool.mutates:
                session.commit()
            return value
        finally:
            session.close()

    return endpoint


def build_app(bundle_dir: Path, db_path: Path) -> FastAPI:
    """The environment's FastAPI app with its MCP server mounted at /mcp."""
    bundle = Bundle.open(bundle_dir)
    spec = bundle.spec
    namespace: dict[str, Any] = {"__name__": "tools"}
    exec(compile(bundle.tools_source, "tools.py", "exec"), namespace)
    engine = create_engine(f"sqlite:///{db_path}", connect_args={"check_same_thread": False})
    sessions = sessionmaker(bind=engine, autocommit=False, autoflush=False)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with forward, manager.run():  # both are bound below, before the app starts
            yield

    app = FastAPI(title=spec.title, lifespan=lifespan)
    for tool in spec.tools:
        app.post(f"/api/{tool.name}", operation_id=tool.name, summary=tool.description)(
            _endpoint(tool, namespace[tool.name], sessions)
        )
    forward = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://awm")
    server = Server(spec.id, on_list_tools=_list_tools(spec.tools), on_call_tool=_call_tool_forwarder(forward))
    manager = StreamableHTTPSessionManager(app=server)
    app.router.routes.append(Route("/mcp", endpoint=StreamableHTTPASGIApp(manager)))
    return app


def _list_tools(tools: list[ToolSpec]) -> Callable[..., Any]:
    listed = [
        types.Tool(name=t.name, description=t.description, input_schema={"type": "object", **t.parameters})
        for t in tools
    ]

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    return list_tools


def _call_tool_forwarder(forward: httpx.AsyncClient) -> Callable[..., Any]:
    """tools/call -> HTTP POST to the tool's endpoint on the same app (the fastapi_mcp way)."""

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        response = await forward.post(f"/api/{params.name}", json=dict(params.arguments or {}))
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=response.text)],
            is_error=response.status_code >= 400,
        )

    return call_tool


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bundle", type=Path, required=True)
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    app = build_app(args.bundle, args.db)
    print(json.dumps({"serving": str(args.bundle)}), flush=True)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
