"""Routines on the board without a runner: proposals, a human's decisions, the long-poll."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from board.client import BoardClient
from board.server.clock import ManualClock, parse_time
from board.server.hub import Hub, Signal
from board.server.services import auth
from board.server.services.routines import CHANGES
from routines import schedule as schedules
from tests.support.boardtest import World, held, snapshot
from tests.support.pages_support import sign_in
from tests.support.refusals import refused

FIELDS: dict[str, Any] = {"workspace": "proj", "schedule": "0 2 * * *", "bot": "pb", "prompt": "Do it."}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"schedule": "0 2 * *"}, "schedule"),
        ({"schedule": "61 2 * * *"}, "schedule"),
        ({"schedule": "every 5s"}, "schedule"),
        ({"timezone": "Mars/Olympus"}, "schedule"),
        ({"quiet_hours": "25:00-07:00"}, "quiet_hours"),
        ({"bot": "ob"}, "bot"),  # a bot of another workspace
        ({"bot": "alice"}, "bot"),  # a human
        ({"bot": "nobody"}, "bot"),
        ({"max_run_seconds": 5}, "max_run_seconds"),
    ],
)
async def test_a_bad_proposal_is_refused_and_writes_nothing(
    world: World, change: dict[str, Any], field: str
) -> None:
    before = snapshot(world.board.db_path)
    error = await refused(world.bot.propose_routine("tidy", **(FIELDS | change)), "INVALID_ARGUMENT")
    assert error.code == "INVALID_ARGUMENT" and error.details.get("field") == field, error.message
    assert snapshot(world.board.db_path) == before


async def test_approving_retires_the_approved_version_and_rejecting_keeps_the_reason(world: World) -> None:
    bot, human = world.bot, world.human
    await bot.propose_routine("tidy", **FIELDS, why="tidy nightly")
    await human.approve_version("tidy", 1, "fine")
    second = await bot.propose_version("tidy", **(FIELDS | {"schedule": "0 3 * * *"}) | {"workspace": None})
    assert second["version"] == 2 and second["state"] == "pending" and second["proposed"]
    routine = await human.approve_version("tidy", 2, "later is better")
    assert routine["approved"]["version"] == 2 and routine["approved"]["schedule_words"] == (
        "every day at 03:00 UTC"
    )
    third = await bot.propose_version("tidy", **(FIELDS | {"prompt": "Do less."}) | {"workspace": None})
    routine = await human.reject_version("tidy", third["version"], "no")
    states = [(v["version"], v["state"], v["note"]) for v in routine["versions"]]
    assert states == [(1, "retired", "fine"), (2, "approved", "later is better"), (3, "rejected", "no")]
    assert routine["pending"] == []
    again = await refused(human.approve_version("tidy", 3, "changed my mind"), "INVALID_ARGUMENT")
    assert again.code == "INVALID_ARGUMENT"
    missing_note = await refused(human.reject_version("tidy", 2, ""), "INVALID_ARGUMENT")
    assert missing_note.code == "INVALID_ARGUMENT"
    actions = [
        e["action"] for e in (await human.audit(limit=100))["entries"] if e["action"].startswith("routine.")
    ]
    assert actions == [
        "routine.create",
        "routine.propose",
        "routine.approve",
        "routine.propose",
        "routine.approve",
        "routine.propose",
        "routine.reject",
    ]


@pytest.mark.parametrize("note", ["   ", "\n\t \r\n"])
async def test_a_rejection_whose_note_is_blank_is_refused_by_the_api_and_the_page_and_writes_nothing(
    world: World, note: str
) -> None:
    """Three spaces were taken as the reason: the version was rejected and its card read
    "Version 1 was rejected by alice ...:   "."""
    await world.bot.propose_routine("tidy", **FIELDS)
    session = await sign_in(world.board)
    before = snapshot(world.board.db_path)
    try:
        error = await refused(world.human.reject_version("tidy", 1, note), "INVALID_ARGUMENT")
        assert error.details.get("field") == "note" and "The note is blank" in error.message
        status, page = await session.post("/routines/tidy/versions/1/reject", {"note": note})
    finally:
        await session.close()
    assert status == 422 and 'class="card error"' in page and "The note is blank" in page

    assert snapshot(world.board.db_path) == before  # no audit row, no line in the thread
    assert [v["state"] for v in (await world.human.routine("tidy"))["versions"]] == ["pending"]
    assert (await world.human.audit(action="routine.reject"))["entries"] == []
    routine = await world.human.reject_version("tidy", 1, " not now ")
    assert [(v["state"], v["note"]) for v in routine["versions"]] == [("rejected", " not now ")]


async def test_run_now_needs_an_approved_version(world: World) -> None:
    await world.bot.propose_routine("tidy", **FIELDS)
    before = snapshot(world.board.db_path)
    error = await refused(world.human.run_routine_now("tidy"), "INVALID_ARGUMENT")
    assert error.code == "INVALID_ARGUMENT" and "approve" in error.message
    assert snapshot(world.board.db_path) == before


async def test_the_long_poll_answers_when_a_routine_changes(world: World) -> None:
    await world.bot.propose_routine("tidy", **FIELDS)
    cursor = (await world.bot.routines())["cursor"]
    polling = asyncio.ensure_future(world.bot.routines(since=cursor, wait=30))
    await held(world.board)  # the poll waits on the board: from now on a change reaches it
    assert not polling.done()
    await world.human.approve_version("tidy", 1, "go")
    page = await asyncio.wait_for(polling, 20)
    assert page["cursor"] > cursor and page["routines"][0]["state"] == "active"


def test_a_routine_change_does_not_move_the_message_head() -> None:
    """Long-polls of messages skip their read at the head: a change must not look like a message."""
    hub = Hub()
    waiter = hub.subscribe([CHANGES])
    hub.publish(Signal(CHANGES, 10_000))
    assert hub.last_id == 0 and [event.id for event in waiter.take()] == [10_000]


async def test_decisions_reach_no_inbox_and_the_run_prompt_reaches_the_bot(world: World) -> None:
    bot, human = world.bot, world.human
    await bot.propose_routine("tidy", **FIELDS)
    thread = (await human.routine("tidy"))["thread_id"]
    await bot.claim(thread)  # the holder of a thread hears of every reply in it
    await bot.done(thread, "set up")
    await human.approve_version("tidy", 1, "go")
    await human.pause_routine("tidy")
    await human.resume_routine("tidy")
    run = await human.run_routine_now("tidy")
    inbox = (await bot.inbox())["messages"]
    assert inbox == []
    view = await human.thread(thread, limit=100)
    assert [m["body"].split(":")[0] for m in view["messages"] if m["meta"].get("action")] == [
        "version 1 approved by alice",
        "paused by alice",
        "resumed by alice",
        f"run {run['id']} requested by alice",
    ]


async def test_a_bot_of_another_workspace_sees_no_routine_of_this_one(world: World) -> None:
    await world.bot.propose_routine("tidy", **FIELDS)
    assert (await world.other.routines())["routines"] == []
    assert (await world.admin_bot.routines())["routines"][0]["name"] == "tidy"
    hidden = await refused(world.other.routine("tidy"), "NOT_FOUND")
    absent = await refused(world.other.routine("nothing"), "NOT_FOUND")
    assert (hidden.status, hidden.code, hidden.message) == (absent.status, absent.code, absent.message)


def test_schedules_in_words_and_times() -> None:
    paris = schedules.parse("0 2 * * *", "Europe/Paris")
    assert paris.words() == "every day at 02:00 Europe/Paris"
    winter = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    assert paris.next_after(winter, winter) == datetime(2026, 12, 1, 1, 0, tzinfo=UTC)  # CET is UTC+1
    assert schedules.parse("30 7 * * 1-5").words() == "every weekday at 07:30 UTC"
    assert schedules.parse("*/15 * * * *").words() == "every 15 minutes"
    every = schedules.parse("every 90m")
    anchor = datetime(2026, 11, 30, 4, 0, 7, tzinfo=UTC)
    assert every.words() == "every 90 minutes"
    assert every.next_after(anchor, anchor) == datetime(2026, 11, 30, 5, 30, 7, tzinfo=UTC)
    last, count = every.last_between(anchor, datetime(2026, 11, 30, 9, 0, 7, tzinfo=UTC), anchor)
    assert (last, count) == (datetime(2026, 11, 30, 8, 30, 7, tzinfo=UTC), 3)


def test_quiet_hours_may_span_midnight() -> None:
    zone = schedules.parse("0 2 * * *", "Europe/Paris").zone
    at = [datetime(2026, 11, 30, h, 30, tzinfo=UTC) for h in (20, 21, 5, 6)]  # 21:30, 22:30, 06:30, 07:30
    assert [schedules.in_quiet_hours("22:00-07:00", zone, t) for t in at] == [False, True, True, False]
    assert not schedules.in_quiet_hours(None, zone, at[1])


async def test_the_next_run_due_in_quiet_hours_is_shown_when_it_starts(clocked_world: World) -> None:
    """A run due in quiet hours waits until they end: the next run the page and the API give is
    that end, not a time at which nothing will start (the clock stands at 04:00 UTC)."""
    world = clocked_world
    for name, schedule, quiet in (
        ("night", "every 90s", "23:00-06:00"),  # due in 90 s, inside the quiet hours
        ("dawn", "0 5 * * *", "05:30-06:15"),  # due at 05:00, before they begin
        ("late", "30 5 * * *", "05:00-06:15"),  # due at 05:30, inside those of the day
    ):
        await world.bot.propose_routine(name, **{**FIELDS, "schedule": schedule, "quiet_hours": quiet})
        await world.human.approve_version(name, 1, "go")
    listed = {r["name"]: r["next_run"] for r in (await world.human.routines())["routines"]}
    assert listed == {
        "night": "2026-11-30T06:00:00Z",
        "dawn": "2026-11-30T05:00:00Z",
        "late": "2026-11-30T06:15:00Z",
    }
    paris = schedules.parse("0 2 * * *", "Europe/Paris").zone  # UTC+1: quiet ends 07:00, 06:00 UTC
    assert schedules.quiet_until("22:00-07:00", paris, datetime(2026, 11, 30, 1, tzinfo=UTC)) == datetime(
        2026, 11, 30, 6, tzinfo=UTC
    )


async def _runner(world: World) -> BoardClient:
    return world.board.client(await auth.runner_token(world.board.ctx))


async def _started(runner: BoardClient, name: str, at: str) -> dict[str, Any]:
    made = await runner.create_run(name, 1, at)
    return await runner.start_run(name, made["id"])


async def _one_running(world: World) -> tuple[BoardClient, int, dict[str, Any]]:
    """Routine tidy, approved, with one run running: the runner, the routine's thread, the run."""
    await world.bot.propose_routine("tidy", **FIELDS)
    await world.human.approve_version("tidy", 1, "go")
    runner = await _runner(world)
    thread = (await world.human.routine("tidy"))["thread_id"]
    return runner, thread, await _started(runner, "tidy", "2026-11-30T02:00:00Z")


async def test_a_second_run_does_not_start_while_one_runs_and_the_refusal_writes_nothing(
    world: World,
) -> None:
    human = world.human
    runner, _, first = await _one_running(world)
    asked = await human.run_routine_now("tidy")

    before = snapshot(world.board.db_path)
    error = await refused(runner.start_run("tidy", asked["id"]), "VERSION_CONFLICT")
    assert error.code == "VERSION_CONFLICT", error.message
    assert error.details["running"]["id"] == first["id"] and error.details["run"]["id"] == asked["id"]
    assert snapshot(world.board.db_path) == before
    listed = (await human.routine_runs("tidy"))["runs"]
    assert [(r["id"], r["state"], r.get("waits_for")) for r in listed] == [
        (asked["id"], "scheduled", first["id"]),
        (first["id"], "running", None),
    ]


async def test_a_done_ends_only_the_run_whose_claim_it_closes(world: World) -> None:
    bot, human = world.bot, world.human
    runner, thread, first = await _one_running(world)
    await bot.claim(thread, "first")
    await bot.done(thread, "first: its own summary")
    ended = await runner.finish_run("tidy", first["id"], "done", "a summary the runner made up")
    assert ended["state"] == "done" and ended["outcome"] == "first: its own summary"

    await bot.claim(thread, "left over from elsewhere")  # held when the next run starts
    second = await _started(runner, "tidy", "2026-11-30T03:00:00Z")
    await bot.done(thread, "the left-over job")  # closes the claim taken before the run
    running = (await human.routine_runs("tidy"))["runs"][0]
    assert running["id"] == second["id"] and running["seen"] == {}
    before = snapshot(world.board.db_path)
    error = await refused(
        runner.finish_run("tidy", second["id"], "done", "the left-over job"), "VERSION_CONFLICT"
    )
    assert error.code == "VERSION_CONFLICT", error.message
    assert snapshot(world.board.db_path) == before

    await bot.claim(thread, "second")  # the run's own claim
    await bot.done(thread, "second: its own summary")
    seen = (await human.routine_runs("tidy"))["runs"][0]["seen"]
    assert seen["claim"] == "done" and seen["summary"] == "second: its own summary"
    ended = await runner.finish_run("tidy", second["id"], "done", seen["summary"])
    assert ended["outcome"] == "second: its own summary"
    assert [(r["id"], r["outcome"]) for r in (await human.routine_runs("tidy"))["runs"]] == [
        (second["id"], "second: its own summary"),
        (first["id"], "first: its own summary"),
    ]


async def test_a_failed_run_releases_its_claim_so_the_next_starts_on_a_free_thread(world: World) -> None:
    runner, thread, first = await _one_running(world)
    await world.bot.claim(thread, "first")
    await runner.finish_run("tidy", first["id"], "failed", "the bot's wake ended failed")
    view = await world.human.thread(thread, limit=500)
    assert view["claim"]["state"] == "open"
    notes = [m["body"] for m in view["messages"] if m["meta"].get("run_id") == first["id"]]
    assert any("failed; its claim is released" in body for body in notes), notes


async def test_run_now_pressed_again_before_its_run_started_is_refused_and_writes_nothing(
    clocked_world: World, clock: ManualClock
) -> None:
    bot, human = clocked_world.bot, clocked_world.human
    await bot.propose_routine("tidy", **FIELDS)
    await human.approve_version("tidy", 1, "go")
    asked = await human.run_routine_now("tidy")
    clock.advance(5)
    before = snapshot(clocked_world.board.db_path)
    error = await refused(human.run_routine_now("tidy"), "NAME_CONFLICT")
    assert error.code == "NAME_CONFLICT" and error.details["run"]["id"] == asked["id"], error.message
    assert snapshot(clocked_world.board.db_path) == before


async def test_run_now_pressed_again_in_the_second_its_run_started_waits_its_turn(
    clocked_world: World, clock: ManualClock
) -> None:
    """Two presses in a row: the second comes in the same second as the first, which has started."""
    human = clocked_world.human
    await clocked_world.bot.propose_routine("tidy", **FIELDS)
    await human.approve_version("tidy", 1, "go")
    first = await human.run_routine_now("tidy")
    await (await _runner(clocked_world)).start_run("tidy", first["id"])
    second = await human.run_routine_now("tidy")  # the clock has not moved
    assert second["state"] == "scheduled" and second["cause"] == "run-now"
    assert parse_time(second["scheduled_for"]) == parse_time(first["scheduled_for"]) + timedelta(seconds=1)
    listed = (await human.routine_runs("tidy"))["runs"]
    assert [(r["id"], r["state"], r.get("waits_for")) for r in listed] == [
        (second["id"], "scheduled", first["id"]),
        (first["id"], "running", None),
    ]
