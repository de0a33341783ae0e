"""The app factory: assembles routes, middlewares and resources, and nothing else."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator

from aiohttp import web

from .api.access import metrics_middleware
from .api.errors import error_middleware
from .api.gate import Hosts, gate_middleware
from .api.keys import CONTEXT, HOSTS, METRICS, PRESENCE, REPLAYS, ROUTES
from .api.metrics import Metrics
from .api.routing import endpoint
from .api.serving import body_deadline_middleware
from .api.table import all_routes
from .clock import Clock
from .housekeeping import housekeeping, outbox
from .mcp.endpoint import add_routes as add_mcp_routes
from .mcp.endpoint import mcp_transport
from .pages import install as install_pages
from .pages.routing import page_errors
from .pipeline import TEST_SIGKILL
from .services import remote
from .services.auth import Presence
from .services.context import Context
from .services.requests import Replays
from .settings import Settings
from .store.messages import max_id
from .store.stores import open_store

log = logging.getLogger(__name__)

MAX_BODY = 1024 * 1024


async def _release_long_polls(app: web.Application) -> None:
    """Held long-polls answer empty at once, so stopping the board does not wait out their holds."""
    app[CONTEXT].hub.close()


def create_app(settings: Settings, *, clock: Clock | None = None, exclusive: bool = True) -> web.Application:
    """A board application on ``settings.db``; the database opens with the app.

    Raises ``ValueError`` for a ``BOARD_PUBLIC_URL`` that is not an http(s) URL.
    """
    hosts = Hosts.from_settings(settings)
    middlewares = [metrics_middleware, error_middleware, gate_middleware(hosts), page_errors]
    middlewares.append(body_deadline_middleware(settings.body_timeout))
    app = web.Application(middlewares=middlewares, client_max_size=MAX_BODY)
    app[HOSTS] = hosts
    routes = all_routes()
    for route in routes:
        app.router.add_route(route.method, route.path, endpoint(route))
    add_mcp_routes(app)
    app[ROUTES] = routes
    install_pages(app, clock or Clock())
    app[METRICS] = Metrics()
    app[PRESENCE] = Presence()
    app[REPLAYS] = Replays()
    if os.environ.get(TEST_SIGKILL):
        log.warning("%s is set: this board kills itself on the request id it names", TEST_SIGKILL)

    async def database(app: web.Application) -> AsyncIterator[None]:
        db = open_store(settings, exclusive=exclusive)
        await db.open()
        ctx = Context(db=db, settings=settings, clock=clock or Clock())
        remote.connect(ctx)
        ctx.hub.last_id = await db.read(max_id)
        app[CONTEXT] = ctx
        yield
        await db.close()

    app.cleanup_ctx.append(database)
    app.cleanup_ctx.append(mcp_transport)
    app.on_shutdown.append(_release_long_polls)
    app.cleanup_ctx.append(housekeeping)
    app.cleanup_ctx.append(outbox)
    return app
