"""Each long-poll filter selects in SQL exactly what its ``matches`` accepts of the live events.

A long-poll reads its filter's stored rows, and, woken, asks the same filter of the
events posting published. On one table of messages (two workspaces, channels, a
conversation, threads, tags, a held message, mentions, several authors), each filter's
stored read and its ``matches`` over the events the hub carried must pick the same
messages, and each filter must keep some and leave some, so no pair agrees by being empty.
"""

from __future__ import annotations

from typing import Any

from board.server.hub import Event
from board.server.services.budgets import NOTICE_TAG
from board.server.services.loopguard import HELD_TAG
from board.server.services.wakes import QUIET_TAGS
from board.server.store import channels as channel_store
from board.server.store import identity as identity_store
from board.server.store import messages as store
from board.server.store import workspaces as workspace_store
from board.server.store.connection import Connection
from board.server.store.messages import InboxFilter, MessageFilter, WatchFilter
from tests.support.boardtest import World

LIMIT = 1000  # above the table's size: the read is never cut short


async def post_table(world: World) -> dict[str, Any]:
    """The table of messages; the names of what the filters below refer to."""
    human, bot, peer, other = world.human, world.bot, world.peer, world.other
    lobby = await human.post("lobby root for @pb", channel="lobby", workspace="proj", tags=["ops"])
    await bot.post("a reply by pb", reply_to=lobby["id"], tags=["ops", "db"])
    await peer.post("a reply by pb2 for @alice", reply_to=lobby["id"])
    dev = await peer.post("dev root", channel="dev", tags=["db"])
    await bot.post("pb in dev", channel="dev")
    await human.post("held look-alike", channel="dev", workspace="proj", tags=[HELD_TAG])
    await human.post("budget notice look-alike", channel="dev", workspace="proj", tags=[NOTICE_TAG])
    convo = (await peer.open_conversation(["alice"], topic="without pb"))["conversation"]
    private = await peer.post("private to alice", conversation=convo["id"])
    await human.post("alice answers", reply_to=private["id"])
    await other.post("another workspace, @alice", channel="lobby")
    later = await human.post("a later root mentioning @pb2 and @pb", channel="later", workspace="proj")
    await peer.post("last words", reply_to=later["id"], tags=["ops"])
    return {"lobby": lobby["id"], "dev": dev["id"], "conversation": convo["id"], "later": later["id"]}


async def test_each_filter_reads_what_it_matches(world: World) -> None:
    ctx = world.board.ctx
    waiter = ctx.hub.subscribe([("all", 0)])
    try:
        roots = await post_table(world)
        await ctx.db.published()  # on PostgreSQL, once the process hears its own notification
        events = [e for e in waiter.take() if isinstance(e, Event)]
    finally:
        ctx.hub.unsubscribe(waiter)
    assert len(events) == 12, "the hub did not carry every message of the table"

    async def ids(conn: Connection) -> dict[str, int]:
        proj = await workspace_store.by_slug(conn, "proj")
        other = await workspace_store.by_slug(conn, "other")
        assert proj is not None and other is not None
        found = {"proj": proj["id"], "other": other["id"]}
        for slug in ("lobby", "dev", "later"):
            channel = await channel_store.by_slug(conn, proj["id"], slug)
            assert channel is not None
            found[slug + "_channel"] = channel["id"]
        for handle in ("alice", "pb", "pb2", "ob"):
            agent = await identity_store.agent_by_handle(conn, handle)
            assert agent is not None
            found[handle] = agent["id"]
        return found

    n = await ctx.db.read(ids)
    first = min(e.id for e in events)
    messages = [
        MessageFilter(workspace_ids=[n["proj"]]),
        MessageFilter(workspace_ids=[n["other"]]),
        MessageFilter(workspace_ids=[n["proj"], n["other"]], since=roots["dev"]),
        MessageFilter(workspace_ids=[n["proj"]], viewer_id=n["pb"]),
        MessageFilter(viewer_id=n["ob"]),
        MessageFilter(channel_id=n["lobby_channel"]),
        MessageFilter(conversation_id=roots["conversation"]),
        MessageFilter(thread_id=roots["lobby"]),
        MessageFilter(thread_id=roots["lobby"], since=roots["lobby"]),
        MessageFilter(author_id=n["pb"]),
        MessageFilter(workspace_ids=[n["proj"]], not_author_id=n["pb2"]),
        MessageFilter(tag="ops"),
        MessageFilter(tag="db", roots=True),
        MessageFilter(without_tags=(HELD_TAG, NOTICE_TAG), channel_id=n["dev_channel"]),
        MessageFilter(roots=True),
        MessageFilter(since=first + 3, before=first + 9),
    ]
    inboxes = [InboxFilter(agent_id=n[h], since=s) for h in ("alice", "pb", "pb2") for s in (0, roots["dev"])]

    def watch(channels: list[int], pending: tuple[str, ...], thread: int | None, since: int) -> WatchFilter:
        return WatchFilter(
            workspace_id=n["proj"],
            channel_ids=tuple(channels),
            pending=pending,
            thread_id=thread,
            since=since,
            reader_id=n["pb"],
            quiet_tags=QUIET_TAGS,
        )

    # A pending channel is one the bot watched before it existed: known by name to
    # matches, and by the id it has now to the stored read.
    watches = [
        (watch([n["dev_channel"]], (), None, 0), []),
        (watch([n["lobby_channel"]], (), roots["later"], 0), []),
        (watch([], ("later",), roots["lobby"], roots["dev"]), [n["later_channel"]]),
    ]

    async def stored(conn: Connection) -> list[set[int]]:
        found = []
        for flt in messages:
            found.append({r["id"] for r in await store.select(conn, flt, descending=False, limit=LIMIT)})
        for inbox in inboxes:
            found.append({r["id"] for r in await store.inbox(conn, inbox, LIMIT)})
        for watched, created in watches:
            rows = [
                r
                for s in watched.sources(created)
                for r in await store.select(conn, s, descending=False, limit=LIMIT)
            ]
            found.append({r["id"] for r in rows})
        return found

    filters: list[MessageFilter | InboxFilter | WatchFilter] = [*messages, *inboxes, *(w for w, _ in watches)]
    everything = {e.id for e in events}
    for flt, selected in zip(filters, await ctx.db.read(stored), strict=True):
        matched = {e.id for e in events if flt.matches(e)}
        assert selected == matched, (
            f"{flt}: SQL selects {sorted(selected)}, matches accepts {sorted(matched)}"
        )
        assert selected and selected != everything, f"{flt} keeps all or nothing: it proves nothing"
