"""The one path every call takes, whatever its transport: the JSON API, the pages, MCP.

:func:`perform` touches the caller's presence, applies the per-token write limit to a
write, has what was sent parsed, replays a retry by its request id, and runs a write
to its end even when its caller hangs up (``asyncio.shield``): the effect and its kept
answer are never split by a cancelled handler. A transport turns its request into
:class:`Inputs` and the :class:`Answer` (or the ``BoardError``) into its own output:
JSON, a page or a redirect, an MCP tool result.

A call with a request id runs in a context (``services.requests.for_call``) whose
every write carries its request id. When the route's answer is what its
write job produced (``answered_by_write``), that write keeps the answer itself, in its
own transaction; else it keeps the mark "applied", and the answer follows in a write of
its own once rendered (docs/api-decisions.md).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web

from .api.keys import PRESENCE, REPLAYS
from .errors import BoardError, InvalidArgument
from .jsonvalues import dumps
from .principal import Principal
from .services import actions, audit, requests
from .services.context import Context

MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
REQUEST_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


@dataclass(frozen=True)
class RequestId:
    """A caller's name for one call, and what the call was (a retry must send the same)."""

    value: str
    fingerprint: str


def request_id(value: Any, method: str, path: str, sent: Any) -> RequestId:
    """A sent request id, checked; INVALID_ARGUMENT when it is not 1-128 of [A-Za-z0-9_-]."""
    if not isinstance(value, str) or not REQUEST_ID.fullmatch(value):
        raise InvalidArgument("request_id is 1-128 of [A-Za-z0-9_-].", field="request_id")
    canonical = json.dumps([method, path, sent], sort_keys=True)
    return RequestId(value, hashlib.sha256(canonical.encode()).hexdigest())


@dataclass(frozen=True)
class Answer:
    """What a call answered: its status and data (JSON data, or the transport's own response),
    or, for a retry, the first answer as it was kept."""

    status: int
    data: Any = None
    replay: requests.Stored | None = None


class Arguments(Protocol):
    """What a route's handler takes (an API call, a page call): the request and the context."""

    request: web.Request
    ctx: Context


class Inputs(Protocol):
    """A call as its transport received it; parsed only once the write limit let it in."""

    @property
    def request(self) -> web.Request: ...

    async def parse(self) -> tuple[Any, RequestId | None]:
        """The handler's arguments, parsed strictly, and the call's request id if it sent one."""
        ...


class Operation(Protocol):
    """What the pipeline needs of a route (an API route, a page route)."""

    @property
    def method(self) -> str: ...

    @property
    def handler(self) -> Callable[[Any], Awaitable[Any]]: ...

    @property
    def status(self) -> int: ...

    @property
    def secrets(self) -> tuple[str, ...]: ...

    @property
    def answered_by_write(self) -> bool: ...

    @property
    def role(self) -> actions.Action | None: ...


async def perform(ctx: Context, principal: Principal | None, route: Operation, inputs: Inputs) -> Answer:
    """Run one call of ``route`` for ``principal`` (None: a public or loopback call)."""
    if principal is not None:
        await inputs.request.app[PRESENCE].touch(ctx, principal)
    if route.method not in MUTATING:
        arguments, _ = await inputs.parse()
        return await _run(route, principal, arguments)  # a read (a long-poll too) ends with its caller
    if principal is not None:
        assert ctx.limiter is not None
        ctx.limiter.check(principal.agent_id)  # RATE_LIMITED when a caller writes too fast
    arguments, rid = await inputs.parse()
    # A write runs to its end even if the caller hangs up: its effect and its kept
    # answer are never split by a cancelled handler.
    return await asyncio.shield(_write(ctx, principal, route, arguments, rid))


async def _run(route: Operation, principal: Principal | None, arguments: Arguments) -> Answer:
    """The handler's answer. A route of one role refuses anyone else first, as its service
    would, and inside the call's request-id record, so a retried refusal is answered from it."""
    if route.role is not None:
        assert principal is not None, "a route of one role is never public"
        actions.require(principal, route.role.name)
    result = await route.handler(arguments)
    if isinstance(result, tuple):
        return Answer(*result)
    if isinstance(result, web.StreamResponse):
        return Answer(result.status, result)
    return Answer(route.status, result)


async def _write(
    ctx: Context, principal: Principal | None, route: Operation, arguments: Arguments, rid: RequestId | None
) -> Answer:
    if rid is None:
        return await _run(route, principal, arguments)
    token = audit.request_id.set(rid.value)
    try:
        if principal is None:
            # A public write (registration) has no caller to key a replay by,
            # but its audit row still names the request id.
            return await _run(route, principal, arguments)
        return await _idempotent(ctx, principal, route, arguments, rid)
    finally:
        audit.request_id.reset(token)


async def _idempotent(
    ctx: Context, principal: Principal, route: Operation, arguments: Arguments, rid: RequestId
) -> Answer:
    """Same caller, same id, same arguments: the first answer again, with no second effect."""
    key = (principal.agent_id, rid.value)
    replays = arguments.request.app[REPLAYS]
    lock = replays.lock(key)
    try:
        async with lock:
            stored = await requests.earlier(ctx, key, rid.fingerprint)
            if stored is not None:
                return Answer(stored.status, replay=stored)
            arguments.ctx, mark = requests.for_call(ctx, key, rid.fingerprint, _in_write(route))
            try:
                answer = await _run(route, principal, arguments)
            except requests.AppliedElsewhere:
                # Another board process committed the same id meanwhile: answer as its retry.
                stored = await requests.earlier(ctx, key, rid.fingerprint)
                assert stored is not None, "a committed request id is read back"
                return Answer(stored.status, replay=stored)
            except BoardError as exc:
                if exc.retryable or exc.status == 401:
                    raise
                await requests.remember(ctx, key, rid.fingerprint, exc.status, json.dumps(exc.to_json()))
                raise
            finally:
                mark.marked = True  # what runs after the call (a task it started) is no part of it
            _test_crash_point(rid.value)
            if not mark.answered:
                kept = _kept(route, answer.status, answer.data)
                if kept is not None:
                    await requests.remember(ctx, key, rid.fingerprint, *kept)
            return answer
    finally:
        replays.release(key, lock)


def _in_write(route: Operation) -> Callable[[Any], tuple[int, str]] | None:
    """How the route's write job keeps the call's answer from its result, if that result is it."""
    if not route.answered_by_write:
        return None

    def kept(result: Any) -> tuple[int, str]:
        status, data = result if isinstance(result, tuple) else (route.status, result)
        answer = _kept(route, status, data)
        assert answer is not None, "a write job answering its call returns JSON data"
        return answer

    return kept


def _kept(route: Operation, status: int, data: Any) -> tuple[int, str] | None:
    """The answer as kept for a retry: JSON with its secrets withheld, or a redirect's location.

    Another response a handler made itself (a page) is not kept: its write's mark says
    it took effect.
    """
    if isinstance(data, web.StreamResponse):
        location = data.headers.get("Location")
        return (status, dumps({"location": location})) if 300 <= status < 400 and location else None
    if route.secrets and isinstance(data, dict):
        data = {**data, **{name: None for name in route.secrets if name in data}}
    return status, dumps(data)


#: Test-only crash point. With ``BOARD_TEST_SIGKILL=after-commit:<request id>`` in its
#: environment the board kills itself (SIGKILL) once that one call's effect is committed and
#: before it answers, which is how the suite shows a retry is not applied twice. It needs the
#: exact request id, so it cannot fire on calls nobody chose; the board warns at start when set.
TEST_SIGKILL = "BOARD_TEST_SIGKILL"


def _test_crash_point(rid: str) -> None:
    if os.environ.get(TEST_SIGKILL) == f"after-commit:{rid}":
        os.kill(os.getpid(), signal.SIGKILL)
