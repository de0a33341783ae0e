"""The live stream: one per tab, from the hub, resumable, and only what the viewer may read."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from board.server.clock import ManualClock
from board.server.hub import Event
from board.server.services import auth, live, posting, sessions
from tests.support.boardtest import World, db_rows, held, start_board, stop_board
from tests.support.pages_support import Browser, sign_in


async def _events(resp: aiohttp.ClientResponse, count: int, kind: str | None = None) -> list[dict[str, Any]]:
    """Read ``count`` events (each with its id line) off an open stream: of ``kind``, or any
    but the inbox's (tested in tests/pages/test_inbox_live.py)."""
    found: list[dict[str, Any]] = []
    event: dict[str, Any] = {}
    while len(found) < count:
        line = (await resp.content.readline()).decode().rstrip("\n")
        if line.startswith("id: "):
            event["id"] = int(line[4:])
        elif line.startswith("event: "):
            event["event"] = line[7:]
        elif line.startswith("data: "):
            event["data"] = json.loads(line[6:])
        elif line == "" and event:
            if event.get("event") == kind or (kind is None and event.get("event") != "inbox"):
                found.append(event)
            event = {}
    return found


async def _open(alice: Browser, query: str, **headers: str) -> aiohttp.ClientResponse:
    """An open stream, past its first lines: the comment and the viewer's inbox count."""
    resp = await alice.http.get(alice.url + "/events?" + query, headers=headers)
    assert resp.status == 200 and resp.content_type == "text/event-stream"
    assert (await resp.content.readline()) == b": open\n"
    assert (await resp.content.readline()) == b"\n"
    assert (await resp.content.readline()) == b"event: inbox\n"
    assert (await resp.content.readline()).startswith(b"data: {")
    assert (await resp.content.readline()) == b"\n"
    return resp


async def test_a_tab_gets_its_workspace_live_and_nothing_else(world: World) -> None:
    alice = await sign_in(world.board)
    resp = await _open(alice, "workspace=proj")
    await world.other.post("in another workspace", channel="lobby")
    posted = await world.bot.post("hello <b>human</b>", channel="lobby")
    [event] = await asyncio.wait_for(_events(resp, 1), 10)
    assert event["id"] == posted["id"] and event["event"] == "message"
    assert event["data"]["message"]["body"] == "hello <b>human</b>"
    assert "&lt;b&gt;human&lt;/b&gt;" in event["data"]["html"]  # rendered inert, like the page
    resp.close()
    await alice.close()


async def test_a_message_published_while_a_stream_opens_is_told(world: World) -> None:
    """A stream with no cursor starts where the hub stood when it subscribed: a post between that
    and the stream's first read (its inbox count) is not taken for history."""
    alice = await auth.human_principal(world.board.ctx, "alice")
    await world.board.ctx.db.published()  # what was written before is history
    feed = await live.open_feed(world.board.ctx, alice, "proj", None)
    try:
        posted = await world.bot.post("while the tab opens", channel="lobby")
        first = await asyncio.wait_for(anext(feed.batches()), 5)
        assert [e.id for e in first if isinstance(e, Event)] == [posted["id"]]
    finally:
        feed.close()


async def test_a_stream_resumes_after_its_last_event_id(world: World) -> None:
    first = await world.bot.post("one", channel="lobby")
    missed = [await world.bot.post(f"missed {i}", channel="lobby") for i in range(3)]
    await world.other.post("not for this stream", channel="lobby")
    alice = await sign_in(world.board)
    resp = await _open(alice, "workspace=proj", **{"Last-Event-ID": str(first["id"])})
    events = await asyncio.wait_for(_events(resp, 3), 10)
    assert [e["id"] for e in events] == [m["id"] for m in missed]
    later = await world.bot.post("later", channel="lobby")
    [event] = await asyncio.wait_for(_events(resp, 1), 10)
    assert event["id"] == later["id"]
    resp.close()
    await alice.close()


async def test_a_stream_too_far_behind_asks_for_a_reload(world: World) -> None:
    ctx = world.board.ctx
    bot = await auth.authenticate(ctx, world.bot.token)
    for i in range(live.CATCH_UP + 1):  # past the write limit of one token: straight to the service
        await posting.post(ctx, bot, posting.PostMessage(body=f"m{i}", channel="lobby"))
    alice = await sign_in(world.board)
    resp = await _open(alice, "workspace=proj&since=0")
    [event] = await asyncio.wait_for(_events(resp, 1), 10)
    assert event["event"] == "reset"
    resp.close()
    await alice.close()


async def test_a_stream_costs_no_query_per_event(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Five open tabs cost a post no more reads than none: events come from the hub."""
    db = world.board.ctx.db
    reads = {"n": 0}
    real_read = db.read

    async def counted(fn: Any) -> Any:
        reads["n"] += 1
        return await real_read(fn)

    monkeypatch.setattr(db, "read", counted)
    await world.bot.post("warm up", channel="lobby")
    reads["n"] = 0
    await world.bot.post("with no tab open", channel="lobby")
    alone = reads["n"]
    tabs = [await sign_in(world.board) for _ in range(5)]
    streams = [await _open(tab, "workspace=proj") for tab in tabs]
    reads["n"] = 0
    posted = await world.bot.post("to every tab", channel="lobby")
    for resp in streams:
        [event] = await asyncio.wait_for(_events(resp, 1), 10)
        assert event["id"] == posted["id"]
    assert reads["n"] == alone
    for resp, tab in zip(streams, tabs, strict=True):
        resp.close()
        await tab.close()


async def test_no_stream_without_a_session(world: World) -> None:
    alice = await sign_in(world.board)
    cookie = alice.cookie()
    await alice.post("/logout", {})
    for headers, cookies in (
        ({"Authorization": f"Bearer {world.bot.token}"}, {}),
        ({"Authorization": f"Bearer {world.human.token}"}, {}),
        ({}, {sessions.COOKIE: cookie}),
        ({}, {}),
    ):
        async with (
            aiohttp.ClientSession(cookies=cookies) as http,
            http.get(
                world.board.url + "/events?workspace=proj", headers=headers, allow_redirects=False
            ) as resp,
        ):
            assert resp.status == 303 and resp.headers["Location"].startswith("/login")
    assert world.board.ctx.hub.waiting == 0
    await alice.close()


async def test_a_quiet_stream_beats_and_still_delivers(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """A beat keeps a quiet stream open, and the same waiter still delivers after it."""
    monkeypatch.setattr(live, "HEARTBEAT_SECONDS", 0.05)
    alice = await sign_in(world.board)
    resp = await _open(alice, "workspace=proj")
    assert await asyncio.wait_for(resp.content.readline(), 10) == b": beat\n"
    assert world.board.ctx.hub.waiting == 1
    posted = await world.bot.post("after a beat", channel="lobby")
    [event] = await asyncio.wait_for(_events(resp, 1), 10)
    assert event["id"] == posted["id"]
    resp.close()
    await alice.close()


async def test_streams_share_the_long_poll_cap_and_the_oldest_stops(world: World) -> None:
    alice = await sign_in(world.board)
    cap = world.board.ctx.hub.max_held
    oldest = await _open(alice, "workspace=proj")
    others = [await _open(alice, "workspace=proj") for _ in range(cap)]
    [event] = await asyncio.wait_for(_events(oldest, 1), 10)
    assert event["event"] == "released"
    posted = await world.bot.post("to the tabs still open", channel="lobby")
    for resp in others:
        [event] = await asyncio.wait_for(_events(resp, 1), 10)
        assert event["id"] == posted["id"]
    for resp in [oldest, *others]:
        resp.close()
    await alice.close()


async def test_a_page_following_routines_hears_their_changes_and_others_do_not(world: World) -> None:
    """The routines' changes carry no data, and reach only a stream that asked for them."""
    alice = await sign_in(world.board)
    following = await _open(alice, "workspace=other&follow=routines")
    plain = await _open(alice, "workspace=other")
    fields = {"workspace": "proj", "schedule": "0 2 * * *", "bot": "pb", "prompt": "tidy up"}
    await world.bot.propose_routine("tidy", **fields)
    cursor = (await world.human.routines())["cursor"]
    [event] = await asyncio.wait_for(_events(following, 1), 10)
    assert event == {"event": "changed", "data": cursor}
    posted = await world.other.post("after the change", channel="lobby")
    [first] = await asyncio.wait_for(_events(plain, 1), 10)
    assert first["event"] == "message" and first["id"] == posted["id"]
    following.close()
    plain.close()
    await alice.close()


async def _ended(resp: aiohttp.ClientResponse) -> list[bytes]:
    """What a stream sends until it ends."""
    lines = []
    while line := await resp.content.readline():
        lines.append(line)
    return lines


async def test_signing_out_ends_the_sessions_streams_at_once(world: World) -> None:
    alice = await sign_in(world.board)
    resp = await _open(alice, "workspace=proj")
    other_tab = await _open(alice, "workspace=proj")
    status, _ = await alice.post("/logout", {})
    assert status == 303  # to /login
    for stream in (resp, other_tab):
        lines = await asyncio.wait_for(_ended(stream), 5)
        assert b"event: signed-out\n" in lines
    await world.bot.post("after the sign-out", channel="lobby")
    assert world.board.ctx.hub.waiting == 0
    await alice.close()


async def test_a_new_password_ends_the_humans_other_sessions_and_their_streams(world: World) -> None:
    """Whoever knew the old password may hold a session: only the one that changed it goes on."""
    here, elsewhere = await sign_in(world.board), await sign_in(world.board)
    stream_here = await _open(here, "workspace=proj")
    stream_elsewhere = await _open(elsewhere, "workspace=proj")
    status, page = await here.post("/settings/password", {"password": "correct horse battery"})
    assert status == 200 and "Password saved" in page
    lines = await asyncio.wait_for(_ended(stream_elsewhere), 5)
    assert b"event: signed-out\n" in lines
    status, location = await elsewhere.get("/settings")
    assert (status, location) == (303, "/login?next=%2Fsettings")
    status, _ = await here.get("/settings")
    assert status == 200
    posted = await world.bot.post("after the change", channel="lobby")
    [event] = await asyncio.wait_for(_events(stream_here, 1), 10)
    assert event["event"] == "message" and event["id"] == posted["id"]
    [(details,)] = db_rows(world.board.db_path, "SELECT details FROM audit WHERE action = 'password.set'")
    assert json.loads(details) == {"sessions_ended": 1}
    stream_here.close()
    await here.close()
    await elsewhere.close()


async def test_a_stream_ends_at_the_first_beat_after_its_session_expired(
    clocked_world: World, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "HEARTBEAT_SECONDS", 0.05)
    alice = await sign_in(clocked_world.board)
    resp = await _open(alice, "workspace=proj")
    assert await asyncio.wait_for(resp.content.readline(), 10) == b": beat\n"  # alive while the session is
    clock.advance(clocked_world.board.ctx.settings.session_ttl + 1)
    lines = await asyncio.wait_for(_ended(resp), 5)
    assert b"event: signed-out\n" in lines
    await alice.close()


@pytest.mark.parametrize("path", ["/events?workspace=proj", "/fleet/events"])
async def test_a_closed_tab_is_logged_as_a_client_gone_not_a_server_error(
    world: World, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    alice = await sign_in(world.board)
    caplog.set_level(logging.INFO)
    resp = await alice.http.get(alice.url + path)
    assert resp.status == 200 and (await resp.content.readline()) == b": open\n"
    resp.close()  # the tab goes away mid-stream
    route = path.split("?")[0]

    def logged() -> list[logging.LogRecord]:
        return [r for r in caplog.records if r.name == "board.access" and getattr(r, "route", "") == route]

    for _ in range(100):
        if logged():
            break
        await asyncio.sleep(0.05)
    [line] = logged()
    assert line.levelno == logging.INFO and getattr(line, "status", None) == 200, line.getMessage()
    assert getattr(line, "gone", False) is True and getattr(line, "cut", None) is False
    assert line.getMessage().endswith(" 200 (client went away)")
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info], caplog.text
    await alice.close()


async def test_a_tab_that_reads_nothing_is_cut_once_its_buffer_is_full(tmp_path: Path) -> None:
    """A tab whose socket is full (a frozen or throttled browser) holds the board's write of its
    stream: the events meant for it waited in its buffer without end, each with its rendered
    views. Past BOARD_STREAM_BUFFER of them the board drops the connection, as it drops a wake
    stream's; the browser's event source connects again and catches up (or reloads)."""
    board = await start_board(tmp_path, stream_buffer=5, write_rate=1000.0, write_burst=10_000)
    try:
        human = await board.human("alice")
        await human.create_workspace("proj", "Project")
        tab = await sign_in(board)
        cookies = "; ".join(f"{cookie.key}={cookie.value}" for cookie in tab.http.cookie_jar)
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a reader that reads nothing
        sock.connect(("127.0.0.1", board.port))
        sock.sendall(
            f"GET /events?workspace=proj HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: {cookies}\r\n\r\n".encode()
        )
        await held(board)
        big = "x" * 15_000
        posted = 0
        while board.ctx.hub.waiting:  # cut once five events wait behind its full socket
            await human.post(f"{posted} {big}", channel="lobby", workspace="proj")
            posted += 1
            assert posted < 2000, "the stream was never cut"
        sock.close()
        await tab.close()
    finally:
        await stop_board(board)
