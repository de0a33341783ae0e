"""The access middleware: every request counted, timed and logged under a fresh request id."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable

from aiohttp import web

from .. import logs
from .keys import METRICS

access = logging.getLogger("board.access")

#: Request ids name a request in the logs and guard nothing, so they come from a plain
#: generator: ``secrets`` reads the kernel's, and that call lets go of the interpreter's
#: lock, which the event loop then waits to take back from the database threads, on every
#: request (bench/README.md).
_ids = random.Random()

CLIENT_GONE = 499
"""Logged for a client that left before any answer went out (nginx's "client closed request")."""

#: Set on a request whose stream the board dropped (a reader too far behind): the log says so,
#: where it would otherwise read as a client that went away.
CUT = web.RequestKey("cut", bool)


def cutter(request: web.Request) -> Callable[[], None]:
    """What drops a stream's connection when its reader falls too far behind, marking it cut."""

    def cut() -> None:
        transport = request.transport
        if transport is not None and not transport.is_closing():  # else the client left first
            request[CUT] = True
            transport.abort()  # unflushed bytes and all

    return cut


def _sent(request: web.Request) -> bool:
    """Whether a stream's headers (and so its status) reached the client before it left."""
    return bool(getattr(request.writer, "output_size", 0))


@web.middleware
async def metrics_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Count and time every request, and log one line for it under a fresh request id."""
    started = time.perf_counter()
    rid = f"{_ids.getrandbits(48):012x}"
    token = logs.request_id.set(rid)
    status = 500
    gone = False
    try:
        response = await handler(request)
        status = response.status
        if not response.prepared:  # a stream (SSE) has sent its headers already
            response.headers["X-Request-Id"] = rid
            # The board's own time for this answer, for browsers' tools and the benchmarks.
            response.headers["Server-Timing"] = f"app;dur={(time.perf_counter() - started) * 1000:.2f}"
        return response
    except web.HTTPException as exc:
        status = exc.status
        raise
    except (asyncio.CancelledError, ConnectionResetError):
        # A closed tab ends its stream this way: the client left, the server did not fail.
        gone = request.transport is None or request.transport.is_closing()
        if gone:
            status = 200 if _sent(request) else CLIENT_GONE
        raise
    finally:
        seconds = time.perf_counter() - started
        info = request.match_info.route.resource
        route = info.canonical if info is not None else "unmatched"
        request.app[METRICS].observe(request.method, route, status, seconds)
        access.info(
            "%s %s %s%s",
            request.method,
            route,
            status,
            (" (cut: the reader fell behind)" if request.get(CUT) else " (client went away)") if gone else "",
            extra={
                "method": request.method,
                "route": route,
                "status": status,
                "ms": round(seconds * 1000, 2),
                "request_id": rid,
                "gone": gone,
                "cut": bool(request.get(CUT)),
            },
        )
        logs.request_id.reset(token)
