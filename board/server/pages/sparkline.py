"""A fleet bot's last hours as three small charts (CPU, memory, wakes), drawn on the server.

Like the cost chart (pages/chart.py) the page gets positions in the SVG's own view
box and the template writes the ``<svg>``, coloured by app.css: no script, no
inline style, so the strict CSP holds. Each chart says what it shows in words too
(its ``<title>``, read on hover and by a screen reader).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..services.fleet_history import HISTORY_S, History

WIDTH, HEIGHT = 120, 28
PAD = 2  # room for the line's width at the top and bottom


@dataclass(frozen=True)
class Spark:
    kind: str  # cpu, memory or wakes: the class app.css colours it by
    label: str  # what it shows in words
    caption: str  # the short words under it: "CPU 3.5 %"
    points: str  # the line's "x,y x,y ..." (CPU and memory)
    last: tuple[float, float] | None  # the latest point, drawn as a dot (one sample is a dot alone)
    bars: list[tuple[float, float, float]]  # (x, y, height) of each bar (wakes)
    bar_width: float


def _y(value: float, top: float) -> float:
    return round(HEIGHT - PAD - value / top * (HEIGHT - 2 * PAD), 1) if top > 0 else HEIGHT - PAD


def _x(seconds: float) -> float:
    return round(PAD + seconds / HISTORY_S * (WIDTH - 2 * PAD), 1)


def _line(kind: str, name: str, series: Sequence[tuple[float, float]], unit: str) -> Spark:
    top = max((v for _, v in series), default=0.0)
    coords = [(_x(t), _y(v, top)) for t, v in series]
    hours = HISTORY_S // 3600
    if not series:
        label, caption = f"{name}, last {hours} h: not measured (not running, or no report yet)", f"{name} —"
    else:
        now, peak = _figure(series[-1][1], unit), _figure(top, unit)
        label, caption = f"{name}, last {hours} h: latest {now}, peak {peak}", f"{name} {now}"
    points = " ".join(f"{x},{y}" for x, y in coords)
    return Spark(kind, label, caption, points, coords[-1] if coords else None, [], 0)


def _figure(value: float, unit: str) -> str:
    return f"{value / 1048576:.0f} MB" if unit == "MB" else f"{value:g} %"


def _wakes(counts: Sequence[int]) -> Spark:
    top = max(counts, default=0)
    slot = WIDTH / max(1, len(counts))
    bars = []
    for n, count in enumerate(counts):
        if count:
            y = _y(count, top)
            bars.append((round(n * slot + slot * 0.1, 1), y, round(HEIGHT - PAD - y, 1)))
    minutes = HISTORY_S // 60 // max(1, len(counts))
    label = f"Wakes, last {HISTORY_S // 3600} h: {sum(counts)} (one bar per {minutes} minutes, most {top})"
    return Spark("wakes", label, f"wakes {sum(counts)}", "", None, bars, round(slot * 0.8, 1))


def sparks(history: History) -> list[Spark]:
    """The CPU, memory and wakes charts of one bot."""
    rss = [(t, float(v)) for t, v in history.rss]
    return [
        _line("cpu", "CPU", history.cpu, "%"),
        _line("memory", "Memory", rss, "MB"),
        _wakes(history.wakes),
    ]
