"""What board processes sharing one database tell each other: ids, never bodies.

The store carries what :func:`describe` makes of each committed event to every
process (PostgreSQL's ``NOTIFY``, in commit order), where :func:`take_in` reads back
by id the messages of all that arrived together, in one read, and publishes them to
that process's hub in commit order, so a long-poll, stream or MCP session held
anywhere wakes alike. The writing process's own events come in their place among
them, as they were emitted (``"local"``, store/postgres.py); a store only one process
serves publishes them at the commit (``store.writer``). Dropping a cached token travels
the same way, so a revoked token stops working on every process, not only the one
that revoked it.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from ..hub import Event, Signal
from ..store import messages as store
from ..store.connection import Connection
from .context import Context
from .messages import rows_to_messages
from .scope import audiences

log = logging.getLogger(__name__)


def describe(item: Any) -> dict[str, Any] | None:
    """An outbox item as the other processes are told of it."""
    if isinstance(item, Event):
        return {"t": "message", "id": item.id}
    if isinstance(item, Signal):
        return {"t": "signal", "key": list(item.key), "id": item.id}
    return None


#: Messages read back in one transaction at most: a larger take is read in slices.
MAX_READ = 256
#: Messages one take reads back at most. Past it (a gap of a long outage while the others
#: wrote on) none is: every waiter for messages reads them from the database instead
#: (:meth:`~..hub.Hub.fell_behind`), so memory holds at most this many ids, not every
#: message missed.
READ_BACK_AT_MOST = 1000


async def events_of(conn: Connection, message_ids: list[int]) -> dict[int, Event]:
    """Committed messages' events as their writers published them, read back by id.

    A set of queries for all of them, whatever their number: the rows, their thread
    state, their inbox rows, and each distinct conversation's members once.
    """
    rows = await store.by_ids(conn, message_ids)
    messages = await rows_to_messages(conn, rows)
    recipients = await store.inbox_reasons(conn, [row["id"] for row in rows])
    conversations = sorted({row["conversation_id"] for row in rows if row["conversation_id"] is not None})
    members = await audiences(conn, conversations)
    return {
        row["id"]: Event(
            message=message,
            workspace_id=row["workspace_id"],
            channel_id=row["channel_id"],
            conversation_id=row["conversation_id"],
            thread_id=row["thread_id"],
            recipients=recipients[row["id"]],
            audience=None if row["conversation_id"] is None else members[row["conversation_id"]],
            author_id=row["author_id"],
        )
        for row, message in zip(rows, messages, strict=True)
    }


async def _read_back(ctx: Context, message_ids: list[int]) -> dict[int, Event]:
    """The events of ``message_ids``, one read transaction per :data:`MAX_READ` of them.

    A failed read fails the take before anything of it is published: the store reads its
    messages again, as a gap, once the database answers (store/postgres.py). Skipped, they
    would be lost to every stream here whose cursor a later message moves past them.
    """
    events: dict[int, Event] = {}
    for at in range(0, len(message_ids), MAX_READ):
        part = message_ids[at : at + MAX_READ]
        events |= await ctx.db.read(functools.partial(events_of, message_ids=part))
    return events


async def take_in(ctx: Context, items: list[dict[str, Any]]) -> None:
    """Publish here what other processes committed, given in their commit order.

    The messages among ``items`` are read back together, then every item is published
    in the order it came, this process's own (``"local"``) among them, so the hub sees ids
    in commit order. Past :data:`READ_BACK_AT_MOST` messages, or at a ``"behind"`` (a read
    the store gave up), the hub's waiters read from the database instead.
    When nobody here waits for a message (no long-poll, stream or page held), none is
    read back: their ids only move the hub's head on (one read of the newest id bounds
    them). A waiter that comes later subscribes before it reads, so its read finds them.

    Anyone who may connect to the database may notify: an id no read finds (one above
    the newest committed, when none is read) is dropped, so it can neither move the hub's
    head past real messages nor be remembered in place of the message that takes it.
    """
    items = await _once(ctx, items)
    message_ids = [int(item["id"]) for item in items if item.get("t") == "message"]
    newest = 0
    if message_ids and not ctx.hub.awaits_messages():
        newest = await _newest(ctx, message_ids)
    # Decided after that read: one who came to wait during it found the head where it was and
    # skipped its own read, so the messages are read back for it.
    wanted = bool(message_ids) and ctx.hub.awaits_messages()
    if wanted and len(message_ids) > READ_BACK_AT_MOST:
        log.warning("%d messages to read back: every waiter reads them from the database", len(message_ids))
        ctx.hub.fell_behind(newest or await _newest(ctx, message_ids))
        wanted = False
    events = await _read_back(ctx, message_ids) if wanted else {}
    for item in items:
        kind = item.get("t")
        if kind == "message":
            message_id = int(item["id"])
            if (event := events.get(message_id)) is not None:
                ctx.hub.publish(event)
            elif not wanted and message_id <= newest:
                ctx.hub.passed(message_id)
        elif kind == "signal":
            try:
                where, number = item["key"]
                signal = Signal((str(where), int(number)), int(item["id"]))
            except (KeyError, TypeError, ValueError):  # not a board's: stops nothing taken with it
                log.warning("ignored a signal no board wrote: %.80r", item)
                continue
            ctx.publish(signal)
        elif kind == "local":  # this process's own, where its notification came (store.postgres)
            for own in item["items"]:
                if not (isinstance(own, Event) and ctx.hub.knows(own.id)):  # a gap's read had it
                    ctx.publish(own)
        elif kind == "behind":  # a read back given up (store/postgres.py)
            ctx.hub.fell_behind(None)
        elif kind == "forget":
            if isinstance(agent := item.get("agent"), int):
                # An older process tells no "reach": it ended no held request, and still does not.
                ctx.tokens.drop_agent(agent, reach=item.get("reach") is True)
            else:
                log.warning("ignored a forget no board wrote: %.80r", item)
        else:
            log.warning("ignored a notification of unknown kind %r", kind)


async def _newest(ctx: Context, message_ids: list[int]) -> int:
    """The highest of ``message_ids`` committed: ids commit in order, so none above the newest
    committed message is a board's (yet), and none at or below it is to come."""
    return min(max(message_ids), await ctx.db.read(store.max_id))


async def _once(ctx: Context, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``items`` with each ``gap`` (the store listens again after losing its connection)
    replaced by what it may have hidden, and every message this process already published
    or passed left out: it is heard of once more when the gap's read and a notification
    both tell of it."""
    out: list[dict[str, Any]] = []
    taken: set[int] = set()
    for item in items:
        if item.get("t") == "gap":  # from the hub's head if lower: a stray id moved the store's
            told = await _missed(ctx, min(int(item["after"]), ctx.hub.last_id))
        else:
            told = [item]
        for one in told:
            if one.get("t") == "message":
                message_id = int(one["id"])
                if message_id in taken or ctx.hub.knows(message_id):
                    continue
                taken.add(message_id)
            out.append(one)
    return out


async def _missed(ctx: Context, after: int) -> list[dict[str, Any]]:
    """What the notifications a lost connection took with it would have told: the messages
    committed after ``after``, the last one heard of (ids commit in order), as their
    notifications; and any token may have been revoked meanwhile, so the token cache
    starts again, and so do the quiet hours kept in memory (a change told meanwhile is lost).

    More than :data:`READ_BACK_AT_MOST` (a long outage while the others wrote on) are not
    read at all: every waiter for messages reads them from the database, up to the newest."""
    ctx.tokens.drop_all()
    ctx.quiet.drop()
    missed = await ctx.db.read(functools.partial(store.ids_after, after=after, limit=READ_BACK_AT_MOST + 1))
    if len(missed) > READ_BACK_AT_MOST:
        log.warning(
            "more than %d messages committed while not listening: every waiter reads them from the database",
            READ_BACK_AT_MOST,
        )
        ctx.hub.fell_behind(await ctx.db.read(store.max_id))
        return []
    if missed:
        log.warning("reading back %d messages committed while not listening", len(missed))
    return [{"t": "message", "id": message_id} for message_id in missed]


def connect(ctx: Context) -> None:
    """Wire ``ctx`` to the board's other processes (a no-op on a store only one process serves)."""
    ctx.db.describe = describe

    async def arrived(items: list[dict[str, Any]]) -> None:
        await take_in(ctx, items)

    ctx.db.on_remote = arrived
    ctx.tokens.on_forget = lambda agent_id, reach: ctx.db.announce(
        {"t": "forget", "agent": agent_id, "reach": reach}
    )
