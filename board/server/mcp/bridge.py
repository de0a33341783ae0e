"""Serve one aiohttp request with an ASGI application: how the SDK's transport runs inside the board.

The MCP SDK's streamable HTTP transport is an ASGI application; the board is
aiohttp. Rather than run a second web server, the ``/mcp`` handler hands its
request to the transport as one ASGI ``http`` call and streams what the
transport sends back. ``extra`` is merged into the ASGI scope: it is how the
handler passes what it resolved (the caller's executor) to the tool calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from aiohttp import web

from ..api.errors import begin
from ..api.routing import read_body

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
AsgiApp = Callable[
    [Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]
]


def _scope(request: web.Request, extra: dict[str, Any]) -> Scope:
    transport = request.transport
    peer = transport.get_extra_info("peername") if transport else None
    local = transport.get_extra_info("sockname") if transport else None
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.raw_path.split("?", 1)[0].encode(),
        "query_string": request.query_string.encode(),
        "root_path": "",
        "headers": [(name.lower(), value) for name, value in request.raw_headers],
        "client": tuple(peer[:2]) if peer else None,
        "server": tuple(local[:2]) if local else None,
        **extra,
    }


async def serve(request: web.Request, app: AsgiApp, extra: dict[str, Any]) -> web.StreamResponse:
    """Run ``app`` for this request; its response, streamed as the app sends it."""
    body = await read_body(request)
    finished = asyncio.Event()
    response: web.StreamResponse | None = None
    sent_body = False

    async def receive() -> Message:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": body, "more_body": False}
        await finished.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal response
        if message["type"] == "http.response.start":
            response = web.StreamResponse(status=message["status"])
            for name, value in message.get("headers", []):
                response.headers.add(name.decode("latin-1"), value.decode("latin-1"))
            await begin(request, response)
        elif message["type"] == "http.response.body":
            assert response is not None, "the application sent a body before its start"
            await response.write(message.get("body", b""))
            if not message.get("more_body", False):
                await response.write_eof()
                finished.set()

    try:
        await app(_scope(request, extra), receive, send)
    finally:
        finished.set()
    if response is None:
        raise RuntimeError("the MCP transport ended without a response")
    return response
