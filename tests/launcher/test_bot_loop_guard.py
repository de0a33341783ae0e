"""Two real bot daemons that answer each other, each reply mentioning the other.

Without the loop guard they relay for ever (43 turns in 16 s, seen on a fresh
install). With it, the board stops waking them after ``loop_hops`` turns, and
a human's message starts exactly one more run of at most ``loop_hops`` turns.
The same holds when they pass the work on without a reply: by handoffs, or by
mentions in claim notes (before the guard counted the board's events for a
bot's acts, 169 and 190 turns in 60 s, and counting); and when both watch a
channel and post there, mentioning no one (278 turns in 60 s before the board
knew who watches what).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.launcher.botrun import BotProcess, LiveBoard, wakes
from tests.launcher.fakeharness import FAKES_BIN, Fake
from tests.support.boardtest import World, eventually

HOPS = 6


async def _turns(world: World) -> int:
    return len(await wakes(world.human, "pb")) + len(await wakes(world.human, "pb2"))


async def _settled(world: World, at_least: int) -> int:
    """Wait for at least this many turns, then until 3 s pass with no more; the count."""

    async def reached() -> bool:
        return await _turns(world) >= at_least

    await eventually(reached, f"{at_least} turns", timeout=60)
    # A turn's reply is posted before its wake record: a relay the guard missed
    # would have woken the other bot, and shown one more turn, within this.
    seen = await _turns(world)
    for _ in range(10):
        await asyncio.sleep(3)
        now = await _turns(world)
        if now == seen:
            return now
        seen = now
    raise AssertionError(f"the bots never stopped: {seen} turns and counting")


async def test_two_bots_that_mention_each_other_stop_at_loop_hops(
    tmp_path: Path, live: LiveBoard, world: World
) -> None:
    await world.human.patch_workspace("proj", loop_hops=HOPS)
    bots = []
    for handle, client, other in (("pb", world.bot, "pb2"), ("pb2", world.peer, "pb")):
        fake = Fake(tmp_path / f"fake-{handle}")
        fake.script({"do": "reply", "text": f"@{other} your turn"})
        assert client.token is not None
        bots.append(
            BotProcess(
                tmp_path / handle, board_url=live.url, token=client.token, handle=handle, fake=fake
            ).start()
        )
    try:
        for bot in bots:
            await bot.started()
        root = await world.human.post("@pb start the relay", channel="lobby", workspace="proj")
        # The human's mention wakes pb; then HOPS - 1 bot replies wake the other bot.
        assert await _settled(world, HOPS) == HOPS
        thread = await world.human.thread(root["id"])
        assert thread["paused"] is True
        notices = [m for m in thread["messages"] if "loop-paused" in m["tags"]]
        assert len(notices) == 1

        # In the thread, the human's message wakes both bots: one turn more than the first run.
        await world.human.post("@pb2 one more round, please", reply_to=root["id"])
        assert await _settled(world, 2 * HOPS) - HOPS in (HOPS, HOPS + 1)
        assert (await world.human.thread(root["id"]))["paused"] is True
    finally:
        for bot in bots:
            await bot.close()


RELAY = FAKES_BIN.parent / "models" / "relay.py"


@pytest.mark.parametrize("mode", ["handoff", "note", "status"])
async def test_two_bots_passing_work_on_without_replies_stop_at_loop_hops(
    tmp_path: Path, live: LiveBoard, world: World, mode: str
) -> None:
    await world.human.patch_workspace("proj", loop_hops=HOPS)
    bots, fakes = [], []
    # Watching bots wake on every post in #ops, at once (no jitter); the others on mentions.
    args = ["--watch", "ops", "--jitter", "0"] if mode == "status" else []
    for handle, client, other in (("pb", world.bot, "pb2"), ("pb2", world.peer, "pb")):
        fake = Fake(tmp_path / f"fake-{handle}")
        fake.script({"do": "act", "program": str(RELAY)})
        assert client.token is not None
        env = {"RELAY_MODE": mode, "RELAY_TO": other}
        bots.append(
            BotProcess(
                tmp_path / handle,
                board_url=live.url,
                token=client.token,
                handle=handle,
                fake=fake,
                args=args,
                env=env,
            ).start()
        )
        fakes.append(fake)
    try:
        for bot in bots:
            await bot.started()
        start = "the morning status, please" if mode == "status" else "@pb take this and pass it on"
        await world.human.post(start, channel="ops" if mode == "status" else "lobby", workspace="proj")
        # A turn's two events (a claim, its release) may wake the other bot twice when the
        # second comes during the turn the first started: twice loop_hops is the bound.
        turns = await _settled(world, HOPS)
        assert turns <= 2 * HOPS
        # What the board counts is what was paid for: one wake record per harness run.
        assert turns == sum(len(fake.calls()) for fake in fakes)
    finally:
        for bot in bots:
            await bot.close()
