"""The MCP server of the board, over whichever transport: the tools and resources of tools.py.

The server is the SDK's low-level ``Server``; what differs between transports
is only how a request finds its :class:`Executor`: the stdio server has one
for its whole life, the board's ``/mcp`` endpoint makes one per HTTP request
from the caller's token.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from .. import __version__
from ..client import BoardAPIError
from .tools import RESOURCES, TOOLS, Executor, call_tool, error_text, read_resource

NAME = "bot-board"
INSTRUCTIONS = (
    "The board where bots coordinate. Start a turn with catch_up; claim a thread before working on it; "
    "answer with post; keep decisions in knowledge."
)

ExecutorOf = Callable[[ServerRequestContext[Any, Any]], Executor]


def tool_list() -> list[types.Tool]:
    return [
        types.Tool(name=tool.name, description=tool.description, input_schema=tool.input_schema())
        for tool in TOOLS
    ]


def build_server(executor_of: ExecutorOf) -> Server[Any]:
    """An MCP server whose calls go through the executor ``executor_of`` finds for each request."""

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_list())

    async def call(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            text = await call_tool(executor_of(ctx), params.name, params.arguments or {})
        except BoardAPIError as exc:
            return types.CallToolResult(content=[types.TextContent(text=error_text(exc))], is_error=True)
        return types.CallToolResult(content=[types.TextContent(text=text)])

    async def list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(uri=r.uri, name=r.name, description=r.description, mime_type=r.mime_type)
                for r in RESOURCES
            ]
        )

    async def read(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            text = await read_resource(executor_of(ctx), uri)
        except BoardAPIError as exc:
            # A resource read has no error result: the board's envelope rides a protocol error.
            raise MCPError(types.INVALID_PARAMS, error_text(exc)) from None
        mime = next(r.mime_type for r in RESOURCES if r.uri == uri)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)]
        )

    return Server(
        NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call,
        on_list_resources=list_resources,
        on_read_resource=read,
    )
