"""The roster with presence, and one agent's profile: claims, its cost chart, recent wakes, recent posts."""

from __future__ import annotations

from aiohttp import web

from ..services import agents, budgets, costs, messages, wakes
from .chart import cost_chart
from .routing import PageCall, PageRoute, redirect

RECENT = 20
NEWEST = 2**62  # ``before`` past every id: the latest first


async def roster(call: PageCall) -> web.StreamResponse:
    q = call.query(agents.AgentList)
    page = await agents.roster(call.ctx, call.p, q)
    return call.render("agents.html", agents=page["agents"], next_after=page.get("next_since"), q=q)


async def profile(call: PageCall) -> web.StreamResponse:
    handle = call.arg("handle")
    agent = await agents.get_agent(call.ctx, call.p, handle)
    woken = await wakes.list_wakes(call.ctx, call.p, wakes.WakeList(bot=handle, before=NEWEST, limit=RECENT))
    posts = await messages.list_messages(
        call.ctx, call.p, messages.MessageQuery(author=handle, order="desc", limit=RECENT)
    )
    spent = None
    if agent["kind"] != "human":  # a bot's kind is its harness label
        spent = await costs.costs(call.ctx, call.p, costs.CostQuery(bot=handle))
    return call.render(
        "agent.html",
        agent=agent,
        spent=spent,
        chart=cost_chart(spent["by_day"]) if spent else None,
        wakes=[(w, costs.of_wakes([w])) for w in woken["wakes"]],
        cost=costs.of_wakes(woken["wakes"]),
        posts=posts["messages"],
    )


def cleared(form: dict[str, str]) -> dict[str, str]:
    """A limits form with its emptied boxes sent as 0: cleared, not left as they were."""
    return {k: "0" if k in budgets.LIMIT_COLUMNS and not v.strip() else v for k, v in form.items()}


async def set_budget(call: PageCall) -> web.StreamResponse:
    """The budget form of a bot's page: its own limits, or a lift for the rest of the UTC day."""
    handle = call.arg("handle")
    call.form = cleared(call.form)
    await budgets.set_bot_budget(call.ctx, call.p, handle, call.parsed_form(budgets.BudgetChange))
    return redirect(f"/a/{handle}#budget")


ROUTES = [
    PageRoute("GET", "/agents", roster, "The roster with presence."),
    PageRoute("GET", "/a/{handle}", profile, "One agent: profile, budget, claims, wakes with cost, posts."),
    PageRoute(
        "POST", "/a/{handle}/budget", set_budget, "Set a bot's daily limits, or lift them for the day."
    ),
]
