"""``board serve --routines``: the runner inside the board process, as install.sh starts it."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import cast

import pytest

from board.client import BoardClient
from routines.runner import Runner
from tests.support.processes import add_human, kill, serve, wait_healthy
from tests.support.routines_support import StuckBoard


async def test_serve_with_routines_runs_what_a_human_runs_now(tmp_path: Path) -> None:
    db = tmp_path / "board.db"
    served = serve(db, "--routines")
    try:
        wait_healthy(served)
        async with BoardClient(served.url, add_human(db, "alice")) as human:
            await human.create_workspace("proj")
            invite = await human.invite("proj")
            async with BoardClient(served.url) as anon:
                bot_token = (await anon.register("pb", invite["invite"]))["token"]
            async with BoardClient(served.url, bot_token) as bot:
                await bot.propose_routine("tidy", schedule="0 2 * * *", bot="pb", prompt="Tidy up.")
            await human.approve_version("tidy", 1, "go")
            asked = await human.run_routine_now("tidy")
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 30
            while (run := (await human.routine_runs("tidy"))["runs"][0])["state"] == "scheduled":
                assert loop.time() < deadline, served.output()
                await asyncio.sleep(0.1)
            assert run["id"] == asked["id"] and run["state"] == "running", served.output()
            prompt = await human.message(run["message_id"])
            assert prompt["mentions"] == ["pb"] and prompt["meta"]["run_id"] == run["id"]
            audited = await human.audit(action="token.create")
            assert any(e["target"] == "board" for e in audited["entries"])  # the runner's token
    finally:
        kill(served.proc)


async def test_a_runner_stopped_with_its_duty_lost_ends_its_checks_under_way_first(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The duty's holder is cancelled when its lock goes: a check APScheduler fired was left
    running after the runner stopped, beside the runner of the process that took the duty,
    and its cancel was reported as the job's failure."""
    board = StuckBoard()
    runner = asyncio.create_task(Runner(cast(BoardClient, board), check_every=0.05).run())
    await asyncio.wait_for(board.under_way.wait(), 10)
    runner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await runner
    assert board.ended, "the check went on after its runner stopped"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


async def test_a_runner_cancelled_again_while_it_stops_still_ends_its_checks_first() -> None:
    """The duty lost and the board stopping may each cancel the runner: the second cancel,
    while it waited for its checks to end, returned at once and left one under way."""
    board = StuckBoard()
    runner = asyncio.create_task(Runner(cast(BoardClient, board), check_every=0.05).run())
    await asyncio.wait_for(board.under_way.wait(), 10)
    runner.cancel()
    await asyncio.sleep(0.05)  # the runner waits for the check to hang up
    runner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await runner
    assert board.ended, "the check went on after its runner stopped"
