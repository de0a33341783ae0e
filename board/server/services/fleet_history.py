"""Each fleet bot's CPU, memory and wakes over the last hours, for the fleet page's charts.

CPU and memory come from the keepers' reports: a report records one sample of each
bot it measured, at most one every :data:`SAMPLE_GAP_S`, and the same write forgets
that bot's samples older than :data:`HISTORY_S`, so a bot holds at most
``HISTORY_S / SAMPLE_GAP_S`` rows however often its keeper reports. Wakes are the
board's own records (what the bots sent to ``POST /api/wakes``), counted per slice
of the window.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from ..clock import iso, parse_time
from ..principal import Principal
from ..store import fleet as store
from ..store.connection import Connection
from ..store.rows import Row
from . import actions
from .context import Context

SAMPLE_GAP_S = 300
HISTORY_S = 6 * 3600
SLICES = 24  # the wakes chart's bars: a quarter of an hour each over six hours
MAX_WAKES = 20_000  # wakes counted per page at most: beyond, the oldest slices read low


@dataclass
class History:
    """One bot's series; times are seconds into the window (0 is ``HISTORY_S`` ago)."""

    cpu: list[tuple[float, float]] = field(default_factory=list)
    rss: list[tuple[float, int]] = field(default_factory=list)
    wakes: list[int] = field(default_factory=lambda: [0] * SLICES)


async def record(
    conn: Connection, agent_id: int, cpu_percent: float | None, rss: int | None, now: str
) -> None:
    """Keep what a report measured of one bot, if its last sample is old enough."""
    if cpu_percent is None and rss is None:
        return  # not running: nothing measured, and a gap in the chart says so
    moment = parse_time(now)
    since = iso(moment - timedelta(seconds=SAMPLE_GAP_S))
    if await store.add_sample(conn, agent_id, now, cpu_percent, rss, since):
        await store.forget_samples(conn, agent_id, iso(moment - timedelta(seconds=HISTORY_S)))


async def history(ctx: Context, p: Principal, handles: list[str]) -> dict[str, History]:
    """The last ``HISTORY_S`` of these fleet bots, by handle (a bot with none has empty series)."""
    actions.require(p, "fleet.view")
    now = ctx.clock.now()
    start = now - timedelta(seconds=HISTORY_S)
    since = iso(start)

    async def read(conn: Connection) -> tuple[list[Row], list[Row]]:
        samples = await store.samples_of(conn, handles, since)
        return samples, await store.wake_starts_of(conn, handles, since, MAX_WAKES)

    samples, woken = await ctx.db.read(read)
    found = {h: History() for h in handles}
    for s in samples:
        series = found.setdefault(s["handle"], History())
        offset = (parse_time(s["at"]) - start).total_seconds()
        if s["cpu_percent"] is not None:
            series.cpu.append((offset, float(s["cpu_percent"])))
        if s["rss"] is not None:
            series.rss.append((offset, int(s["rss"])))
    for w in woken:
        offset = (parse_time(w["started_at"]) - start).total_seconds()
        slot = min(SLICES - 1, max(0, int(offset * SLICES // HISTORY_S)))
        found.setdefault(w["handle"], History()).wakes[slot] += 1
    return found
