"""Every failure leaves as the one JSON error envelope; no trace reaches a client.

A streamed answer whose headers are sent (:func:`begin`) can no longer be answered with an
error: one after that cuts the connection, which every stream's reader takes as a break
(the daemon falls back to long-polling, a page's event source connects again). Answered
in the middle of the stream, the error would be read as more of it.
"""

from __future__ import annotations

import logging
import secrets
import sys
from collections.abc import Awaitable, Callable

from aiohttp import web

from ..errors import (
    BoardError,
    InvalidArgument,
    LimitExceeded,
    NotFound,
    Unauthenticated,
    Unavailable,
)
from ..store.writer import DatabaseUnreachable
from .routing import json_response

log = logging.getLogger("board.api")


def error_response(exc: BoardError) -> web.Response:
    headers = {}
    retry_after = exc.details.get("retry_after")
    if retry_after is not None:
        headers["Retry-After"] = str(max(1, round(retry_after + 0.499)))
    return json_response(exc.to_json(), exc.status, headers)


def from_http(exc: web.HTTPException) -> BoardError:
    """aiohttp's refusal of a request (no route, a method, a body too large) as the board's error."""
    if exc.status == 404:
        return NotFound("route")
    if exc.status == 405:
        return InvalidArgument(f"{exc.reason}: see /api for the methods of each route.")
    if exc.status == 413:
        return LimitExceeded("The request body is over 1 MB.")
    if exc.status == 401:
        return Unauthenticated(exc.reason)
    return InvalidArgument(exc.reason)


#: The streamed answer a request has begun (:func:`begin`).
BEGUN = web.RequestKey("begun", web.StreamResponse)


async def begin(request: web.Request, response: web.StreamResponse) -> None:
    """Send a streamed answer's headers: from here on an error cuts the connection instead
    of being answered (the module's docstring)."""
    await response.prepare(request)
    request[BEGUN] = response


@web.middleware
async def error_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    try:
        return await handler(request)
    except ConnectionResetError:
        raise  # the client left mid-answer: nothing to tell it, the access log says so
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return _answer(request, from_http(exc))
    except BoardError as exc:
        return _answer(request, exc)
    except Exception:
        return _answer(request, unexpected(request.method, request.path))


def _answer(request: web.Request, exc: BoardError) -> web.StreamResponse:
    """The error's envelope, or, when a streamed answer has begun, that answer cut short."""
    begun: web.StreamResponse | None = request.get(BEGUN)
    if begun is None:
        return error_response(exc)
    log.warning("%s %s: cut its stream short: %s", request.method, request.path, exc.message)
    if request.transport is not None:
        request.transport.abort()
    return begun  # the server's write of its end finds the connection closed


def unexpected(method: str, path: str) -> Unavailable:
    """A surprise, logged with its trace under an incident id; the caller gets only the id.

    A database server that does not answer is no surprise: one line in the log (where the
    store names the database), and the caller is told to retry.
    """
    exc = sys.exc_info()[1]
    if isinstance(exc, DatabaseUnreachable):
        log.warning("%s %s: the database does not answer: %s", method, path, exc)
        return Unavailable("The database does not answer; retry in a moment.")
    incident = secrets.token_hex(6)
    log.exception("unhandled error %s on %s %s", incident, method, path)
    return Unavailable(f"Internal error {incident}; it is logged. Retry later.")
