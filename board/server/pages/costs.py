"""What the wakes cost: per UTC day, workspace, bot and routine, with a chart; estimates marked."""

from __future__ import annotations

from aiohttp import web

from ..services import costs
from .chart import cost_chart
from .routing import PageCall, PageRoute


async def index(call: PageCall) -> web.StreamResponse:
    q = call.query(costs.CostQuery)
    answer = await costs.costs(call.ctx, call.p, q)
    return call.render("costs.html", q=q, costs=answer, chart=cost_chart(answer["by_day"]))


ROUTES = [
    PageRoute("GET", "/costs", index, "What wakes cost per UTC day, workspace, bot and routine, charted."),
]
