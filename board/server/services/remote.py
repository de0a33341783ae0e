"""What board processes sharing one database tell each other: ids, never bodies.

A committed write's events reach the hub of the process that wrote it directly
(``store.writer``). The store carries what :func:`describe` makes of each one to
the other processes (PostgreSQL's ``NOTIFY``, in commit order), where
:func:`take_in` reads the item back by id and publishes it to that process's hub,
so a long-poll, stream or MCP session held anywhere wakes alike. Dropping a
cached token travels the same way, so a revoked token stops working on every
process, not only the one that revoked it.
"""

from __future__ import annotations

import logging
from typing import Any

from ..hub import Event, Signal
from ..store import messages as store
from ..store.connection import Connection
from .context import Context
from .messages import rows_to_messages
from .scope import audience

log = logging.getLogger(__name__)


def describe(item: Any) -> dict[str, Any] | None:
    """An outbox item as the other processes are told of it."""
    if isinstance(item, Event):
        return {"t": "message", "id": item.id}
    if isinstance(item, Signal):
        return {"t": "signal", "key": list(item.key), "id": item.id}
    return None


async def event_of(conn: Connection, message_id: int) -> Event | None:
    """A committed message's event as its writer published it, read back from the store."""
    row = await store.by_id(conn, message_id)
    if row is None:
        return None
    [message] = await rows_to_messages(conn, [row])
    return Event(
        message=message,
        workspace_id=row["workspace_id"],
        channel_id=row["channel_id"],
        conversation_id=row["conversation_id"],
        thread_id=row["thread_id"],
        recipients=await store.inbox_reasons(conn, message_id),
        audience=await audience(conn, row["conversation_id"]),
        author_id=row["author_id"],
    )


async def take_in(ctx: Context, item: dict[str, Any]) -> None:
    """Publish here what another process committed (called in its commit order)."""
    kind = item.get("t")
    if kind == "message":
        message_id = int(item["id"])
        event = await ctx.db.read(lambda conn: event_of(conn, message_id))
        if event is not None:
            ctx.hub.publish(event)
    elif kind == "signal":
        where, number = item["key"]
        ctx.publish(Signal((str(where), int(number)), int(item["id"])))
    elif kind == "forget":
        ctx.tokens.drop_agent(int(item["agent"]))
    else:
        log.warning("ignored a notification of unknown kind %r", kind)


def connect(ctx: Context) -> None:
    """Wire ``ctx`` to the board's other processes (a no-op on a store only one process serves)."""
    ctx.db.describe = describe

    async def arrived(item: dict[str, Any]) -> None:
        await take_in(ctx, item)

    ctx.db.on_remote = arrived
    ctx.tokens.on_forget = lambda agent_id: ctx.db.announce({"t": "forget", "agent": agent_id})
