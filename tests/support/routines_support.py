"""Test support for routines: a board on a manual clock, runner processes on the same clock.

The board runs in the test's process (loopback HTTP, a real database file) on a
:class:`ManualClock`; each runner is a real ``board routines run`` process that
reads the time from a file. :class:`Time` moves both at once, so the test alone
decides when anything is due.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from board.client import BoardClient
from board.server.clock import ManualClock, iso, parse_time
from tests.support.boardtest import Board
from tests.support.processes import board_env, command, kill

T = TypeVar("T")


@dataclass
class Time:
    """The board's clock and the runners' clock file, moved together."""

    clock: ManualClock
    file: Path

    def __post_init__(self) -> None:
        self._write()

    def _write(self) -> None:
        """Replace the file whole, so a runner never reads it half written."""
        fresh = self.file.with_suffix(".new")
        fresh.write_text(iso(self.clock.now()))
        os.replace(fresh, self.file)

    def now(self) -> datetime:
        return self.clock.now()

    def move_to(self, text: str) -> None:
        target = parse_time(text)
        assert target >= self.clock.now(), "time only moves forward"
        self.clock.advance((target - self.clock.now()).total_seconds())
        self._write()


@dataclass
class RunnerProcess:
    proc: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        kill(self.proc)

    async def ended(self, timeout: float = 30) -> int:
        """The exit code of a runner that exits by itself; fails, with its output, if it does not."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while (code := self.proc.poll()) is None:
            assert loop.time() < deadline, f"the runner did not exit:\n{self.output()}"
            await asyncio.sleep(0.05)
        return code


def start_runner(
    board: Board, token: str, time_: Time | None, name: str = "runner", url: str | None = None
) -> RunnerProcess:
    """A runner checking every 0.2 s, on the test's clock file, or on the wall clock without one;
    against ``url`` instead of the board's when given (a board that is not there)."""
    log = board.home / f"{name}-{time.monotonic_ns()}.log"
    args = ["routines", "run", "--board", url or board.url, "--check-every", "0.2"]
    if time_ is not None:
        args += ["--clock-file", str(time_.file)]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command(*args),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=board_env(BOARD_ROUTINES_TOKEN=token),
            start_new_session=True,
        )
    return RunnerProcess(proc, log)


async def until(
    check: Callable[[], Awaitable[T | None]],
    what: str,
    runners: tuple[RunnerProcess, ...] = (),
    timeout: float = 60,
) -> T:
    """The first truthy answer of ``check``; fails naming ``what`` (and the runners' output)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not (value := await check()):
        for runner in runners:
            assert runner.proc.poll() is None, f"runner exited:\n{runner.output()}"
        if loop.time() > deadline:
            logs = "\n".join(r.output() for r in runners)
            raise AssertionError(f"never happened: {what}\n{logs}")
        await asyncio.sleep(0.05)
    return value


async def runs(client: BoardClient, name: str) -> list[dict[str, Any]]:
    """The routine's runs, oldest first."""
    return list(reversed((await client.routine_runs(name, limit=500))["runs"]))


async def propose_and_approve(
    bot: BoardClient, human: BoardClient, name: str, schedule: str, **fields: Any
) -> dict[str, Any]:
    await bot.propose_routine(
        name, workspace="proj", schedule=schedule, bot="pb", prompt=f"Do {name}.", **fields
    )
    return await human.approve_version(name, 1, "approved for the test")


class StuckBoard:
    """A board whose answer to a check's read never comes: the check stays under way, and once
    cancelled takes a moment to hang up, as a client closing its connection may."""

    def __init__(self) -> None:
        self.reads = 0
        self.under_way = asyncio.Event()
        self.ended = False

    async def routines(self, since: int | None = None, wait: int | None = None) -> dict[str, Any]:
        self.reads += 1
        if wait is not None:  # the runner's long poll: nothing changes
            await asyncio.sleep(3600)
        elif self.reads > 1:  # a check APScheduler fired
            self.under_way.set()
            try:
                await asyncio.sleep(3600)
            finally:
                await asyncio.sleep(0.2)
                self.ended = True
        return {"cursor": 1, "routines": []}
