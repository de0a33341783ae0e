"""A real ``bot run`` reads its wake stream, and keeps answering, each message once, when the
stream is cut under it and when the board restarts: it long-polls meanwhile and streams again."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import pytest

from board.server.hub import Waiter
from board.server.principal import Principal
from board.server.services.reach import WaitMarks
from board.server.store.writer import DatabaseUnreachable
from tests.launcher.botrun import BotProcess, LiveBoard, mention, one_reply, replies
from tests.launcher.fakeharness import Fake
from tests.support.boardtest import Board, World, eventually


def streams(board: Board) -> list[Waiter]:
    """The wake streams the board holds now (a stream's waiter is pinned)."""
    return [w for held in board.ctx.hub._by_owner.values() for w in held if w.pinned]


def wake_ids(fake: Fake) -> list[int]:
    return [int(i) for c in fake.calls() if c.get("step") for i in c["BOARD_WAKE_IDS"].split(",")]


async def test_a_daemon_streams_and_survives_a_cut_stream_and_a_board_restart(
    live: LiveBoard, world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    fake.script(*[{"do": "reply"}] * 8)
    bot = await make_bot(BOT_STREAM_RETRY="1").start().started()
    assert live.board is not None
    board = live.board
    await eventually(lambda: len(streams(board)) == 1, "the daemon's wake stream")
    answered = [await mention(world, "first")]
    await one_reply(world, answered[-1])

    # The connection is cut mid-stream (as a slow reader's is): the daemon falls back, then streams again.
    (stream,) = streams(board)
    assert stream.cut is not None
    stream.cut()
    answered.append(await mention(world, "while the stream is cut"))
    await one_reply(world, answered[-1])
    await eventually(lambda: bot.events("stream_fallback"), "the daemon to fall back")
    await eventually(lambda: len(bot.events("streaming")) >= 2, "the daemon to stream again")
    answered.append(await mention(world, "on the new stream"))
    await one_reply(world, answered[-1])

    # The board stops (its streams end with end: shutdown) and comes back on the same database.
    human_token = world.human.token
    await live.stop()
    board = await live.start()
    human = board.client(human_token)
    streamed = len(bot.events("streaming"))
    back = await human.post("@pb after the restart", channel="general", workspace="proj")
    answered.append(int(back["id"]))
    # The board holds the stream before its headers reach the daemon, which logs it then.
    await eventually(
        lambda: len(streams(board)) == 1 and len(bot.events("streaming")) > streamed,
        "the daemon's stream on the new board",
    )
    after = await human.post("@pb streamed after the restart", channel="general", workspace="proj")
    answered.append(int(after["id"]))
    for message_id in answered[-2:]:
        found = await eventually(partial(replies, human, message_id, "pb"), f"pb's reply to {message_id}")
        assert len(found) == 1, found
    assert sorted(wake_ids(fake)) == answered  # each message ran in exactly one turn
    assert bot.proc is not None and bot.proc.poll() is None


async def test_a_daemon_whose_stream_a_database_error_breaks_falls_back_and_answers(
    live: LiveBoard,
    world: World,
    fake: Fake,
    make_bot: Callable[..., BotProcess],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The database stops answering while a stream is open (its next write fails): the board
    cuts the stream, which its daemon takes as a break, and it long-polls and answers. The
    error's answer written into the stream instead read as more of it, and the daemon hung."""
    fake.script(*[{"do": "reply"}] * 4)
    bot = await make_bot(BOT_STREAM_RETRY="1").start().started()
    assert live.board is not None
    board = live.board
    await eventually(lambda: len(streams(board)) == 1, "the daemon's wake stream")
    touch = WaitMarks.touch
    failures = [DatabaseUnreachable("the database does not answer")]

    async def failing_once(marks: WaitMarks, p: Principal) -> None:
        if failures:
            raise failures.pop()
        await touch(marks, p)

    monkeypatch.setattr(WaitMarks, "touch", failing_once)
    answered = [await mention(world, "while the database hiccups")]
    await one_reply(world, answered[-1])
    assert not failures and bot.events("stream_fallback")
    await eventually(lambda: len(bot.events("streaming")) >= 2, "the daemon to stream again")
    answered.append(await mention(world, "on the new stream"))
    await one_reply(world, answered[-1])
    assert sorted(wake_ids(fake)) == answered  # each message ran in exactly one turn


async def test_a_running_daemon_follows_its_profiles_new_watch(
    live: LiveBoard, world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    """A daemon started with ``--profile`` read the profile's watch once, at start: a channel
    added to the profile while it ran never woke the bot. The board now ends its stream
    (``rescoped``); the daemon reads its profile again and streams with the new watch."""
    fake.script({"do": "reply"})
    await world.human.create_channel("deploys", workspace="proj")
    await world.human.create_profile("runner", "proj", "claude", bots=["pb"])
    bot = await make_bot(args=["--profile", "runner"]).start().started()
    assert live.board is not None
    board = live.board
    await eventually(lambda: len(streams(board)) == 1, "the daemon's wake stream")
    await world.human.update_profile("runner", watch=["deploys"])
    await eventually(lambda: bot.events("rescoped"), "the daemon to read its profile again")
    assert [e["watch"] for e in bot.events("rescoped")] == [["deploys"]]

    # The daemon reads its profile once the board holds a stream: the change is found at the first
    # stream's read, or ends that stream rescoped and is found at the next one's. Either way a
    # stream opens after the watch moved, and the board holds that one alone.
    def restreamed() -> bool:
        names = [e["event"] for e in bot.events()]
        moved = max((i for i, name in enumerate(names) if name == "stream_rewatch"), default=len(names))
        return "streaming" in names[moved:] and len(streams(board)) == 1

    await eventually(restreamed, "a stream opened with the new watch")
    assert [e["watch"] for e in bot.events("stream_rewatch")] == [["deploys"]]
    stuck = await world.peer.post("the deploy is stuck", channel="deploys", workspace="proj")
    await one_reply(world, int(stuck["id"]))
    assert wake_ids(fake) == [int(stuck["id"])]
