"""A cost chart drawn on the server: one bar per UTC day, the reported cost and the estimate stacked.

The page gets plain numbers (positions in the SVG's own view box) and the template
writes the ``<svg>``: its colours come from app.css by class, so the strict CSP
(no inline style, no script) holds and the chart needs no library or CDN. The view
box scales to the page's width, a phone's too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

WIDTH, HEIGHT = 600, 200
LEFT, RIGHT, TOP, BOTTOM = 80, 28, 12, 30  # room for the axis labels (larger on a phone: app.css)
GRID_LINES = 4


@dataclass(frozen=True)
class Bar:
    day: str
    x: float
    width: float
    reported: tuple[float, float]  # (y, height) of the reported part, at the bottom
    estimated: tuple[float, float]  # (y, height) of the estimated part, on top of it
    title: str  # what a pointer over the bar shows


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    left: int
    bottom: float
    bars: list[Bar]
    grid: list[tuple[float, str]]  # (y, label) of each horizontal line
    ticks: list[tuple[float, str]]  # (x, label) of the days named under the bars
    empty: bool


def nice_ceiling(value: float) -> float:
    """The axis top: 1, 2, 2.5 or 5 times a power of ten, at least ``value`` (a cent when nothing)."""
    if value <= 0:
        return 0.01
    power = 10.0 ** math.floor(math.log10(value))
    return next(step * power for step in (1, 2, 2.5, 5, 10) if step * power >= value)


def money(value: float) -> str:
    return f"${value:.2f}" if value >= 1 or value == 0 else f"${value:.3g}"


def cost_chart(by_day: Sequence[dict[str, Any]]) -> Chart:
    """The chart of a cost answer's ``by_day`` series (every day of the window, oldest first)."""
    plot_h = HEIGHT - TOP - BOTTOM
    top = nice_ceiling(max((d["cost_usd"] for d in by_day), default=0))
    slot = (WIDTH - LEFT - RIGHT) / max(1, len(by_day))
    bars = []
    for n, d in enumerate(by_day):
        reported_h = d["reported_usd"] / top * plot_h
        estimated_h = d["estimated_usd"] / top * plot_h
        base = TOP + plot_h
        note = f", {money(d['estimated_usd'])} of it estimated" if d["estimate"] else ""
        wakes = f"{d['wakes']} wake" + ("" if d["wakes"] == 1 else "s")
        bars.append(
            Bar(
                day=d["day"],
                x=round(LEFT + n * slot + slot * 0.15, 2),
                width=round(slot * 0.7, 2),
                reported=(round(base - reported_h, 2), round(reported_h, 2)),
                estimated=(round(base - reported_h - estimated_h, 2), round(estimated_h, 2)),
                title=f"{d['day']} (UTC): {money(d['cost_usd'])}{note}, {wakes}",
            )
        )
    grid = [
        (round(TOP + plot_h - i / GRID_LINES * plot_h, 2), money(top * i / GRID_LINES))
        for i in range(GRID_LINES + 1)
    ]
    every = max(1, math.ceil(len(by_day) / 6))  # about six dates under the bars
    ticks = [
        (round(LEFT + n * slot + slot / 2, 2), d["day"][5:])
        for n, d in enumerate(by_day)
        if (len(by_day) - 1 - n) % every == 0
    ]
    return Chart(
        WIDTH, HEIGHT, LEFT, TOP + plot_h, bars, grid, ticks, empty=not any(d["wakes"] for d in by_day)
    )
