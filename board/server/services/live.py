"""A live feed of one workspace for a browser, from the hub the long-polls use.

The feed subscribes to the hub before it reads what the browser missed (the
messages after its last id), so nothing committed in between is lost; from
then on each event arrives with its rendered message, and the only check is
the scope module's decision on the event itself: no query per event. A feed
may also follow signal keys (a page that shows routines follows their changes):
a signal carries no data, only that something changed, and the page reads it
again through its own scoped handler.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from ..hub import Event, Key, Signal
from ..principal import Principal
from ..store.connection import Connection
from . import messages, reach, scope
from .context import Context

HEARTBEAT_SECONDS = 20.0
CATCH_UP = 200


class TooFarBehind(Exception):
    """More was missed than a feed replays: the browser should load the page again."""


class Released(Exception):
    """The viewer holds more streams and long-polls than ``BOARD_MAX_WAITS``: this, the oldest, ends."""


@dataclass(frozen=True)
class Arrival:
    """A published message that landed in the viewer's inbox (of any workspace), and why."""

    event: Event
    reason: str


class Feed:
    """One browser's subscription to a workspace (or none: only its inbox); :meth:`batches`
    yields what it may read."""

    def __init__(
        self,
        ctx: Context,
        p: Principal,
        workspace: tuple[str, int] | None,
        keys: list[Key],
        since: int | None,
    ) -> None:
        self.ctx, self.p, self.keys = ctx, p, keys
        self.workspace: str | None = workspace[0] if workspace is not None else None
        self.workspace_id: int | None = workspace[1] if workspace is not None else None
        self.since = since if workspace is not None else None
        # Before the catch-up read, so nothing falls between; held under the viewer, whose
        # streams and long-polls together stay within the hub's cap. A tab that reads nothing
        # (its socket full) is cut once BOARD_STREAM_BUFFER events wait for it, as a wake
        # stream is, rather than followed by a buffer that grows without end.
        self.waiter = ctx.hub.subscribe(keys, p.agent_id, bound=ctx.settings.stream_buffer)
        # With no cursor the feed starts at what was published when it subscribed, not when it is
        # first read: a message published while the stream still opens (its inbox read) is told.
        self.opened_at = ctx.hub.last_id

    def close(self) -> None:
        self.ctx.hub.unsubscribe(self.waiter)

    def on_overflow(self, cut: Callable[[], None]) -> None:
        """Run ``cut`` (drop the connection) when the tab falls too far behind."""
        self.waiter.cut = cut

    async def batches(self) -> AsyncIterator[list[dict[str, Any] | Event | Arrival | Signal]]:
        """Batches of messages after ``since``, arrivals in the viewer's inbox and signals of the
        followed keys, [] on a quiet beat.

        What the browser missed comes as messages; what is published from then on as the
        events themselves, so each is encoded once for every feed it reaches (``Event.view``).

        Ends when the board shuts down. Raises :class:`TooFarBehind` when more than ``CATCH_UP``
        messages were missed, and :class:`Released` when a newer request of the viewer's took
        this one's place.
        """
        ctx, hub = self.ctx, self.ctx.hub
        last = self.since if self.since is not None else self.opened_at
        if self.since is not None and not hub.at_head(self.since):
            missed = await messages.list_messages(
                ctx, self.p, messages.MessageQuery(workspace=self.workspace, since=self.since, limit=CATCH_UP)
            )
            if missed["has_more"]:
                raise TooFarBehind()
            if missed["messages"]:
                last = missed["messages"][-1]["id"]
                yield missed["messages"]
        while not hub.closed:
            woke = await self.waiter.wait(HEARTBEAT_SECONDS)
            if hub.closed:
                return
            if self.waiter.released:
                raise Released()
            if self.waiter.behind or self.waiter.overflowed:
                raise TooFarBehind()
            if not woke:
                yield []
                continue
            taken = self.waiter.take()
            found = [
                e
                for e in taken
                if isinstance(e, Event)
                and e.workspace_id == self.workspace_id
                and e.id > last
                and scope.event_visible(self.p, e)
            ]
            if found:
                last = max(e.id for e in found)
            arrived = [
                Arrival(e, e.recipients[self.p.agent_id])
                for e in taken
                if isinstance(e, Event) and self.p.agent_id in e.recipients
            ]
            # The latest signal of each key says all the others of that key do; a delivery
            # signal names its message, so those are kept one per message.
            signals = list({signal_slot(e): e for e in taken if isinstance(e, Signal)}.values())
            if found or arrived or signals:
                yield [*found, *arrived, *signals]


def signal_slot(signal: Signal) -> tuple[Key, int]:
    """What a later signal replaces: the key's, or for a delivery signal the message's."""
    return signal.key, signal.id if signal.key[0] == reach.DELIVERY else 0


async def open_feed(
    ctx: Context, p: Principal, workspace: str | None, since: int | None, signals: tuple[Key, ...] = ()
) -> Feed:
    """Subscribe ``p`` to a workspace it may read (NOT_FOUND otherwise, as on every route), or
    to none, to its messages' delivery changes, and to what lands in its inbox from any
    workspace and its receipts' changes."""
    inbox: list[Key] = [("agent", p.agent_id), messages.inbox_changes(p.agent_id)]
    if workspace is None:
        return Feed(ctx, p, None, [*inbox, *signals], None)

    async def workspace_id(conn: Connection) -> int:
        return int((await scope.resolve(conn, p, workspace))["id"])

    found = await ctx.db.read(workspace_id)
    keys = [("workspace", found), reach.delivery_key(found), *inbox, *signals]
    return Feed(ctx, p, (workspace, found), keys, since)
