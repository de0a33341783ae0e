"""The JSON API's side of a call: from an HTTP request to the pipeline, and back as JSON.

:func:`endpoint` turns a :class:`~.route.Route` into an aiohttp handler that
authenticates (or, for a ``loopback`` route, lets a caller on this machine in
without a token), hands the call to :func:`~..pipeline.perform` (presence, the
write limit, strict parsing, replays, the shield), and renders its answer as JSON.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from ..errors import Forbidden, InvalidArgument, Unauthenticated
from ..jsonvalues import MAX_DEPTH, encode
from ..pipeline import MUTATING, Answer, RequestId, perform, request_id
from ..principal import Principal
from ..services import auth, sessions
from ..validation import parse_body, parse_query
from .keys import CONTEXT
from .route import Call, Route, bearer_token

CSRF_HEADER = "X-CSRF-Token"


def from_loopback(request: web.Request) -> bool:
    try:
        return ipaddress.ip_address(request.remote or "").is_loopback
    except ValueError:
        return False


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        body=encode(data),
        status=status,
        content_type="application/json",
        charset="utf-8",
        headers=headers,
    )


async def read_body(request: web.Request) -> bytes:
    """The body as sent; one that does not decode as its Content-Encoding says is INVALID_ARGUMENT."""
    try:
        return await request.read()
    except web.RequestPayloadError as exc:  # e.g. not the gzip its Content-Encoding says
        why = str(exc).strip().splitlines()[-1].strip()  # aiohttp prefixes "400, message:"
        raise InvalidArgument(f"The body cannot be read: {why}.") from None


async def _json_body(request: web.Request) -> Any:
    raw = await read_body(request)  # already read, within BOARD_BODY_TIMEOUT (api/serving.py)
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidArgument(f"The body is not valid JSON: {exc}.") from None
    except RecursionError:
        raise InvalidArgument(
            f"The body nests too deeply; a value may nest at most {MAX_DEPTH} levels."
        ) from None


def _request_id(request: web.Request, data: Any) -> RequestId | None:
    """The call's request id, from the body's ``request_id`` or the ``Idempotency-Key`` header."""
    rid = request.headers.get("Idempotency-Key")
    if isinstance(data, dict) and "request_id" in data:
        body_rid = data.pop("request_id")
        if rid is not None and body_rid != rid:
            raise InvalidArgument("request_id and Idempotency-Key differ; send one.")
        rid = body_rid
    if rid is None:
        return None
    return request_id(rid, request.method, request.path, data)


async def authenticated(
    request: web.Request,
    *,
    browser: bool = False,
    mutating: bool = False,
    keeper: bool = False,
    runner: bool = False,
) -> Principal:
    """The principal behind the request's bearer token (UNAUTHENTICATED without one).

    With ``browser`` (the JSON API), a request without an ``Authorization`` header may use the
    pages' session cookie instead, and then a ``mutating`` one must carry the session's CSRF token.
    A keeper's token is FORBIDDEN unless the caller allows it (``keeper``: the fleet calls), and
    so is the routines runner's (``runner``: its reads of routines and its runs' steps).
    """
    ctx = request.app[CONTEXT]
    header = request.headers.get("Authorization")
    cookie = request.cookies.get(sessions.COOKIE)
    if browser and header is None and cookie:
        session = await sessions.resolve(ctx, cookie)
        if session is None:
            raise Unauthenticated("Your session has ended; sign in again at /login.")
        if mutating:
            sessions.require_csrf(session, request.headers.get(CSRF_HEADER))
        principal = session.principal
    else:
        principal = await auth.authenticate(ctx, bearer_token(request.headers))
    if principal.is_keeper and not keeper:
        raise Forbidden("A keeper token is for the fleet calls only: its report, its bots' tokens.")
    if principal.is_runner and not runner:
        raise Forbidden("A runner token is for the routines runner only: reading routines, stepping runs.")
    return principal


def parse_input(route: Route, call: Call, query: Mapping[str, str], data: Any) -> None:
    """Parse the query string and the body into the route's declared types, strictly."""
    call.query = parse_query(route.query, query) if route.query else None
    if route.query is None and route.method == "GET" and query:
        raise InvalidArgument(f"{route.path} takes no parameters.")
    if route.body is not None:
        call.body = parse_body(route.body, data)
    elif data:
        raise InvalidArgument(f"{route.method} {route.path} takes no body fields.")


@dataclass
class Sent:
    """An API call as it came; the pipeline has it parsed once the write limit let it in."""

    route: Route
    call: Call

    @property
    def request(self) -> web.Request:
        return self.call.request

    async def parse(self) -> tuple[Call, RequestId | None]:
        if self.route.signed is not None:
            # The signature is over the bytes as sent: checked before they are parsed at all.
            self.call.body = await self.route.signed(self.call, await read_body(self.request))
            return self.call, None
        data: Any = None
        rid = None
        if self.route.method in MUTATING:
            data = await _json_body(self.request)
            rid = _request_id(self.request, data)
        parse_input(self.route, self.call, self.request.query, data)
        return self.call, rid


def endpoint(route: Route) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def handle(request: web.Request) -> web.StreamResponse:
        ctx = request.app[CONTEXT]
        principal = None
        if not route.public and route.signed is None and not (route.loopback and from_loopback(request)):
            principal = await authenticated(
                request,
                browser=True,
                mutating=route.method in MUTATING,
                keeper=route.keeper,
                runner=route.runner,
            )
        # Without a header, only the session cookie can have named a principal.
        by_session = principal is not None and "Authorization" not in request.headers
        call = Call(request, ctx, principal, params=request.match_info, by_session=by_session)
        answer = await perform(ctx, principal, route, Sent(route, call))
        held = bool(getattr(call.query, "wait", None))  # a long-poll: its credential may have changed
        if principal is not None and held and answer.replay is None:
            await _still_held_by(request, route, principal)
        return rendered(answer)

    handle.__name__ = getattr(route.handler, "__name__", "handle")
    return handle


async def _still_held_by(request: web.Request, route: Route, principal: Principal) -> None:
    """UNAUTHENTICATED when the credential a long-poll was held with no longer stands for its
    principal: revoked, rotated, signed out, or its bot moved while it waited. What the wait
    took in is not answered to it; the token cache, which every such change empties, makes
    asking again cheap."""
    again = await authenticated(request, browser=True, keeper=route.keeper, runner=route.runner)
    if again != principal:
        raise Unauthenticated("The credential this wait was held with changed while it waited.")


def rendered(answer: Answer) -> web.StreamResponse:
    """An answer as JSON; a retry's first answer as it was kept, marked as a replay."""
    if answer.replay is not None:
        return web.Response(
            text=answer.replay.text,
            status=answer.status,
            content_type="application/json",
            headers={"Idempotent-Replay": "true"},
        )
    if isinstance(answer.data, web.StreamResponse):
        return answer.data
    return json_response(answer.data, answer.status)
