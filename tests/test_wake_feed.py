"""GET /api/wake: the launcher's feed, marked for_me or watched, long-pollable.

for_me is the bot's inbox (mentions, its conversations, replies in threads it
posted in or holds, handoffs to it); watched is everything else in the channels
it names with ``watch=`` and in its ``goal=`` thread. Wall-clock figures here are
generous bounds, not measurements: the benchmark measures.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from board.client import BoardClient
from board.server.services import auth, longpoll, posting
from board.server.services import wakes as wake_service
from tests.support.boardtest import LONG_WAIT, WOKEN_WITHIN, World, held, snapshot
from tests.support.refusals import refused


async def _cursor(client: BoardClient) -> int:
    return int((await client.me())["cursor"])


def _marks(page: dict[str, Any]) -> dict[int, tuple[bool, bool, str | None]]:
    return {m["id"]: (m["for_me"], m["watched"], m.get("reason")) for m in page["messages"]}


async def test_what_is_for_me_and_what_i_watch(world: World) -> None:
    w = world
    since = await _cursor(w.bot)
    mention = await w.human.post("@pb can you look at the login page", channel="web", workspace="proj")
    convo = (await w.human.open_conversation(["pb"], "1:1", workspace="proj"))["conversation"]
    direct = await w.human.post("a word in private", conversation=convo["id"])
    mine = await w.bot.post("I will refactor the parser", channel="dev")
    reply_to_mine = await w.peer.post("careful with the tokenizer", reply_to=mine["id"])
    held = await w.human.post("upgrade the database driver", channel="infra", workspace="proj")
    await w.bot.claim(held["id"])
    reply_in_held = await w.human.post("the changelog mentions a breaking change", reply_to=held["id"])
    handed = await w.human.post("write the release notes", channel="infra", workspace="proj")
    await w.peer.claim(handed["id"])
    await w.peer.handoff(handed["id"], "pb", "yours")
    watched = await w.peer.post("ops: disk at 80%", channel="ops")
    goal = await w.human.post("the goal: ship 1.0", channel="plan", workspace="proj")
    goal_reply = await w.peer.post("1.0 blockers listed", reply_to=goal["id"])
    elsewhere = await w.peer.post("unrelated chatter", channel="random")
    watched_mention = await w.peer.post("@pb ops needs you", channel="ops")

    page = await w.bot.wake(since=since, watch=["ops"], goal=goal["id"], limit=100)
    marks = _marks(page)
    handoff_event = next(m for m in page["messages"] if m.get("reason") == "handoff")
    assert marks[mention["id"]] == (True, False, "mention")
    assert marks[direct["id"]] == (True, False, "conversation")
    assert marks[reply_to_mine["id"]] == (True, False, "thread")
    assert marks[reply_in_held["id"]] == (True, False, "thread")
    assert handoff_event["thread_id"] == handed["id"] and handoff_event["for_me"] is True
    assert marks[watched["id"]] == (False, True, None)
    assert marks[goal["id"]] == (False, True, None)
    assert marks[goal_reply["id"]] == (False, True, None)
    assert marks[watched_mention["id"]] == (True, True, "mention")
    assert elsewhere["id"] not in marks
    assert mine["id"] not in marks  # never my own posts
    assert [m["id"] for m in page["messages"]] == sorted(marks)
    assert page["has_more"] is False and page["cursor"] >= max(marks)

    # Without watch or goal, the feed is the inbox alone.
    plain = await w.bot.wake(since=since, limit=100)
    assert all(m["for_me"] and not m["watched"] for m in plain["messages"])
    inbox = await w.bot.inbox(since=since, limit=100)
    assert [m["id"] for m in plain["messages"]] == [m["id"] for m in inbox["messages"]]

    compact = await w.bot.wake(since=since, watch=["ops"], view="compact", limit=100)
    assert _marks(compact) == {k: v for k, v in marks.items() if k not in (goal["id"], goal_reply["id"])}
    assert all("body" not in m and "preview" in m for m in compact["messages"])


async def test_a_matching_post_wakes_a_waiting_bot_at_once(world: World) -> None:
    w = world
    await w.human.create_channel("ops", topic="operations", workspace="proj")
    targets: tuple[tuple[Callable[[], Awaitable[dict[str, Any]]], dict[str, Any]], ...] = (
        (lambda: w.human.post("@pb ping", channel="lobby", workspace="proj"), {}),
        (lambda: w.peer.post("ops: deploy started", channel="ops"), {"watch": ["ops"]}),
    )
    for target, kwargs in targets:
        since = await _cursor(w.bot)
        waiting = asyncio.create_task(w.bot.wake(since=since, wait=LONG_WAIT, **kwargs))
        await held(w.board)
        assert not waiting.done()
        posted = await target()
        page = await asyncio.wait_for(waiting, WOKEN_WITHIN)  # well before the wait's end: the post woke it
        assert [m["id"] for m in page["messages"]] == [posted["id"]]


async def test_a_watched_channel_wakes_its_watcher_from_its_first_post(world: World) -> None:
    """A launcher may start watching a channel before anyone has posted in it."""
    w = world
    since = await _cursor(w.bot)
    waiting = asyncio.create_task(w.bot.wake(since=since, wait=LONG_WAIT, watch=["fresh"]))
    await held(w.board)
    await w.other.post("same slug, other workspace", channel="fresh")
    first = await w.peer.post("the first post makes the channel", channel="fresh")
    page = await asyncio.wait_for(waiting, WOKEN_WITHIN)  # well before the wait's end: the post woke it
    assert _marks(page) == {first["id"]: (False, True, None)}


async def test_a_post_that_is_not_for_me_does_not_wake_me(world: World) -> None:
    w = world
    since = await _cursor(w.bot)
    waiting = asyncio.create_task(w.bot.wake(since=since, wait=10, watch=["ops"]))
    await held(w.board)
    await w.peer.post("chatter in another channel", channel="random")
    await w.human.post("@pb2 not for pb", channel="ops-archive", workspace="proj")
    await w.bot.post("my own post in ops", channel="ops")
    await w.other.post("@pb in the other workspace", channel="ops")
    assert not waiting.done()  # none of them answered it
    mention = await w.human.post("@pb this one is", channel="lobby", workspace="proj")
    page = await asyncio.wait_for(waiting, 5)
    assert [m["id"] for m in page["messages"]] == [mention["id"]]  # still waiting, none of them in it


async def test_a_handoff_and_a_claimed_threads_reply_wake_the_bot(world: World) -> None:
    w = world
    root = await w.human.post("rotate the keys", channel="ops", workspace="proj")
    await w.peer.claim(root["id"])
    since = await _cursor(w.bot)
    waiting = asyncio.create_task(w.bot.wake(since=since, wait=10))
    await held(w.board)
    await w.peer.handoff(root["id"], "pb", "over to you")
    page = await asyncio.wait_for(waiting, 5)
    assert [(m["reason"], m["for_me"]) for m in page["messages"]] == [("handoff", True)]

    since = page["messages"][-1]["id"]
    waiting = asyncio.create_task(w.bot.wake(since=since, wait=10))
    await held(w.board)
    reply = await w.human.post("the old keys expire friday", reply_to=root["id"])
    page = await asyncio.wait_for(waiting, 5)
    assert [(m["id"], m["reason"]) for m in page["messages"]] == [(reply["id"], "thread")]


async def test_since_is_a_cursor_nothing_missed_nothing_twice(world: World) -> None:
    w = world
    start = await _cursor(w.bot)
    posted = [
        (await w.human.post(f"@pb item {i}", channel="lobby", workspace="proj"))["id"] for i in range(5)
    ] + [(await w.peer.post(f"ops {i}", channel="ops"))["id"] for i in range(4)]

    seen: list[int] = []
    since = start
    while True:
        page = await w.bot.wake(since=since, watch=["ops"], limit=3)
        seen += [m["id"] for m in page["messages"]]
        assert all(m["id"] > since for m in page["messages"])
        if not page["has_more"]:
            break
        since = page["next_since"]
    assert seen == posted

    # Asking from the highest id seen: nothing again, and a wait returns only what is new.
    assert (await w.bot.wake(since=seen[-1], watch=["ops"]))["messages"] == []
    middle = posted[2]
    assert [m["id"] for m in (await w.bot.wake(since=middle, watch=["ops"], limit=100))["messages"]] == [
        i for i in posted if i > middle
    ]
    # Something already there answers a wait at once.
    page = await asyncio.wait_for(w.bot.wake(since=middle, wait=LONG_WAIT, watch=["ops"]), WOKEN_WITHIN)
    assert page["messages"]


async def test_an_empty_answers_cursor_never_skips_a_message(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A launcher that moves ``since`` to an empty answer's cursor must not skip a mention
    committed after the wait gave up but before the answer was built."""
    w = world
    ctx = w.board.ctx
    alice = await auth.authenticate(ctx, w.human.token)
    late: list[int] = []
    real_poll = longpoll.poll

    async def poll_then_post(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        items = await real_poll(*args, **kwargs)
        request = posting.PostMessage(body="@pb just too late", channel="lobby", workspace="proj")
        late.append((await posting.post(ctx, alice, request))["id"])
        return items

    since = await _cursor(w.bot)
    monkeypatch.setattr(wake_service, "poll", poll_then_post)
    page = await w.bot.wake(since=since, wait=1)
    monkeypatch.undo()
    assert page["messages"] == [] and page["cursor"] >= since
    again = await w.bot.wake(since=page["cursor"])
    assert [m["id"] for m in again["messages"]] == late


async def test_other_workspaces_never_leak(world: World) -> None:
    w = world
    since = await _cursor(w.bot)
    foreign = await w.other.post("@pb @pb2 ops in other", channel="ops")
    await w.human.post("@pb from a human, in other", channel="ops", workspace="other")
    await w.other.post("a reply", reply_to=foreign["id"])
    page = await w.bot.wake(since=since, watch=["ops"], limit=100)
    assert page["messages"] == []
    assert (await w.bot.wake(since=since, watch=["ops", "no-such-channel"]))["messages"] == []

    hidden = await refused(w.bot.wake(goal=foreign["id"]), "NOT_FOUND")
    absent = await refused(w.bot.wake(goal=10**9), "NOT_FOUND")
    assert hidden.code == "NOT_FOUND"
    assert (hidden.status, hidden.code, hidden.message, hidden.details) == (
        absent.status,
        absent.code,
        absent.message,
        absent.details,
    )


async def test_a_conversation_i_am_not_in_cannot_be_my_goal(world: World) -> None:
    w = world
    convo = (await w.human.open_conversation(["pb2"], "private", workspace="proj"))["conversation"]
    secret = await w.human.post("between alice and pb2", conversation=convo["id"])
    exc = await refused(w.bot.wake(goal=secret["id"]), "NOT_FOUND")
    assert exc.code == "NOT_FOUND"
    # pb2, a participant, may watch it.
    await w.peer.post("ack", reply_to=secret["id"])
    page = await w.peer.wake(goal=secret["id"])
    assert secret["id"] in [m["id"] for m in page["messages"]]


async def test_the_feed_is_for_bots(world: World) -> None:
    before = snapshot(world.board.db_path)
    exc = await refused(world.human.wake(), "FORBIDDEN")
    assert (exc.status, exc.code) == (403, "FORBIDDEN")
    await refused(world.anon.wake(), "UNAUTHENTICATED")
    await refused(world.bot.wake(wait=61), "INVALID_ARGUMENT")
    await refused(world.bot.wake(watch=["Not A Slug"]), "INVALID_ARGUMENT")
    assert snapshot(world.board.db_path) == before
