"""GET /api/wake/stream: the wake feed as NDJSON lines, for daemons, over real HTTP.

It must deliver exactly what the long-poll (``GET /api/wake``) would, each line with the
cursor to reconnect with; a reconnect from the last cursor loses and repeats nothing.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from board.client import BoardAPIError, BoardClient
from board.server.principal import Principal
from board.server.services import tokencache, wakestream
from board.server.services.context import Context
from board.server.services.wakes import wake_scope
from board.server.store import identity as identity_store
from board.server.store.connection import Connection
from tests.support.boardtest import World, eventually, held, start_board, stop_board

STAMP = "%Y-%m-%dT%H:%M:%SZ"
WITHIN = 10.0  # a generous bound for a line that is due now, not a measurement


async def _cursor(client: BoardClient) -> int:
    return int((await client.me())["cursor"])


async def _until(lines: AsyncIterator[dict[str, Any]], last_id: int) -> list[dict[str, Any]]:
    """Message lines until the one of ``last_id``; heartbeats are skipped."""
    got = []
    while True:
        line = await asyncio.wait_for(anext(lines), WITHIN)
        if "message" in line:
            got.append(line)
            if line["message"]["id"] == last_id:
                return got


def _marks(messages: list[dict[str, Any]]) -> list[tuple[int, bool, bool, str | None]]:
    return [(m["id"], m["for_me"], m["watched"], m.get("reason")) for m in messages]


async def _traffic(w: World) -> tuple[int, int]:
    """Posts of every kind, some for pb and some that must not reach it; the goal, and the last id."""
    goal = await w.human.post("the goal: ship 1.0", channel="plan", workspace="proj")
    await w.human.post("@pb can you look at the login page", channel="web", workspace="proj")
    convo = (await w.human.open_conversation(["pb"], "1:1", workspace="proj"))["conversation"]
    await w.human.post("a word in private", conversation=convo["id"])
    other_convo = (await w.human.open_conversation(["pb2"], "1:1", workspace="proj"))["conversation"]
    await w.human.post("@pb is not in this conversation", conversation=other_convo["id"])
    mine = await w.bot.post("I will refactor the parser", channel="ops")
    await w.peer.post("careful with the tokenizer", reply_to=mine["id"])
    await w.peer.post("ops: disk at 80%", channel="ops")
    await w.peer.post("1.0 blockers listed", reply_to=goal["id"])
    await w.peer.post("unrelated chatter", channel="random")
    await w.other.post("@pb in the other workspace", channel="ops")
    last = await w.human.post("@pb @pb2 that is all", channel="ops", workspace="proj")
    return goal["id"], last["id"]


async def test_the_stream_delivers_exactly_what_the_long_poll_would(world: World) -> None:
    w = world
    since = await _cursor(w.bot)
    goal = await w.human.post("the goal: ship 1.0", channel="plan", workspace="proj")
    since_goal = goal["id"]
    for view in ("full", "compact"):
        stream = await w.bot.wake_stream(since=since_goal, watch=["ops"], goal=goal["id"], view=view)
        lines = aiter(stream)
        await held(w.board)
        _, last = await _traffic(w)
        live = await _until(lines, last)
        stream.close()
        polled = await w.bot.wake(since=since_goal, watch=["ops"], goal=goal["id"], view=view, limit=100)
        assert [line["message"] for line in live] == polled["messages"]
        assert [line["cursor"] for line in live] == [m["id"] for m in polled["messages"]]
        marks = _marks(polled["messages"])
        assert any(not for_me for _, for_me, _, _ in marks) and any(for_me for _, for_me, _, _ in marks)
        bodies = {m.get("body") or m.get("preview") for m in polled["messages"]}
        assert not bodies & {
            "unrelated chatter",
            "@pb in the other workspace",
            "@pb is not in this conversation",
        }
        assert "I will refactor the parser" not in bodies  # never its own posts
        since_goal = last
        await eventually(lambda: w.board.ctx.hub.waiting == 0, "the closed stream let go")

    # From an old cursor the backlog comes first: the long-poll's answer, line by line.
    stream = await w.bot.wake_stream(since=since, watch=["ops"], goal=goal["id"], limit=100)
    backlog = await _until(aiter(stream), since_goal)
    stream.close()
    polled = await w.bot.wake(since=since, watch=["ops"], goal=goal["id"], limit=100)
    assert [line["message"] for line in backlog] == polled["messages"]


async def test_a_reconnect_from_the_last_cursor_loses_and_repeats_nothing(world: World) -> None:
    w = world
    since = await _cursor(w.bot)
    seen: list[int] = []
    cursor = since
    for round_ in range(3):
        stream = await w.bot.wake_stream(since=cursor, watch=["ops"])
        lines = aiter(stream)
        await held(w.board)
        posted = [(await w.peer.post(f"ops {round_}.{i}", channel="ops"))["id"] for i in range(3)]
        got = await _until(lines, posted[0])  # hang up after the first; two more are sent meanwhile
        stream.close()
        seen += [line["message"]["id"] for line in got]
        cursor = got[-1]["cursor"]
        await w.peer.post(f"ops {round_} while away", channel="ops")
    stream = await w.bot.wake_stream(since=cursor, watch=["ops"])
    tail = await _until(aiter(stream), (await w.bot.wake(since=since, watch=["ops"], limit=100))["cursor"])
    stream.close()
    seen += [line["message"]["id"] for line in tail]
    polled = await w.bot.wake(since=since, watch=["ops"], limit=100)
    assert seen == [m["id"] for m in polled["messages"]] and len(seen) == 12


async def test_a_backlog_past_the_limit_ends_the_stream_with_its_cursor(world: World) -> None:
    w = world
    since = await _cursor(w.bot)
    ids = [(await w.human.post(f"@pb {i}", channel="lobby", workspace="proj"))["id"] for i in range(3)]
    async with await w.bot.wake_stream(since=since, limit=2) as stream:
        lines = [line async for line in stream]
    assert [line.get("message", {}).get("id") for line in lines[:2]] == ids[:2]
    assert lines[2] == {"cursor": ids[1], "end": "more"} and len(lines) == 3


async def test_a_quiet_stream_beats_and_a_stopping_board_ends_it(tmp_path: Path) -> None:
    board = await start_board(tmp_path)
    try:
        human = await board.human("alice")
        await human.create_workspace("proj", "Project")
        bot = await board.bot("pb", "proj")
        daemon = BoardClient(board.url, bot.token)  # outlives the board's own clients
        stream = await daemon.wake_stream(since=await _cursor(bot), beat=1)
        lines = aiter(stream)
        beat = await asyncio.wait_for(anext(lines), WITHIN)
        assert beat["beat"] is True and isinstance(beat["cursor"], int)
        posted = await human.post("@pb last words", channel="lobby", workspace="proj")
        assert (await _until(lines, posted["id"]))[-1]["cursor"] == posted["id"]
        rest = asyncio.ensure_future(_rest(lines))
    finally:
        await stop_board(board)
    assert (await asyncio.wait_for(rest, WITHIN))[-1] == {"cursor": posted["id"], "end": "shutdown"}
    await daemon.close()


async def _rest(lines: AsyncIterator[dict[str, Any]]) -> list[dict[str, Any]]:
    return [line async for line in lines]


async def test_a_token_holds_at_most_max_waits_streams(world: World) -> None:
    w = world
    cap = w.board.ctx.settings.max_waits
    since = await _cursor(w.bot)
    streams = [await w.bot.wake_stream(since=since) for _ in range(cap)]
    try:
        with pytest.raises(BoardAPIError) as refusal:
            await w.bot.wake_stream(since=since)
        assert (refusal.value.status, refusal.value.code, refusal.value.retryable) == (
            429,
            "RATE_LIMITED",
            True,
        )
        with pytest.raises(BoardAPIError) as poll:  # a long-poll may not release a stream either
            await w.bot.wake(since=since, wait=5)
        assert poll.value.code == "RATE_LIMITED"
        other = await w.peer.wake_stream(since=since)  # another token keeps its own
        other.close()
        streams.pop().close()
        await held(w.board, cap - 1)  # the bot's, the other token's one gone too
        streams.append(await w.bot.wake_stream(since=since))
        mention = await w.human.post("@pb all of them hear it", channel="lobby", workspace="proj")
        for stream in streams:
            assert (await _until(aiter(stream), mention["id"]))[-1]["message"]["body"] == mention["body"]
    finally:
        for stream in streams:
            stream.close()


async def test_a_reader_that_falls_behind_is_cut_and_resumes_from_its_cursor(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The access log says the board cut the stream: it used to read as a client that left."""
    caplog.set_level(logging.INFO, logger="board.access")
    board = await start_board(tmp_path, stream_buffer=5, write_rate=1000.0, write_burst=10_000)
    try:
        human = await board.human("alice")
        await human.create_workspace("proj", "Project")
        bot = await board.bot("pb", "proj")
        token = bot.token
        since = await _cursor(bot)
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a reader that reads nothing
        sock.connect(("127.0.0.1", board.port))
        sock.sendall(
            f"GET /api/wake/stream?since={since}&watch=ops HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {token}\r\n\r\n".encode()
        )
        await held(board)
        big = "x" * 15_000
        posted: list[int] = []
        while board.ctx.hub.waiting:  # the board cuts it once five events wait behind a full socket
            posted.append((await human.post(f"{len(posted)} {big}", channel="ops", workspace="proj"))["id"])
            assert len(posted) < 2000
        sock.setblocking(False)
        loop = asyncio.get_running_loop()
        received = b""
        while chunk := await asyncio.wait_for(loop.sock_recv(sock, 1 << 20), WITHIN):
            received += chunk
        sock.close()
        body = received.split(b"\r\n\r\n", 1)[1]
        whole = [json.loads(raw) for raw in body.split(b"\n")[:-1] if raw.startswith(b"{")]
        cursor = whole[-1]["cursor"] if whole else since
        assert cursor < posted[-1]  # it was cut before the end
        [cut] = [r for r in caplog.records if getattr(r, "route", "") == "/api/wake/stream"]
        assert getattr(cut, "cut", None) is True and getattr(cut, "gone", None) is True
        assert cut.getMessage() == "GET /api/wake/stream 200 (cut: the reader fell behind)"
        async with await bot.wake_stream(since=cursor, watch=["ops"], limit=500) as stream:
            rest = await _until(aiter(stream), posted[-1])
        assert [line["message"]["id"] for line in rest] == [i for i in posted if i > cursor]
    finally:
        await stop_board(board)


async def test_what_a_stream_is_refused_for(world: World) -> None:
    w = world
    for client, code in ((w.human, "FORBIDDEN"), (w.anon, "UNAUTHENTICATED")):
        with pytest.raises(BoardAPIError) as refusal:
            await client.wake_stream(since=0)
        assert refusal.value.code == code
    with pytest.raises(BoardAPIError) as refusal:
        await w.bot.wake_stream(since=0, beat=0)
    assert refusal.value.code == "INVALID_ARGUMENT"
    other = await w.other.post("in the other workspace", channel="ops")
    with pytest.raises(BoardAPIError) as refusal:
        await w.bot.wake_stream(since=0, goal=other["id"])
    assert refusal.value.code == "NOT_FOUND"
    assert w.board.ctx.hub.waiting == 0


async def test_a_revoked_rotated_or_moved_token_ends_its_stream_at_once(world: World) -> None:
    """A stream is its token's: once the token is revoked or rotated, or its bot moved to another
    workspace, nothing more is sent on it, and it ends with ``end: revoked`` at once, however long
    its beat. It used to end only when something woke it: a post, or its beat."""
    w = world
    for change in ("revoke", "rotate", "move"):
        bot = await w.board.bot(f"gone-{change}", "proj")
        stream = await bot.wake_stream(since=await _cursor(bot), beat=60)
        lines = aiter(stream)
        await held(w.board)
        seen = await w.human.post(f"@gone-{change} before", channel="lobby", workspace="proj")
        assert (await _until(lines, seen["id"]))[-1]["cursor"] == seen["id"]
        if change == "revoke":
            await w.human.revoke_token(f"gone-{change}")
        elif change == "rotate":
            await bot.rotate()
        else:
            await w.human.set_bots("other", ["ob", f"gone-{change}"])
        rest = await asyncio.wait_for(_rest(lines), WITHIN)
        assert rest == [{"cursor": seen["id"], "end": "revoked"}], change
        stream.close()


async def test_a_post_to_many_streams_asks_no_token_and_an_untold_revocation_ends_at_a_reset_or_beat(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each stream's token used to be asked again before every line, from the token cache: once
    the cached entries had expired, one post to a channel a thousand daemons
    watch read the database a thousand times before its first line went out (264 ms against
    45 for the posts after it, in `bench wake`). A stream now asks when a change may have come:
    its reach key's signal (every revocation, rotation and move: the test above), the token cache
    starting again after a change that went untold (a lost PostgreSQL notification), and its beat."""
    w = world
    monkeypatch.setattr(tokencache, "TTL_SECONDS", (-1.0, -1.0))  # every entry has expired once put
    asked: list[str] = []
    real = identity_store.principal_by_token

    async def counted(conn: Connection, token_hash: str) -> Any:
        asked.append(token_hash)
        return await real(conn, token_hash)

    monkeypatch.setattr(identity_store, "principal_by_token", counted)
    bots = [await w.board.bot(f"watcher{i}", "proj") for i in range(6)]
    since = await _cursor(w.bot)
    streams = [await bot.wake_stream(since=since, watch=["ops"], beat=60) for bot in bots]
    lines = [aiter(stream) for stream in streams]
    await held(w.board, len(streams))
    for body in ("disk at 70%", "disk at 80%"):
        asked.clear()  # after the first post: by then every stream has asked once, as it opened
        posted = await w.peer.post(body, channel="ops")
        for each in lines:
            assert (await _until(each, posted["id"]))[-1]["cursor"] == posted["id"]
    assert len(asked) == 1  # the poster's own request; none of the six streams'

    async def revoke_untold(handle: str) -> None:
        sql = "UPDATE tokens SET revoked_at = ? WHERE agent_id = (SELECT id FROM agents WHERE handle = ?)"
        await w.board.ctx.db.write(lambda conn: conn.execute(sql, (w.board.ctx.now(), handle)))

    await revoke_untold("watcher0")
    await revoke_untold("watcher1")
    w.board.ctx.tokens.drop_all()  # what the board does when it may have missed a change
    after = await w.peer.post("disk at 90%", channel="ops")
    for each in lines[:2]:
        assert await asyncio.wait_for(_rest(each), WITHIN) == [{"cursor": posted["id"], "end": "revoked"}]
    for each in lines[2:]:
        assert (await _until(each, after["id"]))[-1]["cursor"] == after["id"]

    beating = await bots[2].wake_stream(since=after["id"], watch=["ops"], beat=1)
    beats = aiter(beating)
    assert (await asyncio.wait_for(anext(beats), WITHIN))["beat"] is True  # it asked as it opened
    await revoke_untold("watcher2")
    ended = await asyncio.wait_for(_rest(beats), WITHIN)
    assert ended == [{"cursor": after["id"], "end": "revoked"}]

    # A stream busy enough never to beat asks within ASK_WITHIN (here a second) of its last ask.
    monkeypatch.setattr(wakestream, "ASK_WITHIN", (1.0, 1.0))
    busy = await bots[3].wake_stream(since=after["id"], watch=["ops"], beat=60)
    busy_lines = aiter(busy)
    first = await w.peer.post("disk at 95%", channel="ops")
    assert (await _until(busy_lines, first["id"]))[-1]["cursor"] == first["id"]  # it asked as it opened
    reading = asyncio.ensure_future(_rest(busy_lines))
    await revoke_untold("watcher3")
    for n in range(100):
        if reading.done():
            break
        await w.peer.post(f"disk at {n}%", channel="ops")
        await asyncio.sleep(0.1)
    *sent, last = await asyncio.wait_for(reading, WITHIN)  # long before its beat of 60 s
    assert all("message" in line for line in sent) and last["end"] == "revoked", last
    for stream in (*streams, beating, busy):
        stream.close()


async def test_a_profiles_new_watch_ends_its_bots_streams_and_reaches_them_reopened(world: World) -> None:
    """A stream watched what its bot's profile gave when it opened, for as long as it stayed
    open: a channel added to the profile's watch never woke the bot. The change now ends the
    stream (``rescoped``), and opened again at its cursor it carries the new watch. A save that
    leaves the watch and goal as they were (the page sends every field) ends nothing."""
    w = world
    bot = await w.board.bot("profiled", "proj")
    await w.human.create_profile("watcher", "proj", "claude", bots=["profiled"])
    since = await _cursor(bot)
    stream = await bot.wake_stream(since=since, beat=60)
    lines = aiter(stream)
    await held(w.board)
    before = await w.peer.post("disk at 80%, not watched yet", channel="ops")
    await w.human.update_profile("watcher", identity="a calmer bot", watch=[], bots=["profiled"])
    still = await w.human.post("@profiled still there?", channel="lobby", workspace="proj")
    assert [line["message"]["id"] for line in await _until(lines, still["id"])] == [still["id"]]
    await w.human.update_profile("watcher", watch=["ops"])
    assert await asyncio.wait_for(_rest(lines), WITHIN) == [{"cursor": still["id"], "end": "rescoped"}]
    stream.close()
    async with await bot.wake_stream(since=since, beat=60) as again:
        first = await _until(aiter(again), still["id"])
    assert [(m["message"]["id"], m["message"]["watched"]) for m in first] == [
        (before["id"], True),
        (still["id"], False),
    ]
    # Its own watch, given by the daemon, wins over the profile's, as before.
    async with await bot.wake_stream(since=still["id"], watch=["random"], beat=60) as own:
        await held(w.board)
        mine = await w.peer.post("chatter", channel="random")
        assert [m["message"]["id"] for m in await _until(aiter(own), mine["id"])] == [mine["id"]]


async def test_a_change_committed_while_a_stream_opens_ends_it_at_once(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A profile's change that committed after the stream read its scope, and before it held its
    place in the hub, reached no stream: this one would have watched the old list for days."""
    w = world
    bot = await w.board.bot("opening", "proj")

    async def changed_meanwhile(ctx: Context, p: Principal, *args: Any, **kwargs: Any) -> Any:
        scope = await wake_scope(ctx, p, *args, **kwargs)
        ctx.tokens.forget_agent(p.agent_id)  # as a profile's save does once it commits
        return scope

    since = await _cursor(bot)
    for n in range(3):  # a backlog past the stream's limit, read in the old scope
        await w.human.post(f"@opening number {n}", channel="lobby", workspace="proj")
    monkeypatch.setattr(wakestream, "wake_scope", changed_meanwhile)
    async with await bot.wake_stream(since=since, limit=1, beat=60) as stream:
        assert await asyncio.wait_for(_rest(aiter(stream)), WITHIN) == [{"cursor": since, "end": "rescoped"}]


async def test_a_profiles_new_bots_end_the_streams_of_those_taken_in_or_let_go_only(world: World) -> None:
    """A new list of bots changes the feed of the bots it takes in or lets go, not of those it
    keeps: only theirs end."""
    w = world
    bots = {handle: await w.board.bot(handle, "proj") for handle in ("kept", "dropped", "joining")}
    await w.human.create_profile("crew", "proj", "claude", watch=["ops"], bots=["kept", "dropped"])
    streams = {h: await bot.wake_stream(since=await _cursor(bot), beat=60) for h, bot in bots.items()}
    await held(w.board, 3)
    await w.human.update_profile("crew", bots=["kept", "joining"])
    for handle in ("dropped", "joining"):
        assert (await asyncio.wait_for(anext(aiter(streams[handle])), WITHIN))["end"] == "rescoped"
    note = await w.peer.post("ops: still watched by the one kept", channel="ops")
    line = await asyncio.wait_for(anext(aiter(streams["kept"])), WITHIN)
    assert line["message"]["id"] == note["id"] and line["message"]["watched"] is True
    for stream in streams.values():
        stream.close()
    # Moved to another workspace, a bot is no longer the profile's (its link stays behind): a
    # change of the profile's watch there ends its stream no more.
    await w.human.set_bots("other", ["ob", "kept"])
    kept = bots["kept"]
    async with await kept.wake_stream(since=await _cursor(kept), beat=60) as moved:
        await held(w.board)
        await w.human.update_profile("crew", watch=["random"])
        there = await w.human.post("@kept welcome", channel="lobby", workspace="other")
        assert (await asyncio.wait_for(anext(aiter(moved)), WITHIN))["message"]["id"] == there["id"]


async def test_a_wake_that_reaches_the_budget_holds_the_stream_until_the_lift(world: World) -> None:
    w = world
    await w.human.set_budget("pb", budget_wakes=1)
    since = await _cursor(w.bot)
    first = await w.human.post("@pb first", channel="lobby", workspace="proj")
    stream = await w.bot.wake_stream(since=since)
    lines = aiter(stream)
    assert (await _until(lines, first["id"]))[-1]["cursor"] == first["id"]
    await w.bot.record_wake(
        harness="claude",
        started_at=datetime.now(UTC).strftime(STAMP),
        outcome="ok",
        trigger_ids=[first["id"]],
    )
    hold = await asyncio.wait_for(anext(lines), WITHIN)  # the record itself holds the stream, at once
    assert hold["cursor"] == first["id"] and hold["held"]["measure"] == "wakes"
    second = await w.human.post("@pb second, while held", channel="lobby", workspace="proj")
    await w.human.set_budget("pb", lift=True)
    assert await asyncio.wait_for(anext(lines), WITHIN) == {"cursor": first["id"], "end": "lifted"}
    stream.close()
    async with await w.bot.wake_stream(since=first["id"]) as again:
        assert [line["message"]["id"] for line in await _until(aiter(again), second["id"])] == [second["id"]]


async def test_a_stream_beats_while_events_it_does_not_send_keep_coming(world: World) -> None:
    """A channel not created yet is heard on the workspace's key: every post there reaches the
    stream's waiter and none is for it, yet the heartbeat keeps its pace."""
    w = world
    async with await w.bot.wake_stream(since=await _cursor(w.bot), watch=["fresh"], beat=1) as stream:
        lines = aiter(stream)
        await held(w.board)
        chatter = asyncio.ensure_future(_chatter(w))
        try:
            got = [await asyncio.wait_for(anext(lines), WITHIN) for _ in range(2)]
        finally:
            chatter.cancel()
            await asyncio.gather(chatter, return_exceptions=True)
    assert [line.get("beat") for line in got] == [True, True]


async def _chatter(w: World) -> None:
    for n in range(1000):
        await w.peer.post(f"chatter {n}", channel="random")
        await asyncio.sleep(0.2)
