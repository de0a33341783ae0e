"""What the app keeps for ``/mcp``: the SDK's session manager and the routes its tools run.

Its own module, so that the app's typed keys can name it without importing the endpoint.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from ..api.route import Route


@dataclass
class McpTransport:
    manager: StreamableHTTPSessionManager
    routes: dict[tuple[str, str], Route]
