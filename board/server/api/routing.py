"""The plumbing every API call goes through.

:func:`endpoint` turns a :class:`~.route.Route` into an aiohttp handler that
authenticates (or, for a ``loopback`` route, lets a caller on this machine in
without a token), rate-limits writes, parses the body and query strictly,
replays retries by request id, and renders the service's answer as JSON.
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import json
import os
import re
import signal
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web

from ..errors import BoardError, Forbidden, InvalidArgument, RequestIdReuse, Unauthenticated
from ..jsonvalues import MAX_DEPTH, dumps, encode
from ..principal import Principal
from ..services import actions, audit, auth, sessions
from ..services.context import Context
from ..store import requests as request_store
from ..validation import parse_body, parse_query
from .keys import CONTEXT, PRESENCE, REPLAYS
from .route import Call, Route

REQUEST_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
MUTATING = {"POST", "PUT", "PATCH", "DELETE"}
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


def _request_id(request: web.Request, data: Any) -> str | None:
    rid = request.headers.get("Idempotency-Key")
    if isinstance(data, dict) and "request_id" in data:
        body_rid = data.pop("request_id")
        if rid is not None and body_rid != rid:
            raise InvalidArgument("request_id and Idempotency-Key differ; send one.")
        rid = body_rid
    if rid is None:
        return None
    if not isinstance(rid, str) or not REQUEST_ID.fullmatch(rid):
        raise InvalidArgument("request_id is 1-128 of [A-Za-z0-9_-].", field="request_id")
    return rid


def _fingerprint(request: web.Request, data: Any) -> str:
    canonical = json.dumps([request.method, request.path, data], sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


async def authenticated(
    request: web.Request,
    *,
    browser: bool = False,
    mutating: bool = False,
    keeper: bool = False,
    runner: bool = False,
) -> Principal:
    """The principal behind the request's bearer token (UNAUTHENTICATED without one), its presence touched.

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
        token = header[7:].strip() if header and header[:7].lower() == "bearer " else None
        principal = await auth.authenticate(ctx, token)
    if principal.is_keeper and not keeper:
        raise Forbidden("A keeper token is for the fleet calls only: its report, its bots' tokens.")
    if principal.is_runner and not runner:
        raise Forbidden("A runner token is for the routines runner only: reading routines, stepping runs.")
    await request.app[PRESENCE].touch(ctx, principal)
    return principal


def limit_writes(ctx: Context, principal: Principal | None) -> None:
    """The per-token write limit: RATE_LIMITED when a caller writes too fast."""
    if principal is not None:
        assert ctx.limiter is not None
        ctx.limiter.check(principal.agent_id)


def parse_input(route: Route, call: Call, query: Mapping[str, str], data: Any) -> None:
    """Parse the query string and the body into the route's declared types, strictly."""
    call.query = parse_query(route.query, query) if route.query else None
    if route.query is None and route.method == "GET" and query:
        raise InvalidArgument(f"{route.path} takes no parameters.")
    if route.body is not None:
        call.body = parse_body(route.body, data)
    elif data:
        raise InvalidArgument(f"{route.method} {route.path} takes no body fields.")


def endpoint(route: Route) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def handle(request: web.Request) -> web.StreamResponse:
        ctx = request.app[CONTEXT]
        principal = None
        if not route.public and not (route.loopback and from_loopback(request)):
            principal = await authenticated(
                request,
                browser=True,
                mutating=route.method in MUTATING,
                keeper=route.keeper,
                runner=route.runner,
            )
        data: Any = None
        rid = None
        if route.method in MUTATING:
            limit_writes(ctx, principal)
            data = await _json_body(request)
            rid = _request_id(request, data)
        # Without a header, only the session cookie can have named a principal.
        by_session = principal is not None and "Authorization" not in request.headers
        call = Call(request, ctx, principal, params=request.match_info, by_session=by_session)
        parse_input(route, call, request.query, data)
        if route.method not in MUTATING:
            return await _run(route, call)  # a read (a long-poll too) ends with its caller
        # A write runs to its end even if the caller hangs up: its effect and its
        # stored outcome are never split by a cancelled handler.
        fingerprint = _fingerprint(request, data) if rid else ""
        return await asyncio.shield(_write(route, call, principal, rid, fingerprint))

    handle.__name__ = getattr(route.handler, "__name__", "handle")
    return handle


async def _write(
    route: Route, call: Call, principal: Principal | None, rid: str | None, fingerprint: str
) -> web.StreamResponse:
    if rid is None:
        return await _run(route, call)
    token = audit.request_id.set(rid)
    try:
        if principal is None:
            # A public write (registration) has no caller to key a replay by,
            # but its audit row still names the request id.
            return await _run(route, call)
        return await _idempotent(route, call, principal, rid, fingerprint)
    finally:
        audit.request_id.reset(token)


async def answer(route: Route, call: Call) -> tuple[int, Any]:
    """The handler's status and answer (data, or a response it made itself).

    A route of one role refuses anyone else here, as its service would: this is where
    every route runs (an endpoint, an MCP tool), and inside a write's request-id record,
    so a retried refusal is answered from it as before.
    """
    if route.role is not None:
        actions.require(call.p, route.role.name)
    result = await route.handler(call)
    if isinstance(result, tuple):
        return result
    return route.status, result


async def _run(route: Route, call: Call) -> web.StreamResponse:
    status, result = await answer(route, call)
    if isinstance(result, web.StreamResponse):
        return result
    return json_response(result, status)


async def _idempotent(
    route: Route, call: Call, principal: Principal, rid: str, fingerprint: str
) -> web.StreamResponse:
    """Same caller, same id, same arguments: the first outcome again, with no second effect."""
    ctx = call.ctx
    replays = call.request.app[REPLAYS]
    key = (principal.agent_id, rid)
    lock = replays.lock(key)
    try:
        async with lock:
            stored = await ctx.db.read(lambda conn: request_store.get(conn, *key))
            if stored is not None:
                return _replayed(stored, rid, fingerprint)
            token = request_store.pending.set(request_store.Pending(*key, fingerprint, ctx.now()))
            try:
                response = await _run(route, call)
            except request_store.AppliedElsewhere:
                # Another board process committed the same id meanwhile: answer as its retry.
                request_store.pending.reset(token)
                stored = await ctx.db.read(lambda conn: request_store.get(conn, *key))
                assert stored is not None, "a committed request id is read back"
                return _replayed(stored, rid, fingerprint)
            except BoardError as exc:
                request_store.pending.reset(token)
                if exc.retryable or exc.status == 401:
                    raise
                await _remember(ctx, key, fingerprint, exc.status, json.dumps(exc.to_json()))
                raise
            request_store.pending.reset(token)
            _test_crash_point(rid)
            if isinstance(response, web.Response) and response.text is not None:
                text = _withhold(response.text, route.secrets)
                await _remember(ctx, key, fingerprint, response.status, text)
            return response
    finally:
        replays.release(key, lock)


def _replayed(stored: Any, rid: str, fingerprint: str) -> web.Response:
    """The stored outcome of a request id, for a call that sent it again."""
    if stored["fingerprint"] != fingerprint:
        raise RequestIdReuse(f"request_id {rid} was used for a different call; use a new id.")
    if stored["status"] == request_store.APPLIED:
        raise RequestIdReuse(
            f"request_id {rid} took effect, but its answer is not kept: the board stopped before "
            "answering it, or is answering it now; read the current state instead of retrying.",
            applied=True,
        )
    return web.Response(
        text=stored["response"],
        status=stored["status"],
        content_type="application/json",
        headers={"Idempotent-Replay": "true"},
    )


#: Test-only crash point. With ``BOARD_TEST_SIGKILL=after-commit:<request id>`` in its
#: environment the board kills itself (SIGKILL) once that one call's effect is committed and
#: before it answers, which is how the suite shows a retry is not applied twice. It needs the
#: exact request id, so it cannot fire on calls nobody chose; the board warns at start when set.
TEST_SIGKILL = "BOARD_TEST_SIGKILL"


def _test_crash_point(rid: str) -> None:
    if os.environ.get(TEST_SIGKILL) == f"after-commit:{rid}":
        os.kill(os.getpid(), signal.SIGKILL)


def _withhold(text: str, secrets: tuple[str, ...]) -> str:
    """The answer as kept for replays: secrets are stored hashed or not at all."""
    if not secrets:
        return text
    data = json.loads(text)
    if isinstance(data, dict):
        data.update({name: None for name in secrets if name in data})
    return dumps(data)


async def _remember(ctx: Context, key: tuple[int, str], fingerprint: str, status: int, text: str) -> None:
    now = ctx.now()
    await ctx.db.write(lambda conn: request_store.put(conn, *key, fingerprint, status, text, now))
