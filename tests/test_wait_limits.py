"""One token holds at most BOARD_MAX_WAITS long-polls; a newer one answers its oldest at once."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.support import boardtest
from tests.support.boardtest import World, db_rows


async def held(world: World, handle: str, count: int) -> None:
    """Wait until the hub holds ``count`` requests of ``handle`` (its own state, no timing)."""
    ((agent_id,),) = db_rows(world.board.db_path, "SELECT id FROM agents WHERE handle = ?", (handle,))
    await boardtest.held(world.board, count, owner=agent_id)


async def test_past_the_cap_the_oldest_long_poll_answers_at_once(world: World) -> None:
    cap = world.board.ctx.settings.max_waits
    assert cap == 8
    cursor = (await world.bot.inbox())["cursor"]
    polls: list[asyncio.Task[Any]] = []
    for n in range(cap):
        polls.append(asyncio.create_task(world.bot.inbox(since=cursor, wait=60)))
        await held(world, "pb", n + 1)
    others = [asyncio.create_task(world.peer.inbox(since=cursor, wait=60)) for _ in range(cap)]
    await held(world, "pb2", cap)
    assert not any(p.done() for p in polls + others)

    polls.append(asyncio.create_task(world.bot.inbox(since=cursor, wait=60)))
    first = await polls[0]  # answered at once, with what it has: nothing new
    assert first["messages"] == [] and first["cursor"] == cursor
    await held(world, "pb", cap)
    assert not any(p.done() for p in polls[1:] + others)  # the other token keeps all of its own

    await world.human.post("@pb @pb2 for everyone", channel="general", workspace="proj")
    for answered in await asyncio.gather(*polls[1:], *others):
        assert [m["body"] for m in answered["messages"]] == ["@pb @pb2 for everyone"]


async def test_the_hub_counts_held_requests_per_owner(world: World) -> None:
    """The cap is the hub's, so any held request (a stream too) subscribing under an owner obeys it."""
    hub = world.board.ctx.hub
    waiters = [hub.subscribe([("agent", 99)], owner=99) for _ in range(hub.max_held)]
    newest = hub.subscribe([("agent", 99)], owner=99)
    assert waiters[0].released and not any(w.released for w in waiters[1:]) and not newest.released
    assert hub.held(99) == hub.max_held
    for waiter in [*waiters, newest]:
        hub.unsubscribe(waiter)
    assert hub.held(99) == 0 and hub.waiting == 0
