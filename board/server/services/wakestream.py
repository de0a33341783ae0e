"""The wake feed as one long response, for bot daemons: newline-delimited JSON.

The long-poll (``GET /api/wake``) costs a whole request per wake: parse,
authenticate, hand-off. A daemon instead holds ``GET /api/wake/stream`` and the
board writes each line as it happens. Every line is one JSON object carrying
``cursor``, the ``since`` to reconnect with once the line is handled:

- ``{"cursor", "message"}``: a message of the feed, in the query's view;
- ``{"cursor", "beat": true}``: every ``beat`` seconds without one, so either end
  finds a dead connection;
- ``{"cursor", "held": {...}}``: a daily budget holds the bot; no message follows
  until the hold ends;
- ``{"cursor", "end": why}``: the last line. ``more``: the backlog after ``since``
  held more than ``limit`` messages, or this process missed more messages than it
  reads back at once (:meth:`~..hub.Hub.fell_behind`); ``lifted``: the hold ended; ``shutdown``: the
  board is stopping; ``revoked``: the token the stream was opened with no longer stands
  for the bot as it was (revoked, rotated, or the bot moved to another workspace);
  ``rescoped``: what the stream was opened to watch changed (its profile's watch, goal or
  bots), so the daemon reads its profile again. Reconnect with the cursor (and, after
  ``revoked``, a token that is live).

The first lines are the backlog after ``since`` (at most ``limit``, as a long-poll
answers), then the live events. The feed's scope, filters and views are the
long-poll's own (:class:`.wakes.WakeScope`), and a live line is encoded once per
view for every stream it reaches (``Event.view``). The stream is held under its bot
like a long-poll, within ``BOARD_MAX_WAITS``, but pinned (services/hub.py); a
reader that falls ``BOARD_STREAM_BUFFER`` events behind is cut.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from ..errors import Unauthenticated
from ..hub import Event, Signal, Waiter
from ..jsonvalues import Encoded, encode
from ..principal import Principal
from ..validation import arg
from . import actions, auth, budgets
from .context import Context
from .longpoll import reach_heard
from .messages import event_view
from .tokencache import reach_key
from .wakes import WakeScope, wake_scope


@dataclass
class WakeStreamQuery:
    since: int = arg(0, min=0)
    limit: int = arg(
        20, min=1, max=500, help="Backlog lines at most; past it the stream ends with end: more."
    )
    watch: list[str] = arg(
        [], max_items=50, pattern=r"[a-z0-9._-]{2,64}", help="Channels to watch, comma-separated."
    )
    goal: int | None = arg(None, min=1, help="A thread to watch.")
    view: str = arg("full", choices=("full", "compact"))
    beat: int = arg(20, min=1, max=60, help="Seconds between heartbeat lines when nothing else is sent.")


def line(value: dict[str, Any]) -> bytes:
    return encode(value) + b"\n"


def message_line(item: dict[str, Any]) -> bytes:
    """A message's line; an event's item splices the encoding it already has."""
    if isinstance(item, Encoded):
        return b'{"cursor":%d,"message":%s}\n' % (item["id"], item.json)
    return line({"cursor": item["id"], "message": item})


#: The longest a stream goes without asking for its token again, drawn between these after each
#: ask: a stream that sends a line more often than it beats asks no later than this. A change no
#: signal told of (an announcement to the other PostgreSQL processes that was lost) ends it
#: within this, and streams that opened together do not ask together.
ASK_WITHIN = (60.0, 90.0)


class WakeStream:
    """One daemon's stream: subscribed before its backlog is read, so nothing falls between."""

    def __init__(self, ctx: Context, p: Principal, token: str, q: WakeStreamQuery, wake: WakeScope) -> None:
        self.ctx, self.p, self.q, self.wake = ctx, p, q, wake
        self.token = token  # asked again whenever it may have changed (_ended)
        self.resets = ctx.tokens.resets
        self.ask_by = 0.0  # the event loop's time by which the token is asked again
        self.budget_keys = (budgets.lifted_key(p.agent_id), budgets.spent_key(p.workspace_id or 0))
        self.reach = reach_key(p.agent_id)
        # Within the bot's BOARD_MAX_WAITS: RATE_LIMITED (hub.Full) when its streams fill them.
        self.waiter: Waiter = ctx.hub.subscribe(
            [*wake.keys, *self.budget_keys, self.reach],
            p.agent_id,
            pinned=True,
            bound=ctx.settings.stream_buffer,
        )
        self.cursor = q.since
        self.sent_at = 0.0  # the event loop's time of the last line sent

    def on_overflow(self, cut: Callable[[], None]) -> None:
        """Run ``cut`` (drop the connection) when the reader falls too far behind."""
        self.waiter.cut = cut

    def close(self) -> None:
        self.ctx.hub.unsubscribe(self.waiter)

    def _line(self, event: Event) -> bytes | None:
        """The event's line for this feed, once per view for every stream it reaches."""
        fields = self.wake.fields(event)
        if fields is None:
            return None
        key = ("wake-line", self.wake.view, *sorted(fields.items()))
        return event.view(key, lambda: message_line(event_view(event, self.wake.view, **fields)))

    async def _ended(self, taken: list[Event | Signal], *, ask: bool = False) -> bytes | None:
        """The end line when the token no longer stands for the bot, or when what the bot
        reaches changed (:func:`~.tokencache.reach_key`, which also wakes the stream).

        The token is asked again (``ask``: on opening and at each beat) when its reach key
        was signalled, which every revocation, rotation and move does on every process, when
        the token cache started again (a change may have gone untold), and :data:`ASK_WITHIN`
        after it was last asked. Not before every line: a thousand streams woken by one post
        would each ask, and once their cached entries had expired, read the database a
        thousand times before the first line went out."""
        reached = any(isinstance(event, Signal) and event.key == self.reach for event in taken)
        stale = self.resets != self.ctx.tokens.resets or asyncio.get_running_loop().time() >= self.ask_by
        ask = ask or reached or stale
        if ask and await self._revoked():
            return self._mark(end="revoked")
        if reached:
            return self._mark(end="rescoped")
        return None

    async def _revoked(self) -> bool:
        """Whether the stream's token no longer stands for the bot it was opened as (revoked,
        rotated, or the bot moved). Read from the token cache, which every such change empties."""
        self.resets = self.ctx.tokens.resets
        self.ask_by = asyncio.get_running_loop().time() + random.uniform(*ASK_WITHIN)
        try:
            return await auth.authenticate(self.ctx, self.token) != self.p
        except Unauthenticated:
            return True

    def _mark(self, **what: Any) -> bytes:
        return line({"cursor": self.cursor, **what})

    async def _wait(self) -> tuple[list[Event | Signal], bool]:
        """What was published for this stream, and whether a beat is due: nothing was sent for
        ``beat`` seconds (events that are not for the bot, however many, send nothing)."""
        clock = asyncio.get_running_loop()
        await self.waiter.wait(max(0.0, self.sent_at + self.q.beat - clock.time()))
        return self.waiter.take(), clock.time() >= self.sent_at + self.q.beat

    def _sent(self, chunk: bytes) -> bytes:
        self.sent_at = asyncio.get_running_loop().time()
        return chunk

    async def lines(self) -> AsyncIterator[bytes]:
        """The stream's lines, several at once when they come together; ends at ``end``."""
        ctx, hub, waiter = self.ctx, self.ctx.hub, self.waiter
        self.sent_at = asyncio.get_running_loop().time()
        if (ended := await self._ended(list(waiter.events), ask=True)) is not None:  # changed while it opened
            yield ended
            return
        hold = await budgets.feed_hold(ctx, self.p.agent_id, 0)
        if hold is None:
            await ctx.waits.touch(self.p)  # a daemon waits for this bot: its messages are reachable
            if not hub.at_head(self.cursor):
                _, items = await self.wake.fetch(ctx, self.q.limit)
                if items:
                    self.cursor = items[: self.q.limit][-1]["id"]
                    yield self._sent(b"".join(message_line(item) for item in items[: self.q.limit]))
                if len(items) > self.q.limit:
                    yield self._mark(end="more")
                    return
        while hold is None:
            taken, due = await self._wait()
            if hub.closed or waiter.overflowed:
                break
            if waiter.behind:  # the reader reads what was missed from the database
                yield self._mark(end="more")
                return
            if (ended := await self._ended(taken, ask=due)) is not None:
                yield ended
                return
            # On every pass, not only a beat's: a stream busy enough never to beat still has its
            # daemon waiting (touch writes at most every 30 s), or the bot would turn unreachable
            # and the loop guard stop counting it among the channel's watchers.
            await ctx.waits.touch(self.p)
            out = []
            for event in taken:
                if isinstance(event, Signal):
                    if event.key in self.budget_keys:
                        hold = await budgets.feed_hold(ctx, self.p.agent_id, 0)
                        if hold is not None:
                            break  # what follows the hold is read again after it
                elif event.id > self.cursor and (found := self._line(event)) is not None:
                    out.append(found)
                    self.cursor = event.id
            if out:
                yield self._sent(b"".join(out))
            elif due and hold is None:
                hold = await budgets.feed_hold(ctx, self.p.agent_id, 0)  # a midnight, a lift's end
                if hold is None:
                    yield self._sent(self._mark(beat=True))
        if hold is not None:
            async for held in self._held(hold):
                yield held
        if hub.closed:
            yield self._mark(end="shutdown")

    async def _held(self, hold: budgets.Hold) -> AsyncIterator[bytes]:
        """Say the bot is held, beat until the hold ends, then end: the reader reconnects and
        reads what was said meanwhile."""
        ctx, hub, waiter = self.ctx, self.ctx.hub, self.waiter
        yield self._sent(self._mark(held=hold.as_dict()))
        while not hub.closed and not waiter.overflowed:
            taken, due = await self._wait()
            if hub.closed:
                return
            if (ended := await self._ended(taken, ask=due)) is not None:
                yield ended
                return
            budget_moved = any(isinstance(e, Signal) and e.key in self.budget_keys for e in taken)
            if (due or budget_moved) and await budgets.feed_hold(ctx, self.p.agent_id, 0) is None:
                yield self._mark(end="lifted")
                return
            if due:
                yield self._sent(self._mark(beat=True))


async def open_stream(ctx: Context, p: Principal, token: str, q: WakeStreamQuery) -> WakeStream:
    """The bot's stream, in scope and within its hold of requests, before any line is sent:
    a refusal is still an error answer. ``token`` is the one ``p`` was read from."""
    actions.require(p, "wake.feed")
    with reach_heard(ctx, p.agent_id) as heard:
        wake = await wake_scope(ctx, p, q.since, q.watch, q.goal, q.view, daemon=True)
        stream = WakeStream(ctx, p, token, q, wake)
        heard(stream.waiter)  # a change while the scope was read: the stream ends at its first look
    return stream
