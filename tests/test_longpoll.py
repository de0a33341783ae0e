"""Long-poll wakes fast for a match, not for anything else; cursors never skip or repeat."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from board.client import BoardAPIError, BoardClient
from board.server.services import messages, wakes
from board.server.services.context import Context
from tests.support.boardtest import LONG_WAIT, WOKEN_WITHIN, World, held


async def timed(coro: object) -> tuple[float, dict[str, Any]]:
    started = time.monotonic()
    result = await coro  # type: ignore[misc]
    return time.monotonic() - started, result


async def test_inbox_wait_returns_soon_after_a_matching_post(world: World) -> None:
    cursor = (await world.bot.me())["cursor"]
    waiting = asyncio.create_task(world.bot.inbox(since=cursor, wait=LONG_WAIT))
    await held(world.board)
    posted = await world.human.post("@pb wake up", channel="lobby", workspace="proj")
    page = await asyncio.wait_for(waiting, WOKEN_WITHIN)  # well before the wait's end: the post woke it
    assert [m["id"] for m in page["messages"]] == [posted["id"]]
    assert page["messages"][0]["reason"] == "mention"


async def test_inbox_wait_ignores_posts_that_are_not_for_me(world: World) -> None:
    cursor = (await world.bot.me())["cursor"]
    waiting = asyncio.create_task(timed(world.bot.inbox(since=cursor, wait=2)))
    await held(world.board)
    await world.human.post("nothing for pb here", channel="lobby", workspace="proj")
    await world.human.post("@ob this is yours", channel="lobby", workspace="other")
    await world.human.post("@pb2 not pb", channel="lobby", workspace="proj")
    assert not waiting.done()  # the posts landed while it waited
    elapsed, page = await waiting
    assert page["messages"] == [] and page["has_more"] is False
    assert elapsed >= 1.9


async def test_channel_wait_wakes_every_reader_of_that_channel(world: World) -> None:
    await world.human.post("first", channel="builds", workspace="proj")
    cursor = (await world.bot.me())["cursor"]
    readers = [world.bot, world.peer, world.admin_bot]
    waits = [
        asyncio.create_task(r.messages(channel="builds", workspace="proj", since=cursor, wait=10))
        for r in readers
    ]
    other_wait = asyncio.create_task(world.other.messages(since=cursor, wait=10))
    await held(world.board, len(waits) + 1)
    await world.human.post("elsewhere", channel="lobby", workspace="proj")
    posted = await world.human.post("build 42 is green", channel="builds", workspace="proj")
    for page in await asyncio.gather(*waits):
        assert [m["id"] for m in page["messages"]] == [posted["id"]]
    assert not other_wait.done()  # neither post answered the other workspace's reader
    theirs = await world.human.post("for the other workspace", channel="lobby", workspace="other")
    assert [m["id"] for m in (await other_wait)["messages"]] == [theirs["id"]]


async def test_a_waiting_reader_with_filters_only_wakes_on_matches(world: World) -> None:
    cursor = (await world.bot.me())["cursor"]
    waiting = asyncio.create_task(world.bot.messages(since=cursor, wait=10, tag="deploy", channel="lobby"))
    await held(world.board)
    await world.peer.post("untagged", channel="lobby")
    tagged = await world.peer.post("tagged", channel="lobby", tags=["deploy"])
    page = await waiting
    assert [m["id"] for m in page["messages"]] == [tagged["id"]]


async def test_stale_cursor_reader_never_misses_or_repeats_under_concurrent_posting(
    world: World,
) -> None:
    """Eight posters write 400 messages while a reader pages with since=, waiting when idle."""
    posters: list[BoardClient] = [world.bot, world.peer]
    for i in range(6):
        posters.append(await world.board.bot(f"poster{i}", "proj"))
    start = (await world.bot.me())["cursor"]
    posted: set[int] = set()

    async def post_many(client: BoardClient, n: int) -> None:
        for i in range(n):
            posted.add((await client.post(f"m{i}", channel="stream"))["id"])
            if random.random() < 0.3:
                await asyncio.sleep(0)

    seen: list[int] = []

    async def read_all(done: asyncio.Event) -> None:
        since = start
        while True:
            page = await world.human.messages(workspace="proj", since=since, limit=7, wait=1)
            ids = [m["id"] for m in page["messages"]]
            seen.extend(ids)
            if ids:
                since = ids[-1]
            elif done.is_set():
                return

    done = asyncio.Event()
    reader = asyncio.create_task(read_all(done))
    await asyncio.gather(*[post_many(c, 50) for c in posters])
    done.set()
    await reader
    assert len(seen) == len(set(seen)), "a message was delivered twice"
    assert seen == sorted(seen), "messages arrived out of order"
    assert set(seen) == posted, f"missed {sorted(posted - set(seen))[:5]}"


async def test_a_wait_held_by_a_token_revoked_meanwhile_answers_unauthenticated(world: World) -> None:
    """A long-poll is its credential's, as a wake stream is: what a post wakes it with is not
    answered to a token revoked (or rotated) while it waited, on any feed that waits."""
    w = world
    feeds: dict[str, Callable[[BoardClient, int], Coroutine[Any, Any, Any]]] = {
        "inbox": lambda bot, cursor: bot.inbox(since=cursor, wait=LONG_WAIT),
        "wake": lambda bot, cursor: bot.wake(since=cursor, wait=LONG_WAIT),
        "messages": lambda bot, cursor: bot.messages(channel="lobby", since=cursor, wait=LONG_WAIT),
    }
    for change in ("revoke", "rotate"):
        for feed, wait in feeds.items():
            handle = f"held-{change}-{feed}"
            bot = await w.board.bot(handle, "proj")
            waiting = asyncio.create_task(wait(bot, (await bot.me())["cursor"]))
            await held(w.board)
            if change == "revoke":
                await w.human.revoke_token(handle)
            else:
                await bot.rotate()
            await w.human.post(f"@{handle} not for the old token", channel="lobby", workspace="proj")
            with pytest.raises(BoardAPIError) as refused:
                await asyncio.wait_for(waiting, WOKEN_WITHIN)
            assert (refused.value.status, refused.value.code) == (401, "UNAUTHENTICATED"), (change, feed)


@pytest.mark.parametrize("feed", ["wake", "channel"])
async def test_a_change_committed_while_a_long_poll_reads_its_scope_answers_it_at_once(
    world: World, monkeypatch: pytest.MonkeyPatch, feed: str
) -> None:
    """A change to what the caller's token reaches (a revocation, a move, its profile's watch)
    that committed after its long-poll had read its scope, and before the wait held its place in
    the hub, answered the wait only at its end, a minute on, from the scope it no longer had. It
    is heard from before the scope is read (as a wake stream's is), and answers at once."""
    module = wakes if feed == "wake" else messages
    real = module.poll

    async def changed_meanwhile(ctx: Context, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        ctx.tokens.forget_agent(kwargs["owner"])  # as a profile's save does once it commits
        return await real(ctx, *args, **kwargs)

    await world.peer.post("the channel's first post", channel="ops")
    monkeypatch.setattr(module, "poll", changed_meanwhile)
    since = (await world.bot.me())["cursor"]
    if feed == "wake":
        waiting = world.bot.wake(since=since, wait=LONG_WAIT)
    else:
        waiting = world.bot.messages(workspace="proj", channel="ops", since=since, wait=LONG_WAIT)
    page = await asyncio.wait_for(waiting, WOKEN_WITHIN)
    assert page["messages"] == []
    # Asked again, it waits in its scope as it stands, and is woken by what it is for.
    monkeypatch.setattr(module, "poll", real)
    again = asyncio.create_task(
        world.bot.messages(workspace="proj", channel="ops", since=since, wait=LONG_WAIT)
    )
    await held(world.board)
    posted = await world.peer.post("disk at 80%", channel="ops")
    assert [m["id"] for m in (await asyncio.wait_for(again, WOKEN_WITHIN))["messages"]] == [posted["id"]]
