"""Page declarations and the plumbing every page goes through.

A page handler parses the request, calls the same service functions as the
API with the session's principal, and renders a template. :func:`endpoint`
resolves the session from its cookie (no session: a redirect to ``/login``,
never a page of data; a bearer token is not a session), checks the CSRF token
of every form that changes state before anything runs, hands the call to
:func:`~..pipeline.perform` (presence, the write limit, the shield, and the
replay of a form sent twice by its ``request_id`` field), and renders any
``BoardError`` as an HTML page with the error's status.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar
from urllib.parse import quote, urlsplit

import jinja2
from aiohttp import web

from ..api.errors import BEGUN, from_http, unexpected
from ..api.keys import CONTEXT
from ..clock import Clock
from ..errors import BoardError, LimitExceeded, NotFound
from ..mcp.endpoint import PATH as MCP_PATH
from ..pipeline import Answer, RequestId, perform, request_id
from ..principal import Principal
from ..services import actions, requests, sessions
from ..services.context import Context
from ..validation import parse_query, whole_number
from .render import environment

log = logging.getLogger("board.pages")
T = TypeVar("T")

TEMPLATES = web.AppKey("templates", jinja2.Environment)
SIGN_IN_LIMITS = web.AppKey("sign_in_limits", sessions.SignInLimits)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
#: The app's page handlers, so that a refusal before one runs is still answered as a page.
PAGE_HANDLERS: web.AppKey[frozenset[Handler]] = web.AppKey("page_handlers")

#: Pages load scripts, styles and images from the board only; nothing inline runs.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


@dataclass
class PageCall:
    """One page request: the session (None on a public page) and the parsed form of a POST."""

    request: web.Request
    ctx: Context
    session: sessions.Session | None
    form: dict[str, str]

    @property
    def p(self) -> Principal:
        assert self.session is not None, "page is public; no session"
        return self.session.principal

    def arg(self, name: str) -> str:
        return self.request.match_info[name]

    def int_arg(self, name: str) -> int:
        return whole_number(name, self.request.match_info[name])

    def query(self, cls: type[T], *, keep: tuple[str, ...] = ()) -> T:
        """The query string parsed into a service's input type (unknown names refused)."""
        return parse_query(cls, _given(self.request.query, keep))

    def parsed_form(self, cls: type[T], **fixed: str) -> T:
        """The form (without its CSRF field) parsed into a service's input type."""
        return parse_query(cls, {**_given(self.form, ()), **fixed}, form=True)

    def render(self, template: str, status: int = 200, **values: Any) -> web.Response:
        return render(self.request, template, self.session, status=status, **values)


def _given(values: Mapping[str, str], keep: tuple[str, ...]) -> dict[str, str]:
    """Fields with a value: an empty form field means "not given", as an absent query parameter."""
    return {
        name: value.replace("\r\n", "\n")
        for name, value in values.items()
        if name not in NOT_INPUT and (value != "" or name in keep)
    }


#: Form fields the transport reads itself: the CSRF token, and the request id a form is rendered with.
NOT_INPUT = ("csrf", "request_id")


PageHandler = Callable[[PageCall], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class Kept:
    """A refused form: where it was sent, what was typed in it and why it was refused, for
    the page it was on to show again with the text in place (a template asks by its action)."""

    action: str = ""
    fields: Mapping[str, str] = field(default_factory=dict)
    error: BoardError | None = None

    def value(self, action: str, name: str) -> str:
        return self.fields.get(name, "") if action == self.action else ""

    def refusal(self, action: str) -> BoardError | None:
        return self.error if action == self.action else None


NOTHING_KEPT = Kept()

#: Renders the page a refused form was on again, given the form kept (a route's ``refill``).
Refill = Callable[[PageCall, Kept], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class PageRoute:
    method: str
    path: str
    handler: PageHandler
    summary: str
    public: bool = False
    #: A form whose refusal shows its page again with what was typed; without one, the error page.
    refill: Refill | None = None
    #: As the pipeline asks of a route: a page answers with its own response (a redirect is
    #: kept for a form sent again), holds no secret in a redirect, and answers after its write;
    #: who may do what is its services' to say (services/actions.py).
    status: ClassVar[int] = 200
    secrets: ClassVar[tuple[str, ...]] = ()
    answered_by_write: ClassVar[bool] = False
    role: ClassVar[actions.Action | None] = None


@dataclass
class Sent:
    """A page request, its form read and its CSRF token checked; parsed by the handler."""

    call: PageCall

    @property
    def request(self) -> web.Request:
        return self.call.request

    async def parse(self) -> tuple[PageCall, RequestId | None]:
        rid = self.call.form.get("request_id")
        if rid is None:
            return self.call, None
        sent = {k: v for k, v in self.call.form.items() if k not in NOT_INPUT}
        return self.call, request_id(rid, self.request.method, self.request.path, sent)


def render(
    request: web.Request,
    template: str,
    session: sessions.Session | None,
    *,
    status: int = 200,
    **values: Any,
) -> web.Response:
    env = request.app[TEMPLATES]
    html = env.get_template(template).render(
        me=session.principal if session else None,
        csrf=session.csrf if session else "",
        request_id=_fresh_request_id,  # one per rendered form: sent twice, it takes effect once
        path=request.path,
        **{"kept": NOTHING_KEPT, **values},
    )
    return web.Response(text=html, status=status, content_type="text/html", headers=SECURITY_HEADERS)


def _fresh_request_id() -> str:
    return secrets.token_urlsafe(16)


def local_path(target: str | None, default: str = "/") -> str:
    """``target`` when it is a path on this board, read as a browser reads it; else ``default``.

    A browser trims control characters and spaces from a URL's ends, drops tabs and
    newlines inside it, and reads a backslash as a slash: so a slash, a tab and a slash
    lead to another site as ``//`` does. The target is read that way before it is checked.
    """
    read = (target or "").strip(_C0_AND_SPACE).translate(_DROPPED_INSIDE)
    start = read[:2].replace("\\", "/")
    if not start.startswith("/") or start == "//" or any(c < " " or c == "\x7f" for c in read):
        return default
    return read


_C0_AND_SPACE = "".join(map(chr, range(33)))
_DROPPED_INSIDE = str.maketrans("", "", "\t\n\r")


def redirect(location: str) -> web.Response:
    """See Other: after a form, the browser loads the page again with GET."""
    return web.Response(status=303, headers={"Location": location, **SECURITY_HEADERS})


def to_login(request: web.Request) -> web.Response:
    target = request.path_qs if request.method == "GET" else "/"
    return redirect(f"/login?next={quote(target, safe='')}")


def set_session_cookie(request: web.Request, response: web.StreamResponse, cookie: str, ttl: int) -> None:
    """The session cookie: Secure when the request came over TLS or the board is announced as https.

    Behind a TLS proxy the request reaches the board as plain HTTP, but the browser's
    address is the https one ``BOARD_PUBLIC_URL`` names, and the cookie must never go
    back over plain HTTP from there.
    """
    announced = request.app[CONTEXT].settings.public_url.lower().startswith("https://")
    response.set_cookie(
        sessions.COOKIE,
        cookie,
        max_age=ttl,
        path="/",
        httponly=True,
        samesite="Strict",
        secure=request.secure or announced,
    )


def clear_session_cookie(response: web.StreamResponse) -> None:
    response.del_cookie(sessions.COOKIE, path="/")


def endpoint(route: PageRoute) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        ctx = request.app[CONTEXT]
        session = await sessions.resolve(ctx, request.cookies.get(sessions.COOKIE))
        if session is None and not route.public:
            return to_login(request)
        form: dict[str, str] = {}
        trusted = False  # a form is shown again only once its CSRF token passed
        try:
            if request.method == "POST":
                posted = await request.post()
                form = {k: v for k, v in posted.items() if isinstance(v, str)}
                if session is not None:
                    sessions.require_csrf(session, form.get("csrf"))
                    trusted = True
            principal = session.principal if session is not None else None  # the roster shows the human here
            call = PageCall(request, ctx, session, dict(form))  # the handler's to change; ``form`` is kept
            answer = await perform(ctx, principal, route, Sent(call))
            return _page(request, session, answer)
        except web.HTTPException:
            raise
        except Exception as exc:
            if BEGUN in request:  # a stream already begun is cut, not answered (api.errors)
                raise
            if not isinstance(exc, BoardError):
                return _error_page(request, session, unexpected(request.method, request.path))
            if trusted and route.refill is not None:
                return await _refilled(route.refill, PageCall(request, ctx, session, form), exc)
            return _error_page(request, session, exc)

    handle.__name__ = getattr(route.handler, "__name__", "handle")
    return handle


def _page(request: web.Request, session: sessions.Session | None, answer: Answer) -> web.StreamResponse:
    """The page's own response; for a form sent again, where its first sending led, or its refusal."""
    if answer.replay is None:
        response: web.StreamResponse = answer.data
        return response
    if answer.status >= 400:
        return _error_page(request, session, requests.stored_error(answer.replay))
    return redirect(json.loads(answer.replay.text)["location"])


def _came_from(request: web.Request) -> str | None:
    """The board page a refused form was sent from, so the error page leads back to what the
    human was doing rather than to the board (the browser sends it: same-origin referrers)."""
    sent_from = urlsplit(request.headers.get("Referer", ""))
    if request.method != "POST" or sent_from.netloc != request.host or not sent_from.path.startswith("/"):
        return None
    return sent_from.path + (f"?{sent_from.query}" if sent_from.query else "")


def _error_page(request: web.Request, session: sessions.Session | None, exc: BoardError) -> web.Response:
    response = render(request, "error.html", session, status=exc.status, error=exc, back=_came_from(request))
    _retry_after(response, exc)
    return response


async def _refilled(refill: Refill, call: PageCall, exc: BoardError) -> web.StreamResponse:
    """The page a refused form was on, with the refusal beside the form and the text typed in
    it, under the refusal's status; the error page when that page cannot be shown either."""
    kept = Kept(call.request.path, _given(call.form, ()), exc)
    try:
        response = await refill(call, kept)
    except BoardError:
        return _error_page(call.request, call.session, exc)
    response.set_status(exc.status)
    _retry_after(response, exc)
    return response


def _retry_after(response: web.StreamResponse, exc: BoardError) -> None:
    retry_after = exc.details.get("retry_after")
    if retry_after is not None:
        response.headers["Retry-After"] = str(max(1, round(retry_after + 0.499)))


def setup(app: web.Application, routes: list[PageRoute], clock: Clock) -> None:
    """Add the page routes, the templates and the sign-in limits to the app."""
    app[TEMPLATES] = environment()
    app[SIGN_IN_LIMITS] = sessions.SignInLimits(clock.monotonic)
    handlers = [endpoint(route) for route in routes]
    for route, handle in zip(routes, handlers, strict=True):
        app.router.add_route(route.method, route.path, handle)
    app[PAGE_HANDLERS] = frozenset(handlers)


#: What a form over the board's 1 MB limit on a request's body is told: it is refused as it comes.
FORM_TOO_LARGE = "The form is over 1 MB, more than the board reads; nothing was saved."
#: The addresses whose refusals stay the API's JSON even where no route has them.
NOT_PAGES = ("/api", MCP_PATH)


@web.middleware
async def page_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """aiohttp's refusal of a request for a page answered with the error page, not the API's
    JSON: an address no route has outside the API (mistyped, guessed, or a form's address
    opened), and a form over the board's limit on a body, which is read and refused before
    any route runs (``body_deadline_middleware``): this stands between that and the API's
    errors."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400 or BEGUN in request or not _for_a_page(request):
            raise
        session = await sessions.resolve(request.app[CONTEXT], request.cookies.get(sessions.COOKIE))
        return _error_page(request, session, _page_error(request, exc))


def _for_a_page(request: web.Request) -> bool:
    if request.match_info.handler in request.app[PAGE_HANDLERS]:
        return True
    unrouted = request.match_info.http_exception is not None
    return unrouted and not any(request.path == p or request.path.startswith(p + "/") for p in NOT_PAGES)


def _page_error(request: web.Request, exc: web.HTTPException) -> BoardError:
    if exc.status == 413:
        return LimitExceeded(FORM_TOO_LARGE)
    if exc.status == 404:
        return NotFound(message="There is no page at this address: check it, or start from the board.")
    if exc.status == 405 and request.method == "GET":  # a form's address opened, or followed
        return NotFound(message="This address takes a form sent from its page; it has nothing to show.")
    return from_http(exc)  # another method: the API's word for it (HEAD on a page, a POST to one)
