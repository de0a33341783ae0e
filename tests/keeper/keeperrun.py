"""A real ``keeper run`` process beside a live board, with the fake harnesses on PATH.

The keeper starts real ``bot run`` daemons; every interval is short so a crash
loop or an outage plays out in seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil

from tests.launcher.botrun import ROOT
from tests.launcher.fakeharness import FAKES_BIN, SANDBOX_ENV, Fake
from tests.support.boardtest import World, eventually

FAST = {
    "KEEPER_INTERVAL": "0.3",
    "KEEPER_CHECK": "0.1",
    "KEEPER_STOP_GRACE": "5",
    "KEEPER_BACKOFF_MIN": "0.2",
    "KEEPER_BACKOFF_MAX": "1",
    "KEEPER_RETRY_MAX": "0.5",
    "BOT_JITTER": "0",
    "BOT_TURN_TIMEOUT": "20",
    "BOT_BOARD_RETRY_MAX": "0.5",
    "BOT_STOP_GRACE": "2",
}


class KeeperProcess:
    """``python -m board.keeper`` in the test's directories."""

    def __init__(self, tmp_path: Path, fake: Fake, **env: str) -> None:
        self.tmp_path = tmp_path
        self.dir = tmp_path / "keeper"
        self.bots_dir = tmp_path / "bots"
        home = tmp_path / "home"
        home.mkdir(exist_ok=True)
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("BOT_", "BOARD_", "KEEPER_"))},
            "PATH": f"{FAKES_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONPATH": str(ROOT),
            "HOME": str(home),
            "FAKE_HARNESS_DIR": str(fake.root),
            "KEEPER_STATE_DIR": str(self.dir),
            "BOT_STATE_DIR": str(self.bots_dir),
            **SANDBOX_ENV,
            **FAST,
            **env,
        }
        self.proc: subprocess.Popen[bytes] | None = None
        self.runs = 0

    async def command(self, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
        """``keeper ARGS`` to its end (without blocking the board in this event loop): code, output."""
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "board.keeper",
            *args,
            env={**self.env, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
        return int(proc.returncode or 0), out.decode(errors="replace")

    async def enroll(self, board_url: str, code: str) -> tuple[int, str]:
        return await self.command("enroll", "--board", board_url, env={"KEEPER_ENROLL_CODE": code})

    def start(self) -> KeeperProcess:
        self.runs += 1
        out = (self.tmp_path / f"keeper-{self.runs}.out").open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "board.keeper", "run"],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
        )
        out.close()
        return self

    def output(self) -> str:
        return "".join(
            (self.tmp_path / f"keeper-{n}.out").read_text(errors="replace") for n in range(1, self.runs + 1)
        )

    def events(self, name: str | None = None) -> list[dict[str, Any]]:
        path = self.dir / "keeper.log"
        if not path.exists():
            return []
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return [r for r in rows if name is None or r["event"] == name]

    async def stop(self) -> int:
        """SIGTERM and wait: the bots it runs keep running."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        proc = self.proc
        await eventually(lambda: proc.poll() is not None, "the keeper to exit", 20)
        return int(proc.returncode)


def bot_daemons(root: Path) -> list[psutil.Process]:
    """Every live ``bot run`` process working under ``root`` (not zombies): a test's own,
    never another checkout's running at the same time."""
    found = []
    for proc in psutil.process_iter(["cmdline", "cwd", "status"]):
        cmd, cwd = proc.info["cmdline"] or [], proc.info["cwd"] or ""
        if proc.info["status"] == psutil.STATUS_ZOMBIE or "run" not in cmd or "--handle" not in cmd:
            continue
        if Path(cwd).is_relative_to(root):
            found.append(proc)
    return found


def daemons(keeper: KeeperProcess, handle: str) -> list[psutil.Process]:
    """The live ``bot run`` processes of this handle under the test's keeper."""
    return [p for p in bot_daemons(keeper.dir.parent) if _handle(p) == handle]


def _handle(proc: psutil.Process) -> str | None:
    with contextlib.suppress(psutil.Error):
        cmd = proc.cmdline()
        return cmd[cmd.index("--handle") + 1] if "--handle" in cmd[:-1] else None
    return None


def group_gone(pgid: int) -> bool:
    """No live member left in a process group (zombies waiting for their reaper do not count)."""
    for proc in psutil.process_iter(["status"]):
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                return False
    return True


def kill_under(root: Path) -> None:
    """Kill every ``bot run`` daemon working under ``root``, whatever its handle: a keeper
    leaves its daemons running when it stops (for the next keeper), so a test must end them."""
    for proc in bot_daemons(root):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


async def fleet_bot(world: World, handle: str) -> dict[str, Any] | None:
    for machine in (await world.human.fleet())["machines"]:
        for bot in machine["bots"]:
            if bot["handle"] == handle:
                return dict(bot)
    return None


async def running(world: World, handle: str, *, other_than: int | None = None) -> dict[str, Any]:
    """Wait until the fleet shows the bot running with a live pid (another one than ``other_than``)."""

    async def probe() -> dict[str, Any] | None:
        bot = await fleet_bot(world, handle)
        if not bot or bot["state"] not in ("running", "waking") or bot.get("pid") in (None, other_than):
            return None
        return bot if psutil.pid_exists(bot["pid"]) else None

    return await eventually(probe, f"{handle} running", 60, 0.1)


async def state(world: World, handle: str, wanted: str) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        bot = await fleet_bot(world, handle)
        return bot if bot and bot["state"] == wanted else None

    return await eventually(probe, f"{handle} {wanted}", 60, 0.1)
