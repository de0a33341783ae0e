"""What a routine's schedule means: its APScheduler trigger, its fire times, its quiet hours.

The board (to validate a proposal and show the next run) and the runner (to decide
which run is due) read a schedule through this one module, so they agree on every
time. A cron schedule fires on its own wall-clock times in the routine's time
zone; an interval schedule (``every 15m``) fires at whole multiples of the
interval after the moment the approved version became active, so every runner on
the board computes the same times.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.triggers.base import BaseTrigger  # type: ignore[import-untyped]
from apscheduler.triggers.cron import CronTrigger  # type: ignore[import-untyped]
from apscheduler.triggers.interval import IntervalTrigger  # type: ignore[import-untyped]

EVERY = re.compile(r"every (\d{1,6})([smh])")
QUIET = re.compile(r"([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-3]):([0-5]\d)")
UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600}
UNIT_WORDS = {"s": "second", "m": "minute", "h": "hour"}
DAYS = {"0": "Sunday", "1": "Monday", "2": "Tuesday", "3": "Wednesday", "4": "Thursday", "5": "Friday"}
DAYS |= {"6": "Saturday", "7": "Sunday", "mon": "Monday", "tue": "Tuesday", "wed": "Wednesday"}
DAYS |= {"thu": "Thursday", "fri": "Friday", "sat": "Saturday", "sun": "Sunday", "1-5": "weekday"}
TICK = timedelta(microseconds=1)
MIN_INTERVAL_SECONDS = 10


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule: ``text`` as proposed, in time zone ``zone``."""

    text: str
    zone: ZoneInfo
    interval: int | None  # seconds, for ``every <N><unit>``

    def trigger(self, anchor: datetime) -> BaseTrigger:
        """The APScheduler trigger; ``anchor`` is where an interval counts from."""
        if self.interval is not None:
            return IntervalTrigger(seconds=self.interval, start_date=anchor, timezone=self.zone)
        return CronTrigger.from_crontab(self.text, timezone=self.zone)

    def next_after(self, moment: datetime, anchor: datetime) -> datetime | None:
        """The first fire time strictly after ``moment``, in UTC."""
        found = self.trigger(anchor).get_next_fire_time(None, moment.astimezone(self.zone) + TICK)
        return found.astimezone(UTC) if found is not None else None

    def last_between(self, after: datetime, until: datetime, anchor: datetime) -> tuple[datetime | None, int]:
        """The latest fire time in ``(after, until]`` and how many there were (at most 10,000 counted)."""
        last, count = None, 0
        moment = after
        while count < 10_000 and (found := self.next_after(moment, anchor)) is not None and found <= until:
            last, count, moment = found, count + 1, found
        return last, count

    def words(self) -> str:
        """The schedule as a person says it: "every day at 02:00 Europe/Paris"."""
        zone = str(self.zone)
        if self.interval is not None:
            match = EVERY.fullmatch(self.text)
            assert match is not None
            n, unit = int(match[1]), UNIT_WORDS[match[2]]
            return f"every {unit}" if n == 1 else f"every {n} {unit}s"
        minute, hour, dom, month, dow = self.text.split()
        if minute.isdigit() and hour.isdigit() and dom == "*" and month == "*":
            at = f"{int(hour):02d}:{int(minute):02d} {zone}"
            if dow == "*":
                return f"every day at {at}"
            if dow.lower() in DAYS:
                return f"every {DAYS[dow.lower()]} at {at}"
        if minute.isdigit() and hour == "*" and dom == month == dow == "*":
            return f"every hour at minute {int(minute)}"
        if minute.startswith("*/") and hour == dom == month == dow == "*":
            return f"every {minute[2:]} minutes"
        return f"cron '{self.text}' ({zone})"


def parse(text: str, timezone: str = "UTC") -> Schedule:
    """A schedule from its proposal, or ValueError saying what to change."""
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"Unknown time zone {timezone!r}; use an IANA name such as Europe/Paris.") from None
    match = EVERY.fullmatch(text)
    if match is not None:
        seconds = int(match[1]) * UNIT_SECONDS[match[2]]
        if seconds < MIN_INTERVAL_SECONDS:
            raise ValueError(f"An interval is at least {MIN_INTERVAL_SECONDS} s; got {text!r}.")
        return Schedule(text, zone, seconds)
    if len(text.split()) != 5 or text != " ".join(text.split()):
        raise ValueError(f"A schedule is a 5-field cron string or 'every <N>s|m|h'; got {text[:80]!r}.")
    try:
        CronTrigger.from_crontab(text, timezone=zone)
    except ValueError as exc:
        raise ValueError(f"Not a valid cron schedule {text[:80]!r}: {exc}.") from None
    return Schedule(text, zone, None)


def in_quiet_hours(quiet: str | None, zone: ZoneInfo, moment: datetime) -> bool:
    """Whether ``moment`` falls in ``quiet`` ("22:00-07:00", wall time in ``zone``)."""
    if not quiet:
        return False
    start, end = _quiet_bounds(quiet)
    local = moment.astimezone(zone).time()
    if start <= end:
        return start <= local < end
    return local >= start or local < end


def quiet_until(quiet: str | None, zone: ZoneInfo, moment: datetime) -> datetime:
    """When a run due at ``moment`` may start: the end of the quiet hours it falls in, or ``moment``."""
    if not in_quiet_hours(quiet, zone, moment):
        return moment
    assert quiet is not None
    end = _quiet_bounds(quiet)[1]
    local = moment.astimezone(zone)
    ends = local.replace(hour=end.hour, minute=end.minute, second=0, microsecond=0)
    if ends <= local:
        ends += timedelta(days=1)  # aware arithmetic keeps the wall time across a DST change
    return ends.astimezone(UTC)


def _quiet_bounds(quiet: str) -> tuple[time, time]:
    match = QUIET.fullmatch(quiet)
    if match is None:
        raise ValueError(f"Quiet hours are 'HH:MM-HH:MM'; got {quiet[:40]!r}.")
    return time(int(match[1]), int(match[2])), time(int(match[3]), int(match[4]))
