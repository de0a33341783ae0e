"""The loop guard: bots answering bots stop waking each other until a human writes.

Each test drives real HTTP against a real board, as two bots that mention each
other would, and reads what each bot's wake feed would have woken it for.
"""

from __future__ import annotations

from typing import Any

import pytest

from board.client import BoardAPIError, BoardClient
from board.server.clock import ManualClock
from board.server.sweep import sweep
from tests.support.boardtest import World, snapshot
from tests.support.pages_support import sign_in

HOPS = 4


async def _for_me(bot: BoardClient) -> set[int]:
    """The ids of the messages that would wake this bot (its feed's items for it)."""
    feed = await bot.wake(limit=500)
    return {m["id"] for m in feed["messages"] if m["for_me"]}


async def _notices(client: BoardClient, thread_id: int) -> list[dict[str, Any]]:
    thread = await client.thread(thread_id)
    return [m for m in thread["messages"] if m["kind"] == "event" and m["author"] == "board"]


async def _volley(world: World, thread_id: int, turns: int) -> list[dict[str, Any]]:
    """pb and pb2 answer each other in a thread, each mentioning the other."""
    sent = []
    for turn in range(turns):
        speaker, other = (world.bot, "pb2") if turn % 2 == 0 else (world.peer, "pb")
        sent.append(await speaker.post(f"@{other} over to you ({turn})", reply_to=thread_id))
    return sent


@pytest.fixture
async def guarded(world: World) -> World:
    await world.human.patch_workspace("proj", loop_hops=HOPS)
    return world


async def test_a_thread_pauses_at_loop_hops_with_one_notice_and_a_human_resumes_it(guarded: World) -> None:
    w = guarded
    root = await w.human.post("@pb please sort the flaky test with @pb2", channel="lobby", workspace="proj")
    sent = await _volley(w, root["id"], HOPS + 2)

    woke_pb, woke_pb2 = await _for_me(w.bot), await _for_me(w.peer)
    delivered = [m["id"] for m in sent[: HOPS - 1]]
    held = [m["id"] for m in sent[HOPS - 1 :]]
    assert set(delivered) <= woke_pb | woke_pb2
    assert not set(held) & (woke_pb | woke_pb2)
    assert all("loop-held" in m["tags"] for m in sent[HOPS - 1 :])
    assert not any("loop-held" in m["tags"] for m in sent[: HOPS - 1])

    thread = await w.human.thread(root["id"])
    assert thread["paused"] is True
    notices = await _notices(w.human, root["id"])
    assert len(notices) == 1 and notices[0]["reply_to"] == sent[HOPS - 1]["id"]
    assert "Paused: 4 bot messages in a row" in notices[0]["body"]
    human_inbox = {m["id"]: m for m in (await w.human.inbox(limit=500))["messages"]}
    assert human_inbox[notices[0]["id"]]["reason"] == "paused"
    assert notices[0]["id"] not in woke_pb | woke_pb2  # the notice wakes no bot either

    resumed = await w.human.post("@pb carry on, it was worth it", reply_to=root["id"])
    assert resumed["id"] in await _for_me(w.bot)  # a human's mention always wakes
    assert (await w.human.thread(root["id"]))["paused"] is False
    answer = await w.bot.post("@pb2 one more look please", reply_to=root["id"])
    assert answer["id"] in await _for_me(w.peer) and "loop-held" not in answer["tags"]


async def test_a_bots_claim_events_in_a_paused_thread_wake_no_bot(guarded: World) -> None:
    """The pause's notice says bot messages there wake no bot until a human writes: the events
    of a bot's acts on the thread's claim (claimed, done) are its messages there too. pb's
    burst of posts pauses the thread; pb2's acts are no run of the pair (a burst is one turn)."""
    w = guarded
    root = await w.human.post("@pb please sort the flaky test with @pb2", channel="lobby", workspace="proj")
    for n in range(HOPS):
        await w.bot.post(f"still looking ({n})", reply_to=root["id"])
    assert (await w.human.thread(root["id"]))["paused"] is True
    before = await _for_me(w.bot)
    await w.peer.claim(root["id"], note="mine now")
    await w.peer.done(root["id"], summary="sorted")
    acts = [m for m in (await w.human.thread(root["id"]))["messages"] if " by pb2: " in m["body"]]
    assert len(acts) == 2 and all("loop-held" in m["tags"] for m in acts), acts
    assert await _for_me(w.bot) == before  # pb, in the thread, is woken by neither
    told = [m for m in await _notices(w.human, root["id"]) if "loop-paused" in m["tags"]]
    assert len(told) == 1  # and the pause is told once

    await w.human.post("@pb2 thanks, reopen it if it flakes again", reply_to=root["id"])
    await w.peer.claim(root["id"], note="reopened")
    [claimed] = [m for m in (await w.human.thread(root["id"]))["messages"] if "reopened" in m["body"]]
    assert "loop-held" not in claimed["tags"] and claimed["id"] in await _for_me(w.bot)


async def test_a_pair_cannot_escape_by_opening_new_threads(guarded: World) -> None:
    w = guarded
    watcher = await w.board.bot("pb3", "proj")
    burst = [await w.bot.post(f"@pb2 first thing {n}", channel="lobby", workspace="proj") for n in range(3)]
    assert {m["id"] for m in burst} <= await _for_me(w.peer)  # a burst one way is one turn

    roots = []
    for turn in range(HOPS + 1):
        speaker, other = (w.peer, "pb") if turn % 2 == 0 else (w.bot, "pb2")
        roots.append(await speaker.post(f"@{other} new thread {turn}", channel="lobby", workspace="proj"))
    # turns: the burst (1), then pb2, pb, pb2 (2-4): the third new root is the fourth turn.
    woken = await _for_me(w.bot) | await _for_me(w.peer)
    assert {m["id"] for m in roots[: HOPS - 2]} <= woken
    assert not {m["id"] for m in roots[HOPS - 2 :]} & woken
    notices = [n for root in roots for n in await _notices(w.human, root["id"])]
    assert len(notices) == 1 and "@pb2 and @pb" in notices[0]["body"]
    assert [tag.split(":")[0] for tag in notices[0]["tags"]] == ["loop-paused", "loop-pair"]
    # The notice is the humans': it wakes no bot watching the channel either.
    watched = await _watched(watcher, "lobby")
    assert roots[0]["id"] in watched and notices[0]["id"] not in watched

    await w.human.post("@pb2 stop and tell me what you two found", channel="lobby", workspace="proj")
    after = await w.bot.post("@pb2 here is what we found", channel="lobby", workspace="proj")
    assert after["id"] in await _for_me(w.peer)


async def _acts(client: BoardClient, thread_id: int, action: str) -> list[dict[str, Any]]:
    """The board's events in the thread that record this claim action, oldest first."""
    thread = await client.thread(thread_id)
    return [m for m in thread["messages"] if m["kind"] == "event" and m["meta"].get("claim") == action]


async def test_bots_handing_a_thread_back_and_forth_are_paused_as_a_pair(guarded: World) -> None:
    w = guarded
    root = await w.human.post("@pb take this one", channel="lobby", workspace="proj")
    await w.bot.claim(root["id"])
    for turn in range(HOPS + 2):
        giver, to = (w.bot, "pb2") if turn % 2 == 0 else (w.peer, "pb")
        await giver.handoff(root["id"], to)
    handoffs = await _acts(w.human, root["id"], "handoff")
    woken = await _for_me(w.bot) | await _for_me(w.peer)
    # Each handoff is its giver's turn: the events alone made every wake, and no bot message.
    assert {m["id"] for m in handoffs[: HOPS - 1]} <= woken
    assert not {m["id"] for m in handoffs[HOPS - 1 :]} & woken
    assert all("loop-held" in m["tags"] for m in handoffs[HOPS - 1 :])
    notices = [m for m in await _notices(w.human, root["id"]) if "loop-pair" in " ".join(m["tags"])]
    assert len(notices) == 1 and f"have taken {HOPS} turns" in notices[0]["body"]

    await w.human.post("@pb2 you finish it", reply_to=root["id"])
    await w.bot.handoff(root["id"], "pb2", note="as asked")
    assert (await _acts(w.human, root["id"], "handoff"))[-1]["id"] in await _for_me(w.peer)


async def test_a_paused_pair_stays_paused_while_the_human_is_away(
    clocked_world: World, clock: ManualClock
) -> None:
    """The sweep's nudge wakes the holder every half hour; its handoff starts no new run."""
    w = clocked_world
    await w.human.patch_workspace("proj", loop_hops=HOPS)
    root = await w.human.post("@pb take this one", channel="lobby", workspace="proj")
    await w.bot.claim(root["id"])
    for turn in range(HOPS):
        giver, to = (w.bot, "pb2") if turn % 2 == 0 else (w.peer, "pb")
        await giver.handoff(root["id"], to)  # the last one is held: pb holds the thread, unwoken
    for stall in range(3):
        clock.advance(31 * 60)
        assert (await sweep(w.board.ctx)).nudged == [root["id"]]
        nudge = (await _acts(w.human, root["id"], "nudge"))[-1]
        holder, other, to = (w.bot, w.peer, "pb2") if stall % 2 == 0 else (w.peer, w.bot, "pb")
        assert nudge["id"] in await _for_me(holder)  # the board's reminder always wakes
        await holder.handoff(root["id"], to, note="not mine")
        assert (await _acts(w.human, root["id"], "handoff"))[-1]["id"] not in await _for_me(other)
    notices = [m for m in await _notices(w.human, root["id"]) if "loop-pair" in " ".join(m["tags"])]
    assert len(notices) == 1


async def test_mentions_in_claim_notes_are_their_bots_turns(guarded: World) -> None:
    w = guarded
    root = await w.human.post("@pb have a look", channel="lobby", workspace="proj")
    for turn in range(HOPS + 1):
        bot, other = (w.bot, "pb2") if turn % 2 == 0 else (w.peer, "pb")
        await bot.claim(root["id"], note=f"@{other} look at this")
        await bot.release(root["id"], reason=f"@{other} your turn")
    claims = await _acts(w.human, root["id"], "claim")
    woken = await _for_me(w.bot) | await _for_me(w.peer)
    assert {m["id"] for m in claims[: HOPS - 1]} <= woken  # a claim and its release: one turn
    assert not {m["id"] for m in claims[HOPS - 1 :]} & woken


async def test_a_held_message_and_the_pause_s_notice_wake_no_bot_watching_its_channel(guarded: World) -> None:
    w = guarded
    watcher = await w.board.bot("pb3", "proj")
    root = await w.human.post("@pb look at this with @pb2", channel="lobby", workspace="proj")
    sent = await _volley(w, root["id"], HOPS)
    (notice,) = await _notices(w.human, root["id"])
    assert notice["tags"] == ["loop-paused"]
    watched = {m["id"] for m in (await watcher.wake(watch="lobby", limit=500))["messages"]}
    assert sent[0]["id"] in watched and sent[-1]["id"] not in watched
    assert notice["id"] not in watched


async def _watched(bot: BoardClient, channel: str) -> set[int]:
    """The ids of the messages this bot's feed watching ``channel`` would wake it for (as its
    daemon's long-poll asks, which tells the board that it watches the channel)."""
    feed = await bot.wake(watch=channel, limit=500, wait=1)
    return {m["id"] for m in feed["messages"]}


async def _take_turns(
    first: BoardClient, second: BoardClient, channel: str, turns: int
) -> list[dict[str, Any]]:
    """``first`` and ``second`` post in turn in ``channel``, new threads that mention no one."""
    return [
        await (first if turn % 2 == 0 else second).post(f"status {turn}", channel=channel, workspace="proj")
        for turn in range(turns)
    ]


async def test_two_bots_watching_a_channel_and_answering_there_are_paused(guarded: World) -> None:
    """Their posts mention nobody, so no inbox held the run: each woke the other through the
    watch alone, as fast as their turns took."""
    w = guarded
    await w.human.post("ops is open", channel="ops", workspace="proj")
    await _watched(w.bot, "ops")
    await _watched(w.peer, "ops")
    sent = await _take_turns(w.bot, w.peer, "ops", HOPS + 2)
    held = [m for m in sent if "loop-held" in m["tags"]]
    assert [m["id"] for m in held] == [m["id"] for m in sent[HOPS - 1 :]]
    woke = await _watched(w.bot, "ops") | await _watched(w.peer, "ops")
    assert not {m["id"] for m in held} & woke and {sent[0]["id"], sent[1]["id"]} <= woke
    notices = await _notices(w.human, sent[HOPS - 1]["id"])
    assert len(notices) == 1 and "@pb2 and @pb both watch this channel" in notices[0]["body"]
    assert notices[0]["id"] not in await _watched(w.bot, "ops") | await _watched(w.peer, "ops")

    await w.human.post("thanks, carry on", channel="ops", workspace="proj")  # a human resumes them
    after = await w.bot.post("status: still green", channel="ops", workspace="proj")
    assert "loop-held" not in after["tags"] and after["id"] in await _watched(w.peer, "ops")


async def test_bots_whose_daemons_start_watching_after_they_posted_are_paused(guarded: World) -> None:
    """Each bot's token was already known (and kept for a while) from its posts before its
    daemon said what it watches: the new watch counts from the next post on."""
    w = guarded
    before = await _take_turns(w.bot, w.peer, "ops", 2)
    await _watched(w.bot, "ops")
    await _watched(w.peer, "ops")
    sent = await _take_turns(w.bot, w.peer, "ops", HOPS + 1)
    assert not any("loop-held" in m["tags"] for m in before)
    assert [m["id"] for m in sent if "loop-held" in m["tags"]] == [m["id"] for m in sent[HOPS - 3 :]]


async def test_bots_posting_where_only_one_watches_are_not_paused(guarded: World) -> None:
    """A reporter that watches nothing wakes the watcher every time; the watcher's answers wake
    nobody back, so no run is counted, however long it goes on."""
    w = guarded
    await w.human.post("builds is open", channel="builds", workspace="proj")
    await _watched(w.peer, "builds")
    await _watched(w.bot, "")  # pb's daemon watches nothing (it watched nothing before either)
    sent = await _take_turns(w.bot, w.peer, "builds", HOPS * 2)
    assert not any("loop-held" in m["tags"] for m in sent)
    assert {m["id"] for m in sent[::2]} <= await _watched(w.peer, "builds")


async def test_one_watching_bot_posting_many_times_is_one_turn(guarded: World) -> None:
    """Both watch #ops, but only pb posts (a burst of reports): pb2 is woken each time and no
    run is counted, in the channel nor in a thread there."""
    w = guarded
    root = await w.human.post("ops is open", channel="ops", workspace="proj")
    await _watched(w.bot, "ops")
    await _watched(w.peer, "ops")
    sent = [await w.bot.post(f"report {n}", channel="ops", workspace="proj") for n in range(HOPS)]
    sent.append(await w.bot.post("and in the thread", reply_to=root["id"]))
    assert not any("loop-held" in m["tags"] for m in sent)
    assert {m["id"] for m in sent} <= await _watched(w.peer, "ops")


async def test_a_bots_own_look_at_its_feed_does_not_hide_what_its_daemon_watches(guarded: World) -> None:
    """A harness reads the wake feed mid-turn (the MCP tool ``catch_up``) without the daemon's
    ``--watch``: that is no daemon watching less, and the pair is still counted."""
    w = guarded
    await w.human.post("ops is open", channel="ops", workspace="proj")
    await _watched(w.bot, "ops")
    await _watched(w.peer, "ops")
    sent = []
    for turn in range(HOPS + 1):
        speaker = w.bot if turn % 2 == 0 else w.peer
        await speaker.wake(limit=20)  # the turn's catch_up: no watch, no wait
        sent.append(await speaker.post(f"status {turn}", channel="ops", workspace="proj"))
    assert [m["id"] for m in sent if "loop-held" in m["tags"]] == [m["id"] for m in sent[HOPS - 1 :]]


async def test_a_daemon_that_stops_watching_is_no_longer_counted(guarded: World) -> None:
    w = guarded
    await w.human.post("ops is open", channel="ops", workspace="proj")
    await _watched(w.bot, "ops")
    await _watched(w.peer, "ops")
    await w.peer.wake(limit=1, wait=1)  # pb2's daemon restarted without --watch
    sent = await _take_turns(w.bot, w.peer, "ops", HOPS * 2)
    assert not any("loop-held" in m["tags"] for m in sent)


async def test_a_bot_whose_daemon_stopped_waiting_is_no_longer_counted(
    clocked_world: World, clock: ManualClock
) -> None:
    """pb2's daemon was stopped and its record lingers; pb2 still posts reports in #ops (a script
    with its token). Nothing wakes it, so pb's answers start no run, and its reports must go on
    waking pb."""
    w = clocked_world
    await w.human.patch_workspace("proj", loop_hops=HOPS)
    await w.human.post("ops is open", channel="ops", workspace="proj")
    await _watched(w.bot, "ops")
    await _watched(w.peer, "ops")
    clock.advance(w.board.ctx.settings.unreachable_after + 1)  # pb2's daemon is gone; pb's polls on
    await _watched(w.bot, "ops")
    sent = await _take_turns(w.peer, w.bot, "ops", HOPS * 2)
    assert not any("loop-held" in m["tags"] for m in sent)
    assert {m["id"] for m in sent[::2]} <= await _watched(w.bot, "ops")


async def test_humans_are_never_held_and_zero_turns_the_guard_off(guarded: World) -> None:
    w = guarded
    root = await w.human.post("@pb start", channel="lobby", workspace="proj")
    for n in range(HOPS + 2):
        await w.human.post(f"@pb and again {n}", reply_to=root["id"])
    assert (await w.human.thread(root["id"]))["paused"] is False

    await w.human.patch_workspace("proj", loop_hops=0)
    assert (await w.human.workspace("proj"))["loop_hops"] == 0
    sent = await _volley(w, root["id"], HOPS * 3)
    assert {m["id"] for m in sent} <= await _for_me(w.bot) | await _for_me(w.peer)
    assert await _notices(w.human, root["id"]) == []


async def test_loop_hops_is_a_humans_setting_and_bad_values_change_nothing(guarded: World) -> None:
    w = guarded
    before = snapshot(w.board.db_path)
    for client, value, status, code in (
        (w.bot, 3, 403, "FORBIDDEN"),
        (w.human, -1, 422, "INVALID_ARGUMENT"),
        (w.human, 1001, 422, "INVALID_ARGUMENT"),
        (w.human, "many", 422, "INVALID_ARGUMENT"),
    ):
        with pytest.raises(BoardAPIError) as info:
            await client.patch_workspace("proj", loop_hops=value)
        assert (info.value.status, info.value.code) == (status, code)
    assert snapshot(w.board.db_path) == before
    assert (await w.human.workspace("proj"))["loop_hops"] == HOPS
    fresh = await w.human.create_workspace("fresh")
    assert fresh["loop_hops"] == 10


async def test_the_pages_show_a_paused_thread_and_set_the_guard(guarded: World) -> None:
    w = guarded
    page = await sign_in(w.board)
    try:
        root = await w.human.post("@pb go", channel="lobby", workspace="proj")
        status, html = await page.get(f"/t/{root['id']}")
        assert status == 200 and 'id="paused"' not in html
        await _volley(w, root["id"], HOPS)
        status, html = await page.get(f"/t/{root['id']}")
        assert status == 200 and 'id="paused"' in html and "badge-paused" in html

        status, html = await page.get("/workspaces")
        assert f'name="loop_hops" type="number" min="0" max="1000" value="{HOPS}"' in html
        status, _ = await page.post(
            "/workspaces/proj/settings", {"name": "Project", "review": "none", "loop_hops": "7"}
        )
        assert status == 303 and (await w.human.workspace("proj"))["loop_hops"] == 7
    finally:
        await page.close()
