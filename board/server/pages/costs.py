"""What the wakes cost: per UTC day, workspace, bot and routine, with a chart; estimates marked."""

from __future__ import annotations

import math
from typing import Any

from aiohttp import web

from ..errors import InvalidArgument, NotFound
from ..services import costs
from .chart import cost_chart
from .routing import PageCall, PageRoute

UNIT = 10_000  # the page shows dollars to $0.0001


def adding_up(total: int, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with costs shown that add up to ``total`` (in $0.0001 units).

    Each rounded on its own, the parts can miss the total by $0.0001 a few rows. So
    each is rounded down and the units left over go to the rows that lost the most
    (the one listed first on a tie): no shown part is more than $0.0001 off its own
    figure, and a person adding a table gets the total above it.
    """
    exact = [float(r["cost_usd"]) * UNIT for r in rows]
    shown = [math.floor(e) for e in exact]
    losers = sorted(range(len(rows)), key=lambda i: shown[i] - exact[i])
    for i in losers[: max(0, total - sum(shown))]:
        shown[i] += 1
    return [r | {"cost_usd": s / UNIT} for r, s in zip(rows, shown, strict=True)]


def as_shown(answer: dict[str, Any]) -> dict[str, Any]:
    """The cost answer with the figures the page shows: every table that counts every wake
    (per workspace, per bot, per day when no row is cut) adds up to the total shown.

    The routines' table counts only routines' wakes, so its rows are rounded on their own;
    the stored figures and the API's answer are left as they are.
    """
    total = round(answer["total"]["cost_usd"] * UNIT)
    shown = answer | {
        "total": answer["total"] | {"cost_usd": total / UNIT},
        "workspaces": adding_up(total, answer["workspaces"]),
        "bots": adding_up(total, answer["bots"]),
    }
    if answer["rows_complete"]:
        shown["rows"] = adding_up(total, answer["rows"])
    return shown


async def index(call: PageCall) -> web.StreamResponse:
    typed = call.request.query
    try:
        q = call.query(costs.CostQuery)
        answer = await costs.costs(call.ctx, call.p, q)
    except (InvalidArgument, NotFound) as refusal:
        # A filter mistyped (a bot's name, a number of days) is said above the filter as typed,
        # to be mended there, as the search does: an error page in its place lost the form.
        return call.render("costs.html", status=refusal.status, typed=typed, refusal=refusal, costs=None)
    chart = cost_chart(answer["by_day"])
    return call.render("costs.html", typed=typed, refusal=None, costs=as_shown(answer), chart=chart)


ROUTES = [
    PageRoute("GET", "/costs", index, "What wakes cost per UTC day, workspace, bot and routine, charted."),
]
