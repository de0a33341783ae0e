"""A keeper's report is hostile input: checked like any body, its audit rows bounded and its own.

A keeper token sits on a machine a human may not watch; what it sends must not
take the fleet's pages down, forge rows about bots it does not run, or fill
the audit log.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.fleet.test_fleet_api import bot_report, fleet_setup
from tests.support.boardtest import World, db_rows
from tests.support.refusals import refused

EVENTS_PER_WINDOW = 120


def event(seq: int, handle: str = "fb1", **extra: Any) -> dict[str, Any]:
    return {"seq": seq, "at": "2026-11-30T04:00:00Z", "handle": handle, "state": "running", **extra}


def wake(**extra: Any) -> dict[str, Any]:
    return {"at": "2026-11-30T04:00:00Z", "duration_s": 2.5, "cost_usd": 0.01, "outcome": "ok", **extra}


@pytest.mark.parametrize(
    "report",
    [
        {"bots": [bot_report("fb1", last_wake=wake(at="yesterday"))]},
        {"bots": [bot_report("fb1", last_wake=wake(cost_usd="0.01"))]},
        {"bots": [bot_report("fb1", last_wake=wake(duration_s=-1))]},
        {"bots": [bot_report("fb1", last_wake=wake(extra={"deep": [1]}))]},
        {"bots": [bot_report("fb1", last_wake="soon")]},
        {"bots": [bot_report("fb1", started_at="not a time")]},
        {"bots": [bot_report("fb1", harness={"pid": 7, "started_at": "2026-13-40T99:00:00Z"})]},
        {"events": [event(1, at="1 Jan")]},
        {"events": [{"seq": 1, "handle": "fb1", "state": "running"}]},  # no time
        {"machine": {"clock": "now"}},
        {"machine": {"clock": 1764475200}},
    ],
    ids=[
        "wake-time",
        "wake-cost-text",
        "wake-negative",
        "wake-unknown-key",
        "wake-not-object",
        "started-at",
        "harness-time",
        "event-time",
        "event-missing-key",
        "clock-text",
        "clock-number",
    ],
)
async def test_a_malformed_report_is_refused_and_changes_nothing(
    world: World, report: dict[str, Any]
) -> None:
    box1, _ = await fleet_setup(world)
    await refused(box1.client.fleet_report(report), "INVALID_ARGUMENT", unchanged=world.board)


async def test_a_well_formed_wake_is_kept_with_its_time_as_stored(world: World) -> None:
    box1, _ = await fleet_setup(world)
    sent = wake(at="2026-11-30T05:00:00+01:00", trigger_ids=[3, 4])
    await box1.client.fleet_report({"bots": [bot_report("fb1", last_wake=sent)]})
    fb1 = next(b for m in (await world.human.fleet())["machines"] for b in m["bots"] if b["handle"] == "fb1")
    assert fb1["last_wake"] == {**sent, "at": "2026-11-30T04:00:00Z"}


async def test_a_keeper_records_events_only_for_its_own_machines_bots(world: World) -> None:
    box1, _ = await fleet_setup(world)
    # fb2 is box2's; pb is a bot on no machine; alice is a human; fb1 is box1's own.
    events = [event(1, "fb2"), event(2, "pb"), event(3, "alice"), event(4, "fb1", state="crashed")]
    answer = await box1.client.fleet_report({"events": events})
    assert answer["event_seq"] == 4  # all taken in: a retry would not send them again
    rows = (await world.human.audit(action="fleet.bot.state"))["entries"]
    assert [(r["target"], r["details"]["state"]) for r in rows] == [("fb1", "crashed")]
    box = next(m for m in (await world.human.fleet())["machines"] if m["name"] == "box1")
    assert box["events_dropped"] == 3


async def test_a_flood_of_events_records_at_most_the_window_and_counts_the_rest(world: World) -> None:
    box1, _ = await fleet_setup(world)
    before = db_rows(world.board.db_path, "SELECT count(*) FROM audit")[0][0]
    reports, per_report = 20, 2000
    for r in range(reports):
        batch = [event(r * per_report + i + 1) for i in range(per_report)]
        await box1.client.fleet_report({"events": batch})
    after = db_rows(world.board.db_path, "SELECT count(*) FROM audit")[0][0]
    assert after - before == EVENTS_PER_WINDOW
    box = next(m for m in (await world.human.fleet())["machines"] if m["name"] == "box1")
    assert box["events_dropped"] == reports * per_report - EVENTS_PER_WINDOW
