"""The fleet page: machines as cards with their bots; start, stop, restart; add a bot or a machine.

Every button is a form sent to the same fleet service as the API, with the
session's CSRF token (checked by the pages' endpoint before anything runs).
The cards and the last orders stay live over Server-Sent Events: ``/fleet/events``
renders them again when the fleet changes (every fleet write signals the hub after
its commit) and on a slow beat, since a machine turning stale is time passing with
no write to wait for. Each bot's card has its state in a word and a colour, why it
stopped, the last lines of its log and small charts of its last hours. Removing a
machine asks first, on a page of its own naming the bots it will unassign; a single bot is
unassigned from its own page (its card links there).
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from ..api.errors import begin
from ..errors import NotFound
from ..services import fleet, fleet_history, registry, sessions, wakes
from .people import NEWEST
from .routing import TEMPLATES, PageCall, PageRoute, redirect
from .sparkline import Spark, sparks

LIVE_BEAT = 10.0  # seconds a live tab's cards wait for a change before they render anyway
MACHINES = 500  # a fleet page shows this many machines at most
RECENT_WAKES = 20
LOG_LINES = 5  # of a bot's log on its card (its own page shows all its keeper sent)


async def _machines(call: PageCall) -> list[dict[str, Any]]:
    return list((await fleet.fleet(call.ctx, call.p, fleet.FleetQuery(limit=MACHINES)))["machines"])


async def _charts(call: PageCall, machines: list[dict[str, Any]]) -> dict[str, list[Spark]]:
    """Each bot's small charts, by handle."""
    handles = [b["handle"] for m in machines for b in m["bots"]]
    found = await fleet_history.history(call.ctx, call.p, handles)
    return {handle: sparks(found[handle]) for handle in handles}


def _cards(call: PageCall, page: dict[str, Any], charts: dict[str, list[Spark]]) -> dict[str, str]:
    """The live parts of the page: the machine cards and the last orders, rendered."""
    module: Any = call.request.app[TEMPLATES].get_template("fleet_cards.html").module
    csrf = call.session.csrf if call.session else ""
    return {
        "html": str(module.cards(page["machines"], csrf, charts, LOG_LINES)),
        "orders": str(module.orders(page["orders"])),
    }


def _board_url(call: PageCall) -> str:
    return f"{call.request.scheme}://{call.request.host}"


async def _page(call: PageCall, *, enroll: dict[str, Any] | None = None) -> web.Response:
    page = await fleet.fleet(call.ctx, call.p, fleet.FleetQuery(limit=MACHINES))
    profiles = await registry.list_profiles(call.ctx, call.p, registry.ProfileList(limit=500))
    return call.render(
        "fleet.html",
        machines=page["machines"],
        orders=page["orders"],
        charts=await _charts(call, page["machines"]),
        log_lines=LOG_LINES,
        profiles=profiles["profiles"],
        chosen=call.request.query.get("profile", ""),  # "Add a bot with it" on a profile's page
        enroll=enroll,
    )


async def overview(call: PageCall) -> web.StreamResponse:
    return await _page(call)


async def add_machine(call: PageCall) -> web.StreamResponse:
    # Rendered, not redirected: the code is shown this once.
    req = call.parsed_form(fleet.EnrollCodeRequest)
    return await _page(call, enroll=await fleet.create_enroll_code(call.ctx, call.p, req, _board_url(call)))


async def add_bot(call: PageCall) -> web.StreamResponse:
    await fleet.assign(call.ctx, call.p, call.parsed_form(fleet.Assignment))
    return redirect("/fleet")


async def steer(call: PageCall) -> web.StreamResponse:
    handle, action = call.arg("handle"), call.arg("action")
    if action == "unassign":
        await fleet.unassign(call.ctx, call.p, handle)
    else:
        await fleet.order(call.ctx, call.p, handle, action)
    return redirect("/fleet")


async def remove_worktree(call: PageCall) -> web.StreamResponse:
    await fleet.remove_worktree(call.ctx, call.p, call.arg("handle"), call.int_arg("id"))
    return redirect("/fleet")


async def _machine(call: PageCall) -> dict[str, Any]:
    found = [m for m in await _machines(call) if m["name"].lower() == call.arg("name").lower()]
    if not found:
        raise NotFound("machine")
    return found[0]


async def confirm_removal(call: PageCall) -> web.StreamResponse:
    """What removing a machine does, named bot by bot, and the button that does it."""
    return call.render("fleet_remove.html", machine=await _machine(call))


async def remove_machine(call: PageCall) -> web.StreamResponse:
    await fleet.remove_machine(call.ctx, call.p, call.arg("name"))
    return redirect("/fleet")


async def bot(call: PageCall) -> web.StreamResponse:
    handle = call.arg("handle")
    found = [b for m in await _machines(call) for b in m["bots"] if b["handle"] == handle]
    if not found:
        raise NotFound("bot")
    woken = await wakes.list_wakes(
        call.ctx, call.p, wakes.WakeList(bot=handle, before=NEWEST, limit=RECENT_WAKES)
    )
    return call.render("fleet_bot.html", bot=found[0], wakes=woken["wakes"])


async def events(call: PageCall) -> web.StreamResponse:
    """The cards, sent again when they render differently, while the session lasts.

    The stream wakes on the fleet's changes (a hub signal after each commit) and on a
    beat, for what moves with no write: a machine turning stale, "reported 4 s ago".
    It is held under the viewer like ``/events``, so a human's streams and long-polls
    stay within ``BOARD_MAX_WAITS``: past it the oldest is released.
    """
    ctx, cookie = call.ctx, call.request.cookies.get(sessions.COOKIE)
    ended = sessions.ended(call.p.agent_id)
    waiter = ctx.hub.subscribe([fleet.CHANGES, ended], call.p.agent_id)
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    )
    try:  # a closed tab ends this with ConnectionResetError, logged as the client gone
        await begin(call.request, response)
        await response.write(b": open\n\n")
        sent = ""
        while not ctx.hub.closed:
            if await sessions.resolve(ctx, cookie) is None:
                await response.write(b"event: signed-out\ndata: {}\n\n")
                break
            page = await fleet.fleet(ctx, call.p, fleet.FleetQuery(limit=MACHINES))
            live = json.dumps(_cards(call, page, await _charts(call, page["machines"])))
            if live != sent:
                await response.write(f"event: fleet\ndata: {live}\n\n".encode())
                sent = live
            await waiter.wait(LIVE_BEAT)
            if waiter.released:
                await response.write(b"event: released\ndata: {}\n\n")
                break
            waiter.take()
    finally:
        ctx.hub.unsubscribe(waiter)
    return response


ROUTES = [
    PageRoute("GET", "/fleet", overview, "Machines as cards with their bots, and the last orders."),
    PageRoute("POST", "/fleet/machines", add_machine, "An enroll code and the line that adds a machine."),
    PageRoute("POST", "/fleet/bots", add_bot, "Assign a bot to a machine from a profile."),
    PageRoute(
        "POST",
        "/fleet/bots/{handle}/{action:start|stop|restart|unassign}",
        steer,
        "Start, stop, restart or unassign a bot.",
    ),
    PageRoute(
        "POST",
        "/fleet/bots/{handle}/worktrees/{id}/remove",
        remove_worktree,
        "Remove a bot's kept worktree of a thread (its keeper does; the branch stays).",
    ),
    PageRoute(
        "GET", "/fleet/machines/{name}/remove", confirm_removal, "What removing a machine does; confirm it."
    ),
    PageRoute(
        "POST",
        "/fleet/machines/{name}/remove",
        remove_machine,
        "Remove a machine; its bots are unassigned first.",
    ),
    PageRoute(
        "GET",
        "/fleet/bots/{handle}",
        bot,
        "One bot of the fleet: its recent wakes, its log tail, and unassigning it.",
    ),
    PageRoute("GET", "/fleet/events", events, "The fleet's cards, live, as Server-Sent Events."),
]
