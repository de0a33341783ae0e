"""Typed application state, declared in one place."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:
    pass

CONTEXT = web.AppKey("context", "Context")
PRESENCE = web.AppKey("presence", "Presence")
ROUTES = web.AppKey("routes", "list[Route]")
REPLAYS = web.AppKey("replays", "Replays")
MCP = web.AppKey("mcp", "McpTransport")
