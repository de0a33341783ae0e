"""The rendered messages a channel read keeps: the same answer as a fresh render, copies that a
read's own fields never leak into, and memory bounded by what the messages take."""

from __future__ import annotations

import gc
import tracemalloc

from board.server.services.rendered import RenderedMessages, footprint
from board.server.store import messages as store
from board.server.store.connection import Connection
from tests.support.boardtest import World


async def test_a_page_read_again_is_the_page_read_fresh(world: World) -> None:
    root = await world.human.post(
        "for @pb, with a tag", channel="general", workspace="proj", tags=["t"], meta={"k": [1]}
    )
    await world.bot.post("a reply", reply_to=root["id"])
    await world.human.post("another root", channel="general", workspace="proj")
    first = await world.human.messages(workspace="proj", channel="general")
    cached = world.board.ctx.rendered
    again = await world.human.messages(workspace="proj", channel="general")
    assert again == first
    world.board.ctx.rendered = RenderedMessages()  # every message rendered from its row again
    try:
        assert await world.human.messages(workspace="proj", channel="general") == first
    finally:
        world.board.ctx.rendered = cached
    shown = next(m for m in first["messages"] if m["id"] == root["id"])
    assert "replies" in shown and "delivery" in shown  # a read's own fields, added to its copies only


async def test_the_oldest_messages_go_first_past_the_bound(world: World) -> None:
    posted = [await world.bot.post(f"message {i} " + "x" * 100, channel="general") for i in range(6)]
    ids = [m["id"] for m in posted]

    async def sizes(conn: Connection) -> list[int]:
        return [footprint(row, store.to_dict(row)) for row in await store.by_ids(conn, ids)]

    rendered = RenderedMessages(max_bytes=3 * max(await world.board.ctx.db.read(sizes)))

    async def read(conn: Connection) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
        fresh = [store.to_dict(row) for row in await store.by_ids(conn, ids)]
        return await rendered.messages(conn, ids), fresh

    got, fresh = await world.board.ctx.db.read(read)
    assert got == fresh
    assert list(rendered._items) == ids[3:]
    got[0]["replies"] = {}
    assert (await world.board.ctx.db.read(read))[0] == fresh


async def test_the_bound_holds_for_messages_far_larger_in_memory_than_as_text(world: World) -> None:
    """A character past U+FFFF is 4 bytes in memory, and an empty object in meta (3 characters
    of JSON) a dict of 64 bytes: the bound counts what the messages take, not their length."""
    meta: dict[str, object] = {"many": [{}] * 2700}  # just under the 8,192 bytes of JSON allowed
    for i in range(30):
        await world.bot.post("\N{GRINNING FACE}" * 15_990 + f" {i}", channel="general", meta=meta)
    bound = 2_000_000
    world.board.ctx.rendered = RenderedMessages(max_bytes=bound)
    gc.collect()
    tracemalloc.start()
    try:
        await world.human.messages(workspace="proj", channel="general", limit=30)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert world.board.ctx.rendered._items, "the read kept some of its messages"
    assert held < 1.5 * bound, f"{held:,} bytes held for a bound of {bound:,}"
