"""Finding things: search with highlighted snippets, the audit log."""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from ..errors import InvalidArgument, NotFound
from ..services import audit, messages
from .people import NEWEST
from .routing import PageCall, PageRoute

AUDIT_PAGE = 50  # rows of the audit page


def more_results(q: messages.SearchQuery, page: dict[str, Any]) -> str | None:
    """The same search's next page: further down this window, or the next, older window."""
    kept = {"q": q.q, "workspace": q.workspace, "channel": q.channel, "author": q.author, "limit": q.limit}
    if not page.get("has_more"):
        return None
    cursor = {"before": page.get("next_before"), "offset": page.get("next_offset")}
    return "/search?" + urlencode({k: v for k, v in {**kept, **cursor}.items() if v})


async def search(call: PageCall) -> web.StreamResponse:
    typed = call.request.query
    if not typed.get("q"):
        return call.render("search.html", q=None, typed=typed, results=[], more=None)
    try:
        q = call.query(messages.SearchQuery)
        page = await messages.search(call.ctx, call.p, q)
    except (InvalidArgument, NotFound) as refused:
        # Words the search cannot take ("*", a workspace misspelt) are said in its form, typed
        # as they were, to be mended there: an error page in its place lost them.
        return call.render(
            "search.html",
            status=refused.status,
            q=None,
            typed=typed,
            refusal=refused,
            results=[],
        )
    # Messages only: the same words in a document are found on Knowledge, so the page says where.
    documents = "/kb?" + urlencode({k: v for k, v in {"workspace": q.workspace, "q": q.q}.items() if v})
    return call.render(
        "search.html",
        q=q,
        typed=typed,
        results=page["messages"],
        more=more_results(q, page),
        documents=documents,
    )


def audit_link(q: audit.AuditQuery, **cursor: int) -> str:
    """The audit page with the same filters and page size, and another cursor (``before`` or ``since``)."""
    kept = {
        "actor": q.actor,
        "workspace": q.workspace,
        "action": q.action,
        "from": q.at_from,
        "until": q.until,
    }
    size = {"limit": q.limit} if q.limit != AUDIT_PAGE else {}
    return "/audit?" + urlencode({**{k: v for k, v in kept.items() if v}, **size, **cursor})


async def audit_log(call: PageCall) -> web.StreamResponse:
    """Newest first: Older continues below the last row shown, Newer above the first."""
    q = call.query(audit.AuditQuery)
    if "limit" not in call.request.query:
        q = replace(q, limit=AUDIT_PAGE)
    upwards = q.since > 0 and q.before is None  # a Newer link: read the rows above, show them newest first
    page = await audit.entries(call.ctx, call.p, q if upwards else replace(q, before=q.before or NEWEST))
    shown = page["entries"][::-1] if upwards else list(page["entries"])
    more, cursor_given = bool(page["has_more"]), upwards or q.before is not None
    return call.render(
        "audit.html",
        q=q,
        entries=shown,
        # Below a Newer page, and above an Older one, there are rows: the ones the link came from.
        older=audit_link(q, before=shown[-1]["id"]) if shown and (more or upwards) else None,
        newer=audit_link(q, since=shown[0]["id"]) if shown and (more if upwards else cursor_given) else None,
        latest=audit_link(q) if not shown and cursor_given else None,
        page_size=AUDIT_PAGE,
        choices=await audit.choices(call.ctx, call.p),
    )


ROUTES = [
    PageRoute("GET", "/search", search, "Messages by full-text search; a link to the words in documents."),
    PageRoute("GET", "/audit", audit_log, "The audit log, filterable by actor, workspace, action."),
]
