"""Server-Sent Events for the pages: one stream per tab, resumable with Last-Event-ID.

Each event is a message the viewer may read, with its item already rendered
(the same template the page uses), so the page's script only places it. The
rendering is cached by message id, and each published message's whole frame on
its hub event: a hundred tabs watching one post render and encode it once.
A page may follow the routines' changes too (``follow=routines``): it then gets
``event: changed`` carrying nothing but the change cursor, and reads itself again.
Every page gets ``event: delivery`` with the id of a message whose delivery states
moved (0: those of a bot that waits again), and reads that message again.
Every stream carries ``event: inbox`` (``services/inbox_watch.py``): the viewer's unread
count at once and whenever it changes, with notifications to raise. A stream that names no
workspace carries only that: every page opens one, for the count in its navigation.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from functools import partial
from typing import Any

from aiohttp import web

from ..api.access import cutter
from ..api.errors import begin
from ..hub import Event, Signal
from ..jsonvalues import encode
from ..services import inbox_watch, live, reach, routines, sessions
from ..validation import arg
from .board import SLUG
from .routing import TEMPLATES, PageCall, PageRoute

RENDERED_KEPT = 1000


@dataclass
class LiveQuery:
    workspace: str | None = arg(None, pattern=SLUG, help="None: the viewer's inbox alone.")
    since: int | None = arg(None, min=0, help="The cursor the page was rendered at.")
    follow: str | None = arg(None, choices=("routines",), help="Also tell when the routines change.")
    mine: str = arg(
        "",
        pattern=r"([0-9]{1,18}(,[0-9]{1,18}){0,499})?",
        help="Highlighted message ids on the page, told when read.",
    )


class RenderedItems:
    """Message items rendered once per message, shared by every tab."""

    def __init__(self) -> None:
        self._items: OrderedDict[int, str] = OrderedDict()

    def get(self, request: web.Request, message: dict[str, Any]) -> str:
        hit = self._items.get(message["id"])
        if hit is None:
            macro = request.app[TEMPLATES].get_template("message.html").module.item  # type: ignore[attr-defined]
            hit = str(macro(message))
            self._items[message["id"]] = hit
            if len(self._items) > RENDERED_KEPT:
                self._items.popitem(last=False)
        return hit


RENDERED = web.AppKey("rendered_items", RenderedItems)


def _frame(request: web.Request, message: dict[str, Any]) -> bytes:
    """One message event of the stream: the message and its rendered item."""
    data = encode({"message": message, "html": request.app[RENDERED].get(request, message)})
    return b"id: %d\nevent: message\ndata: %s\n\n" % (message["id"], data)


def _inbox_frame(told: dict[str, object]) -> bytes:
    """The viewer's inbox: unread count, ids read and to highlight, notifications to raise."""
    return b"event: inbox\ndata: %s\n\n" % encode(told)


def _last_event_id(request: web.Request) -> int | None:
    text = request.headers.get("Last-Event-ID", "")
    return int(text) if text.isdigit() and len(text) < 19 else None


async def events(call: PageCall) -> web.StreamResponse:
    """The stream lives while its session does: a sign-out or a password change of the
    human ends it at once (a signal on :func:`sessions.ended`), an expiry at the next beat."""
    q = call.query(LiveQuery)
    since = _last_event_id(call.request)
    ended = sessions.ended(call.p.agent_id)
    watch = inbox_watch.Watch(call.ctx, call.p, [int(i) for i in q.mine.split(",") if i])
    signals = (ended, *watch.keys())
    feed = await live.open_feed(call.ctx, call.p, q.workspace, q.since if since is None else since, signals)
    request = call.request
    feed.on_overflow(cutter(request))  # a tab too far behind: dropped, it reconnects
    cookie = request.cookies.get(sessions.COOKIE)
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    )
    try:
        await begin(request, response)
        await response.write(b": open\n\n")
        await response.write(_inbox_frame(await watch.start()))
        async for batch in feed.batches():
            beat = not batch
            check = beat or any(isinstance(item, Signal) and item.key == ended for item in batch)
            if check and await sessions.resolve(call.ctx, cookie) is None:
                await response.write(b"event: signed-out\ndata: {}\n\n")
                break
            if beat:
                await response.write(b": beat\n\n")
            for item in batch:
                if isinstance(item, Signal):
                    if item.key[0] == reach.DELIVERY:
                        await response.write(f"event: delivery\ndata: {item.id}\n\n".encode())
                    elif item.key == routines.CHANGES and q.follow == "routines":
                        await response.write(f"event: changed\ndata: {item.id}\n\n".encode())
                elif isinstance(item, Event):  # the same bytes for every tab it reaches
                    await response.write(item.view("sse", partial(_frame, request, item.message)))
                elif isinstance(item, dict):
                    await response.write(_frame(request, item))
            arrivals = [item for item in batch if isinstance(item, live.Arrival)]
            told = await watch.update(arrivals, inbox_watch.signal_keys(batch))
            if told is not None:
                await response.write(_inbox_frame(told))
    except live.TooFarBehind:
        await response.write(b"event: reset\ndata: {}\n\n")
    except live.Released:
        # Too many tabs or long-polls at once: this, the oldest, stops rather than retrying.
        await response.write(b"event: released\ndata: {}\n\n")
    finally:  # a closed tab ends here too, logged by the access middleware as the client gone
        feed.close()
    return response


ROUTES = [
    PageRoute("GET", "/events", events, "Live messages of one workspace, as Server-Sent Events."),
]
