"""Wakes: the launcher's feed of what is for a bot, and the records of its harness runs.

``for_me`` is the bot's inbox (mentions, its conversations, replies in threads
it posted in or holds, handoffs to it). ``watched`` is every other message in
the channels it watches and in its goal thread. One long-poll covers both.
The query's ``watch`` and ``goal`` win; each one left out comes from the
profile the bot runs with (``services/registry.py``). A wake record is what
one run of the harness did, posted by the launcher with the bot's token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InvalidArgument
from ..hub import Event, Key
from ..principal import Principal
from ..store import channels as channel_store
from ..store import claims as claim_store
from ..store import delivery as delivery_store
from ..store import identity as identity_store
from ..store import messages as store
from ..store import watches as watch_store
from ..store import workspaces as workspace_store
from ..store.connection import Connection
from ..store.jsoncolumns import read_json
from ..store.messages import InboxFilter, WatchFilter
from ..validation import arg, rfc3339
from . import actions, audit, budgets, delivery, loopguard, registry, scope
from .context import Context
from .longpoll import poll, reach_heard
from .messages import event_view, message_page, render, rows_to_messages
from .paging import Page, bounded_page

# The tags of messages that wake no bot watching their channel: the loop guard's held
# message and its notice of a pause, and a budget hold's notice (each read by a person, none
# a task for a bot).
QUIET_TAGS = (loopguard.HELD_TAG, loopguard.NOTICE_TAG, budgets.NOTICE_TAG)


@dataclass
class WakeQuery:
    since: int = arg(0, min=0)
    wait: int = arg(0, min=0, max=60)
    limit: int = arg(20, min=1, max=500)
    max_bytes: int | None = arg(None, min=1)
    watch: list[str] = arg(
        [], max_items=50, pattern=r"[a-z0-9._-]{2,64}", help="Channels to watch, comma-separated."
    )
    goal: int | None = arg(None, min=1, help="A thread to watch.")
    view: str = arg("full", choices=("full", "compact"))


def held_page(ctx: Context, q: WakeQuery, hold: budgets.Hold) -> Page:
    """A held bot's answer: no messages, the cursor where it was, and why (services/budgets.py)."""
    page = message_page(ctx, [], q, descending=False, cursor=q.since, rendered=True)
    return page | {"held": hold.as_dict()}


@dataclass
class WakeScope:
    """What one bot's wake feed covers, resolved once: the hub keys it waits under, the read
    of what it missed, and the test of each published event. The long-poll and the stream
    (services/wakestream.py) share it, so both deliver exactly the same messages."""

    keys: list[Key]
    inbox: InboxFilter
    watch: WatchFilter
    watching: list[str]
    view: str

    async def fetch(self, ctx: Context, limit: int) -> tuple[int, list[dict[str, Any]]]:
        """The head as this read saw it, and up to ``limit`` + 1 messages after ``since``, oldest first.

        The head is never later than the read: a message committed after it is in the
        waiter or above the head.
        """

        async def read(conn: Connection) -> tuple[int, list[dict[str, Any]]]:
            head = await store.max_id(conn)
            mine = await store.inbox(conn, self.inbox, limit + 1)
            watched = []
            # A watched channel may have been created since it was resolved (a first post makes it).
            created = (
                (await _watched_channels(conn, self.watch.workspace_id, self.watching))[0]
                if self.watch.pending
                else []
            )
            for source in self.watch.sources(created):
                watched += await store.select(conn, source, descending=False, limit=limit + 1)
            items = {
                m["id"]: m | {"for_me": False, "watched": True} for m in await rows_to_messages(conn, watched)
            }
            for m in await rows_to_messages(conn, mine):
                items[m["id"]] = m | {"for_me": True, "watched": m["id"] in items}
            return head, render([items[i] for i in sorted(items)][: limit + 1], self.view)

        return await ctx.db.read(read)

    def fields(self, event: Event) -> dict[str, Any] | None:
        """This reader's own fields of the event's message, or None if the event is not for it."""
        reason = self.inbox.reason(event)
        watched = self.watch.matches(event)
        if reason is None and not watched:
            return None
        if reason is None:
            return {"for_me": False, "watched": watched}
        return {"for_me": True, "watched": watched, "reason": reason}

    def match(self, event: Event) -> dict[str, Any] | None:
        """The event's message in this feed's view (encoded once per view), or None if not for it."""
        fields = self.fields(event)
        return None if fields is None else event_view(event, self.view, **fields)


async def _watched_channels(
    conn: Connection, workspace_id: int, slugs: list[str]
) -> tuple[list[int], list[str]]:
    """Ids of the watched channels that exist, and the slugs of those not created yet."""
    found, pending = [], []
    for slug in slugs:
        channel = await channel_store.by_slug(conn, workspace_id, slug)
        if channel is not None:
            found.append(channel["id"])
        else:
            pending.append(slug)
    return found, pending


async def wake_scope(
    ctx: Context, p: Principal, since: int, watch: list[str], goal: int | None, view: str, *, daemon: bool
) -> WakeScope:
    """The bot's feed after ``since``: its inbox, and the channels and goal thread it watches
    (those given, else its profile's).

    ``daemon``: the call is its daemon's (the stream, or a feed that waits), so what it watches
    is recorded for the loop guard. A harness's look mid-turn (the MCP ``catch_up``) names no
    watch and would otherwise erase the daemon's ``--watch`` until its stream reconnects.
    """

    async def resolve(conn: Connection) -> tuple[WakeScope, set[watch_store.Watch] | None]:
        workspace = await scope.resolve(conn, p, None)
        profile_watch, profile_goal = await registry.wake_defaults(conn, p)
        watching = watch or profile_watch
        channel_ids, pending = await _watched_channels(conn, workspace["id"], watching)
        watches = {(int(workspace["id"]), slug) for slug in watching}
        moved = daemon and p.is_bot and await watch_store.of_agent(conn, p.agent_id) != watches
        thread_id = None
        if goal is not None:
            root = await scope.visible_message(conn, p, goal, "thread")
            thread_id = root["thread_id"]
        elif profile_goal is not None:
            stored = await store.by_id(conn, profile_goal)
            if stored is not None and stored["workspace_id"] == workspace["id"]:
                thread_id = stored["thread_id"]
        keys: list[Key] = [("agent", p.agent_id)] + [("channel", c) for c in channel_ids]
        if thread_id is not None:
            keys.append(("thread", thread_id))
        if pending:
            keys.append(("workspace", workspace["id"]))  # to hear a watched channel's first post
        inbox = scope.inbox_of(p, since)
        watched = WatchFilter(
            workspace_id=workspace["id"],
            channel_ids=tuple(channel_ids),
            pending=tuple(pending),
            thread_id=thread_id,
            since=since,
            reader_id=p.agent_id,
            quiet_tags=QUIET_TAGS,
        )
        return WakeScope(keys, inbox, watched, list(watching), view), watches if moved else None

    wake, moved = await ctx.db.read(resolve)
    if moved is not None:  # the loop guard's record of who watches what (services/loopguard.py)
        await ctx.db.write(lambda conn: watch_store.replace(conn, p.agent_id, moved))
        ctx.tokens.forget_agent(p.agent_id, reach=False)  # its principal carries what it watched
    return wake


async def feed(ctx: Context, p: Principal, q: WakeQuery) -> Page:
    actions.require(p, "wake.feed")
    with reach_heard(ctx, p.agent_id) as heard:
        if (hold := await budgets.feed_hold(ctx, p.agent_id, q.wait)) is not None:
            return held_page(ctx, q, hold)
        wake = await wake_scope(ctx, p, q.since, q.watch, q.goal, q.view, daemon=q.wait > 0)
        if q.wait:  # a daemon waits for this bot: its messages are not unreachable
            await ctx.waits.touch(p)
        head = {"cursor": q.since}

        async def fetch() -> list[dict[str, Any]]:
            head["cursor"], items = await wake.fetch(ctx, q.limit)
            return items

        items = await poll(
            ctx, wake.keys, q.wait, fetch, wake.match, owner=p.agent_id, since=q.since, heard=heard
        )
    if items and (hold := await budgets.feed_hold(ctx, p.agent_id, 0)) is not None:
        return held_page(ctx, q, hold)  # a wake recorded while this feed waited reached the limit
    return message_page(ctx, items, q, descending=False, cursor=head["cursor"], rendered=True)


# -- wake records ------------------------------------------------------------------


#: Why a turn started a fresh harness session: its profile's rotate_after_turns or _tokens passed.
ROTATIONS = ("turns", "tokens")


@dataclass
class WakeRecord:
    harness: str = arg(max_len=32, pattern=r"[A-Za-z0-9._-]{1,32}")
    started_at: str = arg(max_len=40)
    outcome: str = arg(choices=("ok", "failed", "timeout", "error", "skipped"))
    trigger_ids: list[int] = arg([], max_items=500, min=1)
    session_id: str | None = arg(None, max_len=200)
    ended_at: str | None = arg(None, max_len=40)
    exit_code: int | None = arg(None, min=-255, max=255)
    cost_usd: float | None = arg(None, min=0, max=1e6)
    input_tokens: int | None = arg(None, min=0)
    output_tokens: int | None = arg(None, min=0)
    cache_read_tokens: int | None = arg(None, min=0, help="Of input_tokens, read back from the prompt cache.")
    cache_write_tokens: int | None = arg(None, min=0, help="Of input_tokens, written to the prompt cache.")
    error: str | None = arg(None, max_len=4000, multiline=True)
    rotated: str | None = arg(
        None, choices=ROTATIONS, help="The turn started a fresh session because its profile's limit passed."
    )


def wake_dict(row: Any) -> dict[str, Any]:
    item = {
        k: row[k]
        for k in (
            "id",
            "bot",
            "workspace",
            "harness",
            "session_id",
            "started_at",
            "ended_at",
            "exit_code",
            "outcome",
            "cost_usd",
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "error",
            "rotated",
            "created_at",
        )
    }
    item["trigger_ids"], readable = read_json("wakes", row["id"], "trigger_ids", row["trigger_ids"], [])
    if not readable:
        item["unreadable"] = True
    return item


async def record_wake(ctx: Context, p: Principal, req: WakeRecord) -> tuple[int, dict[str, Any]]:
    actions.require(p, "wake.record")
    started_at, ended_at = rfc3339("started_at", req.started_at), rfc3339("ended_at", req.ended_at)
    if ended_at is not None and started_at is not None and ended_at < started_at:
        raise InvalidArgument(
            f"ended_at ({ended_at}) is before started_at ({started_at}); send the run's real times.",
            field="ended_at",
        )
    values = {
        "agent_id": p.agent_id,
        "workspace_id": p.workspace_id,
        "trigger_ids": req.trigger_ids,
        "harness": req.harness,
        "session_id": req.session_id,
        "started_at": started_at,
        "ended_at": ended_at,
        "exit_code": req.exit_code,
        "outcome": req.outcome,
        "cost_usd": req.cost_usd,
        "input_tokens": req.input_tokens,
        "output_tokens": req.output_tokens,
        "cache_read_tokens": req.cache_read_tokens,
        "cache_write_tokens": req.cache_write_tokens,
        "error": req.error,
        "rotated": req.rotated,
        "created_at": ctx.now(),
    }

    async def write(conn: Connection) -> dict[str, Any]:
        home = await workspace_store.by_id(conn, p.workspace_id or 0)
        assert home is not None  # a bot's workspace outlives it
        scope.require_writable(home)
        # A run is triggered by messages its bot can read: another workspace's or an
        # absent id is NOT_FOUND alike, and nothing is recorded.
        await scope.require_messages(conn, p, sorted(set(req.trigger_ids)))
        wake_id = await claim_store.insert_wake(conn, values)
        budgets.spent(p.workspace_id or 0, wake_id)  # a stream re-reads its bot's hold on it
        delivery.changed(await delivery_store.workspaces_of(conn, sorted(set(req.trigger_ids))))
        await audit.record(
            conn,
            ctx,
            p,
            "wake.record",
            str(wake_id),
            workspace=p.workspace,
            details={"outcome": req.outcome, "cost_usd": req.cost_usd},
        )
        rows = await claim_store.select_wakes(conn, None, p.agent_id, wake_id - 1, 1)
        return wake_dict(rows[0])

    return 201, await ctx.db.write(write)


@dataclass
class WakeList:
    bot: str | None = arg(None, max_len=32)
    workspace: str | None = arg(None, pattern=r"[a-z0-9._-]{2,64}")
    thread: int | None = arg(None, min=1, help="Only wakes a message of this thread triggered.")
    since: int = arg(0, min=0)
    before: int | None = arg(None, min=1, help="Wakes before this id, newest first.")
    limit: int = arg(20, min=1, max=500)
    max_bytes: int | None = arg(None, min=1)


async def list_wakes(ctx: Context, p: Principal, q: WakeList) -> Page:
    async def read(conn: Connection) -> list[dict[str, Any]]:
        workspace = await scope.resolve_optional(conn, p, q.workspace)
        agent_id = None
        if q.bot is not None:
            bot = await identity_store.agent_by_handle(conn, q.bot)
            agent_id = bot["id"] if bot is not None else -1
        thread_id = None
        if q.thread is not None:
            thread_id = (await scope.visible_root(conn, p, q.thread))["id"]
        rows = await claim_store.select_wakes(
            conn, scope.workspace_ids(p, workspace), agent_id, q.since, q.limit + 1, thread_id, q.before
        )
        return [wake_dict(r) for r in rows]

    items = await ctx.db.read(read)
    return bounded_page(ctx, "wakes", items, q.limit, q.max_bytes, descending=q.before is not None)
