"""What another process committed, taken in here: read back together, published in commit order.

``take_in`` runs on any store (here SQLite's, as the suite's default): it is given the
items a PostgreSQL notification would carry and reads the messages back from the store.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from board.server.hub import Event, Hub, Signal, Waiter
from board.server.services.remote import take_in
from board.server.store.postgres import given_up
from tests.support.boardtest import World
from tests.test_events import published


async def elsewhere(world: World) -> Hub:
    """The board's hub as another process's: one that published none of what was written (on
    PostgreSQL the process publishes its own once it hears them: those go to the old hub)."""
    ctx = world.board.ctx
    await ctx.db.published()
    ctx.hub = Hub(ctx.settings.max_waits)
    return ctx.hub


def counting_reads(world: World, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the read transactions the store runs from here on."""
    db = world.board.ctx.db
    reads: list[int] = []
    read = db.read

    async def counted(fn: Callable[[Any], Awaitable[Any]]) -> Any:
        reads.append(1)
        return await read(fn)

    monkeypatch.setattr(db, "read", counted)
    return reads


async def test_a_take_in_reads_its_messages_back_in_one_read_as_their_writer_published_them(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    convo = (await world.bot.open_conversation(["alice"], topic="private"))["conversation"]
    async with published(world.board.ctx) as written:
        root = await world.bot.post("@pb2 a root", channel="general")
        await world.peer.post("a reply", reply_to=root["id"])
        await world.bot.post("just us", conversation=convo["id"])
        await world.bot.post("@alice still us", conversation=convo["id"])
    hub = await elsewhere(world)
    reads = counting_reads(world, monkeypatch)
    signal = ("routines", 1)
    items: list[dict[str, Any]] = [{"t": "message", "id": e.id} for e in written]
    items.insert(2, {"t": "signal", "key": list(signal), "id": 9})
    waiter = hub.subscribe([("all", 0), signal])
    try:
        await take_in(world.board.ctx, items)
        taken = waiter.take()
    finally:
        hub.unsubscribe(waiter)
    assert reads == [1]
    assert [e.id for e in taken] == [*[e.id for e in written[:2]], 9, *[e.id for e in written[2:]]]
    assert isinstance(taken[2], Signal)
    again = [e for e in taken if isinstance(e, Event)]
    # The root's reply count moved on since its writer published it; the rest is the same.
    assert again[0].message["replies"]["count"] == 1
    for before, after in zip(written, again, strict=True):
        assert {k: v for k, v in after.message.items() if k != "replies"} == {
            k: v for k, v in before.message.items() if k != "replies"
        }
        assert (after.recipients, after.audience, after.author_id) == (
            before.recipients,
            before.audience,
            before.author_id,
        )
        assert list(after.index_keys()) == list(before.index_keys())


async def test_with_nobody_waiting_for_a_message_none_is_read_back_and_the_head_moves_on(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    posted = await world.bot.post("for nobody here", channel="general")
    hub = await elsewhere(world)
    hub.last_id = posted["id"] - 1  # as a process that has not heard of it yet
    reads = counting_reads(world, monkeypatch)
    signal = ("routines", 1)
    waiter = hub.subscribe([signal])  # a wait for something else than messages
    try:
        await take_in(
            world.board.ctx,
            [{"t": "message", "id": posted["id"]}, {"t": "signal", "key": list(signal), "id": 3}],
        )
        assert waiter.take() == [Signal(signal, 3)]
    finally:
        hub.unsubscribe(waiter)
    assert reads == [1]  # the newest id, which bounds what a notification may pass
    assert hub.last_id == posted["id"]


async def test_a_signal_or_forget_no_board_wrote_is_dropped_alone(world: World) -> None:
    """Anyone who may connect can notify the board's channel: a signal or forget whose key or
    id is not a board's is logged and dropped, and what came with it is still published."""
    posted = await world.bot.post("@pb beside the stray items", channel="general")
    hub = await elsewhere(world)
    generation = world.board.ctx.tokens.generation
    signal = ("routines", 1)
    waiter = hub.subscribe([("all", 0), signal])
    try:
        await take_in(
            world.board.ctx,
            [
                {"t": "signal", "key": "abc", "id": 1},
                {"t": "signal", "key": list(signal)},
                {"t": "forget", "agent": "pb"},
                {"t": "message", "id": posted["id"]},
                {"t": "signal", "key": list(signal), "id": 4},
            ],
        )
        taken = waiter.take()
    finally:
        hub.unsubscribe(waiter)
    assert [e.id for e in taken if isinstance(e, Event)] == [posted["id"]]
    assert [e for e in taken if isinstance(e, Signal)] == [Signal(signal, 4)]
    assert world.board.ctx.tokens.generation == generation  # no cache dropped for the stray forget


async def test_a_message_id_no_board_committed_moves_no_head_and_hides_no_message(world: World) -> None:
    """Anyone who may connect can notify the board's channel: an id above every committed one
    moves neither the hub's head (a list's ``cursor``: a client would wait past every real
    id) nor a gap's start, and is not taken for the message that will have it."""
    heard, unheard = [await world.bot.post(f"@pb message {i}", channel="general") for i in range(2)]
    ctx = world.board.ctx
    hub = await elsewhere(world)
    hub.passed(heard["id"])
    coming, stray = unheard["id"] + 1, 10**15
    await take_in(ctx, [{"t": "message", "id": coming}, {"t": "message", "id": stray}])  # nobody waits
    assert hub.last_id == heard["id"] and not hub.knows(coming) and not hub.knows(stray)
    waiter = hub.subscribe([("all", 0)])
    try:
        await take_in(ctx, [{"t": "message", "id": stray}])
        assert waiter.take() == [] and hub.last_id == heard["id"]
        # The listener's own mark went past the unheard message with the stray id it heard.
        await take_in(ctx, [{"t": "gap", "after": stray}])
        assert [e.id for e in waiter.take()] == [unheard["id"]]
    finally:
        hub.unsubscribe(waiter)
    assert hub.last_id == unheard["id"]


async def test_one_who_comes_to_wait_while_the_head_is_read_is_given_the_message(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nobody waits, so the take reads only the newest id; a page or stream that opens during
    that read finds the hub's head before the message and skips its own read: the message is
    read back and given to it, not passed by."""
    posted = await world.bot.post("@pb for the one who comes", channel="general")
    ctx = world.board.ctx
    hub = await elsewhere(world)
    hub.last_id = posted["id"] - 1
    read = ctx.db.read
    came: list[Waiter] = []

    async def arriving(fn: Callable[[Any], Awaitable[Any]]) -> Any:
        if not came:
            came.append(hub.subscribe([("all", 0)]))
            assert hub.at_head(posted["id"] - 1)
        return await read(fn)

    monkeypatch.setattr(ctx.db, "read", arriving)
    await take_in(ctx, [{"t": "message", "id": posted["id"]}])
    (waiter,) = came
    try:
        assert [e.id for e in waiter.take()] == [posted["id"]]
    finally:
        hub.unsubscribe(waiter)


async def test_a_take_given_up_leaves_no_reader_at_the_head_until_a_later_message(world: World) -> None:
    """A take whose read keeps failing is given up with this process's own message in it, and
    another's committed after that one: a reader at the own message's id must still read the
    database, and so get the other's. Published after ``behind``, the own message told the hub
    it was at the head again, and a long-poll there waited past the message it never got."""
    ctx = world.board.ctx
    async with published(ctx) as written:
        heard = await world.bot.post("heard before", channel="general")
        own = await world.bot.post("this process's own, in the take given up", channel="general")
        lost = await world.peer.post("another's, after it: its read given up", channel="general")
    hub = await elsewhere(world)
    hub.passed(heard["id"])
    event = next(e for e in written if e.id == own["id"])
    await take_in(ctx, given_up([{"t": "local", "items": [event]}]))
    assert not hub.at_head(own["id"])
    started = time.monotonic()
    got = await world.human.messages(workspace="proj", since=own["id"], wait=5)
    assert [m["id"] for m in got["messages"]] == [lost["id"]] and time.monotonic() - started < 4
    hub.publish(event)  # heard again, late: at or below the head, it proves nothing more
    assert not hub.at_head(own["id"])


async def test_a_gap_takes_in_once_what_committed_after_the_last_message_heard(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After its notification connection was lost, a process reads what committed since the
    last message any notification told of; a notification that arrives for one of them too
    publishes nothing twice, and the token cache starts again (a revocation may be lost)."""
    heard = await world.bot.post("told before the connection went", channel="general")
    missed = [await world.peer.post(f"committed unheard {i}", channel="general") for i in range(3)]
    ctx = world.board.ctx
    hub = await elsewhere(world)
    hub.passed(heard["id"])
    generation = ctx.tokens.generation
    waiter = hub.subscribe([("all", 0)])
    try:
        await take_in(ctx, [{"t": "gap", "after": heard["id"]}, {"t": "message", "id": missed[1]["id"]}])
        await take_in(ctx, [{"t": "message", "id": missed[2]["id"]}])  # heard late: taken in already
        taken = waiter.take()
    finally:
        hub.unsubscribe(waiter)
    assert [e.id for e in taken] == [m["id"] for m in missed]
    assert ctx.tokens.generation > generation
