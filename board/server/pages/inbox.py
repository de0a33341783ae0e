"""The human's inbox: threads with what waits in them, marked read or done; reviews and
routine versions waiting for a decision."""

from __future__ import annotations

from aiohttp import web

from ..services import inbox, routines
from ..services.knowledge import moderation
from ..services.knowledge.inputs import ReviewQueueQuery
from .routing import PageCall, PageRoute, local_path, redirect


async def inbox_page(call: PageCall) -> web.StreamResponse:
    q = call.query(inbox.GroupsQuery)
    page = await inbox.groups(call.ctx, call.p, q)
    reviews = await moderation.review_queue(call.ctx, call.p, ReviewQueueQuery(limit=20))
    listed = await routines.list_routines(call.ctx, call.p, routines.RoutineList())
    return call.render(
        "inbox.html",
        for_me=await inbox.highlighted(call.ctx, call.p, [g["latest_id"] for g in page["groups"]]),
        groups=page["groups"],
        unread=page["unread"],
        next_before=page.get("next_before"),
        reviews=reviews["documents"],
        pending_routines=[r for r in listed["routines"] if r["pending"]],
    )


async def mark(call: PageCall) -> web.StreamResponse:
    """Mark a thread (or all) read or done through the API's service; back where the form was."""
    back = call.form.pop("back", "")
    await inbox.mark(call.ctx, call.p, call.parsed_form(inbox.MarkInbox))
    return redirect(local_path(back, "/inbox"))


ROUTES = [
    PageRoute(
        "GET",
        "/inbox",
        inbox_page,
        "What waits for the human: threads with counts, reviews, routine versions.",
    ),
    PageRoute("POST", "/inbox/mark", mark, "Mark a thread's messages, or all, read or done."),
]
