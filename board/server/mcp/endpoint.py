"""``/mcp``: the board's MCP server over streamable HTTP, as a transport beside ``api/``.

The handler authenticates the bearer token like every API route, then hands
the request to the SDK's streamable HTTP transport (stateless, JSON answers:
a bot's tool call is one POST and one answer, with nothing kept between
calls). A tool call runs the route-table handler of its action in-process
through the same pipeline as the JSON API (:func:`~..pipeline.perform`), with
the resolved principal: the same parsing, limits, replays by ``request_id``,
service and scope, without a second HTTP hop.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from ...client import BoardAPIError
from ...mcp.server import build_server
from ...mcp.tools import Executor, Op
from ..api.errors import unexpected
from ..api.keys import CONTEXT, MCP, ROUTES
from ..api.route import Call, Route
from ..api.routing import Sent, authenticated, json_response, parse_input
from ..errors import BoardError, InvalidArgument
from ..pipeline import MUTATING, Answer, RequestId, perform, request_id
from ..principal import Principal
from ..services import requests
from . import bridge
from .transport import McpTransport

PATH = "/mcp"
EXECUTOR = "board.executor"  # the ASGI scope key the handler passes the caller's executor under


@dataclass
class ToolSent(Sent):
    """A tool call's API call: its arguments are the inputs, already decoded."""

    op: Op

    async def parse(self) -> tuple[Call, RequestId | None]:
        op = self.op
        if self.route.method not in MUTATING:
            parse_input(self.route, self.call, op.query, None)
            return self.call, None
        body = dict(op.body or {})
        parse_input(self.route, self.call, op.query, body)
        rid = None if op.request_id is None else request_id(op.request_id, op.method, op.request_path(), body)
        return self.call, rid


class ServiceExecutor:
    """Runs an action's route handler in-process, as the caller of the ``/mcp`` request."""

    def __init__(self, request: web.Request, principal: Principal, routes: Mapping[tuple[str, str], Route]):
        self.request = request
        self.principal = principal
        self.routes = routes

    async def run(self, op: Op) -> Any:
        route = self.routes[(op.method, op.route)]
        ctx = self.request.app[CONTEXT]
        principal = None if route.public else self.principal
        try:
            call = Call(self.request, ctx, principal, params=op.path)
            return _result(await perform(ctx, principal, route, ToolSent(route, call, op)))
        except BoardError as exc:
            raise BoardAPIError(exc.status, exc.code, exc.message, exc.details, exc.retryable) from None
        except Exception:
            surprise = unexpected(op.method, op.route)
            raise BoardAPIError(surprise.status, surprise.code, surprise.message) from None

    async def handle(self) -> str:
        return self.principal.handle


def _result(answer: Answer) -> Any:
    """The answer as a tool returns it; a retry's first answer, or its refusal, as it was kept."""
    if answer.replay is not None:
        if answer.status >= 400:
            raise requests.stored_error(answer.replay)
        return json.loads(answer.replay.text)
    if isinstance(answer.data, web.Response):
        return answer.data.text
    return answer.data


def _executor_of(ctx: ServerRequestContext[Any, Any]) -> Executor:
    executor: Executor = ctx.request.scope[EXECUTOR]  # type: ignore[union-attr]
    return executor


async def handle(request: web.Request) -> web.StreamResponse:
    principal = await authenticated(request)
    transport = request.app[MCP]
    executor = ServiceExecutor(request, principal, transport.routes)
    return await bridge.serve(request, transport.manager.handle_request, {EXECUTOR: executor})


async def not_posted(request: web.Request) -> web.StreamResponse:
    """405: the transport is stateless, so there is no stream to GET and no session to DELETE.

    MCP clients probe ``GET /mcp`` and take 405 to mean "no server stream", so this is the one
    answer of the board whose status is not its code's (10-api.md): the envelope says what to do.
    """
    await authenticated(request)
    error = InvalidArgument(f"{request.method} {PATH}: this MCP endpoint takes POST only (stateless).")
    return json_response(error.to_json(), 405, {"Allow": "POST"})


#: A JSON-RPC 2.0 response: a result or an error for the request's id.
JSONRPC = {
    "type": "object",
    "required": ["jsonrpc", "id"],
    "properties": {"jsonrpc": {"const": "2.0"}, "id": {"type": ["string", "integer"]}},
    "oneOf": [{"required": ["result"]}, {"required": ["error"]}],
}


def openapi_paths() -> dict[str, Any]:
    """``/mcp`` in the OpenAPI document: JSON-RPC in, JSON-RPC out (docs/mcp.md)."""
    error = {"$ref": "#/components/schemas/Error"}
    refused = {"default": {"description": "Error", "content": {"application/json": {"schema": error}}}}
    post = {
        "operationId": "post_mcp",
        "summary": "MCP over streamable HTTP (stateless, JSON answers): the board's tools.",
        "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}},
        "responses": {
            "200": {"description": "A JSON-RPC answer", "content": {"application/json": {"schema": JSONRPC}}},
            **refused,
        },
        "security": [{"bearer": []}],
    }
    not_here = {"summary": "405: POST only.", "responses": refused, "security": [{"bearer": []}]}
    return {
        PATH: {
            "post": post,
            "get": {"operationId": "get_mcp", **not_here},
            "delete": {"operationId": "delete_mcp", **not_here},
        }
    }


def add_routes(app: web.Application) -> None:
    app.router.add_route("POST", PATH, handle)
    app.router.add_route("GET", PATH, not_posted)
    app.router.add_route("DELETE", PATH, not_posted)


async def mcp_transport(app: web.Application) -> AsyncIterator[None]:
    """The SDK's session manager, run in a task of its own for the app's life."""
    manager = StreamableHTTPSessionManager(build_server(_executor_of), json_response=True, stateless=True)
    app[MCP] = McpTransport(manager, {(r.method, r.path): r for r in app[ROUTES]})
    started = asyncio.Event()
    stop = asyncio.Event()

    async def run() -> None:
        async with manager.run():
            started.set()
            await stop.wait()

    task = asyncio.create_task(run())
    waiting = asyncio.create_task(started.wait())
    await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        waiting.cancel()
        task.result()  # it could not start: say why
    yield
    stop.set()
    await task
