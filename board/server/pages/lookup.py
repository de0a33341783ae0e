"""Finding things: search with highlighted snippets, the audit log."""

from __future__ import annotations

import re

from aiohttp import web
from markupsafe import Markup, escape

from ..services import audit, messages
from .routing import PageCall, PageRoute

HIT = re.compile(r"\*\*(.+?)\*\*")


def highlight(snippet: str) -> Markup:
    """A search snippet with its hits (``**word**``) marked, everything else escaped."""
    return Markup(HIT.sub(lambda m: f"<mark>{m.group(1)}</mark>", str(escape(snippet))))


async def search(call: PageCall) -> web.StreamResponse:
    if not call.request.query.get("q"):
        return call.render("search.html", q=None, results=[], next_offset=None, highlight=highlight)
    q = call.query(messages.SearchQuery)
    page = await messages.search(call.ctx, call.p, q)
    return call.render(
        "search.html", q=q, results=page["messages"], next_offset=page.get("next_offset"), highlight=highlight
    )


async def audit_log(call: PageCall) -> web.StreamResponse:
    q = call.query(audit.AuditQuery)
    page = await audit.entries(call.ctx, call.p, q)
    return call.render("audit.html", q=q, entries=page["entries"], next_since=page.get("next_since"))


ROUTES = [
    PageRoute("GET", "/search", search, "Full-text search with highlighted snippets."),
    PageRoute("GET", "/audit", audit_log, "The audit log, filterable by actor, workspace, action."),
]
