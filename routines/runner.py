"""The routines runner: APScheduler fires the checks, the board decides what exists.

The runner is a client of the board (``board.client``) holding a runner token. It
long-polls ``GET /api/routines?since=`` and, whenever something changes,
reschedules one APScheduler job per active routine on the routine's own trigger
(cron in its time zone, or an interval), with misfire grace and coalescing. A
steady ``check`` job runs beside them, to follow open runs and to catch what a
trigger cannot know about (a restart, a run asked for now).

Every check reads the routine from the board and asks the schedule for the latest
time in ``(covered until, now]``: the board says until when the schedule is covered
(the activation, the latest scheduled run, or that run's start when it began
later, as one that waited through quiet hours). Missed times are coalesced:
the latest becomes one run if it is late by at most the grace, else a ``missed``
record. The run is created on the board's unique ``(routine, scheduled_for)``, so
a second runner, a restart or a trigger racing the check never makes it twice;
then it is started (outside quiet hours, unless a human asked for it now; the board
posts the prompt mentioning the bot), and followed until the board has seen the claim the bot took for it
closed (``done``) or a failed wake (``failed``), or its maximum run time passed
(``timed_out``); the board releases the claim of a run that did not end ``done``.
The runs of a routine share its thread and so its claim: one runs at a time. The
next, the oldest waiting, starts in the pass that sees the running one end (the
board refuses a start while one runs, whoever asks).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler  # type: ignore[import-untyped]
from apscheduler.triggers.interval import IntervalTrigger  # type: ignore[import-untyped]

from board.client import BoardAPIError, BoardClient

from . import schedule as schedules

log = logging.getLogger("routines")

#: Refusals that mean another runner, or a human, got there first: nothing to do.
LOST_RACE = ("NAME_CONFLICT", "VERSION_CONFLICT")
#: Refusals of the token itself (unknown or revoked, or not a runner's): asking again cannot help.
#: A check's FORBIDDEN is not one: it may be one routine's (its workspace archived).
REFUSED = ("UNAUTHENTICATED", "FORBIDDEN")
LONG_POLL_SECONDS = 50
RETRY_SECONDS = 2.0
#: Seconds a stopping runner waits for its cancelled passes to end (each ends at its next await).
STOP_SECONDS = 10.0


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class WallClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class FileClock:
    """The time written in a file (RFC 3339): a clock a test moves by rewriting it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def now(self) -> datetime:
        return parse_time(self.path.read_text().strip())


Clock = WallClock | FileClock


class TokenRefused(Exception):
    """The board refused the runner's token: the runner stops, and a human makes it a new one."""

    @classmethod
    def by(cls, refusal: BoardAPIError) -> TokenRefused:
        return cls(f"the board refused the runner's token ({refusal.code}: {refusal.message})")


class Runner:
    """Runs every approved routine of one board at its times, exactly once per time."""

    def __init__(self, client: BoardClient, clock: Clock | None = None, *, check_every: float = 30.0) -> None:
        self.client = client
        self.clock = clock or WallClock()
        self.check_every = check_every
        self.scheduler = AsyncIOScheduler(timezone=UTC)
        self._lock = asyncio.Lock()
        self._jobs: dict[str, tuple[Any, ...]] = {}  # routine -> what its job was made from
        self._started = False  # the first pass after start makes catch-up runs
        self._passes: set[asyncio.Task[Any]] = set()  # the passes under way, and the follow of changes
        self._refused: asyncio.Future[TokenRefused] | None = None  # set by a pass the board refused

    async def run(self) -> None:
        """Until cancelled, or the board refuses the token: follow the board's changes and fire
        the checks.

        Cancelled (the board stopping, or its duty lost to another process), it returns once
        the passes under way have ended too, not beside the next holder's runner. A pass
        stopped between two board calls leaves the board whole: each call is one write, and a
        run it left running is followed by whichever runner checks next.

        A token the board refuses (unknown, revoked, or not a runner's) raises
        :class:`TokenRefused`, after the passes under way have ended: every later call would
        be refused the same. Any other failure to reach the board is retried.
        """
        refused: asyncio.Future[TokenRefused] = asyncio.get_running_loop().create_future()
        self._refused = refused
        self.scheduler.add_job(
            self._fired,
            IntervalTrigger(seconds=self.check_every, timezone=UTC),
            id="check",
            coalesce=True,
            max_instances=1,
            misfire_grace_time=None,
        )
        self.scheduler.start()
        follow = asyncio.create_task(self._follow_changes(), name="routines-follow")
        self._passes.add(follow)  # ended with the passes, however the runner stops
        try:
            await asyncio.wait((follow, refused), return_when=asyncio.FIRST_COMPLETED)
            if follow.done():
                follow.result()  # what ended it: a refusal it met itself, or a crash
            raise refused.result()
        finally:
            self.scheduler.shutdown(wait=False)  # fires nothing more
            await self._end_passes()

    async def _end_passes(self) -> None:
        """Cancel the passes under way and wait for them to end, for :data:`STOP_SECONDS` at
        most, through any further cancel of this task: the duty lost and the board stopping
        each cancel it, and the second must not leave a pass running. A cancel meanwhile is
        raised once they have ended."""
        left = set(self._passes)
        for task in left:
            task.cancel()
        loop = asyncio.get_running_loop()
        deadline, cancelled = loop.time() + STOP_SECONDS, False
        while left and (remaining := deadline - loop.time()) > 0:
            try:
                _, left = await asyncio.wait(left, timeout=remaining)
            except asyncio.CancelledError:
                cancelled = True
        if left:
            log.warning("routines: %d check(s) still under way as the runner stops", len(left))
        if cancelled:
            raise asyncio.CancelledError

    async def _fired(self) -> None:
        """A pass APScheduler fired, in a task of its own, which :meth:`run` ends with the runner:
        APScheduler's shutdown cancels it without waiting, and reports the cancel as a failure."""
        task = asyncio.current_task()
        assert task is not None
        self._passes.add(task)
        try:
            await self.check_all()
        except asyncio.CancelledError:
            log.info("routines: a check stopped with the runner")
        except TokenRefused as exc:
            assert self._refused is not None
            if not self._refused.done():
                self._refused.set_result(exc)
        finally:
            self._passes.discard(task)

    async def _follow_changes(self) -> None:
        cursor: int | None = None
        while True:
            wait = LONG_POLL_SECONDS if cursor is not None else None
            try:
                page = await self.client.routines(since=cursor, wait=wait)
            except BoardAPIError as exc:
                if exc.code in REFUSED:
                    raise TokenRefused.by(exc) from exc
                log.warning("routines: cannot read the board (%s); retrying", exc.code)
                await asyncio.sleep(RETRY_SECONDS)
                continue
            if page["cursor"] != cursor:
                cursor = page["cursor"]
                self._reschedule(page["routines"])
                await self.check_all(page["routines"])

    def _reschedule(self, routines: list[dict[str, Any]]) -> None:
        """One job per active routine on its own trigger; a job whose routine changed is replaced."""
        wanted: dict[str, tuple[Any, ...]] = {}
        for routine in routines:
            approved = routine["approved"]
            if routine["state"] == "active" and approved is not None:
                wanted[routine["name"]] = (
                    approved["version"],
                    approved["schedule"],
                    approved["timezone"],
                    approved["grace_seconds"],
                    routine["active_since"],
                )
        for name in set(self._jobs) - set(wanted):
            self.scheduler.remove_job(f"routine:{name}")
            del self._jobs[name]
        for name, made_of in wanted.items():
            if self._jobs.get(name) == made_of:
                continue
            _, text, zone, grace, active_since = made_of
            trigger = schedules.parse(text, zone).trigger(parse_time(active_since))
            self.scheduler.add_job(
                self._fired,
                trigger,
                id=f"routine:{name}",
                replace_existing=True,
                misfire_grace_time=max(1, grace),
                coalesce=True,
                max_instances=1,
            )
            self._jobs[name] = made_of

    async def check_all(self, routines: list[dict[str, Any]] | None = None) -> None:
        """Create what is due, start what waits, finish what ended; one pass at a time."""
        async with self._lock:
            now = self.clock.now()  # one time for the whole pass
            try:
                if routines is None:
                    routines = (await self.client.routines())["routines"]
                for routine in routines:
                    await self.check(routine, now)
            except BoardAPIError as exc:
                if exc.code == "UNAUTHENTICATED":  # revoked: every later call is refused the same
                    raise TokenRefused.by(exc) from exc
                log.warning("routines: check failed (%s: %s)", exc.code, exc.message)
            except Exception:  # the next check tries again; a runner that dies runs nothing
                log.exception("routines: check failed")
            else:
                if isinstance(self.clock, FileClock):  # a test's clock: say which time was checked
                    log.info("routines: checked every routine at %s", iso(now))
            self._started = True

    async def check(self, routine: dict[str, Any], now: datetime) -> None:
        approved = routine["approved"]
        if approved is None:
            return
        parsed = schedules.parse(approved["schedule"], approved["timezone"])
        waiting = any(r["state"] == "scheduled" and r["cause"] != "run-now" for r in routine["open_runs"])
        if routine["state"] == "active" and not waiting:  # a waiting run takes the times it waits through
            await self._create_due(routine, approved, parsed, now)
        open_runs = (await self.client.routine(routine["name"]))["open_runs"]
        if any(run["state"] == "running" for run in open_runs) and await self._follow(routine, approved, now):
            open_runs = (await self.client.routine(routine["name"]))["open_runs"]
        if any(run["state"] == "running" for run in open_runs):
            return  # the runs share the routine's thread and its claim: the next waits for this one
        quiet = schedules.in_quiet_hours(approved["quiet_hours"], parsed.zone, now)
        for run in open_runs:  # oldest first: the first that may start is the one that runs
            # A human's run-now is for now: quiet hours and a pause hold the schedule's runs only.
            waits = run["cause"] != "run-now" and (quiet or routine["state"] == "paused")
            if run["state"] == "scheduled" and not waits:
                await self._step(f"start run {run['id']}", routine, self.client.start_run, run["id"])
                return

    async def _create_due(
        self, routine: dict[str, Any], approved: dict[str, Any], parsed: schedules.Schedule, now: datetime
    ) -> None:
        anchor = parse_time(routine["active_since"])
        after = anchor
        if routine.get("covered_until"):
            after = max(after, parse_time(routine["covered_until"]))
        last, count = parsed.last_between(after, now, anchor)
        if last is None:
            return
        late = (now - last).total_seconds()
        coalesced = f"; {count - 1} earlier missed time(s) coalesced into it" if count > 1 else ""
        if late <= approved["grace_seconds"]:
            cause = "catch-up" if count > 1 or not self._started else "schedule"
            fields: dict[str, Any] = {"cause": cause, "outcome": ""}
        else:
            grace = approved["grace_seconds"]
            why = f"late by {int(late)} s, beyond the grace of {grace} s{coalesced}"
            fields = {"state": "missed", "cause": "catch-up", "outcome": why}
        await self._step(
            f"create the run for {iso(last)}",
            routine,
            self.client.create_run,
            approved["version"],
            iso(last),
            **fields,
        )

    async def _follow(self, routine: dict[str, Any], approved: dict[str, Any], now: datetime) -> bool:
        """Finish each running run the board saw end; whether any was."""
        ended = False
        for run in (await self.client.routine_runs(routine["name"], limit=50))["runs"]:
            if run["state"] != "running":
                continue
            seen = run.get("seen") or {}
            if seen.get("claim") == "done":
                end = ("done", seen.get("summary") or "")
            elif seen.get("wake"):
                end = ("failed", f"the bot's wake ended {seen['wake']}: {seen.get('error', '')}".strip(": "))
            elif (now - parse_time(run["started_at"])).total_seconds() > approved["max_run_seconds"]:
                end = ("timed_out", f"no done within {approved['max_run_seconds']} s")
            else:
                continue
            await self._step(
                f"finish run {run['id']} as {end[0]}", routine, self.client.finish_run, run["id"], *end
            )
            ended = True
        return ended

    async def _step(
        self,
        what: str,
        routine: dict[str, Any],
        call: Callable[..., Awaitable[Any]],
        *args: Any,
        **kwargs: Any,
    ) -> None:
        try:
            result = await call(routine["name"], *args, **kwargs)
        except BoardAPIError as exc:
            if exc.code not in LOST_RACE:
                raise
            log.info("routines: %s: %s: %s", routine["name"], what, exc.message)
            return
        log.info("routines: %s: %s: run %s is %s", routine["name"], what, result["id"], result["state"])
