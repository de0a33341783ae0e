"""The HTTP server under the app: deadlines for slow requests, and parse errors in the JSON envelope.

aiohttp waits for a request's head as long as the client likes, so a few hundred
connections that each send half a request line hold the board's sockets for
ever. Here a head must arrive within ``BOARD_HEADER_TIMEOUT`` seconds of its
first byte (or of the connection), and a body within ``BOARD_BODY_TIMEOUT``
(:func:`body_deadline_middleware`); a late one has its connection closed.

A request the parser refuses (a request line over :data:`~.gate.MAX_LINE`, a
header over 8,190 bytes, bytes that are not HTTP) never reaches a middleware;
aiohttp would answer it in plain text that echoes the request. It gets the
envelope of 10-api.md instead, and nothing of what was sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError, LineTooLong
from aiohttp.web_protocol import RequestHandler

from ..errors import BoardError, InvalidArgument, LimitExceeded
from ..validation import figure
from .gate import MAX_LINE, MAX_URL, SERVER_ARGS
from .keys import METRICS

log = logging.getLogger(__name__)


class BoardRequestHandler(RequestHandler):
    """aiohttp's connection handler, with a deadline for each request's head."""

    def __init__(self, manager: web.Server, *, header_timeout: float, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._header_timeout = header_timeout
        self._head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._head_deadline is None and self._current_request is None:
            self._arm()  # the first bytes of the next request on a kept-alive connection
        super().data_received(data)
        if self._messages:  # a whole head has arrived
            self._disarm()

    def connection_lost(self, exc: BaseException | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._head_deadline = asyncio.get_running_loop().call_later(self._header_timeout, self._late)

    def _disarm(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _late(self) -> None:
        self._head_deadline = None
        if self._current_request is None and not self._messages:
            self.force_close()

    def handle_error(
        self,
        request: Any,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if not isinstance(exc, HttpProcessingError):
            return super().handle_error(request, status, exc, message)
        log.debug("refused a request the HTTP parser could not read: %s", type(exc).__name__)
        error: BoardError
        if isinstance(exc, LineTooLong):
            error = LimitExceeded(
                f"The request line or a header is too long; a URL takes at most {figure(MAX_URL)} bytes "
                "and a header 8,190.",
                limit=MAX_LINE,
            )
        else:
            error = InvalidArgument("The request is not well-formed HTTP/1.1.")
        answer = web.json_response(error.to_json(), status=error.status)
        answer.force_close()
        return answer


class BoardServer(web.Server):
    """aiohttp's server, making :class:`BoardRequestHandler` connections."""

    def __init__(self, server: web.Server, header_timeout: float) -> None:
        super().__init__(
            server.request_handler,
            request_factory=server.request_factory,
            handler_cancellation=server.handler_cancellation,
            **server._kwargs,
        )
        self._header_timeout = header_timeout

    def __call__(self) -> RequestHandler:
        return BoardRequestHandler(self, loop=self._loop, header_timeout=self._header_timeout, **self._kwargs)


class BoardRunner(web.AppRunner):
    """An app runner whose server closes slow connections (``board serve`` and the tests use it)."""

    def __init__(self, app: web.Application, *, header_timeout: float, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self._header_timeout = header_timeout

    async def _make_server(self) -> web.Server:
        return BoardServer(await super()._make_server(), self._header_timeout)


FORMS = ("multipart/form-data", "application/x-www-form-urlencoded")


def body_deadline_middleware(seconds: float) -> Callable[..., Awaitable[web.StreamResponse]]:
    """Read a body before its route runs, closing the connection if it takes over ``seconds``."""

    @web.middleware
    async def body_deadline(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if request.body_exists:
            # A body that came whole with its headers (most of them) has nothing left to wait for:
            # no timer is armed for it (about 4 % of the event loop's time a post at 128 posters).
            deadline = contextlib.nullcontext() if request.content.is_eof() else asyncio.timeout(seconds)
            try:
                async with deadline:
                    if request.content_type in FORMS:
                        await request.post()  # kept by the request: a multipart stream reads once
                    else:
                        await request.read()
            except TimeoutError:
                request.protocol.force_close()
                raise asyncio.CancelledError from None
            except (web.RequestPayloadError, ValueError):
                pass  # a body that does not decode: the route's own read answers it
        return await handler(request)

    return body_deadline


def freeze_startup_heap() -> int:
    """Keep what the board built to start (modules, templates, the store, the app) out of
    Python's collector for good, its garbage collected first.

    A full collection walks every object the process holds, and most of them are the startup's:
    each took 85 to 115 ms on a fresh board, the event loop stopped meanwhile, so every request
    in flight waited that long. Frozen, the same collection takes 3 to 10 ms (bench/README.md,
    "The startup heap kept out of the collector"). What is frozen is never freed, which is what
    the startup's objects are for: they live as long as the process. Returns how many were
    frozen (counting them walks them all: once, here, not on every scrape of /metrics)."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


async def serve(
    app: web.Application, host: str, port: int, header_timeout: float, started: Callable[[], None]
) -> None:
    """Run ``app`` on ``host:port`` until SIGINT or SIGTERM, as ``board serve`` does.

    The signal only ends the wait: the runner's clean-up then stops listening and lets held
    requests answer (long-polls answer empty) before the app's resources close."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    runner = BoardRunner(app, header_timeout=header_timeout, access_log=None, **SERVER_ARGS)
    await runner.setup()
    app[METRICS].frozen_objects = freeze_startup_heap()
    try:
        await web.TCPSite(runner, host, port).start()
        started()
        await stop.wait()
    finally:
        await runner.cleanup()
