"""The shipped knowledge reconciler end to end: a real runner, a real ``bot run``, a scripted model.

The fake claude runs ``tests/fakes/models/knowledge_reconciler.py``, which reads
the prompt the bot was given (the routine's thread, the cursor kept in the last
run's outcome) and makes the calls routines/shipped/knowledge-reconciler/prompt.md
asks for.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from board.client import BoardAPIError
from board.server.services import auth
from routines.importer import SHIPPED
from tests.launcher.botrun import BotProcess, LiveBoard
from tests.launcher.fakeharness import Fake
from tests.support.boardtest import World, eventually
from tests.support.routines_support import RunnerProcess, start_runner

ROOT = Path(__file__).resolve().parents[2]
PROMPT = SHIPPED / "knowledge-reconciler" / "prompt.md"
MODEL = ROOT / "tests" / "fakes" / "models" / "knowledge_reconciler.py"


@pytest.fixture
async def processes(
    tmp_path: Path, live: LiveBoard, world: World, fake: Fake
) -> AsyncIterator[tuple[BotProcess, RunnerProcess]]:
    assert live.board is not None and world.bot.token is not None
    fake.script({"do": "act", "program": str(MODEL)})
    bot = BotProcess(tmp_path, board_url=live.url, token=world.bot.token, handle="pb", fake=fake).start()
    await bot.started()
    runner = start_runner(live.board, await auth.runner_token(live.board.ctx), None)
    yield bot, runner
    runner.stop()
    await bot.close()


async def discussions(world: World) -> dict[str, list[int]]:
    """One thread settles the database, another still debates the queue; message ids by topic."""
    human, peer = world.human, world.peer
    db = await human.post("Which database do we run?", channel="general", workspace="proj", tags=["database"])
    ids = [db["id"]]
    ids.append((await peer.post("PostgreSQL 16 has everything we need.", reply_to=db["id"]))["id"])
    ids.append((await human.post("We use PostgreSQL 16, agreed by @alice.", reply_to=db["id"]))["id"])
    queue = await human.post("Which message queue?", channel="general", workspace="proj", tags=["queue"])
    qids = [queue["id"]]
    qids.append((await peer.post("Redis streams, we run Redis anyway.", reply_to=queue["id"]))["id"])
    qids.append((await human.post("I'm not sure; why not NATS?", reply_to=queue["id"]))["id"])
    return {"database": ids, "queue": qids}


async def run_now_and_finish(world: World, runner: RunnerProcess, bot: BotProcess) -> dict[str, Any]:
    async def asked() -> dict[str, Any] | None:
        try:
            return await world.human.run_routine_now("knowledge-reconciler")
        except BoardAPIError as exc:  # one run per second: the previous one took this second
            if exc.code != "NAME_CONFLICT":
                raise
            return None

    run = await eventually(asked, "a run-now accepted", timeout=5)

    async def ended() -> dict[str, Any] | None:
        assert runner.proc.poll() is None, runner.output()
        runs = (await world.human.routine_runs("knowledge-reconciler"))["runs"]
        found = next(r for r in runs if r["id"] == run["id"])
        return found if found["state"] not in ("scheduled", "running") else None

    try:
        return await eventually(ended, f"run {run['id']} to end", timeout=60)
    except AssertionError:
        raise AssertionError(f"{runner.output()}\n{bot.output()}") from None


async def test_the_reconciler_settles_one_thread_disputes_the_other_and_then_changes_nothing(
    world: World, processes: tuple[BotProcess, RunnerProcess], fake: Fake
) -> None:
    bot, runner = processes
    topics = await discussions(world)
    await world.human.propose_routine(
        "knowledge-reconciler",
        workspace="proj",
        schedule="0 2 * * *",
        bot="pb",
        prompt=PROMPT.read_text(),
        why="nightly reconciliation",
    )
    await world.human.approve_version("knowledge-reconciler", 1, "ship it")

    first = await run_now_and_finish(world, runner, bot)
    assert first["state"] == "done", first
    assert "decisions/database.md revision 1: settled" in first["outcome"]
    assert "decisions/queue.md revision 1: disputed" in first["outcome"]
    assert first["outcome"].endswith(f"cursor: {topics['queue'][-1]}")

    database = await world.human.document("decisions/database.md", workspace="proj")
    assert database["status"] == "settled" and "PostgreSQL 16" in database["body"]
    cited = {s.get("message") for s in database["sources"]} | {s.get("thread") for s in database["sources"]}
    assert set(topics["database"]) <= cited and not set(topics["queue"]) & cited
    queue = await world.human.document("decisions/queue.md", workspace="proj")
    assert queue["status"] == "disputed" and len(queue["disputes"]) == 1
    assert "NATS" in queue["body"] and "still debated" in queue["disputes"][0]["reason"]

    prompt = fake.calls()[-1]["prompt"]
    assert f"Claim thread {(await world.human.routine('knowledge-reconciler'))['thread_id']}" in prompt

    before = {
        path: (await world.human.document_history(path, workspace="proj"))["revisions"]
        for path in ("decisions/database.md", "decisions/queue.md")
    }
    second = await run_now_and_finish(world, runner, bot)
    assert second["state"] == "done", second
    assert second["outcome"] == f"No new messages; nothing changed.\ncursor: {topics['queue'][-1]}"
    assert f"cursor: {topics['queue'][-1]}" in fake.calls()[-1]["prompt"]  # read from run 1's outcome
    for path, revisions in before.items():
        assert (await world.human.document_history(path, workspace="proj"))["revisions"] == revisions
    disputes = await world.human.audit(action="knowledge.dispute", limit=100)
    assert len(disputes["entries"]) == 1
