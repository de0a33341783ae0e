"""The inbox as a person reads it: grouped by thread, marked read or done by thread or all
at once, its unread count, and which of its arrivals a human's browser notifies of.

Every read and write here is of the caller's own inbox (the principal's agent id): no
argument names whose inbox, so nobody reaches another's. Each write signals
:func:`changes` for the caller after its commit, so the caller's open tabs update
their counts (``services/live.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InvalidArgument, NotFound
from ..hub import Key, Signal
from ..principal import Principal
from ..store import inbox as store
from ..store import messages as message_store
from ..store.connection import Connection
from ..store.writer import emit
from ..validation import arg
from . import actions, outbound, scope
from .context import Context
from .messages import compact, rows_to_messages
from .messages import inbox_changes as changes
from .paging import Page, bounded_page

#: The kinds of browser notification, each of which a human may turn off: the same as
#: out of band, so a page open and a destination hear of the same events.
KINDS = outbound.KINDS


@dataclass
class GroupsQuery:
    before: int | None = arg(None, min=1, help="Groups whose newest message is older than this id.")
    limit: int = arg(20, min=1, max=100)
    max_bytes: int | None = arg(None, min=1)


async def groups(ctx: Context, p: Principal, q: GroupsQuery) -> Page:
    """The inbox's threads not done, newest message first, each with its root and newest message."""

    async def read(conn: Connection) -> Page:
        rows = await store.groups(conn, p.agent_id, q.before, q.limit + 1)
        latest = {m["id"]: m for m in await _messages(conn, [int(r["latest"]) for r in rows])}
        roots = {m["id"]: m for m in await _messages(conn, [int(r["thread_id"]) for r in rows])}
        items = [
            {
                "thread_id": int(r["thread_id"]),
                "workspace": latest[int(r["latest"])]["workspace"],
                "latest_id": int(r["latest"]),
                "messages": int(r["messages"]),
                "unread": int(r["unread"] or 0),
                "root": compact(roots[int(r["thread_id"])]),
                "latest": latest[int(r["latest"])],
            }
            for r in rows
        ]
        page = bounded_page(ctx, "groups", items, q.limit, q.max_bytes, descending=True, key="latest_id")
        page["unread"] = await store.unread_count(conn, p.agent_id)
        return page

    return await ctx.db.read(read)


async def _messages(conn: Connection, ids: list[int]) -> list[dict[str, Any]]:
    return await rows_to_messages(conn, await message_store.by_ids(conn, ids))


@dataclass
class MarkInbox:
    state: str = arg(choices=("seen", "done"), help="seen: read; done: also off the inbox view.")
    thread_id: int | None = arg(None, min=1, help="Every message of this thread in my inbox.")
    all: bool = arg(False, help="Every message in my inbox.")


async def mark(ctx: Context, p: Principal, req: MarkInbox) -> dict[str, Any]:
    """Mark one thread's messages in the caller's inbox, or all of them, seen or done.

    A thread the caller may not read, or with nothing of it in the inbox, is NOT_FOUND;
    naming both or neither of ``thread_id`` and ``all`` is INVALID_ARGUMENT. Messages of
    an archived workspace are left as they are (it is read-only) and not counted.
    """
    if (req.thread_id is None) == (not req.all):
        raise InvalidArgument("Name thread_id or all=true, one of them.", field="thread_id")

    async def write(conn: Connection) -> dict[str, Any]:
        if req.thread_id is not None:
            root = await scope.visible_root(conn, p, req.thread_id)
            if not await store.in_thread(conn, p.agent_id, int(root["id"])):
                raise NotFound("thread in your inbox")
            thread_id: int | None = int(root["id"])
        else:
            thread_id = None
        marked = await store.mark(conn, p.agent_id, thread_id, req.state, ctx.now())
        emit(Signal(changes(p.agent_id), marked))
        return {
            "state": req.state,
            "thread_id": thread_id,
            "marked": marked,
            "unread": await store.unread_count(conn, p.agent_id),
        }

    return await ctx.db.write(write)


#: Why a message is highlighted for its reader: it mentions them, or is a DM to them.
HIGHLIGHTED = ("mention", "conversation")


async def highlighted(ctx: Context, p: Principal, ids: list[int]) -> list[int]:
    """Which of these messages (a page's) are unread mentions of the caller or DMs to them."""
    unread = await ctx.db.read(lambda conn: store.unread_among(conn, p.agent_id, ids))
    return sorted(i for i, reason in unread.items() if reason in HIGHLIGHTED)


def notice_kind(reason: str | None) -> str | None:
    """Which notification kind a message in a human's inbox is, by why it is there, if any.

    The board's notices that bots are held (the loop guard's ``paused``, a budget's
    ``held``) are the only messages given those reasons; a bot's tags cannot.
    """
    return outbound.REASON_KINDS.get(reason or "")


# -- notification settings -------------------------------------------------------------


def settings_changed(agent_id: int) -> Key:
    """The hub key signalled when a human's notification settings change."""
    return ("notify", agent_id)


async def notify_settings(ctx: Context, p: Principal) -> dict[str, bool]:
    """Each kind of browser notification, on or off, for the caller (a human)."""
    actions.require(p, "notifications")
    off = await ctx.db.read(lambda conn: store.notify_off(conn, p.agent_id))
    return {kind: kind not in off for kind in KINDS}


@dataclass
class NotifySettings:
    mention: bool | None = arg(None, help="A message that mentions me, or a thread handed to me.")
    dm: bool | None = arg(None, help="A message in a conversation of mine.")
    held: bool | None = arg(None, help="A bot held: loop guard or budget notices.")
    crashed: bool | None = arg(None, help="A bot of the fleet crashed.")
    routine: bool | None = arg(None, help="A routine version awaits approval.")
    run_failed: bool | None = arg(None, help="A routine run failed or timed out.")
    review: bool | None = arg(None, help="A knowledge proposal waits for review.")


async def set_notify_settings(ctx: Context, p: Principal, req: NotifySettings) -> dict[str, bool]:
    """Turn kinds on or off (the ones named; the others stay); answers all of them."""
    actions.require(p, "notifications")
    given = {kind: getattr(req, kind) for kind in KINDS if getattr(req, kind) is not None}

    async def write(conn: Connection) -> set[str]:
        for kind, on in given.items():
            await store.set_notify(conn, p.agent_id, kind, on)
        emit(Signal(settings_changed(p.agent_id), 0))
        return await store.notify_off(conn, p.agent_id)

    off = await ctx.db.write(write)
    return {kind: kind not in off for kind in KINDS}
