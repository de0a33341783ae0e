"""Signing in and out, and the human's settings: API tokens, password, notifications.

The notification destinations' forms and pages are ``destinations.py``'s."""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import urlsplit

from aiohttp import web

from ..errors import Forbidden, RequestIdReuse, Unauthenticated
from ..services import auth, destinations, inbox, sessions
from .destinations import KIND_LABELS
from .routing import (
    NOTHING_KEPT,
    SIGN_IN_LIMITS,
    Kept,
    PageCall,
    PageRoute,
    clear_session_cookie,
    local_path,
    redirect,
    set_session_cookie,
)


def _same_origin(call: PageCall) -> None:
    """A sign-in form posted from another site is refused (it would sign the browser in as someone else)."""
    origin = call.request.headers.get("Origin")
    if origin is not None and urlsplit(origin).netloc != call.request.host:
        raise Forbidden("Sign in from this board's own page.")


async def login_page(call: PageCall) -> web.StreamResponse:
    token = call.request.query.get("token")
    target = local_path(call.request.query.get("next"))
    if token is None:
        if call.session is not None:
            return redirect(target)
        return call.render("login.html", next=target, link_for=None, refusal=None)
    try:
        handle = await sessions.check_link(call.ctx, token)
    except sessions.LoginLinkRefused as exc:
        return call.render("login.html", status=exc.status, next=target, link_for=None, refusal=exc)
    return call.render("login.html", next=target, link_for=handle, token=token, refusal=None)


async def login(call: PageCall) -> web.StreamResponse:
    _same_origin(call)
    limits = call.request.app[SIGN_IN_LIMITS]
    address = call.request.remote or "unknown"
    target = local_path(call.form.get("next"))
    token = call.form.get("token")
    try:
        if token:
            opened = await sessions.sign_in_with_link(call.ctx, token)
        else:
            handle = call.form.get("handle", "")
            limits.check_password(address, handle)
            try:
                opened = await sessions.sign_in_with_password(call.ctx, handle, call.form.get("password", ""))
            except Unauthenticated as exc:
                limits.failed(address, handle)
                # The form again, saying why, with the name as typed: only the password to retype.
                return call.render(
                    "login.html", status=exc.status, next=target, link_for=None, refusal=exc, handle=handle
                )
            limits.succeeded(address, handle)
    except sessions.LoginLinkRefused as exc:
        return call.render("login.html", status=exc.status, next=target, link_for=None, refusal=exc)
    response = redirect(target)
    set_session_cookie(call.request, response, opened.cookie, call.ctx.settings.session_ttl)
    return response


async def logout(call: PageCall) -> web.StreamResponse:
    cookie = call.request.cookies.get(sessions.COOKIE)
    if cookie:
        await sessions.sign_out(call.ctx, cookie)
    response = redirect("/login")
    clear_session_cookie(response)
    return response


async def _settings(
    call: PageCall, *, new_token: str | None = None, saved: str = "", kept: Kept = NOTHING_KEPT
) -> web.Response:
    return call.render(
        "settings.html",
        kept=kept,
        tokens=await auth.list_own_tokens(call.ctx, call.p),
        has_password=await sessions.has_password(call.ctx, call.p),
        new_token=new_token,
        saved=saved,
        notify=await inbox.notify_settings(call.ctx, call.p),
        notify_kinds=KIND_LABELS,
        outbound=await destinations.list_destinations(call.ctx, call.p),
        kind_labels=KIND_LABELS,
        destination_kinds=destinations.DESTINATION_KINDS,
        security=destinations.SECURITY,
    )


async def notifications(call: PageCall) -> web.StreamResponse:
    """The whole set of kinds from the form: an unticked box sends nothing, so it is off."""
    chosen = {kind: kind in call.form for kind in inbox.KINDS}
    await inbox.set_notify_settings(call.ctx, call.p, inbox.NotifySettings(**chosen))
    return redirect("/settings#notifications")


async def settings(call: PageCall) -> web.StreamResponse:
    return await _settings(call)


async def token_create(call: PageCall) -> web.StreamResponse:
    # Rendered, not redirected: the token is shown this once and never again.
    made = await auth.create_own_token(call.ctx, call.p, call.parsed_form(auth.NewToken))
    return await _settings(call, new_token=made)


#: A token form sent again (the page reloaded after it): its token was made the first time.
SENT_AGAIN = (
    "This form was sent already, and the token it made is in the list above: it was shown that "
    "once. Create another if you need one."
)


async def token_create_again(call: PageCall, kept: Kept) -> web.StreamResponse:
    """The settings with the token form's refusal beside it. Sent again (a reload of the page its
    first sending rendered), no second token is made: the page says where the first one is."""
    error = kept.error
    if isinstance(error, RequestIdReuse) and error.details.get("applied"):
        kept = replace(kept, error=RequestIdReuse(SENT_AGAIN))
    return await _settings(call, kept=kept)


async def token_revoke(call: PageCall) -> web.StreamResponse:
    await auth.revoke_own_token(call.ctx, call.p, call.int_arg("id"))
    return redirect("/settings")


async def password(call: PageCall) -> web.StreamResponse:
    form, cookie = call.form, call.request.cookies.get(sessions.COOKIE, "")
    await sessions.set_password(call.ctx, call.p, form.get("current", ""), form.get("password", ""), cookie)
    return await _settings(call, saved="Password saved.")


ROUTES = [
    PageRoute("GET", "/login", login_page, "Sign in: password, or confirm a one-time link.", public=True),
    PageRoute("POST", "/login", login, "Sign in and open a session.", public=True),
    PageRoute("POST", "/logout", logout, "Sign out: the session is revoked."),
    PageRoute("GET", "/settings", settings, "API tokens, password, notifications and destinations."),
    PageRoute(
        "POST",
        "/settings/tokens",
        token_create,
        "Create an API token, shown once.",
        refill=token_create_again,
    ),
    PageRoute("POST", "/settings/tokens/{id}/revoke", token_revoke, "Revoke an API token."),
    PageRoute("POST", "/settings/password", password, "Set or change the password."),
    PageRoute(
        "POST", "/settings/notifications", notifications, "Turn kinds of browser notification on or off."
    ),
]
