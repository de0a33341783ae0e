"""What a bot's card says: its state in a word and a colour, an order on its way, presence
that agrees with the state, the last lines of its log, and charts of its last hours.

The states come from real keeper reports on a board with a hand-moved clock, so a
machine goes offline and a history spans hours in a test that takes seconds.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from markupsafe import escape

from board.server.clock import ManualClock, iso
from board.server.services import fleet_history
from tests.support.boardtest import World, db_rows
from tests.support.fleettest import BADGES, keeper_with_bots
from tests.support.pages_support import pages_as

MB = 1048576


def reported(handle: str, state: str, **extra: Any) -> dict[str, Any]:
    return {"handle": handle, "state": state, "restarts": 0, **extra}


async def fleet_page(world: World) -> str:
    [(status, text)] = await pages_as(world.board, "alice", "/fleet")
    assert status == 200, text
    return text


def card(page: str, handle: str) -> str:
    found = re.search(rf'<article class="bot [^"]*" id="bot-{handle}".*?</article>', page, re.S)
    assert found, f"no card for {handle}"
    return found.group(0)


def badge(page: str, handle: str) -> tuple[str, str]:
    """The (tone, word) of a bot's state badge on the page."""
    found = re.search(r'<span class="badge state tone-(\w+)[^"]*"[^>]*>([^<]+)</span>', card(page, handle))
    assert found, card(page, handle)
    return found.group(1), found.group(2)


async def bots(world: World) -> dict[str, dict[str, Any]]:
    return {b["handle"]: b for m in (await world.human.fleet())["machines"] for b in m["bots"]}


async def test_each_state_shows_in_a_word_and_a_colour(clocked_world: World, clock: ManualClock) -> None:
    world = clocked_world
    away = await keeper_with_bots(world, "box2", "away1")
    await away.client.fleet_report({"interval": 10, "bots": [reported("away1", "running", pid=7)]})
    clock.advance(40)  # box2 stops reporting: offline from now on
    box1 = await keeper_with_bots(
        world, "box1", "run1", "wake1", "start1", "back1", "stop1", "crash1", "mis1", "new1"
    )
    await box1.client.fleet_report(
        {
            "interval": 10,
            "bots": [
                reported("run1", "running", pid=11),
                reported("wake1", "waking", pid=12),
                reported("start1", "starting", pid=13),
                reported("back1", "backoff", backoff_s=4.0),
                reported("stop1", "stopped"),
                reported("crash1", "crashed", error="Traceback\nValueError: <b>boom</b>"),
                reported("mis1", "misconfigured", error="bot: repo /nowhere is not a directory"),
            ],
        }
    )
    # new1 is assigned and its keeper has not reported it yet.
    await world.human.fleet_order("stop1", "stop")  # stopped already: its keeper acknowledges
    await box1.client.fleet_report(
        {"interval": 10, "acks": [{"id": 1, "ok": True}], "bots": [reported("stop1", "stopped")]}
    )
    page = await fleet_page(world)
    states = {
        "run1": "running",
        "wake1": "waking",
        "start1": "starting",
        "back1": "backoff",
        "stop1": "stopped",
        "crash1": "crashed",
        "mis1": "misconfigured",
        "away1": "offline",
        "new1": "unknown",  # assigned a moment ago
    }
    expected = {handle: BADGES[state] for handle, state in states.items()}
    assert {h: badge(page, h) for h in expected} == expected
    assert 'class="why">ValueError: &lt;b&gt;boom&lt;/b&gt;</p>' in card(page, "crash1")  # hostile text
    assert 'class="why">bot: repo /nowhere is not a directory</p>' in card(page, "mis1")
    listed = await bots(world)
    shown = {h: b["shown"] for h, b in listed.items()}
    assert shown["away1"] == "offline" and shown["new1"] == "unknown" and shown["back1"] == "backoff"
    # The API carries the page's word for each, so a client says the same without a table of its own.
    assert {h: listed[h]["shown_words"] for h in expected} == {h: word for h, (_, word) in expected.items()}


async def test_why_a_bot_stopped_reads_whole_and_a_machine_is_named_once(clocked_world: World) -> None:
    """The daemon's refusals, advice included, show whole; a longer line is cut at a word. A
    machine whose host has its name is not named twice."""
    world = clocked_world
    await world.human.create_profile("proj-dev", "proj", "claude")
    code = (await world.human.enroll_code("vm"))["code"]
    enrolled = await world.board.client().enroll(code, hostname="vm")
    keeper = world.board.client(enrolled["token"])
    await world.human.assign_bot("vm", "proj-dev", "mis1")
    await world.human.assign_bot("vm", "proj-dev", "mis2")
    refusal = (
        "bot: claude refuses --dangerously-skip-permissions as root: run the bot as another user, "
        "or set IS_SANDBOX=1 in the profile's environment if this machine is a disposable sandbox "
        "(a container or VM with nothing to lose)"
    )
    rambling = " ".join(f"word{n}" for n in range(120))  # 707 characters
    await keeper.fleet_report(
        {
            "interval": 10,
            "bots": [
                reported("mis1", "misconfigured", error=f"started\n{refusal}"),
                reported("mis2", "misconfigured", error=rambling),
            ],
        }
    )
    page = await fleet_page(world)
    assert f'class="why">{escape(refusal)}</p>' in card(page, "mis1")
    cut = re.search(r'class="why">([^<]*)</p>', card(page, "mis2"))
    assert cut is not None and cut.group(1).endswith("…") and len(cut.group(1)) <= 400
    assert rambling.startswith(cut.group(1).removesuffix("…") + " ")  # ends at a whole word
    assert re.search(r"<h2>vm <span", page) and "<small>vm</small>" not in page


async def test_an_order_is_pending_until_its_keeper_carries_it_out(
    clocked_world: World, clock: ManualClock
) -> None:
    world = clocked_world
    box1 = await keeper_with_bots(world, "box1", "run1")
    await box1.client.fleet_report({"interval": 10, "bots": [reported("run1", "running", pid=11)]})
    assert (await bots(world))["run1"]["pending_words"] is None

    stopping = await world.human.fleet_order("run1", "stop")
    assert (stopping["pending"], stopping["pending_words"], stopping["state"]) == (
        "stop",
        "stopping…",
        "running",
    )
    assert badge(await fleet_page(world), "run1") == ("busy", "stopping…")
    # Acknowledged while the daemon still winds down: still on its way.
    answer = await box1.client.fleet_report(
        {"interval": 10, "acks": [{"id": 1, "ok": True}], "bots": [reported("run1", "running", pid=11)]}
    )
    assert answer["orders"] == [] and (await bots(world))["run1"]["pending"] == "stop"
    await box1.client.fleet_report({"interval": 10, "bots": [reported("run1", "stopped")]})
    assert (await bots(world))["run1"]["pending"] is None
    assert badge(await fleet_page(world), "run1") == ("off", "stopped")

    assert (await world.human.fleet_order("run1", "start"))["pending"] == "start"
    await box1.client.fleet_report({"interval": 10, "bots": [reported("run1", "running", pid=12)]})
    assert (await bots(world))["run1"]["pending"] == "start"  # running, its order not yet acknowledged
    await box1.client.fleet_report({"interval": 10, "acks": [{"id": 2, "ok": True}], "bots": []})
    assert (await bots(world))["run1"]["pending"] is None
    assert badge(await fleet_page(world), "run1") == ("ok", "running")

    clock.advance(60)  # the machine goes quiet: an order sent now waits, and the card says why
    assert (await world.human.fleet_order("run1", "stop"))["pending"] is None
    assert badge(await fleet_page(world), "run1") == ("off", "machine offline")


async def test_a_running_bot_its_budget_holds_shows_held_with_why(
    clocked_world: World, clock: ManualClock
) -> None:
    world = clocked_world
    box1 = await keeper_with_bots(world, "box1", "run1", "run2")
    running = [reported("run1", "running", pid=11), reported("run2", "running", pid=12)]
    await box1.client.fleet_report({"interval": 10, "bots": running})
    token = (await box1.client.bot_token("run1"))["token"]
    await world.human.set_budget("run1", budget_wakes=1)
    await world.human.set_budget("run2", budget_wakes=1)  # a limit not reached holds nothing
    async with world.board.client(token) as run1:
        await run1.record_wake(harness="claude", started_at=iso(clock.now()), outcome="ok")
    page = await fleet_page(world)
    assert (badge(page, "run1"), badge(page, "run2")) == (BADGES["held"], BADGES["running"])
    held = 'Held: 1 of 1 wakes a day, set on bot, until midnight UTC. <a href="/a/run1#budget">'
    assert held in card(page, "run1") and "Held:" not in card(page, "run2")
    shown = await bots(world)
    assert (shown["run1"]["shown"], shown["run1"]["state"], shown["run2"]["hold"]) == (
        "held",
        "running",
        None,
    )
    assert shown["run1"]["presence"] == "active"  # held, its daemon is up and waiting

    stopping = await world.human.fleet_order("run1", "stop")  # an order acts on a held bot
    assert stopping["pending"] == "stop"
    stopped = [reported("run1", "stopped"), running[1]]
    await box1.client.fleet_report({"interval": 10, "acks": [{"id": 1, "ok": True}], "bots": stopped})
    assert badge(await fleet_page(world), "run1") == BADGES["stopped"]  # a stopped bot is not held
    await world.human.set_budget("run1", lift=True)
    await world.human.fleet_order("run1", "start")
    await box1.client.fleet_report({"interval": 10, "acks": [{"id": 2, "ok": True}], "bots": running})
    assert badge(await fleet_page(world), "run1") == BADGES["running"]


async def test_presence_agrees_with_the_state(clocked_world: World) -> None:
    world = clocked_world
    box1 = await keeper_with_bots(world, "box1", "run1", "stop1")
    for handle in ("run1", "stop1"):  # both called the board a moment ago
        token = (await box1.client.bot_token(handle))["token"]
        await world.board.client(token).me()
    await box1.client.fleet_report(
        {"interval": 10, "bots": [reported("run1", "running", pid=11), reported("stop1", "stopped")]}
    )
    await world.human.fleet_order("stop1", "stop")
    found = await bots(world)
    assert (found["run1"]["presence"], found["stop1"]["presence"]) == ("active", "recent")
    assert (await world.human.agent("stop1"))["presence"] == "active"  # the roster still says when
    page = await fleet_page(world)
    assert 'class="badge presence-recent"' in card(page, "stop1")
    assert 'class="badge presence-active"' in card(page, "run1")


async def test_the_card_shows_the_last_lines_of_the_log_as_text(clocked_world: World) -> None:
    world = clocked_world
    box1 = await keeper_with_bots(world, "box1", "run1")
    lines = [f"line {n}" for n in range(1, 9)] + ['<script>alert("x")</script>']
    await box1.client.fleet_report({"interval": 10, "bots": [reported("run1", "running", log_tail=lines)]})
    tail = re.search(
        r'<div class="log-tail"[^>]*><pre>(.*?)</pre>', card(await fleet_page(world), "run1"), re.S
    )
    assert tail is not None
    assert tail.group(1).splitlines() == [
        "line 5",
        "line 6",
        "line 7",
        "line 8",
        "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;",
    ]


async def test_the_cards_log_reads_its_json_lines_out_and_escapes_each_part(clocked_world: World) -> None:
    """The daemon logs a JSON object a line, which the card showed raw: now its time, level,
    event and the other fields, each escaped and cut short; any other line stays as it is."""
    world = clocked_world
    box1 = await keeper_with_bots(world, "box1", "run1")
    lines = [
        '{"at": "2026-12-05T11:54:20.123Z", "bot": "run1", "event": "turn_ended",'
        ' "outcome": "ok", "ids": [1, 2]}',
        '{"at": "<i>soon</i>", "level": "<b>error</b>", "event": "<script>x()</script>", "bot": "run2",'
        ' "why": "a \\"quoted\\" <img src=x>", "long": "' + "y" * 1800 + '"}',
        "Traceback: <b>not JSON</b>",
        "[1, 2]",
    ]
    await box1.client.fleet_report({"interval": 10, "bots": [reported("run1", "running", log_tail=lines)]})
    tail = re.search(
        r'<div class="log-tail"[^>]*><pre>(.*?)</pre>', card(await fleet_page(world), "run1"), re.S
    )
    assert tail is not None
    first, hostile, plain, array = tail.group(1).splitlines()
    assert re.sub(r"<[^>]+>", "", first) == "11:54:20 turn_ended outcome=ok ids=[1,2]"  # its own bot left out
    assert (
        "<script>" not in hostile and "<img" not in hostile and "<b>" not in hostile and "<i>" not in hostile
    )
    text = re.sub(r"<[^>]+>", "", hostile)
    assert text.startswith(
        "&lt;i&gt;soon&lt;/i&gt; &lt;b&gt;error&lt;/b&gt; &lt;script&gt;x()&lt;/script&gt; bot=run2 "
        "why=&#34;a \\&#34;quoted\\&#34; &lt;img src=x&gt;&#34; long=yyy"
    ), text
    assert text.endswith("y…") and len(text) < 600, text  # each value cut short
    assert (plain, array) == ("Traceback: &lt;b&gt;not JSON&lt;/b&gt;", "[1, 2]")


async def test_the_history_is_sampled_bounded_and_charted(clocked_world: World, clock: ManualClock) -> None:
    world = clocked_world
    box1 = await keeper_with_bots(world, "box1", "run1")

    async def report(cpu: float, rss: int) -> None:
        bot = reported("run1", "running", pid=11, cpu_percent=cpu, rss=rss)
        await box1.client.fleet_report({"interval": 10, "bots": [bot]})

    def samples() -> list[tuple[Any, ...]]:
        return db_rows(world.board.db_path, "SELECT at, cpu_percent, rss FROM fleet_samples ORDER BY at")

    first = iso(clock.now())
    await report(4.0, 40 * MB)
    clock.advance(10)
    await report(90.0, 90 * MB)  # within the gap: not kept
    assert samples() == [(first, 4.0, 40 * MB)]
    clock.advance(fleet_history.SAMPLE_GAP_S)
    await report(6.0, 60 * MB)
    assert [s[1] for s in samples()] == [4.0, 6.0]
    # Hours of reports every interval keep one sample per gap, and none older than the window.
    for _ in range(2 * fleet_history.HISTORY_S // fleet_history.SAMPLE_GAP_S):
        clock.advance(fleet_history.SAMPLE_GAP_S / 2)
        await report(5.0, 50 * MB)
        clock.advance(fleet_history.SAMPLE_GAP_S / 2)
        await report(5.0, 50 * MB)
    assert len(samples()) <= fleet_history.HISTORY_S // fleet_history.SAMPLE_GAP_S + 1
    await report(12.5, 70 * MB)  # too soon after the last: the chart shows the latest kept
    bot_token = (await box1.client.bot_token("run1"))["token"]
    for minutes_ago in (1, 2, 200):
        started = iso(clock.now() - timedelta(minutes=minutes_ago))
        await world.board.client(bot_token).record_wake(harness="claude", started_at=started, outcome="ok")
    shown = card(await fleet_page(world), "run1")
    charts = re.findall(r'<figure class="spark spark-(\w+)">\s*<svg [^>]*aria-label="([^"]+)"', shown)
    assert charts == [
        ("cpu", "CPU, last 6 h: latest 5 %, peak 5 %"),
        ("memory", "Memory, last 6 h: latest 50 MB, peak 50 MB"),
        ("wakes", "Wakes, last 6 h: 3 (one bar per 15 minutes, most 2)"),
    ]
    assert re.findall(r"<figcaption>([^<]+)</figcaption>", shown) == ["CPU 5 %", "Memory 50 MB", "wakes 3"]
    cpu = re.search(r'spark-cpu">.*?<polyline points="([^"]+)"', shown, re.S)
    assert cpu is not None and len(cpu.group(1).split()) == len(samples())  # a point per sample kept
    wakes = re.search(r'spark-wakes">.*?</svg>', shown, re.S)
    assert wakes is not None and wakes.group(0).count("<rect ") == 2  # two slices had wakes


async def test_a_wake_that_went_wrong_says_so_on_the_card(clocked_world: World, clock: ManualClock) -> None:
    """A harness that crashed or hung past its timeout: the card's last wake says how it ended,
    not only when and how long, so it does not read like a good one."""
    world = clocked_world
    box1 = await keeper_with_bots(world, "box1", "ok1", "fail1", "slow1", "never1", "odd1")

    def wake(outcome: str) -> dict[str, Any]:
        return {"at": iso(clock.now()), "duration_s": 8.0, "cost_usd": None, "outcome": outcome}

    await box1.client.fleet_report(
        {
            "interval": 10,
            "bots": [
                reported("ok1", "running", last_wake=wake("ok")),
                reported("fail1", "running", last_wake=wake("failed")),
                reported("slow1", "running", last_wake=wake("timeout")),
                reported("never1", "running", last_wake=wake("error")),
                reported("odd1", "running", last_wake=wake("<b>odd</b>")),
            ],
        }
    )
    page = await fleet_page(world)
    said = {
        h: re.findall(r'<span class="wake-outcome">([^<]*)</span>', card(page, h))
        for h in ("ok1", "fail1", "slow1", "never1", "odd1")
    }
    assert said == {
        "ok1": [],
        "fail1": ["failed"],
        "slow1": ["timed out"],
        "never1": ["the harness did not start"],
        "odd1": ["&lt;b&gt;odd&lt;/b&gt;"],
    }
