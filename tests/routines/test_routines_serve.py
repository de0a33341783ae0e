"""``board serve --routines``: the runner inside the board process, as install.sh starts it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from board.client import BoardClient
from tests.support.processes import add_human, kill, serve, wait_healthy


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
