"""``keeper run``: report, hear the desired state, reconcile; until SIGTERM.

Two loops share one :class:`~.supervisor.Supervisor`: the check loop looks at
the bot processes every ``KEEPER_CHECK`` seconds, and the report loop tells the
board what runs every ``KEEPER_INTERVAL`` seconds (sooner when something
changed) and applies its answer. While the board cannot be reached the bots
keep running as they are, the journal keeps what happens, and the report loop
retries with a backoff up to ``KEEPER_RETRY_MAX``; the first report that gets
through carries everything that happened meanwhile.

One keeper per machine: ``keeper.pid`` is locked for the keeper's life.
Stopping the keeper leaves its bots running; the next keeper adopts them.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Mapping
from pathlib import Path

from ..client import BoardAPIError, BoardClient
from ..launcher.daemon import AlreadyRunning, PidLock, running_pid
from ..launcher.logs import EventLog
from ..launcher.loop import backoff
from . import report, worktrees
from .config import LOG_FILE, PID_FILE, Enrolled, Timing, bot_environment
from .supervisor import Supervisor

EXIT_OK, EXIT_CONFIG, EXIT_RUNNING = 0, 2, 4
MIN_GAP = 1.0  # seconds: the least time between two reports, however much changes


async def _until(stop: asyncio.Event, seconds: float, also: asyncio.Event | None = None) -> bool:
    """Wait ``seconds``, or less if ``stop`` (or ``also``) is set; whether ``stop`` is."""
    waits = [asyncio.ensure_future(e.wait()) for e in (stop, also) if e is not None]
    _, pending = await asyncio.wait(waits, timeout=max(0.0, seconds), return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    return stop.is_set()


class Keeper:
    """The keeper of one machine."""

    def __init__(
        self, directory: Path, enrolled: Enrolled, timing: Timing, environ: Mapping[str, str], log: EventLog
    ) -> None:
        self.enrolled = enrolled
        self.timing = timing
        self.log = log
        self.client = BoardClient(enrolled.board, enrolled.token, timeout=max(10.0, 3 * timing.interval))
        self.sup = Supervisor(directory, enrolled.board, timing, bot_environment(environ), log, self.mint)
        self.failures = 0
        self.told_gone: set[tuple[str, int, str]] = set()  # (bot, thread, path) the board has heard of

    async def mint(self, handle: str) -> str | None:
        """A fresh token for one of this machine's bots, or None when the board will not give one now."""
        try:
            return str((await self.client.bot_token(handle))["token"])
        except BoardAPIError as exc:
            self.log.event("token_failed", bot=handle, code=exc.code, error=exc.message[:200])
            return None

    async def report_once(self) -> bool:
        body = report.report(self.sup)
        try:
            answer = await self.client.fleet_report(body)
        except BoardAPIError as exc:
            if exc.code == "UNAUTHENTICATED":
                self.forgotten(exc.message)
            self.failures += 1
            if self.failures in (1, 10) or self.failures % 100 == 0:
                self.log.event("board_retry", code=exc.code, attempt=self.failures, error=exc.message[:200])
            return False
        if self.failures:
            self.log.event("board_back", attempts=self.failures, events=len(body["events"]))
        self.failures = 0
        self.sup.reported(int(answer.get("event_seq", 0)), len(body["acks"]))
        self.sup.apply(answer)
        await self.tell_gone()
        return True

    async def tell_gone(self) -> None:
        """Tell the board of each kept worktree whose folder is gone, once: its thread's page read
        "kept" until the daemon looked again, which it does only at its next turn or start."""
        seen: set[tuple[str, int, str]] = set()
        for handle in list(self.sup.slots):
            for thread, path in worktrees.gone(self.sup.bot_dir(handle)).items():
                key = (handle, thread, path)
                seen.add(key)
                if key in self.told_gone:
                    continue
                try:
                    await self.client.worktree_gone(handle, thread)
                except BoardAPIError as exc:
                    if exc.code not in ("NOT_FOUND", "INVALID_ARGUMENT"):
                        continue  # asked again after the next report
                    self.log.event(
                        "worktree_gone_refused", bot=handle, thread=thread, error=exc.message[:200]
                    )
                else:
                    self.log.event("worktree_gone", bot=handle, thread=thread, path=path[:300])
                self.told_gone.add(key)
        self.told_gone &= seen  # bounded: only entries the bots' state files still list

    def forgotten(self, why: str) -> None:
        """The board refuses this machine's token: the machine was removed, or enrolled again
        elsewhere. None of its bots is this keeper's to run any more (their tokens are revoked,
        or belong to the other keeper): stop them all, and keep asking in case it comes back."""
        if any(slot.desired != "gone" for slot in self.sup.slots.values()):
            self.log.event("refused", bots=len(self.sup.slots), error=why[:200])
            self.sup.apply({"bots": [], "orders": []})

    async def report_loop(self, stop: asyncio.Event) -> None:
        """Report every interval, and soon after a change (at most once a second); back off while refused."""
        while not stop.is_set():
            self.sup.changed.clear()
            if not await self.report_once():
                cap = max(self.timing.retry_max, self.timing.interval)
                await _until(stop, backoff(self.failures, self.timing.interval, cap))
                continue
            gap = min(MIN_GAP, self.timing.interval)
            if await _until(stop, gap):
                return
            await _until(stop, self.timing.interval - gap, self.sup.changed)

    async def check_loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.sup.check()
            except Exception as exc:  # one bad look must not end supervision of every bot
                self.log.event("check_failed", error=f"{type(exc).__name__}: {exc}"[:300])
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.timing.check)

    async def run(self, stop: asyncio.Event) -> None:
        self.sup.load()
        self.log.event(
            "started", machine=self.enrolled.machine, board=self.enrolled.board, bots=len(self.sup.slots)
        )
        try:
            await asyncio.gather(self.check_loop(stop), self.report_loop(stop))
        finally:
            await self.sup.close()
            await self.client.close()
            self.log.event("stopped", bots=len(self.sup.slots))


async def run(directory: Path, enrolled: Enrolled, timing: Timing, environ: Mapping[str, str]) -> int:
    """keeper run: the keeper's whole life; returns the process exit code."""
    lock = PidLock(directory / PID_FILE)
    try:
        lock.acquire()
    except AlreadyRunning:
        pid = running_pid(directory / PID_FILE)
        print(f"keeper: a keeper already runs from {directory} (pid {pid})", file=sys.stderr, flush=True)
        return EXIT_RUNNING
    log = EventLog(directory / LOG_FILE, handle=f"keeper:{enrolled.machine}", secrets=[enrolled.token])
    keeper = Keeper(directory, enrolled, timing, environ, log)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await keeper.run(stop)
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        lock.release()
    return EXIT_OK
