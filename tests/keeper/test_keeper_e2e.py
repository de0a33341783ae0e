"""A live board, a real keeper, real ``bot run`` daemons with the fake harnesses.

Each test enrolls the machine with ``keeper enroll``, starts ``keeper run``,
assigns a bot from a profile through the API and watches the board's fleet
view and the processes themselves: the bot running with a real pid, restarted
after SIGKILL, stopped as ``crashed`` after a crash loop, its whole group gone
when stopped, adopted (not doubled) by a restarted keeper, kept running while
the board is down, and its wake, with its cost, on the fleet report.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

from board.keeper.config import STATE_FILE
from board.launcher.daemon import KEEPER_FILE, PID_FILE, running_pid
from tests.keeper.keeperrun import KeeperProcess, daemons, fleet_bot, group_gone, kill_under, running, state
from tests.launcher.botrun import LiveBoard, wakes
from tests.launcher.fakeharness import Fake
from tests.support.boardtest import World, eventually
from tests.support.doctor_support import doctor_async, doctor_env
from tests.support.pages_support import pages_as

pytestmark = pytest.mark.timeout(240)


async def test_enroll_run_restart_after_kill_and_stop_the_group(
    world: World, keeper: KeeperProcess, tmp_path: Path
) -> None:
    token_file = keeper.dir / "token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    machines = (await world.human.fleet())["machines"]
    assert [m["name"] for m in machines] == ["box1"]

    await world.human.assign_bot("box1", "proj-dev", "fb")
    bot = await running(world, "fb")
    proc = psutil.Process(bot["pid"])
    assert "bot" in proc.cmdline() and "fb" in proc.cmdline()
    bot_token = (keeper.bots_dir / "fb" / "token").read_text().strip()
    assert stat.S_IMODE((keeper.bots_dir / "fb" / "token").stat().st_mode) == 0o600
    for p in [proc, *psutil.Process(keeper.proc.pid).children(recursive=True)]:  # type: ignore[union-attr]
        assert bot_token not in " ".join(p.cmdline())
        assert "BOARD_TOKEN" not in p.environ()
    machine = (await world.human.fleet())["machines"][0]
    assert machine["online"] and machine["cpus"] >= 1 and machine["memory"]["total"] > 0

    os.kill(bot["pid"], signal.SIGKILL)
    again = await running(world, "fb", other_than=bot["pid"])
    assert again["restarts"] >= 1 and again["last_exit_code"] == -signal.SIGKILL

    pgid = os.getpgid(again["pid"])
    stopped = await world.human.fleet_order("fb", "stop")
    await state(world, "fb", "stopped")
    assert group_gone(pgid)
    assert daemons(keeper, "fb") == []
    audit = (await world.human.audit(limit=500))["entries"]
    done = [e for e in audit if e["action"] == "fleet.order.done"]
    assert [e["details"]["order"] for e in done] == [stopped["order"]["id"]]
    states = [e["details"]["state"] for e in audit if e["action"] == "fleet.bot.state"]
    assert states[:2] == ["starting", "running"] and "backoff" in states and states[-1] == "stopped"

    await world.human.fleet_order("fb", "start")
    started = await running(world, "fb")
    assert len(daemons(keeper, "fb")) == 1
    await world.human.fleet_order("fb", "restart")
    restarted = await running(world, "fb", other_than=started["pid"])
    assert restarted["restarts"] == again["restarts"]  # what a human asks for is no restart of the keeper's


async def test_a_missing_repo_is_misconfigured_and_not_restarted_until_a_human_restarts(
    world: World, keeper: KeeperProcess, live: LiveBoard, tmp_path: Path
) -> None:
    await world.human.create_profile("broken", "proj", "claude", repo=str(tmp_path / "no-such-repo"))
    await world.human.assign_bot("box1", "broken", "confused")
    bot = await state(world, "confused", "misconfigured")
    assert bot["last_exit_code"] == 2 and "not a directory" in bot["error"]

    # Not restarted: three more reports go by without another start.
    for _ in range(3):
        await next_report(world)
    starts = [e for e in keeper.events("state") if e["bot"] == "confused" and e["state"] == "starting"]
    assert len(starts) == 1
    assert (await fleet_bot(world, "confused"))["state"] == "misconfigured"  # type: ignore[index]
    [(status, page)] = await pages_as(world.board, "alice", "/fleet")
    assert status == 200
    row = page[page.index('id="bot-confused"') :]
    assert f"repo {tmp_path / 'no-such-repo'} is not a directory" in row[: row.index("</article>")]

    # board doctor says the same in one line naming the bot, its machine, the reason and the fix.
    env = doctor_env(tmp_path / "doctor", live.port, BOARD_DB=str(live.db_path))
    env.update(KEEPER_STATE_DIR=str(keeper.dir), BOT_STATE_DIR=str(keeper.bots_dir))
    found = await doctor_async(env)
    assert found.code == 1
    assert found.lines("bot confused") == [
        f"FAIL  bot confused on box1: misconfigured: bot: repo {tmp_path / 'no-such-repo'} "
        "is not a directory — fix its profile broken on /fleet/profiles/broken, "
        "then start it on /fleet or with board fleet start confused"
    ]

    await world.human.update_profile("broken", repo=str(tmp_path / "repo"))
    await world.human.fleet_order("confused", "restart")
    await running(world, "confused")
    found = await doctor_async(env)
    assert found.lines("bot confused") == [] and found.status("keeper box1") == ["ok"], found.text
    assert found.status("pid files") == ["ok"], found.text  # the keeper and its bot hold their locks


async def test_a_harness_not_installed_on_the_machine_is_misconfigured_saying_what_to_set(
    world: World, live: LiveBoard, fake: Fake, tmp_path: Path
) -> None:
    """Its daemon once ran (``running``) and answered every mention with a post saying it could
    not start codex; now it exits 2 at start, and the card and board doctor say why."""
    (tmp_path / "repo").mkdir()
    await world.human.create_profile("codex-dev", "proj", "codex", repo=str(tmp_path / "repo"))
    path = f"{tmp_path / 'bin'}{os.pathsep}{Path(sys.executable).parent}"  # python3, but no codex
    keeper = KeeperProcess(tmp_path, fake, PATH=path)
    code_, out = await keeper.enroll(live.url, (await world.human.enroll_code("box1"))["code"])
    assert code_ == 0, out
    keeper.start()
    try:
        mentioned = await world.human.post("@cx please look", channel="lobby", workspace="proj")
        await world.human.assign_bot("box1", "codex-dev", "cx")
        bot = await state(world, "cx", "misconfigured")
        why = (
            "bot: cannot run codex: no 'codex' on PATH; install codex, or set BOT_CODEX_BIN to its "
            f"full path (PATH is {path})"
        )
        assert bot["last_exit_code"] == 2 and bot["error"].splitlines()[-1] == why
        for _ in range(3):
            await next_report(world)
        starts = [e for e in keeper.events("state") if e["bot"] == "cx" and e["state"] == "starting"]
        assert len(starts) == 1  # not restarted: it would fail the same way
        thread = await world.human.thread(mentioned["id"])
        assert [m["author"] for m in thread["messages"]] == ["alice"] and not fake.calls()

        env = doctor_env(tmp_path / "doctor", live.port, BOARD_DB=str(live.db_path))
        env.update(KEEPER_STATE_DIR=str(keeper.dir), BOT_STATE_DIR=str(keeper.bots_dir))
        found = await doctor_async(env)
        assert found.code == 1
        [line] = found.lines("bot cx")
        assert line.startswith(f"FAIL  bot cx on box1: misconfigured: {why} — "), line
    finally:
        if keeper.proc is not None and keeper.proc.poll() is None:
            keeper.proc.kill()
            keeper.proc.wait()
        kill_under(tmp_path)


async def next_report(world: World) -> None:
    """Wait until the machine has reported once more."""
    before = (await world.human.fleet())["machines"][0]["last_report_at"]

    async def later() -> bool:
        return bool((await world.human.fleet())["machines"][0]["last_report_at"] > before)

    await eventually(later, "another report", 30, 0.1)


async def bot_stop(keeper: KeeperProcess, handle: str) -> tuple[int, str]:
    """``bot stop HANDLE`` as a person on the machine runs it (the board keeps serving meanwhile)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "board", "bot", "stop", handle),
        env=keeper.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    return int(proc.returncode or 0), out.decode(errors="replace").strip()


async def test_bot_stop_refuses_a_bot_the_keeper_runs_and_changes_nothing(
    world: World, keeper: KeeperProcess
) -> None:
    """It said "stopped" and exited 0, and the keeper started the bot again within two seconds,
    counted as a restart: the bot kept waking and spending while its owner thought it off."""
    assert keeper.proc is not None
    await world.human.assign_bot("box1", "proj-dev", "fb")
    bot = await running(world, "fb")
    refusal = (
        f"Error: fb: not stopped: the keeper (pid {keeper.proc.pid}) runs this bot and would start it "
        "again; stop it with `board fleet stop fb`, or its Stop button on /fleet"
    )
    assert await bot_stop(keeper, "fb") == (1, refusal)
    for _ in range(3):
        await next_report(world)
    after = await fleet_bot(world, "fb")
    assert after is not None and after["state"] == "running"
    assert (after["pid"], after["restarts"]) == (bot["pid"], 0)
    assert [p.pid for p in daemons(keeper, "fb")] == [bot["pid"]]
    assert [e["state"] for e in keeper.events("state") if e["bot"] == "fb"] == ["starting", "running"]

    # Stopped on the board, it is the keeper's no longer: bot stop has nothing to refuse.
    await world.human.fleet_order("fb", "stop")
    await state(world, "fb", "stopped")
    assert await bot_stop(keeper, "fb") == (0, "fb: not running")

    # A daemon the next keeper adopts is its as much as one it started.
    await world.human.fleet_order("fb", "start")
    bot = await running(world, "fb")
    await keeper.stop()
    new = keeper.start().proc
    assert new is not None
    kept = keeper.bots_dir / "fb" / KEEPER_FILE
    await eventually(lambda: running_pid(kept) == new.pid, "the new keeper to keep fb")
    code, said = await bot_stop(keeper, "fb")
    assert code == 1 and f"the keeper (pid {new.pid}) runs this bot" in said, said
    assert (await fleet_bot(world, "fb"))["pid"] == bot["pid"] and psutil.pid_exists(bot["pid"])  # type: ignore[index]

    # A keeper that is killed keeps nothing: the kernel drops its lock, and bot stop works.
    new.kill()
    new.wait()
    assert await bot_stop(keeper, "fb") == (0, f"fb: stopped (pid {bot['pid']})")
    assert daemons(keeper, "fb") == []


async def test_restarted_keeper_adopts_its_bot(world: World, keeper: KeeperProcess) -> None:
    await world.human.assign_bot("box1", "proj-dev", "fb")
    bot = await running(world, "fb")
    assert await keeper.stop() == 0
    assert psutil.pid_exists(bot["pid"])

    keeper.start()
    await eventually(lambda: len(keeper.events("started")) == 2, "the second keeper", 30)
    await eventually(
        lambda: any("adopted" in e.get("detail", "") for e in keeper.events("state")), "adoption", 30
    )
    again = await running(world, "fb")
    assert again["pid"] == bot["pid"]
    assert [p.pid for p in daemons(keeper, "fb")] == [bot["pid"]]
    assert again["restarts"] == bot["restarts"]


async def test_a_bot_adopted_after_an_upgrade_is_restarted_once_its_turn_ends(
    world: World, keeper: KeeperProcess, fake: Fake
) -> None:
    """A keeper restarted by ``install.sh upgrade`` adopts its bots, which still run the code
    from before: each is restarted on the new code, between turns, never in one."""
    fake.script({"do": "reply", "text": "the long answer", "delay": 4})
    await world.human.assign_bot("box1", "proj-dev", "fb")
    bot = await running(world, "fb")
    posted = await world.human.post("@fb a long one", channel="lobby", workspace="proj")
    await state(world, "fb", "waking")
    assert await keeper.stop() == 0
    saved = json.loads((keeper.dir / STATE_FILE).read_text())
    saved["bots"]["fb"]["code"] = "0.0.1@1"  # what the daemon was started with: older code
    (keeper.dir / STATE_FILE).write_text(json.dumps(saved))

    keeper.start()
    again = await running(world, "fb", other_than=bot["pid"])
    thread = await world.human.thread(posted["id"])
    assert [m["body"] for m in thread["messages"] if m["author"] == "fb"] == ["the long answer"]  # not cut
    said = [e.get("detail", "") for e in keeper.events("state")]
    assert f"pid {bot['pid']} runs the code installed before this one: restarting it between turns" in said
    assert [p.pid for p in daemons(keeper, "fb")] == [again["pid"]]
    assert len(fake.calls()) == 1  # the turn ran to its end once, not again on the new daemon

    keeper_saved = json.loads((keeper.dir / STATE_FILE).read_text())["bots"]["fb"]["code"]
    assert keeper_saved != "0.0.1@1"
    assert await keeper.stop() == 0  # on the code it runs, a bot is adopted as it is
    keeper.start()
    await eventually(lambda: len(keeper.events("started")) == 3, "the third keeper", 30)
    await eventually(lambda: said != [e.get("detail") for e in keeper.events("state")], "adoption", 30)
    assert (await running(world, "fb"))["pid"] == again["pid"]


async def test_a_daemon_run_by_hand_with_another_profile_gives_way_to_the_assigned_one(
    world: World, live: LiveBoard, keeper: KeeperProcess, tmp_path: Path
) -> None:
    """A keeper adopts a running daemon only when it runs the profile the board assigned: the
    fleet page must not show proj-dev for a daemon someone started with proj-alt."""
    await world.human.create_profile("proj-alt", "proj", "claude", repo=str(tmp_path / "repo"))
    await world.human.assign_bot("box1", "proj-dev", "fb")
    bot = await running(world, "fb")
    assert await keeper.stop() == 0
    os.kill(bot["pid"], signal.SIGKILL)
    await eventually(lambda: daemons(keeper, "fb") == [], "the keeper's daemon gone", 30)
    argv = ["bot", "run", "--handle", "fb", "--profile", "proj-alt", "--board", live.url]
    by_hand = subprocess.Popen(
        [sys.executable, "-m", "board", *argv],
        env=keeper.env,
        cwd=tmp_path / "repo",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        await eventually(
            lambda: running_pid(keeper.bots_dir / "fb" / PID_FILE) == by_hand.pid, "the hand-run lock", 30
        )
        keeper.start()
        await eventually(lambda: by_hand.poll() is not None, "the hand-run daemon stopped", 30)
        [assigned] = await eventually(lambda: daemons(keeper, "fb"), "the assigned daemon", 30)
        assert "proj-dev" in assigned.cmdline()
        again = await running(world, "fb", other_than=bot["pid"])  # the last report before the keeper stopped
        assert again["pid"] == assigned.pid
        said = [e.get("detail", "") for e in keeper.events("state")]
        assert any(f"pid {by_hand.pid} runs with profile proj-alt, not proj-dev" in d for d in said)
    finally:
        if by_hand.poll() is None:
            by_hand.kill()
        by_hand.wait()


async def test_board_down_bots_keep_running_and_the_keeper_catches_up(
    world: World, live: LiveBoard, keeper: KeeperProcess
) -> None:
    await world.human.assign_bot("box1", "proj-dev", "fb")
    bot = await running(world, "fb")
    await live.stop()
    await eventually(lambda: keeper.events("board_retry"), "the keeper to miss the board", 30)
    assert psutil.pid_exists(bot["pid"]) and daemons(keeper, "fb")[0].pid == bot["pid"]
    os.kill(bot["pid"], signal.SIGKILL)  # what happens meanwhile is reported later
    await eventually(
        lambda: len([p for p in daemons(keeper, "fb") if p.pid != bot["pid"]]) == 1,
        "a restart while away",
        30,
    )

    board = await live.start()  # the same port and database; the clients reconnect
    human = world.human
    board.clients.append(human)
    await eventually(lambda: keeper.events("board_back"), "the keeper to reach the board again", 30)
    again = await running(world, "fb", other_than=bot["pid"])
    assert again["restarts"] >= 1
    audit = (await human.audit(limit=500))["entries"]
    states = [e["details"]["state"] for e in audit if e["action"] == "fleet.bot.state"]
    assert states.count("starting") >= 2 and "backoff" in states


async def test_a_mention_wakes_the_bot_and_the_report_shows_the_wake(
    world: World, keeper: KeeperProcess
) -> None:
    await world.human.assign_bot("box1", "proj-dev", "fb")
    await running(world, "fb")
    await world.human.post("@fb please look", channel="lobby", workspace="proj")

    async def woke() -> dict[str, Any] | None:
        bot = await fleet_bot(world, "fb")
        return bot if bot and bot.get("last_wake") else None

    bot = await eventually(woke, "the wake on the fleet report", 60, 0.1)
    wake = bot["last_wake"]
    # The daemon saves its last wake (which its keeper reports) before it records the wake.
    recorded = await eventually(lambda: wakes(world.human, "fb"), "the wake record", 30)
    # The fake prices its usage model: the report carries the cost the wake record has.
    assert wake["outcome"] == "ok" and wake["cost_usd"] == pytest.approx(recorded[-1]["cost_usd"])
    assert wake["cost_usd"] > 0
    assert wake["duration_s"] >= 0 and wake["at"]
    assert bot["log_tail"] and any('"turn_ended"' in line for line in bot["log_tail"])


async def test_stopping_a_bot_mid_turn_ends_its_harness_too(
    world: World, keeper: KeeperProcess, fake: Fake
) -> None:
    fake.script({"do": "hang", "seconds": 120})
    await world.human.assign_bot("box1", "proj-dev", "fb")
    await running(world, "fb")
    await world.human.post("@fb a long one", channel="lobby", workspace="proj")
    waking = await state(world, "fb", "waking")
    harness = waking["harness"]
    assert harness["pid"] != waking["pid"] and psutil.pid_exists(harness["pid"])
    groups = {os.getpgid(waking["pid"]), os.getpgid(harness["pid"])}
    assert len(groups) == 2  # the harness runs in a group of its own

    await world.human.fleet_order("fb", "stop")
    await state(world, "fb", "stopped")
    assert all(group_gone(g) for g in groups)


async def test_a_command_harness_bot_runs_from_its_profile_alone(world: World, keeper: KeeperProcess) -> None:
    """The keeper passes nothing but the profile's name: the template comes from the profile."""
    template = "sh -c 'echo answered by the profile template' {prompt}"
    await world.human.create_profile("cmd-dev", "proj", "command", command_template=template)
    assert (await world.human.profile("cmd-dev"))["command_template"] == template
    await world.human.assign_bot("box1", "cmd-dev", "cmdbot")
    await running(world, "cmdbot")
    posted = await world.human.post("@cmdbot please look", channel="lobby", workspace="proj")

    async def answered() -> bool:
        thread = await world.human.thread(posted["id"])
        return any("answered by the profile template" in m["body"] for m in thread["messages"])

    await eventually(answered, "the command's answer in the thread", 60, 0.2)
    assert (await fleet_bot(world, "cmdbot"))["restarts"] == 0  # type: ignore[index]
