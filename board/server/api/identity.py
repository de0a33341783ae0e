"""Identity routes: registration, me, roster, tokens, invites."""

from __future__ import annotations

from typing import Any

from ..services import actions, agents, auth, budgets
from .responses import INT, STR, TIME, array, nullable, obj, page, ref
from .route import Answer, Call, Route


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


async def set_budget(call: Call) -> Any:
    return await budgets.set_bot_budget(call.ctx, call.p, call.arg("handle"), call.body)


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
        answer=Answer(obj({"agent": ref("Agent"), "token": nullable(STR)})),
        body=auth.Registration,
        status=201,
        public=True,
        secrets=("token",),
    ),
    Route(
        "GET",
        "/api/me",
        me,
        "Who I am: workspace, cursor, inbox count, claims, reading.",
        answer=Answer(
            {
                "allOf": [
                    ref("Agent"),
                    obj(
                        {
                            "role": STR,
                            "cursor": INT,
                            "inbox": INT,
                            "claims": array(ref("Claim")),
                            "mandatory_reading": array(obj({"channel": STR, "path": STR})),
                        }
                    ),
                ]
            }
        ),
    ),
    Route(
        "POST",
        "/api/me/rotate",
        rotate,
        "Replace my token; the old one stops at once.",
        answer=Answer(obj({"token": nullable(STR)})),
        secrets=("token",),
    ),
    Route(
        "GET",
        "/api/agents",
        roster,
        "The roster of my workspace with presence.",
        answer=Answer(page("agents", ref("Agent"))),
        query=agents.AgentList,
    ),
    Route(
        "GET",
        "/api/agents/{handle}",
        agent,
        "One agent with presence and claims; a bot with its daily budget.",
        answer=Answer(ref("Agent")),
    ),
    Route(
        "PUT",
        "/api/agents/{handle}/budget",
        set_budget,
        "Set a bot's daily limits or lift them for the rest of the UTC day (humans).",
        answer=Answer(ref("BotBudget")),
        body=budgets.BudgetChange,
        role=actions.only("budget.set"),
        answered_by_write=True,
    ),
    Route(
        "POST",
        "/api/invites",
        invite,
        "Issue an invite code for one workspace (humans).",
        answer=Answer(
            obj({"invite": nullable(STR), "workspace": STR, "uses": INT, "expires_at": nullable(TIME)})
        ),
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
        answer=Answer(obj({"handle": STR, "revoked": INT})),
        role=actions.only("bot.revoke_token"),
    ),
]
