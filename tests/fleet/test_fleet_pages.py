"""/fleet and /fleet/bots/{handle} in every state a bot and its machine can be in, profiles or none.

A bot assigned a moment ago has no report yet, a machine may be offline, a bot
crashed, stopped or misconfigured, and a report may hold values of the wrong
type (an older keeper, a damaged row): each page answers 200 and shows what
it knows, "unknown" for the rest.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import aiohttp
import pytest

from board.server.clock import ManualClock
from board.server.hub import Signal, Waiter
from board.server.pages import fleet as fleet_page
from board.server.services import fleet
from board.server.store.connection import Connection
from tests.support.boardtest import World
from tests.support.fleettest import keeper_with_bots
from tests.support.pages_support import pages_as, sign_in


def reported(handle: str, state: str, **extra: Any) -> dict[str, Any]:
    return {"handle": handle, "state": state, "restarts": 1, **extra}


async def pages_answer(world: World, handles: list[str]) -> str:
    """/fleet and each bot's page answer 200; the fleet page's text."""
    (status, fleet), *bots = await pages_as(
        world.board, "alice", "/fleet", *(f"/fleet/bots/{h}" for h in handles)
    )
    assert status == 200, fleet
    for handle, (status, text) in zip(handles, bots, strict=True):
        assert f'id="bot-{handle}"' in fleet
        assert status == 200, (handle, text)
    return fleet


async def test_the_fleet_pages_render_every_state_of_a_bot(clocked_world: World, clock: ManualClock) -> None:
    world = clocked_world
    box1 = await keeper_with_bots(world, "box1", "run1", "crash1", "stop1", "mis1")
    box2 = await keeper_with_bots(world, "box2", "away1")
    await keeper_with_bots(world, "box3", "fresh1")
    await box2.client.fleet_report({"interval": 10, "bots": [reported("away1", "running", pid=77)]})
    clock.advance(40)  # box2 is offline from now on
    await box1.client.fleet_report(
        {
            "interval": 10,
            "machine": {"hostname": "box1.local", "cpus": 2, "load": [0.1, 0.2, 0.3]},
            "bots": [
                reported("run1", "running", pid=4242, rss=3 * 1048576, cpu_percent=0.5),
                reported("crash1", "crashed", last_exit_code=1, error="Traceback\nValueError: boom"),
                reported("stop1", "stopped", last_exit_code=0),
                reported(
                    "mis1",
                    "misconfigured",
                    last_exit_code=2,
                    error="starting\nbot: repo /nowhere/at/all is not a directory",
                ),
            ],
        }
    )
    fleet = await pages_answer(world, ["run1", "crash1", "stop1", "mis1", "away1", "fresh1"])
    assert 'data-status="stale"' in fleet and 'data-status="never"' in fleet
    assert "not reported yet" in fleet  # fresh1: assigned, its keeper never spoke
    assert "bot: repo /nowhere/at/all is not a directory" in fleet  # why mis1 does not run, in one line
    assert "ValueError: boom" in fleet
    assert "pid 4242, 0.5 % CPU, 3 MB" in fleet


async def test_odd_values_in_a_stored_report_show_as_unknown(world: World) -> None:
    await keeper_with_bots(world, "box1", "odd1")
    odd_bot = {
        "pid": 12,
        "rss": "lots",
        "cpu_percent": None,
        "restarts": "two",
        "harness": {"pid": 13, "rss": [1]},
        "last_wake": {"at": "yesterday", "duration_s": "long", "trigger_ids": "7"},
        "log_tail": "not a list",
        "error": 5,
    }
    odd_machine = {"cpus": "many", "load": "high", "memory": 7, "disk": {"percent": "full"}}

    async def damage(conn: Connection) -> None:
        await conn.execute("UPDATE fleet_bots SET status = ?, state = ?", (json.dumps(odd_bot), "running"))
        await conn.execute(
            "UPDATE machines SET report = ?, last_report_at = ?",
            (json.dumps(odd_machine), world.board.ctx.now()),
        )

    await world.board.ctx.db.write(damage)
    fleet = await pages_answer(world, ["odd1"])
    assert "pid 12, unknown % CPU, unknown; harness unknown %, unknown" in fleet
    assert "unknown CPUs · load unknown · memory unknown % · disk unknown %" in fleet
    bot = (await world.human.fleet())["machines"][0]["bots"][0]
    assert (bot["rss"], bot["restarts"], bot["log_tail"], bot["error"]) == (None, None, [], None)
    assert bot["last_wake"] == {
        "at": None,
        "duration_s": None,
        "cost_usd": None,
        "outcome": None,
        "trigger_ids": [],
    }


async def test_fleet_without_a_profile_says_how_to_make_one(world: World) -> None:
    b = await sign_in(world.board, "alice")
    try:
        status, fleet = await b.get("/fleet")
        assert status == 200
        assert 'No profiles yet: <a href="/fleet/profiles">make one</a>' in fleet
        assert 'name="profile"' not in fleet  # no empty select to choose from
        await world.human.create_profile("proj-dev", "proj", "claude")
        await world.human.create_profile("proj-ops", "proj", "codex")
        status, fleet = await b.get("/fleet?profile=proj-ops")  # "Add a bot with it" on proj-ops
        assert status == 200 and "No profiles yet" not in fleet
        assert '<a href="/fleet/profiles" id="profiles-link">Profiles</a>' in fleet
        assert '<option value="proj-ops" selected>proj-ops (proj, codex)</option>' in fleet
        assert '<option value="proj-dev">proj-dev (proj, claude)</option>' in fleet
    finally:
        await b.close()


async def _fleet_events(resp: aiohttp.ClientResponse, n: int) -> list[tuple[str, str]]:
    """The next n events of a fleet stream: (event, data)."""
    found: list[tuple[str, str]] = []
    event = ""
    while len(found) < n:
        line = (await resp.content.readline()).decode()
        assert line, f"the stream ended after {found}"
        if line.startswith("event: "):
            event = line[7:].strip()
        elif line.startswith("data: "):
            found.append((event, line[6:].strip()))
    return found


async def test_the_live_cards_wait_for_a_change_not_a_clock(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A quiet fleet renders nothing; a report, an assignment or an order is sent at once."""
    monkeypatch.setattr(fleet_page, "LIVE_BEAT", 3600.0)
    renders = []
    cards = fleet_page._cards

    def counted(*args: Any) -> dict[str, str]:
        renders.append(1)
        return cards(*args)

    monkeypatch.setattr(fleet_page, "_cards", counted)
    parked: asyncio.Queue[float] = asyncio.Queue()  # the beat of each wait of a fleet stream
    hold = Waiter.wait

    async def wait(waiter: Waiter, timeout: float) -> bool:
        if fleet.CHANGES in waiter.keys:
            parked.put_nowait(timeout)
        return await hold(waiter, timeout)

    monkeypatch.setattr(Waiter, "wait", wait)
    box1 = await keeper_with_bots(world, "box1")
    alice = await sign_in(world.board)
    resp = await alice.http.get(alice.url + "/fleet/events")
    [(event, _)] = await asyncio.wait_for(_fleet_events(resp, 1), 10)
    assert event == "fleet" and len(renders) == 1
    # A quiet fleet: no render at all (it was one a second per tab). The stream, having rendered
    # once, is parked on the fleet's changes for the whole beat: nothing but a change wakes it.
    beats = await asyncio.wait_for(parked.get(), 10)
    assert beats == fleet_page.LIVE_BEAT and parked.empty()
    assert len(renders) == 1
    await world.human.assign_bot("box1", "proj-dev", "run1")
    [(event, data)] = await asyncio.wait_for(_fleet_events(resp, 1), 5)
    assert event == "fleet" and 'id="bot-run1"' in json.loads(data)["html"]
    assert len(renders) == 2  # the change's render, and none while the fleet was quiet
    await box1.client.fleet_report({"interval": 10, "bots": [reported("run1", "running", pid=4242)]})
    [(event, data)] = await asyncio.wait_for(_fleet_events(resp, 1), 5)
    assert "pid 4242" in json.loads(data)["html"]
    await world.human.fleet_order("run1", "stop")
    [(event, data)] = await asyncio.wait_for(_fleet_events(resp, 1), 5)
    assert event == "fleet" and "stop" in json.loads(data)["html"]
    assert len(renders) == 4
    resp.close()
    await alice.close()


async def test_fleet_streams_count_toward_the_cap_with_the_other_streams(world: World) -> None:
    alice = await sign_in(world.board)
    cap = world.board.ctx.hub.max_held
    oldest = await alice.http.get(alice.url + "/fleet/events")
    assert await asyncio.wait_for(_fleet_events(oldest, 1), 10)  # its first cards
    others = [await alice.http.get(alice.url + "/events?workspace=proj") for _ in range(cap - 1)]
    newest = await alice.http.get(alice.url + "/fleet/events")
    assert (await asyncio.wait_for(_fleet_events(oldest, 1), 10)) == [("released", "{}")]
    for resp in [oldest, *others, newest]:
        resp.close()
    await alice.close()


async def test_signing_out_ends_the_fleet_stream_at_once(world: World) -> None:
    alice = await sign_in(world.board)
    resp = await alice.http.get(alice.url + "/fleet/events")
    assert await asyncio.wait_for(_fleet_events(resp, 1), 10)
    status, _ = await alice.post("/logout", {})
    assert status == 303
    assert (await asyncio.wait_for(_fleet_events(resp, 1), 5)) == [("signed-out", "{}")]
    assert world.board.ctx.hub.waiting == 0
    await alice.close()


async def test_a_bots_page_lists_its_latest_wakes_newest_first(world: World) -> None:
    """Its recent wakes are its last ones: the page asked for the first 20 ever, so a bot that had
    woken more than that showed wakes from its first hour and never today's."""
    await keeper_with_bots(world, "box1", "pb")
    posted = [
        (await world.human.post(f"@pb job {n}", channel="lobby", workspace="proj"))["id"] for n in range(25)
    ]
    for n, message in enumerate(posted):
        started = f"2026-12-01T00:{n:02d}:00Z"
        await world.bot.record_wake(harness="claude", started_at=started, trigger_ids=[message], outcome="ok")
    [(status, text)] = await pages_as(world.board, "alice", "/fleet/bots/pb")
    assert status == 200, text
    table = re.search(r'<table id="wakes">.*?</table>', text, re.S)
    assert table is not None
    listed = [int(i) for i in re.findall(r'<a href="/t/(\d+)">', table.group(0))]
    assert listed == posted[::-1][: fleet_page.RECENT_WAKES]


async def test_a_bots_page_words_its_wakes_outcomes_as_its_card_does(world: World) -> None:
    """The card said "timed out" where the bot's page, one click on, said "timeout"."""
    await keeper_with_bots(world, "box1", "pb")
    for outcome in ("ok", "failed", "timeout", "error"):
        await world.bot.record_wake(harness="claude", started_at="2026-12-01T00:00:00Z", outcome=outcome)
    [(status, text)] = await pages_as(world.board, "alice", "/fleet/bots/pb")
    assert status == 200, text
    rows = re.findall(r"<tr><td>.*?</td><td>.*?</td><td>([^<]*)</td>", text)
    assert rows == ["the harness did not start", "timed out", "failed", "ok"]


async def test_a_fleet_stream_that_fails_once_begun_is_cut_with_no_error_page_in_it(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its cards fail to render after the stream's first event (the database stopped answering):
    the connection is cut, which the page's event source takes as a break and opens again. The
    error page written into the open stream read as more of it, and the connection stayed."""
    real = fleet.fleet
    calls = 0

    async def failing_after_the_first(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls > 1:
            raise RuntimeError("the cards failed to render")
        return await real(*args, **kwargs)

    monkeypatch.setattr(fleet, "fleet", failing_after_the_first)
    alice = await sign_in(world.board)
    cookies = "; ".join(f"{cookie.key}={cookie.value}" for cookie in alice.http.cookie_jar)
    reader, writer = await asyncio.open_connection("127.0.0.1", world.board.port)
    try:
        writer.write(f"GET /fleet/events HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: {cookies}\r\n\r\n".encode())
        await writer.drain()
        received = await reader.readuntil(b"event: fleet")
        world.board.ctx.hub.publish(Signal(fleet.CHANGES, 1))
        async with asyncio.timeout(10):  # the board cuts it: the read ends
            received += await reader.read()
    finally:
        writer.close()
        await alice.close()
    assert calls == 2
    assert received.startswith(b"HTTP/1.1 200") and received.count(b"HTTP/1.1") == 1
    assert b"UNAVAILABLE" not in received and b"<html" not in received.lower()
