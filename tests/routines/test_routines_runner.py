"""The routines runner as a real process against a real board, on a clock the test moves.

On a test's clock a runner says when it has checked every routine at a time
(``checked every routine at <time>``): a test that moves the clock waits for that
line before it looks for what must not have happened.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from board.server.clock import ManualClock
from board.server.services import auth
from routines.cli import RUNNER_PREFIX
from tests.support.boardtest import PgDatabase, World, db_rows
from tests.support.processes import free_port
from tests.support.routines_support import RunnerProcess, Time, propose_and_approve, runs, start_runner, until


@dataclass
class Scene:
    world: World
    time: Time
    token: str
    runners: list[RunnerProcess]

    def runner(self, name: str = "runner", token: str | None = None, url: str | None = None) -> RunnerProcess:
        runner = start_runner(self.world.board, token or self.token, self.time, name, url)
        self.runners.append(runner)
        return runner

    def stop(self, runner: RunnerProcess) -> None:
        runner.stop()
        self.runners.remove(runner)

    async def run_at(self, name: str, scheduled_for: str, state: str = "running") -> dict[str, Any]:
        async def found() -> dict[str, Any] | None:
            return next(
                (
                    r
                    for r in await runs(self.world.human, name)
                    if r["scheduled_for"] == scheduled_for and r["state"] == state
                ),
                None,
            )

        return await until(found, f"{name} {state} at {scheduled_for}", tuple(self.runners))

    async def finished(self, name: str, scheduled_for: str, summary: str) -> dict[str, Any]:
        """The bot claims the routine's thread for the running run and closes it; the run, done."""
        thread = (await self.world.human.routine(name))["thread_id"]
        await self.world.bot.claim(thread, summary)
        await self.world.bot.done(thread, summary)
        return await self.run_at(name, scheduled_for, state="done")

    async def outcomes(self, name: str) -> list[tuple[int, str, str]]:
        """Each run's id, state and outcome, oldest first."""
        return [(r["id"], r["state"], r["outcome"]) for r in await runs(self.world.human, name)]

    async def checked(self, at: str) -> None:
        """Move to ``at`` and wait until a runner has checked every routine there."""
        self.time.move_to(at)
        line = f"checked every routine at {at}"

        async def seen() -> bool:
            return any(line in runner.output() for runner in self.runners)

        await until(seen, line, tuple(self.runners))


@pytest.fixture
async def scene(clocked_world: World, clock: ManualClock, tmp_path: Path) -> AsyncIterator[Scene]:
    token = await auth.runner_token(clocked_world.board.ctx)
    s = Scene(clocked_world, Time(clock, tmp_path / "now.txt"), token, [])
    yield s
    for runner in s.runners:
        runner.stop()


async def test_an_unapproved_version_never_runs_and_approving_runs_it_at_its_next_time(scene: Scene) -> None:
    bot, human = scene.world.bot, scene.world.human
    await bot.propose_routine("tidy", workspace="proj", schedule="*/10 * * * *", bot="pb", prompt="Tidy up.")
    scene.runner()
    await scene.checked("2026-11-30T04:05:00Z")
    await scene.checked("2026-11-30T04:10:00Z")
    assert await runs(human, "tidy") == []  # 04:10 passed while it was pending

    await human.approve_version("tidy", 1, "go")
    await scene.checked("2026-11-30T04:19:00Z")
    assert await runs(human, "tidy") == []
    scene.time.move_to("2026-11-30T04:20:00Z")
    run = await scene.run_at("tidy", "2026-11-30T04:20:00Z")
    assert run["cause"] == "schedule" and run["version"] == 1
    prompt = await bot.message(run["message_id"])
    assert prompt["mentions"] == ["pb"] and prompt["meta"]["run_id"] == run["id"]
    assert prompt["thread_id"] == (await human.routine("tidy"))["thread_id"]
    assert prompt["channel"] == "routines" and "Tidy up." in prompt["body"]
    inbox = await bot.inbox()
    assert run["message_id"] in [m["id"] for m in inbox["messages"]]


async def test_a_token_the_board_does_not_know_stops_the_runner_with_exit_3_and_what_to_do(
    scene: Scene,
) -> None:
    """It asked again every 2 s, for ever, saying only that it could not read the board."""
    runner = scene.runner(token="br_bad")
    assert await runner.ended() == 3
    said = runner.output()
    assert "the board refused the runner's token (UNAUTHENTICATED" in said
    assert "board admin runner-token" in said and "BOARD_ROUTINES_TOKEN_FILE" in said
    assert "retrying" not in said and "Traceback" not in said


async def test_a_token_that_is_not_a_runners_stops_the_runner_before_any_run(
    scene: Scene,
) -> None:
    """A human's token reads routines, so only the run's creation would be refused: the runner
    ends at start, having made nothing, instead of failing every check. A runner's token says
    what it is by its prefix (br_), so no call is needed to tell."""
    human = scene.world.human
    await propose_and_approve(scene.world.bot, human, "often", "every 1m")
    assert human.token is not None
    runner = scene.runner(token=human.token)
    scene.time.move_to("2026-11-30T04:01:00Z")
    assert await runner.ended() == 3
    said = runner.output()
    assert "the token is not a runner's (a runner's starts br_)" in said, said
    assert "board admin runner-token" in said
    assert await runs(human, "often") == []
    assert (await human.audit(action="routine.run.create", limit=500))["entries"] == []
    assert auth.TOKEN_PREFIX["runner"] == RUNNER_PREFIX  # the prefix the runner tells one by


async def test_a_board_that_cannot_be_reached_is_asked_again_until_it_answers(scene: Scene) -> None:
    runner = scene.runner(url=f"http://127.0.0.1:{free_port()}")

    async def asked_again() -> bool:
        return runner.output().count("cannot read the board (UNAVAILABLE); retrying") >= 2

    await until(asked_again, "two retries", (runner,))
    assert runner.proc.poll() is None


async def test_a_second_runner_creates_no_duplicate_run(scene: Scene) -> None:
    human = scene.world.human
    await propose_and_approve(scene.world.bot, human, "often", "every 1m")
    scene.runner("first")
    scene.runner("second")
    for minute in ("01", "02", "03", "04"):
        scene.time.move_to(f"2026-11-30T04:{minute}:00Z")
        await scene.run_at("often", f"2026-11-30T04:{minute}:00Z")
        await scene.finished("often", f"2026-11-30T04:{minute}:00Z", f"minute {minute}")
    made = await runs(human, "often")
    assert [(r["scheduled_for"][11:16], r["outcome"]) for r in made] == [
        (f"04:{minute}", f"minute {minute}") for minute in ("01", "02", "03", "04")
    ]
    thread = (await human.routine("often"))["thread_id"]
    where = scene.world.board.db_path
    run = "meta::jsonb ->> 'run'" if isinstance(where, PgDatabase) else "json_extract(meta, '$.run')"
    starts = db_rows(
        where, f"SELECT count(*) FROM messages WHERE thread_id = ? AND {run} = 'start'", (thread,)
    )
    assert starts == [(4,)]
    audited = await human.audit(action="routine.run.start", limit=500)
    assert len([e for e in audited["entries"] if e["target"].startswith("often#")]) == 4


async def test_a_restarted_runner_catches_up_within_grace_and_records_missed_beyond(scene: Scene) -> None:
    human = scene.world.human
    await propose_and_approve(scene.world.bot, human, "hourly", "every 10m", grace_seconds=300)
    first = scene.runner("first")
    scene.time.move_to("2026-11-30T04:10:00Z")
    await scene.run_at("hourly", "2026-11-30T04:10:00Z")
    await scene.finished("hourly", "2026-11-30T04:10:00Z", "ten past")
    scene.stop(first)

    scene.time.move_to("2026-11-30T04:23:00Z")  # 04:20 missed by 3 minutes: within grace
    second = scene.runner("second")
    caught = await scene.run_at("hourly", "2026-11-30T04:20:00Z")
    assert caught["cause"] == "catch-up"
    await scene.finished("hourly", "2026-11-30T04:20:00Z", "twenty past")
    scene.stop(second)

    scene.time.move_to("2026-11-30T04:48:00Z")  # 04:30 and 04:40 missed, the last by 8 minutes
    scene.runner("third")
    missed = await scene.run_at("hourly", "2026-11-30T04:40:00Z", state="missed")
    assert "beyond the grace of 300 s" in missed["outcome"] and "1 earlier" in missed["outcome"]
    await scene.checked("2026-11-30T04:50:00Z")
    on_time = await scene.run_at("hourly", "2026-11-30T04:50:00Z")
    assert on_time["cause"] == "schedule"
    assert [(r["scheduled_for"][11:16], r["state"]) for r in await runs(human, "hourly")] == [
        ("04:10", "done"),
        ("04:20", "done"),
        ("04:40", "missed"),
        ("04:50", "running"),
    ]


async def test_pause_stops_runs_and_run_now_runs_once(scene: Scene) -> None:
    human = scene.world.human
    await propose_and_approve(scene.world.bot, human, "often", "every 1m")
    scene.runner()
    scene.time.move_to("2026-11-30T04:01:00Z")
    await scene.run_at("often", "2026-11-30T04:01:00Z")
    await human.pause_routine("often")
    await scene.checked("2026-11-30T04:02:00Z")
    await scene.checked("2026-11-30T04:03:00Z")
    assert len(await runs(human, "often")) == 1

    asked = await human.run_routine_now("often")  # runs while paused, once 04:01 has ended
    await scene.checked("2026-11-30T04:03:30Z")
    waiting = await scene.run_at("often", asked["scheduled_for"], state="scheduled")
    assert waiting["waits_for"] == (await runs(human, "often"))[0]["id"]
    await scene.finished("often", "2026-11-30T04:01:00Z", "04:01 done")
    now_run = await scene.run_at("often", asked["scheduled_for"])
    assert now_run["cause"] == "run-now"
    await scene.finished("often", asked["scheduled_for"], "asked for, done")
    await scene.checked("2026-11-30T04:04:00Z")
    assert [r["cause"] == "run-now" for r in await runs(human, "often")] == [False, True]

    await human.resume_routine("often")  # at 04:04: the paused minutes are not made up
    await scene.checked("2026-11-30T04:05:00Z")
    await scene.run_at("often", "2026-11-30T04:05:00Z")
    made = [r["scheduled_for"][11:16] for r in await runs(human, "often")]
    assert made == ["04:01", asked["scheduled_for"][11:16], "04:05"]


async def test_runs_end_done_failed_and_timed_out_with_the_claim_released(scene: Scene) -> None:
    bot, human = scene.world.bot, scene.world.human
    await propose_and_approve(bot, human, "care", "every 1m", max_run_seconds=60)
    thread = (await human.routine("care"))["thread_id"]
    scene.runner()

    scene.time.move_to("2026-11-30T04:01:00Z")
    first = await scene.run_at("care", "2026-11-30T04:01:00Z")
    await bot.claim(thread)
    await bot.done(thread, "tidied three threads")
    done = await scene.run_at("care", "2026-11-30T04:01:00Z", state="done")
    assert done["outcome"] == "tidied three threads" and done["id"] == first["id"]

    scene.time.move_to("2026-11-30T04:02:00Z")
    second = await scene.run_at("care", "2026-11-30T04:02:00Z")
    await bot.record_wake(
        harness="claude",
        started_at="2026-11-30T04:02:00Z",
        outcome="failed",
        trigger_ids=[second["message_id"]],
        cost_usd=0.25,
        error="model refused",
    )
    failed = await scene.run_at("care", "2026-11-30T04:02:00Z", state="failed")
    assert "model refused" in failed["outcome"] and failed["wake_cost_usd"] == 0.25

    scene.time.move_to("2026-11-30T04:03:00Z")
    third = await scene.run_at("care", "2026-11-30T04:03:00Z")
    await bot.claim(thread, "on it")
    scene.time.move_to("2026-11-30T04:04:30Z")  # 90 s after it started; the limit is 60
    timed_out = await scene.run_at("care", "2026-11-30T04:03:00Z", state="timed_out")
    assert timed_out["id"] == third["id"]
    view = await human.thread(thread, limit=500)
    assert view["claim"]["state"] == "open"
    notes = [m["body"] for m in view["messages"] if m["meta"].get("run_id") == third["id"]]
    assert any("timed out; its claim is released" in body for body in notes), notes
    assert any("released by the board from pb" in m["body"] for m in view["messages"])


async def test_a_run_due_in_quiet_hours_waits_for_their_end_and_takes_the_times_it_waited_through(
    scene: Scene,
) -> None:
    human = scene.world.human
    await propose_and_approve(scene.world.bot, human, "quiet", "every 1m", quiet_hours="04:02-04:04")
    scene.runner()
    scene.time.move_to("2026-11-30T04:01:00Z")
    await scene.run_at("quiet", "2026-11-30T04:01:00Z")
    await scene.finished("quiet", "2026-11-30T04:01:00Z", "before the quiet")
    await scene.checked("2026-11-30T04:02:00Z")
    await scene.run_at("quiet", "2026-11-30T04:02:00Z", state="scheduled")
    await scene.checked("2026-11-30T04:03:00Z")
    assert [(r["scheduled_for"][11:16], r["state"]) for r in await runs(human, "quiet")] == [
        ("04:01", "done"),
        ("04:02", "scheduled"),
    ]
    scene.time.move_to("2026-11-30T04:04:00Z")
    waited = await scene.run_at("quiet", "2026-11-30T04:02:00Z")
    assert waited["started_at"] == "2026-11-30T04:04:00Z"
    await scene.finished("quiet", "2026-11-30T04:02:00Z", "after the quiet")
    await scene.checked("2026-11-30T04:05:00Z")
    await scene.run_at("quiet", "2026-11-30T04:05:00Z")
    assert [r["scheduled_for"][11:16] for r in await runs(human, "quiet")] == ["04:01", "04:02", "04:05"]


async def test_run_now_in_quiet_hours_starts_at_once_while_the_schedule_waits(scene: Scene) -> None:
    """Quiet hours hold the schedule; a human who presses Run now means now."""
    human = scene.world.human
    await propose_and_approve(scene.world.bot, human, "quiet", "0 5 * * *", quiet_hours="04:00-06:00")
    scene.runner()
    await scene.checked("2026-11-30T04:30:00Z")
    asked = await human.run_routine_now("quiet")
    started = await scene.run_at("quiet", asked["scheduled_for"])
    assert started["started_at"] == "2026-11-30T04:30:00Z" and started["message_id"] is not None
    await scene.finished("quiet", asked["scheduled_for"], "asked for in the quiet")
    await scene.checked("2026-11-30T05:00:00Z")  # the schedule's own time, inside the quiet hours
    await scene.run_at("quiet", "2026-11-30T05:00:00Z", state="scheduled")
    scene.time.move_to("2026-11-30T06:00:00Z")
    waited = await scene.run_at("quiet", "2026-11-30T05:00:00Z")
    assert waited["started_at"] == "2026-11-30T06:00:00Z"


async def test_run_now_while_a_scheduled_run_runs_waits_and_each_run_keeps_its_own_outcome(
    scene: Scene,
) -> None:
    bot, human = scene.world.bot, scene.world.human
    await propose_and_approve(bot, human, "tidy", "0 5 * * *")
    thread = (await human.routine("tidy"))["thread_id"]
    scene.runner()
    scene.time.move_to("2026-11-30T05:00:00Z")
    first = await scene.run_at("tidy", "2026-11-30T05:00:00Z")
    await bot.claim(thread, "tidying")

    scene.time.move_to("2026-11-30T05:00:10Z")
    asked = await human.run_routine_now("tidy")  # while the first runs
    await scene.checked("2026-11-30T05:00:30Z")
    waiting = await scene.run_at("tidy", asked["scheduled_for"], state="scheduled")
    assert waiting["message_id"] is None and waiting["waits_for"] == first["id"]

    await bot.done(thread, "first: tidied two threads")
    done = await scene.run_at("tidy", "2026-11-30T05:00:00Z", state="done")
    assert done["id"] == first["id"] and done["outcome"] == "first: tidied two threads"
    second = await scene.run_at("tidy", asked["scheduled_for"])  # started once the first ended
    prompt = await bot.message(second["message_id"])
    assert f"run {second['id']} of routine tidy" in prompt["body"]
    assert f"last finished run was run {first['id']}" in prompt["body"]
    assert "first: tidied two threads" in prompt["body"]  # the outcome it follows on from
    await scene.checked("2026-11-30T05:01:00Z")
    still = await scene.run_at("tidy", asked["scheduled_for"])
    assert still["outcome"] == ""  # the first's done is not its

    await scene.finished("tidy", asked["scheduled_for"], "second: nothing left")
    assert await scene.outcomes("tidy") == [
        (first["id"], "done", "first: tidied two threads"),
        (second["id"], "done", "second: nothing left"),
    ]


async def test_a_scheduled_run_due_while_a_run_now_runs_waits_past_its_grace_and_takes_its_own_done(
    scene: Scene,
) -> None:
    bot, human = scene.world.bot, scene.world.human
    await propose_and_approve(bot, human, "tidy", "0 5 * * *", max_run_seconds=120, grace_seconds=60)
    thread = (await human.routine("tidy"))["thread_id"]
    scene.runner()
    await scene.checked("2026-11-30T04:59:00Z")
    asked = await human.run_routine_now("tidy")
    first = await scene.run_at("tidy", asked["scheduled_for"])
    await bot.claim(thread, "asked for")

    await scene.checked("2026-11-30T05:00:00Z")  # the schedule's time, while the run-now runs
    waiting = await scene.run_at("tidy", "2026-11-30T05:00:00Z", state="scheduled")
    assert waiting["waits_for"] == first["id"] and waiting["message_id"] is None

    scene.time.move_to("2026-11-30T05:01:05Z")  # the run-now ends first, by its time limit
    timed_out = await scene.run_at("tidy", asked["scheduled_for"], state="timed_out")
    assert timed_out["id"] == first["id"] and timed_out["outcome"] == "no done within 120 s"
    second = await scene.run_at("tidy", "2026-11-30T05:00:00Z")  # 65 s late, past the grace: it waited
    assert second["started_at"] == "2026-11-30T05:01:05Z"
    view = await human.thread(thread, limit=500)
    assert view["claim"]["state"] == "open"  # the run-now's claim is released before the next starts
    release = next(m for m in view["messages"] if "released by the board from pb" in m["body"])
    assert release["id"] < second["message_id"]

    await scene.finished("tidy", "2026-11-30T05:00:00Z", "the scheduled run's own summary")
    assert await scene.outcomes("tidy") == [
        (first["id"], "timed_out", "no done within 120 s"),
        (second["id"], "done", "the scheduled run's own summary"),
    ]


async def test_a_restarted_runner_finds_one_run_running_and_starts_the_waiting_one_after_it(
    scene: Scene,
) -> None:
    bot, human = scene.world.bot, scene.world.human
    await propose_and_approve(bot, human, "tidy", "0 5 * * *")
    thread = (await human.routine("tidy"))["thread_id"]
    first = scene.runner("first")
    scene.time.move_to("2026-11-30T05:00:00Z")
    running = await scene.run_at("tidy", "2026-11-30T05:00:00Z")
    scene.time.move_to("2026-11-30T05:00:10Z")
    asked = await human.run_routine_now("tidy")
    await scene.checked("2026-11-30T05:00:20Z")
    assert (await scene.run_at("tidy", asked["scheduled_for"], state="scheduled"))["waits_for"] == running[
        "id"
    ]
    scene.stop(first)

    await bot.claim(thread, "while no runner runs")
    await bot.done(thread, "done while the runner was away")
    scene.runner("second")
    await scene.checked("2026-11-30T05:00:40Z")
    done = await scene.run_at("tidy", "2026-11-30T05:00:00Z", state="done")
    assert done["id"] == running["id"] and done["outcome"] == "done while the runner was away"
    second = await scene.run_at("tidy", asked["scheduled_for"])
    assert second["id"] == asked["id"] and second["started_at"] == "2026-11-30T05:00:40Z"
    assert [r["state"] for r in await runs(human, "tidy")] == ["done", "running"]
