"""Route declarations: what an API call is, and what a route says about itself.

Each route says who may call it without a token (``public``, ``loopback`` for
callers on this machine, ``signed`` for a forge whose signature is its credential),
whether a keeper's token may call it at all
(``keeper``: the fleet calls only) and the routines runner's (``runner``: reading
routines and stepping their runs), which input types it takes, what it answers,
and a summary for the OpenAPI document; :mod:`..pipeline` runs it. A route whose
every call is one action of one role says so (``role``: an action of
:mod:`..services.actions` whose rule is a role alone, such as "human").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from ..principal import Principal
from ..services.actions import Action
from ..services.context import Context
from ..validation import whole_number
from .responses import Schema


@dataclass
class Call:
    """One parsed API call, handed to a handler."""

    request: web.Request
    ctx: Context
    principal: Principal | None
    #: The route's path arguments (the request's match, or what an MCP tool call names).
    params: Mapping[str, str] = field(default_factory=dict)
    body: Any = None
    query: Any = None
    #: The caller is a browser on its page session's cookie, not a bearer token: a GET it
    #: sends may come from another site's link, so it must not change anything.
    by_session: bool = False

    @property
    def p(self) -> Principal:
        assert self.principal is not None, "route is public; no principal"
        return self.principal

    def arg(self, name: str) -> str:
        return self.params[name]

    def int_arg(self, name: str) -> int:
        return whole_number(name, self.params[name])


def bearer_token(headers: Mapping[str, str]) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, if the request has one."""
    header = headers.get("Authorization")
    return header[7:].strip() if header and header[:7].lower() == "bearer " else None


Handler = Callable[[Call], Awaitable[Any]]
#: A signed route's check of its credential: the raw body and headers of the call against
#: the secret its path names. It returns the call's body, or raises UNAUTHENTICATED.
Verifier = Callable[[Call, bytes], Awaitable[Any]]


@dataclass(frozen=True)
class Answer:
    """A route's success answer: its JSON Schema (built with :mod:`.responses`) and, for a
    route that answers more than one success status, every one of them, the usual first.

    The OpenAPI document publishes it and the test suite checks every answer it receives
    against it, so what the board answers and what it publishes cannot drift apart.
    """

    schema: Schema
    #: Empty: the route's own ``status`` only.
    statuses: tuple[int, ...] = ()


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    handler: Handler
    summary: str
    body: type | None = None
    query: type | None = None
    public: bool = False
    #: A caller on loopback needs no token (the operator's scraper); others authenticate.
    loopback: bool = False
    #: No token: the credential is a signature of the raw body (a forge's webhook), checked
    #: by this verifier before the handler runs or anything is written; what it returns is
    #: the call's body. The OpenAPI document shows it (``x-signed``).
    signed: Verifier | None = None
    #: A keeper token may call it (the fleet calls); everywhere else it is FORBIDDEN.
    keeper: bool = False
    #: The routines runner's token may call it (routine reads, the runs' steps); elsewhere FORBIDDEN.
    runner: bool = False
    #: Every call is this action, for one role only: other callers are FORBIDDEN with its
    #: refusal before the handler runs, and the OpenAPI document shows it (``x-role``).
    role: Action | None = None
    status: int = 200
    #: What it answers on success: the OpenAPI document publishes it, the suite checks answers on it.
    answer: Answer = field(kw_only=True)
    tags: tuple[str, ...] = field(default=())
    #: Answer fields holding a secret (a token, an invite code): shown once, so they are
    #: never kept for a replay, which answers them as null.
    secrets: tuple[str, ...] = field(default=())
    #: The answer is what the route's one write job produced, as the handler returns it: a
    #: request id's answer is then kept inside that write's own transaction (board/server/pipeline.py).
    answered_by_write: bool = False

    def __post_init__(self) -> None:
        if self.signed is not None and (self.public or self.body is not None or self.role is not None):
            raise ValueError(f"{self.method} {self.path}: a signed route takes no token and no declared body")
        if self.answer.statuses and self.status not in self.answer.statuses:
            raise ValueError(f"{self.method} {self.path} answers {self.status}, not in its answer's statuses")

    @property
    def statuses(self) -> tuple[int, ...]:
        """Every success status the route may answer, the usual first."""
        return self.answer.statuses or (self.status,)
