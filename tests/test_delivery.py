"""Delivery states on the messages addressed to bots: each state reached through the API
(the daemon's side of woken, replied and failed is in tests/launcher/test_bot_delivery.py),
the loop guard's and a budget's holds, unreachable by the setting, and who sees what."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from board.client import BoardClient
from board.server.clock import ManualClock, iso
from board.server.hub import Signal
from board.server.services import auth, live
from tests.support.boardtest import World
from tests.support.refusals import refused

HOPS = 3


def states(message: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    """handle -> (state, reason) of a message's delivery."""
    return {d["handle"]: (d["state"], d.get("reason")) for d in message.get("delivery", [])}


async def state_of(client: BoardClient, message_id: int) -> dict[str, tuple[str, str | None]]:
    return states(await client.message(message_id))


async def waits(bot: BoardClient) -> None:
    """What a daemon does: long-poll the bot's wake feed (it answers at once, or after 1 s)."""
    await bot.wake(wait=1, since=10**9)


async def test_a_mention_moves_queued_woken_replied(clocked_world: World, clock: ManualClock) -> None:
    w = clocked_world
    await waits(w.bot)
    posted = await w.human.post("@pb have a look", channel="lobby", workspace="proj")
    entry = (await w.human.message(posted["id"]))["delivery"]
    assert entry == [{"handle": "pb", "state": "queued", "at": posted["created_at"]}]

    clock.advance(5)
    await w.bot.receipts([posted["id"]], "seen")
    [woken] = (await w.human.message(posted["id"]))["delivery"]
    assert woken == {"handle": "pb", "state": "woken", "at": w.board.ctx.now()}

    clock.advance(5)
    reply = await w.bot.post("looked: all fine", reply_to=posted["id"])
    [replied] = (await w.human.message(posted["id"]))["delivery"]
    assert replied == {"handle": "pb", "state": "replied", "at": reply["created_at"]}


async def test_only_bots_addressed_get_a_state_each(world: World) -> None:
    w = world
    await waits(w.bot)
    posted = await w.human.post(
        "@pb @pb2 @alice both of you; @ob is elsewhere", channel="lobby", workspace="proj"
    )
    assert await state_of(w.human, posted["id"]) == {
        "pb": ("queued", None),
        "pb2": ("unreachable", "no daemon has waited for @pb2 ever"),
    }
    plain = await w.human.post("nobody in particular", channel="lobby", workspace="proj")
    assert "delivery" not in await w.human.message(plain["id"])
    # A thread participant is told of a reply, but the reply is not addressed to it.
    reply = await w.human.post("more on it", reply_to=posted["id"])
    assert "delivery" not in await w.human.message(reply["id"])


async def test_a_direct_message_to_a_bot_has_its_state(world: World) -> None:
    w = world
    conversation = (await w.human.open_conversation(["pb"], "just us", workspace="proj"))["conversation"]
    posted = await w.human.post("can you check the build?", conversation=conversation["id"])
    assert await state_of(w.human, posted["id"]) == {
        "pb": ("unreachable", "no daemon has waited for @pb ever")
    }
    await w.bot.receipts([posted["id"]], "seen")
    assert await state_of(w.human, posted["id"]) == {"pb": ("woken", None)}


async def test_unreachable_after_the_setting_and_queued_again_once_a_daemon_waits(
    clocked_world: World, clock: ManualClock
) -> None:
    w = clocked_world
    await waits(w.bot)
    posted = await w.human.post("@pb ping", channel="lobby", workspace="proj")
    clock.advance(w.board.ctx.settings.unreachable_after - 1)
    assert await state_of(w.human, posted["id"]) == {"pb": ("queued", None)}
    clock.advance(2)
    waited = w.board.ctx.ago(w.board.ctx.settings.unreachable_after + 1)
    assert await state_of(w.human, posted["id"]) == {
        "pb": ("unreachable", f"no daemon has waited for @pb since {waited}")
    }
    await waits(w.bot)
    assert await state_of(w.human, posted["id"]) == {"pb": ("queued", None)}
    # Any other call of the bot's (it is present) is not a daemon waiting for it.
    clock.advance(w.board.ctx.settings.unreachable_after + 1)
    await w.bot.me()
    await w.bot.wake(since=10**9)  # no wait: not a daemon holding the feed
    assert (await state_of(w.human, posted["id"]))["pb"][0] == "unreachable"


async def test_a_wake_stream_too_busy_to_beat_keeps_its_bot_reachable(
    clocked_world: World, clock: ManualClock
) -> None:
    """A daemon's stream whose channel sends it a line more often than its heartbeat never
    beats; its bot is still waited for, past the setting, on every line it is sent."""
    w = clocked_world
    async with await w.bot.wake_stream(since=(await w.bot.me())["cursor"], watch=["ops"], beat=60) as stream:
        lines = aiter(stream)
        for n in range(3):  # each past the setting, each a line the stream sends at once
            clock.advance(w.board.ctx.settings.unreachable_after + 1)
            posted = await w.peer.post(f"@pb step {n}", channel="ops")
            line = await asyncio.wait_for(anext(lines), 10)
            assert line["message"]["id"] == posted["id"]
            assert await state_of(w.human, posted["id"]) == {"pb": ("queued", None)}


async def test_a_failed_wake_is_failed_with_its_reason_until_a_later_wake_goes_well(world: World) -> None:
    w = world
    await waits(w.bot)
    posted = await w.human.post("@pb run the migration", channel="lobby", workspace="proj")
    wake = {"harness": "claude", "started_at": "2026-12-01T00:00:00Z", "trigger_ids": [posted["id"]]}
    await w.bot.record_wake(**wake, outcome="timeout", error="timed out after 1800 s and was stopped")
    # The daemon's failure report is the bot's post in the thread: the turn still failed.
    await w.bot.post("My claude turn timed out after 1800 s and was stopped.", reply_to=posted["id"])
    assert await state_of(w.human, posted["id"]) == {
        "pb": ("failed", "timeout: timed out after 1800 s and was stopped")
    }
    await w.bot.record_wake(**wake, outcome="ok")
    assert await state_of(w.human, posted["id"]) == {"pb": ("replied", None)}


@pytest.fixture
async def guarded(world: World) -> World:
    await world.human.patch_workspace("proj", loop_hops=HOPS)
    await waits(world.bot)
    await waits(world.peer)
    return world


async def test_a_message_the_loop_guard_holds_is_held_for_its_bots(guarded: World) -> None:
    w = guarded
    root = await w.human.post("@pb sort it out with @pb2", channel="lobby", workspace="proj")
    sent = []
    for turn in range(HOPS):
        speaker, other = (w.bot, "pb2") if turn % 2 == 0 else (w.peer, "pb")
        sent.append(await speaker.post(f"@{other} over to you ({turn})", reply_to=root["id"]))
    assert "loop-held" in sent[-1]["tags"] and "loop-held" not in sent[-2]["tags"]
    held = await state_of(w.human, sent[-1]["id"])
    assert held == {"pb2": ("held", "loop guard: bots answering bots wake no bot until a human writes")}
    assert await state_of(w.human, sent[-2]["id"]) == {"pb": ("replied", None)}  # pb spoke after it
    thread = await w.human.thread(root["id"])
    [in_thread] = [m for m in thread["messages"] if m["id"] == sent[-1]["id"]]
    assert states(in_thread) == held  # the thread read shows the same


async def test_a_held_direct_message_is_held_for_the_conversations_bots(guarded: World) -> None:
    w = guarded
    conversation = (await w.human.open_conversation(["pb", "pb2"], "pair", workspace="proj"))["conversation"]
    root = await w.human.post("you two, sort it out", conversation=conversation["id"])
    last: dict[str, Any] = {}
    for turn in range(HOPS):
        speaker = w.bot if turn % 2 == 0 else w.peer
        last = await speaker.post(f"over to you ({turn})", reply_to=root["id"])
    assert "loop-held" in last["tags"]
    assert {h: s for h, (s, _) in (await state_of(w.human, last["id"])).items()} == {"pb2": "held"}


async def spends_its_day(bot: BoardClient, handle: str, human: BoardClient) -> str:
    """Give the bot a one-wake daily budget and spend it: its wakes are held until midnight."""
    await human.set_budget(handle, budget_wakes=1)
    await bot.record_wake(harness="claude", started_at=iso(datetime.now(UTC)), outcome="ok")
    return "budget: 1 of 1 wakes a day, set on bot"


async def test_a_budget_hold_holds_what_is_queued_for_that_bot(world: World) -> None:
    w = world
    await waits(w.bot)
    await waits(w.peer)
    reason = await spends_its_day(w.bot, "pb", w.human)
    first = await w.human.post("@pb @pb2 one", channel="lobby", workspace="proj")
    await w.human.post("@pb two", channel="lobby", workspace="proj")
    page = await w.human.messages(workspace="proj", channel="lobby", limit=10)
    assert [states(m) for m in page["messages"]][:2] == [
        {"pb": ("held", reason)},
        {"pb": ("held", reason), "pb2": ("queued", None)},
    ]
    await w.bot.receipts([first["id"]], "seen")  # a hold keeps nothing already taken
    assert (await state_of(w.human, first["id"]))["pb"] == ("woken", None)
    await w.human.set_budget("pb", lift=True)  # a lift ends the hold: queued again
    assert (await state_of(w.human, page["messages"][0]["id"]))["pb"] == ("queued", None)


async def test_a_bot_sees_the_states_of_its_own_workspace_only(world: World) -> None:
    w = world
    posted = await w.human.post("@pb look", channel="lobby", workspace="proj")
    assert await state_of(w.peer, posted["id"]) == {
        "pb": ("unreachable", "no daemon has waited for @pb ever")
    }
    compact = await w.peer.messages(channel="lobby", view="compact")
    assert states(compact["messages"][0]) == {"pb": ("unreachable", "no daemon has waited for @pb ever")}
    await refused(w.other.message(posted["id"]), "NOT_FOUND", unchanged=w.board)
    await refused(w.other.thread(posted["id"]), "NOT_FOUND", unchanged=w.board)
    await refused(w.other.messages(workspace="proj", channel="lobby"), "NOT_FOUND", unchanged=w.board)
    await refused(w.anon.message(posted["id"]), "UNAUTHENTICATED", unchanged=w.board)
    # A bot of another workspace is not reached by a mention here, so it has no state here.
    elsewhere = await w.human.post("@ob are you there?", channel="lobby", workspace="proj")
    assert "delivery" not in await w.human.message(elsewhere["id"])


def deliveries(feed: live.Feed) -> list[int]:
    """The message ids of the delivery signals a feed has been given since it was last read."""
    return [e.id for e in feed.waiter.take() if isinstance(e, Signal) and e.key[0] == "delivery"]


async def test_a_delivery_change_reaches_the_pages_of_its_workspace_only(world: World) -> None:
    w = world
    ctx = w.board.ctx
    alice = await auth.human_principal(ctx, "alice")
    here, elsewhere = (
        await live.open_feed(ctx, alice, "proj", None),
        await live.open_feed(ctx, alice, "other", None),
    )
    try:
        posted = await w.human.post("@pb look", channel="lobby", workspace="proj")
        await w.other.post("unrelated", channel="lobby")
        await w.bot.receipts([posted["id"]], "seen")
        await w.bot.record_wake(
            harness="claude", started_at="2026-12-01T00:00:00Z", outcome="ok", trigger_ids=[posted["id"]]
        )
        await ctx.db.published()  # both signals, on PostgreSQL heard with their notification
        assert deliveries(here) == [posted["id"], posted["id"]]
        assert deliveries(elsewhere) == []
        # A human's receipts are not a bot taking the message: no signal.
        note = await w.bot.post("@alice note", channel="lobby")
        await w.human.receipts([note["id"]], "seen")
        assert await here.waiter.wait(5)  # the note itself
        assert deliveries(here) == []  # (alice's own inbox moved: its signal is not a delivery one)
    finally:
        here.close()
        elsewhere.close()
