"""Identities and credentials: tokens, invites, bot registration, presence.

Tokens are random (32 bytes), shown once, and stored only as their SHA-256.
The principal behind a token is cached briefly; anything that changes what a
token may do drops the cache entry in the same breath.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from ..clock import iso, parse_time
from ..errors import Forbidden, InvalidArgument, NameConflict, NotFound, Unauthenticated
from ..principal import Principal
from ..store import fleet as fleet_store
from ..store import identity as store
from ..store import watches as watch_store
from ..store import workspaces as workspace_store
from ..store.connection import Connection
from ..validation import arg, check_new_name
from . import actions, audit
from .context import Context

HANDLE_PATTERN = r"[A-Za-z0-9._-]{2,32}"
TOKEN_PREFIX = {
    "bot": "bb_",
    "human": "bh_",
    "runner": "br_",
    "keeper": "bk_",
    "login": "bl_",
    "invite": "bi_",
}
PRESENCE_WRITE_EVERY = 30.0


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_secret(kind: str) -> str:
    return TOKEN_PREFIX[kind] + secrets.token_urlsafe(32)


def keeper_principal(machine: Any) -> Principal:
    """A machine's keeper: keyed by the negated machine id (see :class:`Principal`)."""
    return Principal(agent_id=-machine["id"], handle=f"keeper:{machine['name']}", kind="keeper")


def principal_from_row(row: Any) -> Principal:
    return Principal(
        agent_id=row["id"],
        handle=row["handle"],
        kind=row["kind"],
        workspace_id=row["workspace_id"],
        workspace=row["workspace"],
    )


def presence(last_seen_at: str | None, now_iso: str) -> str:
    """``active`` < 5 min, ``recent`` < 1 h, ``idle`` < 24 h, else ``away``."""
    if last_seen_at is None:
        return "away"
    age = (parse_time(now_iso) - parse_time(last_seen_at)).total_seconds()
    for bound, name in ((300, "active"), (3600, "recent"), (86400, "idle")):
        if age < bound:
            return name
    return "away"


class Presence:
    """Writes ``last_seen_at`` at most every 30 s per agent."""

    def __init__(self) -> None:
        self._written: dict[int, float] = {}

    async def touch(self, ctx: Context, principal: Principal) -> None:
        if principal.is_keeper:
            return  # a keeper is no agent: its machine's last report says when it was seen
        now = ctx.clock.monotonic()
        last = self._written.get(principal.agent_id)
        if last is not None and now - last < PRESENCE_WRITE_EVERY:
            return
        self._written[principal.agent_id] = now
        stamp = ctx.now()
        await ctx.db.write(lambda conn: store.touch(conn, principal.agent_id, stamp))


async def authenticate(ctx: Context, token: str | None) -> Principal:
    """The principal behind a bearer token, or UNAUTHENTICATED."""
    if not token:
        raise Unauthenticated("Send 'Authorization: Bearer <token>'.")
    token_hash = hash_secret(token)
    principal = ctx.tokens.get(token_hash)
    if principal is None:
        generation = ctx.tokens.generation
        if token.startswith(TOKEN_PREFIX["keeper"]):
            machine = await ctx.db.read(lambda conn: fleet_store.machine_by_token(conn, token_hash))
            principal = keeper_principal(machine) if machine is not None else None
        else:
            principal = await ctx.db.read(lambda conn: _by_token(conn, token_hash))
        if principal is None:
            raise Unauthenticated("Unknown or revoked token.")
        ctx.tokens.put(token_hash, principal, generation)
    return principal


async def _by_token(conn: Connection, token_hash: str) -> Principal | None:
    """The principal of a token, a bot's with the channels its daemon watches: cached with
    the token, they spare the loop guard a read on each of its posts (services/loopguard.py).
    Recording new watches forgets the bot's cached tokens (services/wakes.py)."""
    row = await store.principal_by_token(conn, token_hash)
    if row is None:
        return None
    principal = principal_from_row(row)
    if not principal.is_bot:
        return principal
    watches = await watch_store.of_agent(conn, principal.agent_id)
    return replace(principal, watches=frozenset(watches))


# -- issuing credentials -----------------------------------------------------------


async def _issue(conn: Connection, ctx: Context, agent_id: int, kind: str) -> str:
    token, _ = await _issued(conn, ctx, agent_id, kind)
    return token


async def _issued(
    conn: Connection, ctx: Context, agent_id: int, kind: str, name: str = ""
) -> tuple[str, int]:
    """A new token of ``kind`` for the agent: its secret, and its row's id."""
    token = new_secret(kind)
    return token, await store.insert_token(conn, agent_id, hash_secret(token), kind, ctx.now(), name)


async def add_human(ctx: Context, handle: str) -> str:
    """Create a human (operator's CLI); returns a one-time login token."""
    check_handle(handle)

    async def write(conn: Connection) -> str:
        if await store.agent_by_handle(conn, handle) is not None:
            raise NameConflict(f"The handle {handle!r} is taken; pick another.")
        agent_id = await store.insert_agent(conn, handle, "human", None, "", ctx.now())
        await audit.record(conn, ctx, None, "human.create", handle)
        return await _issue(conn, ctx, agent_id, "login")

    return await ctx.db.write(write)


async def human_token(ctx: Context, handle: str) -> str:
    """A new API token for an existing human (operator's CLI)."""
    return await _issue_for_human(ctx, handle, "human", "token.create")


async def login_link_token(ctx: Context, handle: str) -> str:
    """A fresh one-time login token for an existing human (operator's CLI)."""
    return await _issue_for_human(ctx, handle, "login", "login.create")


async def human_principal(ctx: Context, handle: str) -> Principal:
    """An existing human, for operator commands that act as them (e.g. issuing an enroll code)."""
    row = await ctx.db.read(lambda conn: store.agent_by_handle(conn, handle))
    if row is None or row["kind"] != "human":
        raise NotFound("human")
    return principal_from_row(row)


async def _issue_for_human(ctx: Context, handle: str, kind: str, action: str) -> str:
    async def write(conn: Connection) -> str:
        row = await store.agent_by_handle(conn, handle)
        if row is None or row["kind"] != "human":
            raise NotFound("human")
        await audit.record(conn, ctx, None, action, handle)
        return await _issue(conn, ctx, row["id"], kind)

    return await ctx.db.write(write)


async def runner_token(ctx: Context) -> str:
    """A token for the routines runner, which acts as the board's own system agent.

    It creates, starts and finishes runs of approved versions; it proposes and
    approves nothing (services/routines.py).
    """

    async def write(conn: Connection) -> str:
        row = await store.agent_by_handle(conn, "board")
        if row is None or row["kind"] != "system":
            raise NotFound("board agent")
        await audit.record(conn, ctx, None, "token.create", "board", details={"kind": "runner"})
        return await _issue(conn, ctx, row["id"], "runner")

    return await ctx.db.write(write)


def check_handle(handle: str) -> None:
    """A new agent's handle: the pattern, and a letter or digit first (validation.check_new_name)."""
    if not re.fullmatch(HANDLE_PATTERN, handle):
        raise InvalidArgument(f"A handle is 2-32 of [A-Za-z0-9._-]; got {handle[:40]!r}.")
    check_new_name("handle", handle, "handle")


#: What a bot may say it runs at registration (its ``kind``).
HARNESS_LABELS = ("claude-code", "codex", "opencode", "copilot", "gemini", "other")


@dataclass
class Registration:
    handle: str = arg(pattern=HANDLE_PATTERN, help="2-32 of [A-Za-z0-9._-], a letter or digit first, unique.")
    invite: str = arg(max_len=128, help="The invite code a human gave you.")
    kind: str = arg(
        "other",
        choices=HARNESS_LABELS,
        help="The harness this bot runs, shown on the roster; registration never makes a human.",
    )
    description: str = arg("", max_len=500)


async def register_bot(ctx: Context, reg: Registration) -> dict[str, Any]:
    """Trade an invite for a bot identity in the invite's workspace."""
    check_handle(reg.handle)

    async def write(conn: Connection) -> dict[str, Any]:
        now = ctx.now()
        invite = await store.take_invite_use(conn, hash_secret(reg.invite), now)
        if invite is None:
            raise Unauthenticated("Unknown, used-up or expired invite; ask a human for a new one.")
        if invite["archived_at"]:
            raise Forbidden(f"Workspace {invite['workspace']} is archived.")
        if await store.agent_by_handle(conn, reg.handle) is not None:
            raise NameConflict(f"The handle {reg.handle!r} is taken; pick another.")
        agent_id = await store.insert_agent(
            conn, reg.handle, "bot", invite["workspace_id"], reg.description, now, harness=reg.kind
        )
        token = await _issue(conn, ctx, agent_id, "bot")
        actor = Principal(agent_id, reg.handle, "bot", invite["workspace_id"], invite["workspace"])
        await audit.record(
            conn,
            ctx,
            actor,
            "agent.register",
            reg.handle,
            workspace=invite["workspace"],
            details={"invite": invite["id"]},
        )
        row = await store.agent_by_id(conn, agent_id)
        return {"agent": agent_dict(row, now), "token": token}

    return await ctx.db.write(write)


async def rotate(ctx: Context, p: Principal) -> dict[str, str]:
    """A new token for the caller; every older one of its kind stops at once."""
    kind = "human" if p.is_human else "bot"

    async def write(conn: Connection) -> str:
        await store.revoke_tokens(conn, p.agent_id, kind, ctx.now())
        await audit.record(conn, ctx, p, "token.rotate", p.handle, workspace=p.workspace)
        return await _issue(conn, ctx, p.agent_id, kind)

    token = await ctx.db.write(write)
    ctx.tokens.forget_agent(p.agent_id)
    return {"token": token}


async def revoke_bot_token(ctx: Context, p: Principal, handle: str) -> dict[str, Any]:
    actions.require(p, "bot.revoke_token")

    async def write(conn: Connection) -> tuple[int, int]:
        row = await store.agent_by_handle(conn, handle)
        if row is None or row["kind"] != "bot":
            raise NotFound("bot")
        revoked = await store.revoke_tokens(conn, row["id"], "bot", ctx.now())
        await audit.record(conn, ctx, p, "token.revoke", row["handle"], workspace=row["workspace"])
        return row["id"], revoked

    agent_id, revoked = await ctx.db.write(write)
    ctx.tokens.forget_agent(agent_id)
    return {"handle": handle, "revoked": revoked}


@dataclass
class InviteRequest:
    workspace: str = arg(max_len=64)
    uses: int = arg(1, min=1, max=1000)
    expires_in: int | None = arg(86400, min=60, max=90 * 86400, help="Seconds until it expires.")


async def create_invite(ctx: Context, p: Principal | None, req: InviteRequest) -> dict[str, Any]:
    """An invite code for bots to join one workspace (``p=None``: the operator's CLI)."""
    if p is not None:
        actions.require(p, "invite.create")
    code = new_secret("invite")
    expires_at = iso(ctx.clock.now() + timedelta(seconds=req.expires_in)) if req.expires_in else None

    async def write(conn: Connection) -> dict[str, Any]:
        ws = await workspace_store.by_slug(conn, req.workspace)
        if ws is None and p is None:  # the operator: no scope to hide it from
            raise NotFound(message=f"No workspace {req.workspace}: make it on /workspaces first.")
        if ws is None:
            raise NotFound("workspace")
        if ws["archived_at"]:
            raise Forbidden(f"Workspace {ws['slug']} is archived.")
        await store.insert_invite(
            conn,
            hash_secret(code),
            ws["id"],
            req.uses,
            expires_at,
            p.agent_id if p else None,
            ctx.now(),
        )
        await audit.record(
            conn,
            ctx,
            p,
            "invite.create",
            ws["slug"],
            workspace=ws["slug"],
            details={"uses": req.uses, "expires_at": expires_at},
        )
        return {"invite": code, "workspace": ws["slug"], "uses": req.uses, "expires_at": expires_at}

    return await ctx.db.write(write)


def agent_dict(row: Any, now: str) -> dict[str, Any]:
    """An agent as the roster shows it: a bot's kind is its harness label, a human's ``human``."""
    return {
        "handle": row["handle"],
        "kind": row["harness"] if row["kind"] == "bot" else row["kind"],
        "workspace": row["workspace"],
        "description": row["description"],
        "created_at": row["created_at"],
        "last_seen_at": row["last_seen_at"],
        "presence": presence(row["last_seen_at"], now),
    }


# -- a human's own API tokens (the settings page) ------------------------------------


async def list_own_tokens(ctx: Context, p: Principal) -> list[dict[str, Any]]:
    """The caller's live API tokens: ids, names and dates, never the secrets."""
    actions.require(p, "token.manage")
    rows = await ctx.db.read(lambda conn: store.tokens_of(conn, p.agent_id, "human"))
    return [{"id": r["id"], "name": r["name"], "created_at": r["created_at"]} for r in rows]


@dataclass
class NewToken:
    name: str = arg("", max_len=64, help='What the token is for ("CI", "laptop"), shown beside it.')


async def create_own_token(ctx: Context, p: Principal, req: NewToken) -> str:
    """A new API token for the caller, shown once; its audit row names it as revoking it does."""
    actions.require(p, "token.manage")
    name = req.name.strip()

    async def write(conn: Connection) -> str:
        token, made = await _issued(conn, ctx, p.agent_id, "human", name)
        await audit.record(conn, ctx, p, "token.create", p.handle, details={"token": made, "name": name})
        return token

    return await ctx.db.write(write)


async def revoke_own_token(ctx: Context, p: Principal, token_id: int) -> None:
    actions.require(p, "token.manage")

    async def write(conn: Connection) -> str | None:
        token_hash = await store.revoke_token(conn, p.agent_id, token_id, ctx.now())
        if token_hash is None:
            raise NotFound("token")
        await audit.record(conn, ctx, p, "token.revoke", p.handle, details={"token": token_id})
        return token_hash

    await ctx.db.write(write)
    ctx.tokens.forget_agent(p.agent_id)
