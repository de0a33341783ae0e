"""The launcher's feed: what is for this bot, plus what it watches.

``for_me`` is the bot's inbox (mentions, its conversations, replies in threads
it posted in or holds, handoffs to it). ``watched`` is every other message in
the channels it watches and in its goal thread. One long-poll covers both.
The query's ``watch`` and ``goal`` win; each one left out comes from the
profile the bot runs with (``services/registry.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiosqlite import Connection

from ..errors import Forbidden, NotFound
from ..hub import Event, Key
from ..principal import Principal
from ..store import channels as channel_store
from ..store import messages as store
from ..store.messages import MessageFilter
from ..validation import arg
from . import registry, scope
from .context import Context
from .longpoll import poll
from .messages import _conversation_ok, _rows_to_messages, render
from .paging import Page, bounded_page


@dataclass
class WakeQuery:
    since: int = arg(0, min=0)
    wait: int = arg(0, min=0, max=60)
    limit: int = arg(20, min=1, max=500)
    max_bytes: int | None = arg(None, min=1)
    watch: list[str] = arg(
        [], max_items=50, pattern=r"[a-z0-9._-]{2,64}", help="Channels to watch, comma-separated."
    )
    goal: int | None = arg(None, min=1, help="A thread to watch.")
    view: str = arg("full", choices=("full", "compact"))


async def feed(ctx: Context, p: Principal, q: WakeQuery) -> Page:
    if not p.is_bot:
        raise Forbidden("The wake feed is a bot's; humans read /api/inbox.")

    async def watched_channels(
        conn: Connection, workspace_id: int, slugs: list[str]
    ) -> tuple[list[int], list[str]]:
        """Ids of the watched channels that exist, and the slugs of those not created yet."""
        found, pending = [], []
        for slug in slugs:
            channel = await channel_store.by_slug(conn, workspace_id, slug)
            if channel is not None:
                found.append(channel["id"])
            else:
                pending.append(slug)
        return found, pending

    watching: list[str] = []

    async def resolve(conn: Connection) -> tuple[int, list[int], list[str], int | None]:
        workspace = await scope.resolve(conn, p, None)
        profile_watch, profile_goal = await registry.wake_defaults(conn, p)
        channel_ids, pending = await watched_channels(conn, workspace["id"], q.watch or profile_watch)
        watching.extend(q.watch or profile_watch)
        goal = None
        if q.goal is not None:
            root = await store.by_id(conn, q.goal)
            if (
                root is None
                or not scope.visible(p, root["workspace_id"])
                or not await _conversation_ok(conn, p, root)
            ):
                raise NotFound("thread")
            goal = root["thread_id"]
        elif profile_goal is not None:
            root = await store.by_id(conn, profile_goal)
            if root is not None and root["workspace_id"] == workspace["id"]:
                goal = root["thread_id"]
        return workspace["id"], channel_ids, pending, goal

    workspace_id, channel_ids, pending, goal = await ctx.db.read(resolve)

    # The answer's cursor is the head as the feed's read saw it, never later: a message
    # committed after that read is in the answer (woken by the wait) or above the cursor.
    head = {"cursor": q.since}

    async def fetch() -> list[dict[str, Any]]:
        async def read(conn: Connection) -> list[dict[str, Any]]:
            head["cursor"] = await store.max_id(conn)
            mine = await store.inbox(conn, p.agent_id, q.since, q.limit + 1)
            watched = []
            # A watched channel may have been created since resolve() (a first post makes it).
            created = (await watched_channels(conn, workspace_id, watching))[0] if pending else []
            for channel_id in {*channel_ids, *created}:
                watched += await store.select(
                    conn,
                    MessageFilter(channel_id=channel_id, since=q.since),
                    descending=False,
                    limit=q.limit + 1,
                )
            if goal is not None:
                watched += await store.select(
                    conn,
                    MessageFilter(thread_id=goal, since=q.since),
                    descending=False,
                    limit=q.limit + 1,
                )
            items = {
                m["id"]: m | {"for_me": False, "watched": True}
                for m in await _rows_to_messages(conn, watched)
                if m["author"] != p.handle
            }
            for m in await _rows_to_messages(conn, mine):
                items[m["id"]] = m | {"for_me": True, "watched": m["id"] in items}
            return [items[i] for i in sorted(items)][: q.limit + 1]

        return await ctx.db.read(read)

    def match(event: Event) -> dict[str, Any] | None:
        if event.id <= q.since:
            return None
        reason = event.recipients.get(p.agent_id)
        watched = (
            event.channel_id in channel_ids
            or (goal is not None and event.thread_id == goal)
            or (event.workspace_id == workspace_id and event.message["channel"] in pending)
        )
        watched = watched and event.message["author"] != p.handle
        if reason is None and not watched:
            return None
        item = event.message | {"for_me": reason is not None, "watched": watched}
        if reason is not None:
            item["reason"] = reason
        return item

    keys: list[Key] = [("agent", p.agent_id)] + [("channel", c) for c in channel_ids]
    if goal is not None:
        keys.append(("thread", goal))
    if pending:
        keys.append(("workspace", workspace_id))  # to hear a watched channel's first post
    items = await poll(ctx, keys, q.wait, fetch, match, owner=p.agent_id, since=q.since)
    return bounded_page(
        ctx,
        "messages",
        render(items, q.view),
        q.limit,
        q.max_bytes,
        descending=False,
        cursor=head["cursor"],
    )
