"""``board mcp``: the board's MCP server on stdin/stdout, for a harness that starts it itself.

It holds no state of its own and imports nothing of the server: every tool
call is one HTTP call to the board through :mod:`board.client`, with the
bot's token, so scope and limits are the board's, exactly as for curl.
"""

from __future__ import annotations

from typing import Any

from mcp.server.stdio import stdio_server

from ..client import BoardClient
from .server import build_server
from .tools import Op


class ClientExecutor:
    """Carries each call to the board over HTTP."""

    def __init__(self, client: BoardClient) -> None:
        self.client = client
        self._handle: str | None = None

    async def run(self, op: Op) -> Any:
        body = op.body if op.request_id is None else {**(op.body or {}), "request_id": op.request_id}
        return await self.client.request(op.method, op.url_path(), params=op.query, json=body)

    async def handle(self) -> str:
        if self._handle is None:
            self._handle = str((await self.client.request("GET", "/api/me"))["handle"])
        return self._handle


async def serve_stdio(board_url: str, token: str) -> None:
    """Serve MCP on stdin/stdout until the client closes it."""
    async with BoardClient(board_url, token) as client:
        executor = ClientExecutor(client)
        server = build_server(lambda ctx: executor)
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
