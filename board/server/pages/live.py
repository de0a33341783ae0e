"""Server-Sent Events for the pages: one stream per tab, resumable with Last-Event-ID.

Each event is a message the viewer may read, with its item already rendered
(the same template the page uses), so the page's script only places it. The
rendering is cached by message id, and each published message's whole frame on
its hub event: a hundred tabs watching one post render and encode it once.
A page may follow the routines' changes too (``follow=routines``): it then gets
``event: changed`` carrying nothing but the change cursor, and reads itself again.
Every page gets ``event: delivery`` with the id of a message whose delivery states
moved (0: those of a bot that waits again), and reads that message again.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from functools import partial
from typing import Any

from aiohttp import web

from ..hub import Event, Signal
from ..jsonvalues import encode
from ..services import live, reach, routines, sessions
from ..validation import arg
from .board import SLUG
from .routing import TEMPLATES, PageCall, PageRoute

RENDERED_KEPT = 1000


@dataclass
class LiveQuery:
    workspace: str = arg(pattern=SLUG)
    since: int | None = arg(None, min=0, help="The cursor the page was rendered at.")
    follow: str | None = arg(None, choices=("routines",), help="Also tell when the routines change.")


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


def _last_event_id(request: web.Request) -> int | None:
    text = request.headers.get("Last-Event-ID", "")
    return int(text) if text.isdigit() and len(text) < 19 else None


async def events(call: PageCall) -> web.StreamResponse:
    """The stream lives while its session does: a sign-out or a password change of the
    human ends it at once (a signal on :func:`sessions.ended`), an expiry at the next beat."""
    q = call.query(LiveQuery)
    since = _last_event_id(call.request)
    ended = sessions.ended(call.p.agent_id)
    signals = (ended, routines.CHANGES) if q.follow == "routines" else (ended,)
    feed = await live.open_feed(call.ctx, call.p, q.workspace, q.since if since is None else since, signals)
    request = call.request
    cookie = request.cookies.get(sessions.COOKIE)
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    )
    try:
        await response.prepare(request)
        await response.write(b": open\n\n")
        async for batch in feed.batches():
            beat = not batch
            check = beat or any(isinstance(item, Signal) and item.key == ended for item in batch)
            if check and await sessions.resolve(call.ctx, cookie) is None:
                await response.write(b"event: signed-out\ndata: {}\n\n")
                break
            if beat:
                await response.write(b": beat\n\n")
            for item in batch:
                if isinstance(item, Signal) and item.key == ended:
                    continue
                if isinstance(item, Signal):
                    name = "delivery" if item.key[0] == reach.DELIVERY else "changed"
                    await response.write(f"event: {name}\ndata: {item.id}\n\n".encode())
                elif isinstance(item, Event):  # the same bytes for every tab it reaches
                    await response.write(item.view("sse", partial(_frame, request, item.message)))
                else:
                    await response.write(_frame(request, item))
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
