"""Delivery states driven by a real ``bot run`` daemon and the strict fake harnesses:
unreachable before any daemon waits, woken while the turn runs, replied after,
failed with the wake's reason; and ``bot wake-test`` printing the phases."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from board.server.clock import iso
from tests.launcher.botrun import ROOT, BotProcess, LiveBoard, mention, one_reply, wakes
from tests.launcher.fakeharness import Fake
from tests.support.boardtest import World, eventually


async def pb_state(world: World, message_id: int) -> dict[str, Any]:
    message = await world.human.message(message_id)
    [entry] = [d for d in message["delivery"] if d["handle"] == "pb"]
    return dict(entry)


async def reaches(world: World, message_id: int, state: str, timeout: float = 20.0) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        entry = await pb_state(world, message_id)
        return entry if entry["state"] == state else None

    return await eventually(probe, f"message {message_id} {state} for pb", timeout)


async def test_unreachable_until_a_daemon_waits_then_woken_during_the_turn_then_replied(
    world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    first = await mention(world, "are you there?")
    entry = await pb_state(world, first)
    assert entry == {
        "handle": "pb",
        "state": "unreachable",
        "at": None,
        "reason": "no daemon has waited for @pb ever",
    }
    fake.script({"do": "reply", "text": "here", "delay": 4})  # the turn takes 4 s: long enough to see
    await make_bot().start().started()
    woken = await reaches(world, first, "woken", timeout=15)
    assert not await wakes(world.human, "pb")  # the turn runs: nothing recorded yet
    reply = await one_reply(world, first)
    replied = await reaches(world, first, "replied")
    assert replied["at"] == reply["created_at"] and woken["at"] is not None and woken["at"] <= replied["at"]
    [wake] = await eventually(lambda: wakes(world.human, "pb"), "the wake record")
    assert wake["outcome"] == "ok" and wake["trigger_ids"] == [first]
    assert (await pb_state(world, first))["state"] == "replied"


async def test_a_failed_turn_is_failed_with_the_wakes_outcome_and_error(
    world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    fake.script({"do": "fail", "stderr": "API Error: 529 overloaded", "exit": 1})
    await make_bot().start().started()
    posted = await mention(world, "deploy it")
    failed = await reaches(world, posted, "failed")
    [wake] = await eventually(lambda: wakes(world.human, "pb"), "the wake record")
    assert wake["outcome"] == "failed" and wake["error"]
    assert failed["reason"] == f"failed: {wake['error']}"[:500]
    assert failed["at"] == wake["ended_at"]

    # The daemon's report of the failure is pb's post in the thread, sent after the wake's record:
    # the message is still failed, not replied.
    async def report() -> list[dict[str, Any]]:
        thread = await world.human.thread(posted)
        return [m for m in thread["messages"] if m["author"] == "pb" and "failed" in m["body"]]

    await eventually(report, "pb's report of the failure")
    assert (await pb_state(world, posted))["state"] == "failed"


async def wake_test(
    live: LiveBoard, world: World, handle: str, *args: str, token: str | None = None
) -> tuple[int, str]:
    """``bot wake-test HANDLE`` as a human (or the holder of ``token``) would run it, in its own process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BOT_", "BOARD_"))}
    env |= {"PYTHONPATH": str(ROOT), "BOARD_TOKEN": str(token or world.human.token)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "board",
        "bot",
        "wake-test",
        handle,
        "--board",
        live.url,
        "--channel",
        "general",
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode()


async def test_wake_test_prints_each_phase_and_the_cost_of_a_real_daemons_turn(
    live: LiveBoard, world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    fake.script({"do": "reply", "text": "pong", "delay": 2})
    await make_bot().start().started()
    code, out = await wake_test(live, world, "pb", "--timeout", "40")
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0].startswith("probe ") and "in proj/general, mentioning @pb" in lines[0]
    assert [line.split()[0] for line in lines[1:4]] == ["queued", "woken", "replied"], out
    assert "(queued→woken " in lines[2] and "(woken→replied " in lines[3]
    woken_to_replied = float(lines[3].split("(woken→replied ")[1].split()[0])
    assert woken_to_replied >= 1.5  # the fake's turn took 2 s
    [wake] = await wakes(world.human, "pb")
    assert lines[4] == (
        f"cost: ${wake['cost_usd']:.4f} (in {wake['input_tokens']}, cached {wake['cache_read_tokens']}, "
        f"out {wake['output_tokens']} tokens), wake {wake['id']}"
    )
    probe = int(lines[0].split()[1])
    assert "wake-test" in (await world.human.message(probe))["tags"]
    assert "reply with the single word `pong`" in fake.last_call()["prompt"]


async def test_wake_test_prints_the_woken_phase_of_a_turn_quicker_than_its_reads(
    live: LiveBoard, world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    """Read every 4 s, a turn of a moment goes from queued to replied between two reads: its
    woken phase is printed from the bot's seen receipt, in its place."""
    fake.script({"do": "reply", "text": "pong"})
    await make_bot().start().started()
    code, out = await wake_test(live, world, "pb", "--timeout", "40", "--interval", "4")
    assert code == 0, out
    lines = out.splitlines()
    assert [line.split()[0] for line in lines[1:4]] == ["queued", "woken", "replied"], out
    # The board keeps whole seconds: the line says so, and no step is measured to or from it.
    assert lines[2].endswith("s  (by the bot's seen receipt, to the second)"), out
    assert "→" not in lines[2] and "→" not in lines[3], out
    queued, woken, replied = (float(line.split()[2].lstrip("~")) for line in lines[1:4])
    assert round(queued) <= woken <= round(replied) and replied < 40


async def test_wake_test_exits_with_the_state_that_ended_it(
    live: LiveBoard, world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    code, out = await wake_test(live, world, "pb2")  # no daemon ever waited for pb2
    assert code == 5, out
    assert "unreachable" in out and "no daemon has waited for @pb2 ever" in out
    fake.script({"do": "fail", "stderr": "boom", "exit": 1})
    await make_bot().start().started()
    code, out = await wake_test(live, world, "pb", "--timeout", "40")
    assert code == 3, out
    assert out.splitlines()[-2].startswith("failed") and "failed: " in out
    before = await world.human.messages(workspace="other", limit=5)
    code, out = await wake_test(live, world, "ob", token=world.bot.token)  # another workspace's bot
    assert code == 1 and "NOT_FOUND" in out, out
    assert await world.human.messages(workspace="other", limit=5) == before  # no probe posted


async def test_wake_test_exits_held_and_on_its_timeout(
    live: LiveBoard,
    world: World,
    fake: Fake,
    make_bot: Callable[..., BotProcess],
) -> None:
    await world.human.set_budget("pb2", budget_wakes=1)
    await world.peer.record_wake(harness="claude", started_at=iso(datetime.now(UTC)), outcome="ok")
    code, out = await wake_test(live, world, "pb2")
    assert code == 4, out
    assert "held" in out and "budget: 1 of 1 wakes a day, set on bot" in out
    fake.script({"do": "hang", "seconds": 30})
    await make_bot().start().started()
    # 10 s: time for the daemon to take the probe and post its receipt on a loaded machine.
    code, out = await wake_test(live, world, "pb", "--timeout", "10")
    assert code == 6, out
    assert out.splitlines()[-1] == "no reply within 10 s (still woken)", out
