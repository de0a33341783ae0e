"""Fleet routes: enrollment, the keeper's report and bot tokens, and the human's controls."""

from __future__ import annotations

from typing import Any

from ..services import actions, fleet
from .discovery import board_url
from .responses import BOOL, INT, STR, TIME, array, nullable, obj, page, ref
from .route import Answer, Call, Route


async def enroll_code(call: Call) -> tuple[int, Any]:
    return 201, await fleet.create_enroll_code(call.ctx, call.p, call.body, board_url(call.request))


async def enroll(call: Call) -> tuple[int, Any]:
    return 201, await fleet.enroll(call.ctx, call.body)


async def report(call: Call) -> Any:
    return await fleet.report(call.ctx, call.p, call.body)


async def machines(call: Call) -> Any:
    return await fleet.fleet(call.ctx, call.p, call.query)


async def assign(call: Call) -> tuple[int, Any]:
    return 201, await fleet.assign(call.ctx, call.p, call.body)


def _order(kind: str) -> Any:
    async def send(call: Call) -> Any:
        return await fleet.order(call.ctx, call.p, call.arg("handle"), kind)

    send.__name__ = kind
    return send


async def remove_worktree(call: Call) -> Any:
    return await fleet.remove_worktree(call.ctx, call.p, call.arg("handle"), call.int_arg("id"))


async def unassign(call: Call) -> Any:
    return await fleet.unassign(call.ctx, call.p, call.arg("handle"))


async def remove_machine(call: Call) -> Any:
    return await fleet.remove_machine(call.ctx, call.p, call.arg("name"))


async def worktree_gone(call: Call) -> Any:
    return await fleet.worktree_gone(call.ctx, call.p, call.arg("handle"), call.int_arg("id"))


async def bot_token(call: Call) -> tuple[int, Any]:
    return 201, await fleet.mint_bot_token(call.ctx, call.p, call.arg("handle"))


ROUTES = [
    Route(
        "POST",
        "/api/fleet/enroll-codes",
        enroll_code,
        "A one-time code for a machine's keeper to enroll (humans).",
        answer=Answer(
            obj({"code": nullable(STR), "machine_name": STR, "expires_at": TIME, "command": nullable(STR)})
        ),
        body=fleet.EnrollCodeRequest,
        status=201,
        role=actions.only("fleet.enroll_code"),
        secrets=("code", "command"),
    ),
    Route(
        "POST",
        "/api/fleet/enroll",
        enroll,
        "Trade an enroll code for a keeper token.",
        answer=Answer(obj({"machine": STR, "token": nullable(STR)})),
        body=fleet.Enrollment,
        public=True,
        status=201,
        secrets=("token",),
    ),
    Route(
        "POST",
        "/api/fleet/report",
        report,
        "A keeper's report; answers the machine's desired state and open orders (keepers).",
        answer=Answer(
            obj(
                {
                    "machine": STR,
                    "bots": array(obj({"handle": STR, "workspace": STR, "profile": STR, "desired": STR})),
                    "orders": array(ref("FleetOrder")),
                    "event_seq": INT,
                }
            )
        ),
        body=fleet.Report,
        keeper=True,
        role=actions.only("fleet.keeper_call"),
    ),
    Route(
        "GET",
        "/api/fleet",
        machines,
        "Machines, online or stale, and their bots (humans).",
        answer=Answer(page("machines", ref("Machine"), orders=array(ref("FleetOrder")))),
        query=fleet.FleetQuery,
        role=actions.only("fleet.view"),
    ),
    Route(
        "POST",
        "/api/fleet/bots",
        assign,
        "Assign a bot to a machine with a profile; it should run (humans).",
        answer=Answer(ref("FleetBot")),
        body=fleet.Assignment,
        status=201,
        role=actions.only("fleet.assign"),
    ),
    *[
        Route(
            "POST",
            f"/api/fleet/bots/{{handle}}/{kind}",
            _order(kind),
            f"{kind.capitalize()} a bot: change its desired state and send its keeper an order (humans).",
            answer=Answer({"allOf": [ref("FleetBot"), obj({"order": obj({"id": INT, "kind": STR})})]}),
            role=actions.only("fleet.order"),
        )
        for kind in fleet.ORDER_KINDS
    ],
    Route(
        "POST",
        "/api/fleet/bots/{handle}/worktrees/{id}/remove",
        remove_worktree,
        "Order a bot's keeper to remove the worktree it kept for a thread; the branch stays (humans).",
        answer=Answer(
            obj(
                {
                    "handle": STR,
                    "thread": INT,
                    "order": obj({"id": INT, "kind": {"const": "remove_worktree"}, "target": INT}),
                }
            )
        ),
        role=actions.only("fleet.remove_worktree"),
    ),
    Route(
        "POST",
        "/api/fleet/bots/{handle}/worktrees/{id}/gone",
        worktree_gone,
        "Say a kept worktree's folder is gone: its thread's record reads removed (the bot or its keeper).",
        answer=Answer(ref("Worktree")),
        keeper=True,
    ),
    Route(
        "DELETE",
        "/api/fleet/bots/{handle}",
        unassign,
        "Stop a bot and take it off its machine (humans).",
        answer=Answer(obj({"handle": STR, "machine": STR, "unassigned": BOOL})),
        role=actions.only("fleet.unassign"),
    ),
    Route(
        "DELETE",
        "/api/fleet/machines/{name}",
        remove_machine,
        "Remove a machine: its bots are unassigned first, then its keeper's token stops (humans).",
        answer=Answer(obj({"machine": STR, "removed": BOOL, "unassigned": array(STR)})),
        role=actions.only("fleet.remove_machine"),
    ),
    Route(
        "POST",
        "/api/fleet/bots/{handle}/token",
        bot_token,
        "Mint the token of a bot assigned to this keeper's machine (keepers).",
        answer=Answer(obj({"handle": STR, "workspace": STR, "token": nullable(STR)})),
        keeper=True,
        role=actions.only("fleet.keeper_call"),
        status=201,
        secrets=("token",),
    ),
]
