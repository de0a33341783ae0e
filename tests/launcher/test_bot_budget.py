"""A real ``bot run`` daemon at its daily budget, with the strict fake harness.

The bot may wake once a day. Its second mention is held: the daemon logs the hold
once, starts no harness (the fake records every run), ``bot status`` says so, the
human's inbox has the board's one notice, and the message waits. A human's lift runs it, exactly once.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from collections.abc import Callable

import aiohttp

from tests.launcher.botrun import BotProcess, LiveBoard, wakes
from tests.launcher.fakeharness import Fake
from tests.support.boardtest import World, eventually

HELD_FOR = 6.0  # seconds the test watches a held daemon


async def feed_requests(live: LiveBoard) -> int:
    """Wake feed requests (long-polls and streams) the board has answered, from its /metrics
    (loopback needs no token)."""
    async with aiohttp.ClientSession() as http, http.get(f"{live.url}/metrics") as answer:
        text = await answer.text()
    feed = r'board_requests_total\{method="GET",route="/api/wake(?:/stream)?",status="\d+"\} (\d+)'
    lines = re.findall(feed, text)
    return sum(int(n) for n in lines)


def _status(bot: BotProcess) -> str:
    """``bot status`` for this bot, as its owner runs it on the machine."""
    argv = [sys.executable, "-m", "board", "bot", "status", bot.handle]
    return subprocess.run(argv, env=bot.env, capture_output=True, text=True, timeout=30, check=True).stdout


async def test_a_bot_at_its_budget_is_held_and_a_lift_runs_the_held_wake_once(
    live: LiveBoard, world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    await world.human.set_budget("pb", budget_wakes=1)
    fake.script({"do": "reply", "text": "done"})
    bot = await make_bot().start().started()

    await world.human.post("@pb first task", channel="lobby", workspace="proj")

    async def woken(count: int) -> bool:
        return len(await wakes(world.human, "pb")) >= count and len(fake.calls()) >= count

    await eventually(lambda: woken(1), "pb's first wake", 30)
    second = await world.human.post("@pb second task", channel="lobby", workspace="proj")

    async def held() -> bool:
        return bool(bot.events("held"))

    await eventually(held, "the daemon to log its hold", 20)
    before = await feed_requests(live)
    await asyncio.sleep(HELD_FOR)
    polls = await feed_requests(live) - before
    print(f"held for {HELD_FOR:.0f} s: {polls} feed requests answered")
    assert polls <= 1, polls  # a held daemon waits on its stream; it does not spin
    assert len(fake.calls()) == 1 and len(await wakes(world.human, "pb")) == 1  # no harness ran
    [event] = bot.events("held")  # logged once
    assert (event["reason"], event["measure"], event["limit"], event["spent"]) == ("budget", "wakes", 1, 1)
    assert bot.state()["held"]["measure"] == "wakes"
    assert "; held: 1 of 1 wakes a day, set on bot, until " in _status(bot)  # what the owner sees there
    inbox = await world.human.inbox(limit=50)
    [notice] = [m for m in inbox["messages"] if "budget-held" in m["tags"]]
    assert "@pb" in notice["body"] and "1 of 1 wakes a day, set on bot" in notice["body"]
    waiting = await world.bot.inbox(limit=50)  # what would wake pb waits in its inbox
    assert second["id"] in [m["id"] for m in waiting["messages"]]

    await world.human.set_budget("pb", lift=True)
    await eventually(lambda: woken(2), "the held wake to run after the lift", 20)
    [_, last] = fake.calls()
    assert "second task" in last["prompt"] and "first task" not in last["prompt"].split("# Your turn")[-1]
    await asyncio.sleep(3)  # nothing more: the held wake ran once
    assert len(fake.calls()) == 2 and len(await wakes(world.human, "pb")) == 2
    assert len(bot.events("hold_ended")) == 1 and bot.state()["held"] is None
    assert "held" not in _status(bot)
