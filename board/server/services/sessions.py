"""Browser sessions of humans: signing in (one-time link or password), CSRF, signing out.

A session is a random secret in an HttpOnly cookie; the board keeps only its
SHA-256 and the session's CSRF token. Every state-changing form and every
mutating API call made with the cookie must carry that CSRF token, so another
site (or another session) cannot act for the human. Only humans have sessions.
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from ..clock import iso, parse_time
from ..errors import Forbidden, InvalidArgument, RateLimited, Unauthenticated
from ..hub import Key, Signal
from ..principal import Principal
from ..store import identity as identity_store
from ..store import sessions as store
from ..store.connection import Connection
from ..store.rows import Row
from ..store.writer import emit
from ..validation import figure
from . import actions, audit
from .auth import hash_secret, principal_from_row
from .context import Context
from .ratelimit import RateLimiter
from .tokencache import reach_key

COOKIE = "board_session"
MIN_PASSWORD = 10
MAX_PASSWORD = 1024
_hasher = PasswordHasher()


@dataclass(frozen=True)
class Session:
    """A live session: who it is for, and the CSRF token its forms carry."""

    principal: Principal
    csrf: str


@dataclass(frozen=True)
class NewSession:
    """A session just created: the cookie value (shown to the browser once) and its session."""

    cookie: str
    session: Session


class LoginLinkRefused(Unauthenticated):
    """A one-time link that cannot sign anyone in; ``reason`` says why (used, expired, unknown)."""

    def __init__(self, reason: str) -> None:
        messages = {
            "used": "This sign-in link was already used.",
            "expired": "This sign-in link has expired.",
            "unknown": "This sign-in link is not one this board issued.",
        }
        super().__init__(
            messages[reason] + " Ask the operator for a new one: board admin user link <name>.",
            reason=reason,
        )
        self.reason = reason


class SignInLimits:
    """How fast passwords may be tried; one-time links are never held back.

    A link is 32 random bytes that work once: no limit is needed to stop a guess, and none
    may stand between the human and the way back in that ``board admin user link`` prints.
    Every local process shares one address: another one can slow a password from there, never
    the link.

    Passwords: 10 a minute per address, across accounts (burst 10); and for an account at
    an address, after ``FREE_FAILURES`` wrong ones in a row, each next try waits a second,
    then twice as long as the last, up to ``MAX_WAIT``. The right password ends the wait's
    count. In memory, per process; at most ``KEPT`` accounts-at-addresses are remembered.
    """

    PER_ADDRESS_BURST, PER_ADDRESS_RATE = 10, 10 / 60
    FREE_FAILURES = 4
    MAX_WAIT = 300.0
    KEPT = 10_000

    def __init__(self, monotonic: Callable[[], float]) -> None:
        self._monotonic = monotonic
        self.addresses = RateLimiter(
            self.PER_ADDRESS_RATE, self.PER_ADDRESS_BURST, monotonic, "sign-in attempts from this address"
        )
        self._failures: dict[tuple[str, str], tuple[int, float]] = {}  # -> (in a row, wait until)

    def check_password(self, address: str, handle: str) -> None:
        """Count one password attempt; RATE_LIMITED while the address or the account waits."""
        _, until = self._failures.get((handle.lower(), address), (0, 0.0))
        wait = until - self._monotonic()
        if wait > 0:
            raise RateLimited(retry_after=round(wait, 3), what="wrong passwords")
        self.addresses.check(address)

    def failed(self, address: str, handle: str) -> None:
        now = self._monotonic()
        if len(self._failures) >= self.KEPT:
            self._failures = {k: v for k, v in self._failures.items() if v[1] > now}
        count = self._failures.get((handle.lower(), address), (0, 0.0))[0] + 1
        wait = (
            0.0
            if count <= self.FREE_FAILURES
            else min(2.0 ** (count - self.FREE_FAILURES - 1), self.MAX_WAIT)
        )
        self._failures[(handle.lower(), address)] = (count, now + wait)

    def succeeded(self, address: str, handle: str) -> None:
        self._failures.pop((handle.lower(), address), None)


async def _open(conn: Connection, ctx: Context, row: Row, how: str) -> NewSession:
    principal = principal_from_row(row)
    cookie = secrets.token_urlsafe(32)
    csrf = secrets.token_urlsafe(24)
    now = ctx.clock.now()
    expires = iso(now + timedelta(seconds=ctx.settings.session_ttl))
    await store.insert(conn, hash_secret(cookie), principal.agent_id, csrf, iso(now), expires)
    await audit.record(conn, ctx, principal, "session.create", principal.handle, details={"how": how})
    return NewSession(cookie, Session(principal, csrf))


def _live_link(ctx: Context, row: Row | None) -> Row:
    """The login token's row when it can still sign in; LoginLinkRefused saying why otherwise."""
    if row is None:
        raise LoginLinkRefused("unknown")
    if row["used_at"] is not None:
        raise LoginLinkRefused("used")
    if parse_time(row["issued_at"]) + timedelta(seconds=ctx.settings.login_link_ttl) <= ctx.clock.now():
        raise LoginLinkRefused("expired")
    return row


async def check_link(ctx: Context, token: str) -> str:
    """The handle a one-time link would sign in, without spending it (the confirm page)."""
    row = await ctx.db.read(lambda conn: store.login_token(conn, hash_secret(token)))
    return str(_live_link(ctx, row)["handle"])


async def sign_in_with_link(ctx: Context, token: str) -> NewSession:
    """Spend a one-time login link for a new session; used, expired or unknown links are refused."""
    token_hash = hash_secret(token)

    async def write(conn: Connection) -> NewSession:
        row = _live_link(ctx, await store.login_token(conn, token_hash))
        if not await store.spend_login_token(conn, token_hash, ctx.now()):
            raise LoginLinkRefused("used")
        return await _open(conn, ctx, row, "link")

    return await ctx.db.write(write)


def _verify(stored: str | None, password: str) -> bool:
    if stored is None:
        # Hash anyway, so an unknown account takes as long to refuse as a wrong password.
        _hasher.hash(password)
        return False
    try:
        return _hasher.verify(stored, password)
    except (VerificationError, InvalidHashError):
        return False


async def sign_in_with_password(ctx: Context, handle: str, password: str) -> NewSession:
    """A new session for a human whose password matches; one refusal for every wrong case."""
    if len(password) > MAX_PASSWORD:
        raise InvalidArgument(f"A password is at most {figure(MAX_PASSWORD)} characters.")

    async def read(conn: Connection) -> tuple[Row | None, str | None]:
        row = await identity_store.agent_by_handle(conn, handle)
        if row is None or row["kind"] != "human":
            return None, None
        return row, await store.password_hash(conn, row["id"])

    row, stored = await ctx.db.read(read)
    if not await asyncio.to_thread(_verify, stored, password) or row is None:
        raise Unauthenticated("Wrong name or password.")
    return await ctx.db.write(lambda conn: _open(conn, ctx, row, "password"))


async def resolve(ctx: Context, cookie: str | None) -> Session | None:
    """The live session behind a cookie value, or None (absent, signed out, expired, not a human)."""
    if not cookie:
        return None
    row = await ctx.db.read(lambda conn: store.live(conn, hash_secret(cookie), ctx.now()))
    if row is None:
        return None
    return Session(principal_from_row(row), row["csrf"])


def csrf_ok(session: Session, sent: str | None) -> bool:
    """Whether a request carries this session's CSRF token (compared in constant time)."""
    return sent is not None and hmac.compare_digest(session.csrf.encode(), sent.encode())


def require_csrf(session: Session, sent: str | None) -> None:
    if not csrf_ok(session, sent):
        raise Forbidden("This form is stale or not from this board: reload the page and try again.")


def ended(agent_id: int) -> Key:
    """The hub key a human's live streams follow: a signal on it says one of their
    sessions may have ended, and each stream checks its own."""
    return ("sessions", agent_id)


def _tell_ended(agent_id: int) -> None:
    """Tell, on every board process, what a human holds that a session of theirs ended: their
    pages' streams (:func:`ended`) and their held API long-polls (:func:`.tokencache.reach_key`).
    Each asks its own credential again: the ended session's are refused at once, the others go on."""
    emit(Signal(ended(agent_id), 0))
    emit(Signal(reach_key(agent_id), 0))


async def sign_out(ctx: Context, cookie: str) -> None:
    async def write(conn: Connection) -> None:
        row = await store.live(conn, hash_secret(cookie), ctx.now())
        if await store.revoke(conn, hash_secret(cookie), ctx.now()) and row is not None:
            await audit.record(conn, ctx, principal_from_row(row), "session.revoke", row["handle"])
            _tell_ended(principal_from_row(row).agent_id)

    await ctx.db.write(write)


async def set_password(ctx: Context, p: Principal, current: str, new: str, cookie: str) -> None:
    """Set or change the human's password; changing one needs the current one.

    Every other session of the human ends with it (whoever knew the old password may
    hold one), and their pages' streams with them; the session ``cookie`` goes on.
    """
    actions.require(p, "password.set")
    if not MIN_PASSWORD <= len(new) <= MAX_PASSWORD:
        raise InvalidArgument(f"A password is {MIN_PASSWORD} to {MAX_PASSWORD} characters.")
    stored = await ctx.db.read(lambda conn: store.password_hash(conn, p.agent_id))
    if stored is not None and not await asyncio.to_thread(_verify, stored, current):
        raise Forbidden("The current password is wrong.")
    hashed = await asyncio.to_thread(_hasher.hash, new)

    async def write(conn: Connection) -> None:
        await store.set_password(conn, p.agent_id, hashed, ctx.now())
        ended_sessions = await store.revoke_others(conn, p.agent_id, hash_secret(cookie), ctx.now())
        await audit.record(conn, ctx, p, "password.set", p.handle, details={"sessions_ended": ended_sessions})
        if ended_sessions:
            _tell_ended(p.agent_id)

    await ctx.db.write(write)


async def has_password(ctx: Context, p: Principal) -> bool:
    return await ctx.db.read(lambda conn: store.password_hash(conn, p.agent_id)) is not None
