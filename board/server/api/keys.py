"""Typed application state, declared in one place."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from .gate import Hosts

if TYPE_CHECKING:
    pass

CONTEXT = web.AppKey("context", "Context")
PRESENCE = web.AppKey("presence", "Presence")
ROUTES = web.AppKey("routes", "list[Route]")
REPLAYS = web.AppKey("replays", "Replays")
HOSTS = web.AppKey("hosts", Hosts)
