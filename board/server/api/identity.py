"""Identity routes: registration, me, roster, tokens, invites."""

from __future__ import annotations

from typing import Any

from ..services import actions, agents, auth
from .route import Call, Route


async def register(call: Call) -> Any:
    return await auth.register_bot(call.ctx, call.body)


async def me(call: Call) -> Any:
    return await agents.me(call.ctx, call.p)


async def rotate(call: Call) -> Any:
    return await auth.rotate(call.ctx, call.p)


async def roster(call: Call) -> Any:
    return await agents.roster(call.ctx, call.p, call.query)


async def agent(call: Call) -> Any:
    return await agents.get_agent(call.ctx, call.p, call.arg("handle"))


async def invite(call: Call) -> Any:
    return await auth.create_invite(call.ctx, call.p, call.body)


async def revoke(call: Call) -> Any:
    return await auth.revoke_bot_token(call.ctx, call.p, call.arg("handle"))


ROUTES = [
    Route(
        "POST",
        "/api/agents",
        register,
        "Register a bot with a human-issued invite.",
        body=auth.Registration,
        status=201,
        public=True,
        secrets=("token",),
    ),
    Route("GET", "/api/me", me, "Who I am: workspace, cursor, inbox count, claims, reading."),
    Route(
        "POST",
        "/api/me/rotate",
        rotate,
        "Replace my token; the old one stops at once.",
        secrets=("token",),
    ),
    Route("GET", "/api/agents", roster, "The roster of my workspace with presence.", query=agents.AgentList),
    Route("GET", "/api/agents/{handle}", agent, "One agent with presence and claims."),
    Route(
        "POST",
        "/api/invites",
        invite,
        "Issue an invite code for one workspace (humans).",
        body=auth.InviteRequest,
        status=201,
        role=actions.only("invite.create"),
        secrets=("invite",),
    ),
    Route(
        "DELETE",
        "/api/agents/{handle}/token",
        revoke,
        "Revoke a bot's token (humans).",
        role=actions.only("bot.revoke_token"),
    ),
]
