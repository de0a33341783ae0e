"""``board doctor`` on what the board knows: keepers' reports, bots, clocks, the routines runner.

A board on loopback (each store), keepers reporting through the API with
their own tokens, and the real ``board doctor`` command reading the board's
database read-only: each check passing and failing, in the line a human reads.
"""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from board import __version__
from board.server.clock import iso
from board.server.services import auth
from tests.fleet.test_fleet_api import bot_report
from tests.support.boardtest import PgDatabase, World, database_env, snapshot
from tests.support.doctor_support import Diagnosis, doctor_async, doctor_env
from tests.support.fleettest import Keeper, keeper_with_bots
from tests.support.routines_support import propose_and_approve

pytestmark = pytest.mark.timeout(240)


async def diagnose(world: World, tmp_path: Path) -> Diagnosis:
    port = urlsplit(world.board.url).port
    assert port is not None
    return await doctor_async(doctor_env(tmp_path, port, **database_env(world.board)))


def clock(offset_s: float = 0.0) -> str:
    return iso(datetime.now(UTC) + timedelta(seconds=offset_s))


def machine(offset_s: float | None = 0.0, **extra: Any) -> dict[str, Any]:
    sent = {"hostname": "box.local", "keeper_version": __version__, **extra}
    return sent if offset_s is None else {**sent, "clock": clock(offset_s)}


async def setup(world: World) -> tuple[Keeper, Keeper]:
    return await keeper_with_bots(world, "box1", "fb1"), await keeper_with_bots(world, "box2")


async def test_a_reporting_keeper_with_its_bot_running_passes(world: World, tmp_path: Path) -> None:
    box1, box2 = await setup(world)
    await box1.client.fleet_report({"machine": machine(), "bots": [bot_report("fb1")]})
    await box2.client.fleet_report({"machine": machine(-1.0)})
    before = snapshot(world.board.db_path)
    found = await diagnose(world, tmp_path)
    assert found.status("keeper") == ["ok", "ok"]
    (line,) = found.lines("keeper box1")
    assert line.startswith("ok    keeper box1: last report ") and line.endswith(
        f"(every 10 s), keeper {__version__}"
    )
    assert found.status("clock") == ["ok", "ok"]
    assert found.lines("bots") == ["ok    bots: 1 of 1 that should run are running"]
    assert snapshot(world.board.db_path) == before  # doctor only reads
    if isinstance(world.board.db_path, PgDatabase):
        (skipped,) = found.lines("database integrity")
        assert skipped.startswith("skip  database integrity: postgresql://") and "pg_amcheck" in skipped
    else:
        assert found.status("database integrity") == ["ok"]
    assert found.status("database schema") == ["ok"] and found.code == 0, found.text

    await world.human.assign_bot("box2", "proj-dev", "fb2")  # its keeper has not started it yet
    await box2.client.fleet_report({"machine": machine()})
    found = await diagnose(world, tmp_path)
    assert found.lines("bot fb2") == [
        "warn  bot fb2 on box2: not reported yet, should be running: its keeper has not started it yet "
        "— if it stays so, read the keeper's log on box2 (keeper.log)"
    ]
    assert found.lines("bots") == ["ok    bots: 1 of 2 that should run are running"] and found.code == 0


async def test_a_silent_keeper_fails_and_so_does_each_bot_it_should_run(world: World, tmp_path: Path) -> None:
    box1, _ = await setup(world)  # box2 is enrolled, never reported, and runs nothing
    await box1.client.fleet_report({"machine": machine(), "interval": 0.05, "bots": [bot_report("fb1")]})
    # Past 3 intervals and the 2 s grace, and a second more: times are kept to the second, so
    # a report late in one second and a check early in another read up to 1 s closer than they are.
    await asyncio.sleep(3.5)
    found = await diagnose(world, tmp_path)
    assert found.code == 1
    fix = (
        "on box1: keeper status, then keeper run (or systemctl --user restart keeper); "
        "its log is keeper.log in its state folder"
    )
    (keeper_line,) = found.lines("keeper box1")
    assert keeper_line.startswith("FAIL  keeper box1: last report ")
    assert keeper_line.endswith(f"(every 0.05 s): stale after 3 intervals — {fix}")
    assert found.lines("bot fb1") == [
        f"FAIL  bot fb1 on box1: running, as its keeper last said: the keeper is not reporting — {fix}"
    ]
    (never,) = found.lines("keeper box2")
    assert never.startswith("warn  keeper box2: enrolled ") and "but never reported" in never

    await keeper_with_bots(world, "box3", "fb3")  # never reports, with a bot to run
    found = await diagnose(world, tmp_path)
    (never,) = found.lines("keeper box3")
    assert never.startswith("FAIL  keeper box3: enrolled ") and "but never reported — on box3: " in never
    assert found.lines("bot fb3") == [
        f"FAIL  bot fb3 on box3: never reported: the keeper is not reporting — {fix.replace('box1', 'box3')}"
    ]


async def test_a_keeper_clock_apart_from_the_boards_fails(world: World, tmp_path: Path) -> None:
    box1, box2 = await setup(world)
    await box1.client.fleet_report({"machine": machine(60.0), "bots": [bot_report("fb1")]})
    await box2.client.fleet_report({"machine": machine(None)})  # a keeper that does not send its time
    found = await diagnose(world, tmp_path)
    assert found.code == 1
    (line,) = found.lines("clock box1")
    assert re.fullmatch(
        r"FAIL  clock box1: (59|60)\.\d s ahead of the board's \(more than 5 s\) — keep both clocks on NTP "
        r"\(timedatectl set-ntp true\), on box1 and on the board's machine",
        line,
    ), line
    assert found.lines("clock box2") == [
        "warn  clock box2: its keeper does not send its time — upgrade the keeper on box2"
    ]
    await box1.client.fleet_report({"machine": machine(-30.0), "bots": [bot_report("fb1")]})
    assert " s behind the board's" in (await diagnose(world, tmp_path)).lines("clock box1")[0]
    await box1.client.fleet_report({"machine": machine(0.0), "bots": [bot_report("fb1")]})
    assert (await diagnose(world, tmp_path)).status("clock box1") == ["ok"]


async def test_the_board_measures_a_keepers_clock_as_its_report_arrives(world: World) -> None:
    box1, _ = await setup(world)
    await box1.client.fleet_report({"machine": machine(120.0)})
    box = next(m for m in (await world.human.fleet())["machines"] if m["name"] == "box1")
    assert 118.0 <= box["clock_skew_s"] <= 121.0
    await box1.client.fleet_report({"machine": machine(None)})
    box = next(m for m in (await world.human.fleet())["machines"] if m["name"] == "box1")
    assert box["clock_skew_s"] is None


@pytest.mark.parametrize(
    ("state", "extra", "status", "said"),
    [
        (
            "misconfigured",
            {"last_exit_code": 2, "error": "starting\nbot: repo /nope is not a directory\n"},
            "FAIL",
            "misconfigured: bot: repo /nope is not a directory — fix its profile proj-dev "
            "on /fleet/profiles/proj-dev, then start it on /fleet or with board fleet start fb1",
        ),
        (
            "crashed",
            {"last_exit_code": 1, "error": "Traceback ...\nRuntimeError: boom"},
            "FAIL",
            "crashed: RuntimeError: boom — read its log on /fleet/bots/fb1, fix the cause, then board fleet "
            "start fb1",
        ),
        (  # a keeper's report is hostile: a bidirectional override or a C1 control is printed escaped
            "crashed",
            {"last_exit_code": 1, "error": "Traceback ...\nboom \u202egnp.exe\x9b31m"},
            "FAIL",
            "crashed: boom \\u202egnp.exe\\u009b31m — read its log on /fleet/bots/fb1, fix the cause, then "
            "board fleet start fb1",
        ),
        (
            "backoff",
            {"last_exit_code": 1, "error": ""},
            "warn",
            "restarting after a crash: exited (exit 1) — if it keeps crashing, read its log on "
            "/fleet/bots/fb1",
        ),
    ],
)
async def test_a_bot_that_should_run_and_does_not_says_why_in_one_line(
    world: World, tmp_path: Path, state: str, extra: dict[str, Any], status: str, said: str
) -> None:
    box1, _ = await setup(world)
    await box1.client.fleet_report({"machine": machine(), "bots": [bot_report("fb1", state, **extra)]})
    found = await diagnose(world, tmp_path)
    assert found.lines("bot fb1") == [f"{status:<6}bot fb1 on box1: {said}"]
    assert found.lines("bots") == ["ok    bots: 0 of 1 that should run are running"]
    assert found.code == (1 if status == "FAIL" else 0), found.text

    await world.human.fleet_order("fb1", "stop")  # a bot a human stopped is not a problem
    assert (await diagnose(world, tmp_path)).lines("bot fb1") == []


async def test_no_runner_warns_and_fails_once_a_routine_is_approved(world: World, tmp_path: Path) -> None:
    found = await diagnose(world, tmp_path)
    assert found.lines("routines runner") == [
        "warn  routines runner: never called the board; 0 active routine(s) — run the board with its runner "
        "(board ctl restart runs board serve --routines), or run one: board routines run"
    ]
    await propose_and_approve(world.bot, world.human, "nightly", "0 3 * * *")
    found = await diagnose(world, tmp_path)
    assert found.code == 1
    (line,) = found.lines("routines runner")
    assert line.startswith(
        "FAIL  routines runner: never called the board; 1 active routine(s) will not run: nightly"
    )

    runner = world.board.client(await auth.runner_token(world.board.ctx))
    await runner.routines()  # the runner's first call
    (line,) = (await diagnose(world, tmp_path)).lines("routines runner")
    assert line.startswith("ok    routines runner: last called the board ") and line.endswith(
        "; 1 active routine(s)"
    )
