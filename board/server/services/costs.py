"""What the fleet's wakes cost: per UTC day, per workspace, per bot and per routine.

Read from the wake records the launchers post (``POST /api/wakes``). A wake's day
is the UTC date of its ``started_at``; its workspace is its bot's; its routine is
the one whose thread holds the earliest message that triggered it
(:data:`..store.costs.ROUTINE_OF_WAKE`). A cost the harness reported is summed as
it is; a wake that reported none but has tokens is priced from
:mod:`.prices` and that part is an estimate, kept apart (``estimated_usd``) so
every page and answer can say so. The page and ``GET /api/costs`` both call
:func:`costs`; scope is the wake list's: a bot reads its own workspace only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any

from ..clock import iso
from ..errors import NotFound
from ..principal import Principal
from ..store import costs as store
from ..store import identity as identity_store
from ..store import routines as routine_store
from ..store.connection import Connection
from ..store.rows import Row
from ..validation import arg
from . import scope
from .context import Context
from .prices import price_of
from .routines import NAME_PATTERN, SLUG_PATTERN

MAX_DAYS = 90
CHART_DAYS = 30
#: The per-day rows an answer lists at most (the totals always count every wake).
MAX_ROWS = 2000
TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


@dataclass
class CostQuery:
    workspace: str | None = arg(None, pattern=SLUG_PATTERN)
    bot: str | None = arg(None, max_len=32, help="Only this bot's wakes.")
    routine: str | None = arg(None, pattern=NAME_PATTERN, help="Only the wakes of this routine's runs.")
    days: int = arg(CHART_DAYS, min=1, max=MAX_DAYS, help="UTC days up to and including today.")


def _zero() -> dict[str, Any]:
    return {
        "wakes": 0,
        **{name: 0 for name in TOKENS},
        "cost_usd": 0.0,
        "reported_usd": 0.0,
        "estimated_usd": 0.0,
        "unpriced_wakes": 0,
        "estimate": False,
    }


def _priced(row: Row) -> dict[str, Any]:
    """One group's sums, its unreported tokens priced by its harness."""
    unreported = row["wakes"] - row["reported_wakes"]
    price = price_of(row["harness"])
    estimated, unpriced = 0.0, 0
    if unreported:
        if price is None:
            unpriced = unreported
        else:
            unpriced = row["tokenless_wakes"]
            estimated = price.estimate(
                row["unreported_input"] or 0,
                row["unreported_output"] or 0,
                row["unreported_cache_read"] or 0,
                row["unreported_cache_write"] or 0,
            )
    return {
        "wakes": row["wakes"],
        **{name: row[name] or 0 for name in TOKENS},
        "reported_usd": float(row["reported_usd"] or 0),
        "estimated_usd": estimated,
        "unpriced_wakes": unpriced,
    }


def of_wakes(wakes: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """What these wake records cost, summed as a group of :func:`costs` is, for a page that
    lists wakes (a thread's, a bot's): so its figures are the ones Costs shows."""
    total = _zero()
    for wake in wakes:
        tokens = {name: wake[name] or 0 for name in TOKENS}
        price = price_of(wake["harness"])
        unreported = wake["cost_usd"] is None
        tokenless = wake["input_tokens"] is None and wake["output_tokens"] is None
        priced = unreported and price is not None and not tokenless
        _add(
            total,
            {
                "wakes": 1,
                **tokens,
                "reported_usd": float(wake["cost_usd"] or 0),
                "estimated_usd": price.estimate(*tokens.values()) if priced and price is not None else 0.0,
                "unpriced_wakes": int(unreported and not priced),
            },
        )
    return total


def _add(total: dict[str, Any], part: dict[str, Any]) -> None:
    for name in ("wakes", *TOKENS, "reported_usd", "estimated_usd", "unpriced_wakes"):
        total[name] += part[name]
    total["cost_usd"] = round(total["reported_usd"] + total["estimated_usd"], 6)
    total["estimate"] = total["estimated_usd"] > 0


def _grouped(
    parts: Iterable[tuple[tuple[Any, ...], dict[str, Any]]],
) -> dict[tuple[Any, ...], dict[str, Any]]:
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for key, part in parts:
        _add(groups.setdefault(key, _zero()), part)
    return groups


def _sorted(groups: dict[tuple[Any, ...], dict[str, Any]], names: tuple[str, ...]) -> list[dict[str, Any]]:
    """Groups as rows, the costliest first (then by name, a routine-less group last)."""
    rows = [dict(zip(names, key, strict=True)) | sums for key, sums in groups.items()]
    return sorted(rows, key=lambda r: (-r["cost_usd"], -r["wakes"], [str(r[n] or "~") for n in names]))


async def _filter(conn: Connection, p: Principal, q: CostQuery, start: str, end: str) -> store.CostFilter:
    """The filter ``p`` may read: a bot its own workspace only; anything out of reach NOT_FOUND."""
    # A bot or routine named carries its own workspace: an admin bot naming one is not held to ``admin``.
    named = q.bot is not None or q.routine is not None
    workspace = await scope.resolve_optional(conn, p, q.workspace, anywhere=named)
    agent_id = None
    if q.bot is not None:
        agent = scope.require_agent(p, await identity_store.agent_by_handle(conn, q.bot))
        if agent["kind"] != "bot":
            raise NotFound("bot")
        agent_id = agent["id"]
    if q.routine is not None:
        scope.require_routine(p, await routine_store.by_name(conn, q.routine))
    return store.CostFilter(start, end, scope.workspace_ids(p, workspace), agent_id, q.routine)


async def costs(ctx: Context, p: Principal, q: CostQuery) -> dict[str, Any]:
    """The window's totals, a series per UTC day (every day, for the chart), and the sums per
    workspace, bot and routine, with the per-day rows behind them."""
    today = ctx.clock.now().astimezone(UTC).date()
    first = today - timedelta(days=q.days - 1)
    start = iso(datetime.combine(first, time(), UTC))
    end = iso(datetime.combine(today + timedelta(days=1), time(), UTC))

    async def read(conn: Connection) -> list[Row]:
        return await store.daily(conn, await _filter(conn, p, q, start, end))

    parts = [(row, _priced(row)) for row in await ctx.db.read(read)]
    total = _zero()
    for _, part in parts:
        _add(total, part)
    days = [(first + timedelta(days=n)).isoformat() for n in range(q.days)]
    by_day = _grouped([((day,), _zero()) for day in days] + [((r["day"],), part) for r, part in parts])
    rows = _sorted(
        _grouped(((r["day"], r["workspace"], r["bot"], r["routine"]), part) for r, part in parts),
        ("day", "workspace", "bot", "routine"),
    )
    rows.sort(key=lambda r: r["day"], reverse=True)  # newest day first, costliest first within it
    return {
        "timezone": "UTC",
        "days": q.days,
        "from": first.isoformat(),
        "to": today.isoformat(),
        "total": total,
        "by_day": [{"day": day} | by_day[(day,)] for day in days],
        "workspaces": _sorted(_grouped(((r["workspace"],), part) for r, part in parts), ("workspace",)),
        "bots": _sorted(
            _grouped(((r["workspace"], r["bot"]), part) for r, part in parts), ("workspace", "bot")
        ),
        "routines": _sorted(
            _grouped(((r["routine"],), part) for r, part in parts if r["routine"] is not None), ("routine",)
        ),
        "rows": rows[:MAX_ROWS],
        "rows_complete": len(rows) <= MAX_ROWS,
    }
