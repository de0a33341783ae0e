"""The forge's intake for humans: each source with its webhook URL and mappings, and the log of deliveries.

Sources are set through ``PUT /api/intake/sources/{name}`` (docs/intake.md); this page shows
what they are, never their secrets, what each delivery did or why it was ignored, and the
replies posted back to the forge with how each went.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from ..api.keys import HOSTS
from ..services import intake
from ..validation import arg
from .routing import PageCall, PageRoute

LOG_PAGE = 50


@dataclass
class IntakeQuery:
    source: str | None = arg(None, pattern=intake.NAME_PATTERN)
    before: int = arg(0, min=0)


async def index(call: PageCall) -> web.StreamResponse:
    q = call.query(IntakeQuery)
    sources = await intake.list_sources(call.ctx, call.p, intake.SourceList(limit=500))
    log = await intake.list_deliveries(
        call.ctx, call.p, intake.DeliveryList(source=q.source, before=q.before, limit=LOG_PAGE)
    )
    out = await intake.list_replies(call.ctx, call.p, q.source, LOG_PAGE)
    board = call.request.app[HOSTS].board_url(call.request)
    return call.render("intake.html", q=q, sources=sources["sources"], log=log, replies=out, board=board)


ROUTES = [
    PageRoute(
        "GET",
        "/intake",
        index,
        "The forge's intake: sources, mappings, each delivery's outcome, and the replies out.",
    ),
]
