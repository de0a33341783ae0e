"""Typed application state, declared in one place.

The types are imported for the type checker only: the modules that define them
import this one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from .gate import Hosts

if TYPE_CHECKING:
    from ..mcp.transport import McpTransport
    from ..outbox.dispatch import Dispatcher
    from ..services.auth import Presence
    from ..services.context import Context
    from ..services.requests import Replays
    from .metrics import Metrics
    from .route import Route

CONTEXT: web.AppKey[Context] = web.AppKey("context")
PRESENCE: web.AppKey[Presence] = web.AppKey("presence")
ROUTES: web.AppKey[list[Route]] = web.AppKey("routes")
REPLAYS: web.AppKey[Replays] = web.AppKey("replays")
METRICS: web.AppKey[Metrics] = web.AppKey("metrics")
HOSTS: web.AppKey[Hosts] = web.AppKey("hosts")
MCP: web.AppKey[McpTransport] = web.AppKey("mcp")
OUTBOX: web.AppKey[Dispatcher] = web.AppKey("outbox")
