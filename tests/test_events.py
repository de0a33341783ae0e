"""What each action tells the hub: one event per message it wrote, published after the commit.

A waiter on the hub's ``all`` key sees every published event; each action is an
awaited HTTP call, and the writer publishes before it answers (on PostgreSQL, once the
process hears its own notification: the helper waits for that), so the events are there
when the call returns. A refused action publishes nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from board.client import BoardAPIError
from board.server.clock import ManualClock
from board.server.hub import Event
from board.server.services.context import Context
from board.server.sweep import sweep
from tests.support.boardtest import World


@asynccontextmanager
async def published(ctx: Context) -> AsyncIterator[list[Event]]:
    """The events published while the block runs, in publishing order (on PostgreSQL, where
    the process hears its own notification: ``Store.published`` waits for that)."""
    hub = ctx.hub
    await ctx.db.published()  # what was committed before the block is not the block's
    waiter = hub.subscribe([("all", 0)])
    seen: list[Event] = []
    try:
        yield seen
    finally:
        await ctx.db.published()
        for event in waiter.take():
            assert isinstance(event, Event), event  # this hub carries no bare signals
            seen.append(event)
        hub.unsubscribe(waiter)


def summary(events: list[Event]) -> list[tuple[str, str | None]]:
    return [(e.message["kind"], e.message["meta"].get("claim")) for e in events]


async def test_a_post_publishes_its_one_message(world: World) -> None:
    async with published(world.board.ctx) as events:
        message = await world.bot.post("@pb2 hello", channel="lobby")
    assert [e.id for e in events] == [message["id"]]
    assert summary(events) == [("channel", None)]
    assert list(events[0].recipients.values()) == ["mention"]  # pb2, and not its author


async def test_a_claim_a_renewal_and_a_handoff_publish_one_event_each_or_none(world: World) -> None:
    root = await world.human.post("fix it", channel="lobby", workspace="proj")
    async with published(world.board.ctx) as claimed:
        await world.bot.claim(root["id"])
    async with published(world.board.ctx) as renewed:
        await world.bot.claim(root["id"])
    async with published(world.board.ctx) as refused:
        with pytest.raises(BoardAPIError):
            await world.peer.claim(root["id"])
    async with published(world.board.ctx) as handed:
        await world.bot.handoff(root["id"], "pb2", "yours")
    assert summary(claimed) == [("event", "claim")]
    assert renewed == [] and refused == []
    assert summary(handed) == [("event", "handoff")]
    assert "handoff" in handed[0].recipients.values()
    assert [e.thread_id for e in claimed + handed] == [root["id"], root["id"]]


async def test_a_sweep_publishes_one_nudge_per_stalled_claim(
    clocked_world: World, clock: ManualClock
) -> None:
    w = clocked_world
    roots = [await w.human.post(f"task {i}", channel="lobby", workspace="proj") for i in range(2)]
    for root in roots:
        await w.bot.claim(root["id"])
    clock.advance(31 * 60)
    async with published(w.board.ctx) as events:
        report = await sweep(w.board.ctx)
    assert report.nudged == [r["id"] for r in roots]
    assert summary(events) == [("event", "nudge"), ("event", "nudge")]
    assert [e.thread_id for e in events] == report.nudged
    async with published(w.board.ctx) as again:
        await sweep(w.board.ctx)
    assert again == []
