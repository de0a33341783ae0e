"""Daily budgets: a bot whose wakes have spent its day's budget is held until the day ends.

Three measures, per UTC day, counted from the wake records (``wakes.started_at``):
wakes, tokens (input + output) and reported cost in USD. A bot's limit on each is
its own if set, else its profile's; its workspace has limits for all its bots
together. When spent today reaches a limit the bot is *held*: its wake feed answers
no messages and a ``held`` object, and its cursor stays, so what waits is delivered
once the hold ends (the next UTC day, a higher limit, or a human's lift for the rest
of the day). The board tells the humans once per hold, in the workspace's lobby.

This module decides; the feed (``services/wakes.py``) and the message delivery
states ask :func:`hold_of`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any

from ..clock import iso, parse_time
from ..errors import InvalidArgument
from ..hub import Key, Signal
from ..principal import Principal
from ..store import budgets as store
from ..store import identity as identity_store
from ..store import loops as loop_store
from ..store import workspaces as workspace_store
from ..store.connection import Connection
from ..store.writer import emit
from ..validation import arg
from . import actions, audit, scope
from .context import Context
from .longpoll import MAX_WAIT
from .posting import post_event
from .tokencache import reach_key

MEASURES = store.MEASURES
LIMIT_COLUMNS = tuple(f"budget_{m}" for m in MEASURES)
NOTICE_TAG = "budget-held"
MAX_WAKES = 1_000_000
MAX_TOKENS = 1_000_000_000_000
MAX_COST_USD = 1_000_000.0
WAKES_HELP = "Wakes a day (UTC); 0 clears it."
TOKENS_HELP = "Input and output tokens a day (UTC); 0 clears it."
COST_HELP = "Reported cost in USD a day (UTC); 0 clears it."


def lifted_key(agent_id: int) -> Key:
    """The hub key a held bot's feed waits on: a change to its budget is published there."""
    return ("budget", agent_id)


@dataclass(frozen=True)
class Hold:
    """Why a bot's wakes are held: which budget, its limit, what is spent, when it resets."""

    reason: str  # always "budget": the delivery states say "held: budget"
    which: str  # a short sentence for humans
    scope: str  # "bot" (its own or its profile's limit) or "workspace"
    source: str  # where the limit is set: "bot", "profile <name>" or "workspace <slug>"
    measure: str  # one of MEASURES
    limit: float
    spent: float
    resets_at: str  # the next UTC midnight

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def key(self) -> str:
        """Names this hold: one notice per key (a raised limit reached again is a new hold)."""
        return f"{self.resets_at}|{self.source}|{self.measure}|{self.limit:g}"


def day_of(now: str) -> tuple[str, str]:
    """The UTC day holding ``now``: its start and the next day's start."""
    start = datetime.combine(parse_time(now).date(), time(), tzinfo=UTC)
    return iso(start), iso(start + timedelta(days=1))


def _number(measure: str, value: float) -> str:
    return f"${value:.2f}" if measure == "cost_usd" else f"{int(value):,}"


async def limits_of(conn: Connection, agent_id: int) -> dict[str, tuple[float, str]]:
    """A bot's own limit on each measure that has one, with where it is set (bot or profile)."""
    bot = await store.bot(conn, agent_id)
    profile = await store.profile_of_bot(conn, agent_id)
    found: dict[str, tuple[float, str]] = {}
    for measure in MEASURES:
        column = f"budget_{measure}"
        if bot is not None and bot[column] is not None:
            found[measure] = (bot[column], "bot")
        elif profile is not None and profile[column] is not None:
            found[measure] = (profile[column], f"profile {profile['name']}")
    return found


def _reached(limits: dict[str, tuple[float, str]], spent: Any, level: str, resets_at: str) -> Hold | None:
    """The hold of the first measure whose spent today is at or past its limit."""
    for measure in MEASURES:
        if measure in limits and spent[measure] >= limits[measure][0]:
            limit, source = limits[measure]
            unit = "" if measure == "cost_usd" else f" {measure}"
            amounts = f"{_number(measure, spent[measure])} of {_number(measure, limit)}{unit}"
            which = f"{amounts} a day, set on {source}"
            return Hold("budget", which, level, source, measure, limit, spent[measure], resets_at)
    return None


async def hold_of(conn: Connection, agent_id: int, now: str) -> Hold | None:
    """The hold on this bot's wakes at ``now``, or None when it may wake."""
    bot = await store.bot(conn, agent_id)
    if bot is None or bot["workspace_id"] is None:
        return None
    if bot["budget_lifted_until"] is not None and bot["budget_lifted_until"] > now:
        return None
    start, end = day_of(now)
    own = await limits_of(conn, agent_id)
    if own and (hold := _reached(own, await store.spent_by_bot(conn, agent_id, start, end), "bot", end)):
        return hold
    workspace = await store.workspace(conn, bot["workspace_id"])
    assert workspace is not None  # a bot's workspace outlives it
    source = f"workspace {workspace['slug']}"
    shared = {m: (workspace[f"budget_{m}"], source) for m in MEASURES if workspace[f"budget_{m}"] is not None}
    if shared:
        spent = await store.spent_by_workspace(conn, workspace["id"], start, end)
        return _reached(shared, spent, "workspace", end)
    return None


async def tell(ctx: Context, agent_id: int, hold: Hold) -> None:
    """Post the hold's one notice, for the humans, unless it was posted already.

    A workspace's hold is told once for all its bots; a bot's once for that bot.
    """

    async def told(conn: Connection) -> tuple[str, int] | None:
        """Where this hold's notice is recorded, or None when it was posted already."""
        agent = await identity_store.agent_by_id(conn, agent_id)
        assert agent is not None and agent["workspace_id"] is not None
        table, row_id = ("agents", agent_id) if hold.scope == "bot" else ("workspaces", agent["workspace_id"])
        return None if await store.noticed(conn, table, row_id) == hold.key() else (table, row_id)

    where = await ctx.db.read(told)
    if where is None:
        return  # the usual case of a held feed's poll: no write
    table, row_id = where

    async def write(conn: Connection) -> None:
        if not await store.mark_noticed(conn, table, row_id, hold.key()):
            return  # another feed of the same hold posted it
        agent = await identity_store.agent_by_id(conn, agent_id)
        assert agent is not None and agent["workspace_id"] is not None
        workspace = await workspace_store.by_id(conn, agent["workspace_id"])
        assert workspace is not None
        # The page is a link where the notice is shown (it is Markdown, like every message).
        handle = agent["handle"]
        if hold.scope == "bot":
            who, page = f"@{handle}", f"[/a/{handle}](/a/{handle})"
        else:
            who = f"the bots of {workspace['slug']}"
            page = "[/workspaces](/workspaces) (or lift a bot on its page)"
        body = (
            f"Held: {who} reached a daily budget ({hold.which}). What would wake them waits in "
            f"their inbox until midnight UTC ({hold.resets_at[:10]} 00:00 UTC); raise or lift it on {page}."
        )
        await post_event(
            conn,
            ctx,
            workspace,
            body,
            channel="lobby",
            meta={"budget": hold.as_dict(), "bot": agent["handle"]},
            tags=[NOTICE_TAG],  # wakes no watching bot (wakes.QUIET_TAGS)
            also_for=dict.fromkeys(await loop_store.human_ids(conn), "held"),
            parse_mentions=False,
            notify=False,
        )

    await ctx.db.write(write)


# -- what a human changes ------------------------------------------------------------


@dataclass(kw_only=True)
class Limits:
    """The limit fields of a bot, profile or workspace request (absent: unchanged; 0: cleared)."""

    budget_wakes: int | None = arg(None, min=0, max=MAX_WAKES, help=WAKES_HELP)
    budget_tokens: int | None = arg(None, min=0, max=MAX_TOKENS, help=TOKENS_HELP)
    budget_cost_usd: float | None = arg(None, min=0, max=MAX_COST_USD, help=COST_HELP)


def changed_limits(req: Any, current: Any | None = None) -> dict[str, Any]:
    """The ``budget_*`` columns a request sets: given ones (0 as NULL), the rest as they are."""
    values = {}
    for measure in MEASURES:
        column = f"budget_{measure}"
        asked = getattr(req, column)
        if asked is not None:
            values[column] = asked or None
        elif current is not None:
            values[column] = current[column]
    return values


def limits_view(row: Any) -> dict[str, Any]:
    """The ``budget_*`` fields of a profile or workspace, as the API shows them."""
    return {f"budget_{m}": row[f"budget_{m}"] for m in MEASURES}


@dataclass(kw_only=True)
class BudgetChange(Limits):
    lift: bool | None = arg(
        None, help="true: no budget holds this bot until the next UTC midnight; false: end the lift."
    )


async def set_bot_budget(ctx: Context, p: Principal, handle: str, req: BudgetChange) -> dict[str, Any]:
    """Override a bot's limits (0 clears one: its profile's applies), or lift them for the day."""

    async def write(conn: Connection) -> dict[str, Any]:
        agent = scope.require_agent(p, await identity_store.agent_by_handle(conn, handle))
        actions.require(p, "budget.set")
        if agent["kind"] != "bot":
            raise InvalidArgument(f"{handle} is not a bot; budgets are a bot's.", field="handle")
        changes = changed_limits(req)
        if req.lift is not None:
            changes["budget_lifted_until"] = day_of(ctx.now())[1] if req.lift else None
        if not changes:
            raise InvalidArgument(
                "Nothing to change: give budget_wakes, budget_tokens, budget_cost_usd or lift."
            )
        await store.set_bot(conn, agent["id"], changes)
        await audit.record(conn, ctx, p, "budget.set", handle, workspace=agent["workspace"], details=changes)
        changed([agent["id"]])  # a held feed looks again at once
        return await bot_budget(conn, agent["id"], ctx.now())

    return await ctx.db.write(write)


async def bot_budget(conn: Connection, agent_id: int, now: str) -> dict[str, Any]:
    """A bot's budget as its page and ``GET /api/agents/{handle}`` show it."""
    bot = await store.bot(conn, agent_id)
    assert bot is not None
    start, end = day_of(now)
    spent = await store.spent_by_bot(conn, agent_id, start, end)
    limits = await limits_of(conn, agent_id)
    hold = await hold_of(conn, agent_id, now)
    lifted = bot["budget_lifted_until"]
    profile = await store.profile_of_bot(conn, agent_id)
    return {
        **limits_view(bot),
        "profile": profile["name"] if profile is not None else None,  # whose limit a null one takes
        "limits": {m: {"limit": v[0], "from": v[1]} for m, v in limits.items()},
        "spent_today": {m: spent[m] for m in MEASURES},
        "lifted_until": lifted if lifted is not None and lifted > now else None,
        "resets_at": end,
        "held": hold.as_dict() if hold else None,
    }


async def feed_hold(ctx: Context, agent_id: int, wait: int) -> Hold | None:
    """The hold on a bot's wake feed, told once; while held, wait up to ``wait`` s for a change.

    A human's raise or lift publishes on :func:`lifted_key`, so a held daemon hears it at
    once; the UTC midnight ends the wait too. A held daemon thus costs the board one
    request per ``wait`` seconds (its long-poll), and a few reads of its budget each.
    """
    hold = await ctx.db.read(lambda conn: hold_of(conn, agent_id, ctx.now()))
    if hold is None:
        return None
    await tell(ctx, agent_id, hold)
    if not wait:
        return hold
    waiter = ctx.hub.subscribe([lifted_key(agent_id), reach_key(agent_id)], agent_id)
    try:
        # Read again once subscribed: a change committed in between is not missed.
        hold = await ctx.db.read(lambda conn: hold_of(conn, agent_id, ctx.now()))
        if hold is None:
            return None
        to_midnight = (parse_time(hold.resets_at) - ctx.clock.now()).total_seconds()
        await waiter.wait(max(0.0, min(wait, MAX_WAIT, ctx.settings.max_wait, to_midnight)))
    finally:
        ctx.hub.unsubscribe(waiter)
    return await ctx.db.read(lambda conn: hold_of(conn, agent_id, ctx.now()))


def spent_key(workspace_id: int) -> Key:
    """The hub key a wake record of a workspace's bot signals: what its bots spent moved."""
    return ("budget-spent", workspace_id)


def spent(workspace_id: int, wake_id: int) -> None:
    """Tell the workspace's wake streams, once this write commits, that a hold may have begun."""
    emit(Signal(spent_key(workspace_id), wake_id))


def changed(agent_ids: list[int]) -> None:
    """Wake the held feeds of these bots once the write changing their limits commits."""
    for agent_id in agent_ids:
        emit(Signal(lifted_key(agent_id), 0))
