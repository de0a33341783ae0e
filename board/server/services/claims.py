"""Claims: which one holder works on a thread, decided inside the writer's transaction.

The writer runs one transaction at a time (``BEGIN IMMEDIATE``), and each
transition reads the thread's claim and writes its new state inside that one
transaction, so two claimers are serialized by the database: exactly one wins,
every other sees the winner. Each transition appends to the claim's history
and posts a ``kind: event`` message in the thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from aiosqlite import Connection

from ..clock import iso, parse_time
from ..errors import Claimed, Forbidden, InvalidArgument, NotFound
from ..hub import Event
from ..principal import ADMIN_WORKSPACE, Principal
from ..store import channels as channel_store
from ..store import claims as store
from ..store import identity as identity_store
from ..store import messages as message_store
from ..store import workspaces as workspace_store
from ..validation import arg
from . import audit, scope
from .context import Context
from .paging import Page, bounded_page

DEFAULT_LEASE_MINUTES = 60


def to_dict(row: Any) -> dict[str, Any]:
    return {
        "thread_id": row["thread_id"],
        "workspace": row["workspace"],
        "state": row["state"],
        "holder": row["holder"],
        "note": row["note"],
        "claimed_at": row["claimed_at"],
        "lease_until": row["lease_until"],
        "progress_at": row["progress_at"],
        "updated_at": row["updated_at"],
    }


async def claims_for_threads(conn: Connection, thread_ids: list[int]) -> dict[int, dict[str, Any]]:
    """Claim state by thread; a thread nobody claimed is ``open``."""
    found = {row["thread_id"]: to_dict(row) for row in await store.for_threads(conn, thread_ids)}
    return {tid: found.get(tid, {"state": "open", "holder": None}) for tid in thread_ids}


async def claim_history(conn: Connection, thread_id: int) -> list[dict[str, Any]]:
    return [dict(row) for row in await store.history(conn, thread_id)]


async def active_claims(conn: Connection, p: Principal, holder_ids: list[int]) -> list[dict[str, Any]]:
    """What these agents hold, of what ``p`` may see: its workspaces, its conversations."""
    return [
        to_dict(row)
        for row in await store.held_by(
            conn,
            holder_ids,
            workspace_ids=None if p.sees_all_workspaces else [p.workspace_id or 0],
            viewer_id=None if p.is_human else p.agent_id,
        )
    ]


async def on_post(conn: Connection, ctx: Context, thread_id: int, author_id: int) -> int | None:
    """A new message in a thread: the holder's own post renews its lease; returns the holder.

    A done thread keeps its last holder: a later reply reopens nothing but reaches it.
    """
    claim = await store.get(conn, thread_id)
    if claim is None or claim["state"] == "open" or claim["holder_id"] is None:
        return None
    if claim["state"] == "claimed" and claim["holder_id"] == author_id:
        minutes = _lease_minutes(claim)
        lease = iso(ctx.clock.now() + timedelta(minutes=minutes))
        await store.progress(conn, thread_id, author_id, ctx.now(), lease)
    return int(claim["holder_id"])


def _lease_minutes(claim: Any) -> float:
    if claim["claimed_at"] and claim["lease_until"]:
        span = parse_time(claim["lease_until"]) - parse_time(claim["progress_at"] or claim["claimed_at"])
        return max(1.0, span.total_seconds() / 60)
    return DEFAULT_LEASE_MINUTES


# -- transitions -----------------------------------------------------------------------


async def _thread(conn: Connection, p: Principal, thread_id: int) -> tuple[Any, Any]:
    """The root of a visible thread (named by any of its messages) and its workspace, or NOT_FOUND."""
    root = await message_store.by_id(conn, thread_id)
    if root is not None and root["reply_to"] is not None:
        root = await message_store.by_id(conn, root["thread_id"])
    if root is None or not scope.visible(p, root["workspace_id"]):
        raise NotFound("thread")
    conversation_id = root["conversation_id"]
    if (
        conversation_id is not None
        and not p.is_human
        and p.agent_id not in await _member_ids(conn, conversation_id)
    ):
        raise NotFound("thread")
    workspace = await scope.resolve(conn, p, root["workspace"])
    scope.require_writable(workspace)
    return root, workspace


async def _member_ids(conn: Connection, conversation_id: int) -> set[int]:
    members = (await channel_store.members(conn, [conversation_id])).get(conversation_id, [])
    return {m["id"] for m in members}


def _expired(claim: Any, now: str) -> bool:
    return claim["lease_until"] is not None and claim["lease_until"] <= now


async def _transition(
    conn: Connection,
    ctx: Context,
    p: Principal | None,
    root: Any,
    workspace: Any,
    *,
    action: str,
    body: str,
    holder_id: int | None,
    note: str,
    also_for: dict[int, str] | None = None,
    **state: Any,
) -> Event:
    """Write the new state, its history row, its audit row and the thread's event message.

    A holder whose claim someone else ends or moves (a human, the sweep, a claimer
    after the lease ran out) finds the event in its inbox, so it stops working.
    """
    from .messages import post_event

    now = ctx.now()
    before = await store.get(conn, root["id"])
    if (
        before is not None
        and before["state"] == "claimed"
        and before["holder_id"] not in (holder_id, p.agent_id if p else None)
    ):
        also_for = {before["holder_id"]: "thread", **(also_for or {})}
    await store.put(
        conn, root["id"], workspace["id"], holder_id=holder_id, note=note, updated_at=now, **state
    )
    await store.append_history(conn, root["id"], action, p.agent_id if p else None, holder_id, note, now)
    await audit.record(
        conn, ctx, p, f"claim.{action}", str(root["id"]), workspace=workspace["slug"], reason=note
    )
    return await post_event(
        conn,
        ctx,
        workspace,
        body,
        parent=root,
        author=p,
        meta={"claim": action, "thread_id": root["id"]},
        also_for=also_for,
    )


async def release_on_move(
    conn: Connection, ctx: Context, p: Principal, bot: Any, to_workspace: Any
) -> list[Event]:
    """Release what a bot held where its move takes it out of reach; return the events.

    A claim held by a bot that can no longer see the thread only stalls it. Claims
    in an archived workspace stay as they were: nothing is written there. A move
    into the admin workspace keeps everything: admin bots reach every workspace.
    """
    if to_workspace["slug"] == ADMIN_WORKSPACE:
        return []
    events = []
    for claim in await store.held_by(conn, [bot["id"]]):
        if claim["workspace_id"] == to_workspace["id"]:
            continue
        workspace = await workspace_store.by_id(conn, claim["workspace_id"])
        root = await message_store.by_id(conn, claim["thread_id"])
        if workspace is None or root is None or workspace["archived_at"]:
            continue
        note = f"{bot['handle']} moved to workspace {to_workspace['slug']}"
        event = await _transition(
            conn,
            ctx,
            p,
            root,
            workspace,
            action="release",
            body=f"released by {p.handle}: {note}",
            holder_id=None,
            note=note,
            state="open",
            lease_until=None,
            nudged_at=None,
        )
        events.append(event)
    return events


@dataclass
class ClaimRequest:
    note: str = arg("", max_len=500)
    lease_minutes: int = arg(DEFAULT_LEASE_MINUTES, min=1, max=7 * 24 * 60)


async def claim(ctx: Context, p: Principal, thread_id: int, req: ClaimRequest) -> tuple[int, dict[str, Any]]:
    """Take the thread: 201 when taken, 200 when the holder renews, CLAIMED when held by another."""

    async def write(conn: Connection) -> tuple[int, dict[str, Any], Event | None]:
        root, workspace = await _thread(conn, p, thread_id)
        now = ctx.now()
        lease = iso(ctx.clock.now() + timedelta(minutes=req.lease_minutes))
        current = await store.get(conn, root["id"])
        if current is not None and current["state"] == "claimed":
            if current["holder_id"] == p.agent_id:
                await store.progress(conn, root["id"], p.agent_id, now, lease)
                await store.append_history(conn, root["id"], "renew", p.agent_id, p.agent_id, req.note, now)
                return 200, to_dict(await store.get(conn, root["id"])), None
            if not _expired(current, now):
                raise Claimed(
                    f"Thread {root['id']} is claimed by {current['holder']}; pick another "
                    f"thread, or ask {current['holder']} to hand it off.",
                    holder=current["holder"],
                    claim=to_dict(current),
                )
        verb = "claimed" if current is None or current["state"] != "done" else "reopened"
        event = await _transition(
            conn,
            ctx,
            p,
            root,
            workspace,
            action="claim",
            body=f"{verb} by {p.handle}" + (f": {req.note}" if req.note else ""),
            holder_id=p.agent_id,
            note=req.note,
            state="claimed",
            claimed_at=now,
            lease_until=lease,
            progress_at=now,
            nudged_at=None,
        )
        return 201, to_dict(await store.get(conn, root["id"])), event

    status, result, _ = await ctx.db.write(write, after_commit=_publish(ctx))
    return status, result


def _publish(ctx: Context) -> Any:
    def publish(result: tuple[Any, ...]) -> None:
        event = result[-1]
        if event is not None:
            ctx.hub.publish(event)

    return publish


async def _held(conn: Connection, p: Principal, thread_id: int, doing: str) -> tuple[Any, Any, Any]:
    root, workspace = await _thread(conn, p, thread_id)
    current = await store.get(conn, root["id"])
    if current is None or current["state"] == "open":
        raise InvalidArgument(f"Thread {root['id']} is not claimed; nothing to {doing}.")
    if current["state"] == "claimed" and current["holder_id"] != p.agent_id and not p.is_human:
        raise Forbidden(f"Only the holder ({current['holder']}) or a human may {doing} this claim.")
    return root, workspace, current


@dataclass
class ReleaseRequest:
    reason: str = arg("", max_len=500)


async def release(ctx: Context, p: Principal, thread_id: int, req: ReleaseRequest) -> dict[str, Any]:
    async def write(conn: Connection) -> tuple[dict[str, Any], Event]:
        root, workspace, current = await _held(conn, p, thread_id, "release")
        if current["state"] != "claimed":
            raise InvalidArgument(f"Thread {root['id']} is done; nothing to release.")
        event = await _transition(
            conn,
            ctx,
            p,
            root,
            workspace,
            action="release",
            body=f"released by {p.handle}" + (f": {req.reason}" if req.reason else ""),
            holder_id=None,
            note=req.reason,
            state="open",
            lease_until=None,
            nudged_at=None,
        )
        return to_dict(await store.get(conn, root["id"])), event

    result, _ = await ctx.db.write(write, after_commit=_publish(ctx))
    return result


@dataclass
class HandoffRequest:
    to: str = arg(pattern=r"[A-Za-z0-9._-]{2,32}")
    note: str = arg("", max_len=2000, multiline=True)


async def handoff(ctx: Context, p: Principal, thread_id: int, req: HandoffRequest) -> dict[str, Any]:
    async def write(conn: Connection) -> tuple[dict[str, Any], Event]:
        root, workspace, current = await _held(conn, p, thread_id, "hand off")
        if current["state"] != "claimed":
            raise InvalidArgument(f"Thread {root['id']} is done; claim it again to hand it off.")
        target = await identity_store.agent_by_handle(conn, req.to)
        if (
            target is None
            or target["kind"] == "system"
            or (
                target["kind"] == "bot"
                and target["workspace_id"] != workspace["id"]
                and target["workspace"] != ADMIN_WORKSPACE
            )
        ):
            raise NotFound("agent")
        # The holder reads the thread: a conversation's goes only to one of its members.
        conversation_id = root["conversation_id"]
        if (
            conversation_id is not None
            and target["kind"] != "human"
            and target["id"] not in await _member_ids(conn, conversation_id)
        ):
            raise NotFound("agent")
        now = ctx.now()
        lease = iso(ctx.clock.now() + timedelta(minutes=_lease_minutes(current)))
        event = await _transition(
            conn,
            ctx,
            p,
            root,
            workspace,
            action="handoff",
            body=f"handed to @{target['handle']} by {p.handle}" + (f": {req.note}" if req.note else ""),
            holder_id=target["id"],
            note=req.note,
            also_for={target["id"]: "handoff"},
            state="claimed",
            claimed_at=now,
            lease_until=lease,
            progress_at=now,
            nudged_at=None,
        )
        return to_dict(await store.get(conn, root["id"])), event

    result, _ = await ctx.db.write(write, after_commit=_publish(ctx))
    return result


@dataclass
class DoneRequest:
    summary: str = arg("", max_len=4000, multiline=True)


async def done(ctx: Context, p: Principal, thread_id: int, req: DoneRequest) -> dict[str, Any]:
    """Close the thread; closing it again answers the first outcome and changes nothing."""

    async def write(conn: Connection) -> tuple[dict[str, Any], Event | None]:
        root, workspace = await _thread(conn, p, thread_id)
        current = await store.get(conn, root["id"])
        if current is not None and current["state"] == "done":
            return to_dict(current), None
        if current is None or current["state"] == "open":
            if not p.is_human:
                raise Forbidden(f"Claim thread {root['id']} before closing it.")
            holder_id = p.agent_id
        elif current["holder_id"] != p.agent_id and not p.is_human:
            raise Forbidden(f"Only the holder ({current['holder']}) or a human may close this claim.")
        else:
            holder_id = current["holder_id"]
        event = await _transition(
            conn,
            ctx,
            p,
            root,
            workspace,
            action="done",
            body=f"done by {p.handle}" + (f": {req.summary}" if req.summary else ""),
            holder_id=holder_id,
            note=req.summary,
            state="done",
            lease_until=None,
        )
        return to_dict(await store.get(conn, root["id"])), event

    result, _ = await ctx.db.write(write, after_commit=_publish(ctx))
    return result


@dataclass
class ClaimList:
    workspace: str | None = arg(None, pattern=r"[a-z0-9._-]{2,64}")
    holder: str | None = arg(None, max_len=32)
    state: str | None = arg(None, choices=("open", "claimed", "done"))
    stalled: bool = arg(False, help="Only claims without progress for BOARD_STALL_AFTER.")
    since: int = arg(0, min=0, help="Thread id to continue after (next_since).")
    limit: int = arg(20, min=1, max=500)
    max_bytes: int | None = arg(None, min=1)


async def list_claims(ctx: Context, p: Principal, q: ClaimList) -> Page:
    async def read(conn: Connection) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
        workspace = await scope.resolve_optional(conn, p, q.workspace)
        ids = scope.workspace_ids(p, workspace)
        holder_id = None
        if q.holder is not None:
            holder = await identity_store.agent_by_handle(conn, q.holder)
            holder_id = holder["id"] if holder is not None else -1
        rows = await store.select(
            conn,
            workspace_ids=ids,
            holder_id=holder_id,
            state=q.state,
            progress_before=ctx.ago(ctx.settings.stall_after) if q.stalled else None,
            after=q.since,
            limit=q.limit + 1,
            viewer_id=None if p.is_human else p.agent_id,
        )
        unseen = None
        if q.stalled:
            viewer = None if p.is_human else p.agent_id
            unseen = [dict(r) for r in await store.unseen(conn, ids, viewer, 100)]
        return [to_dict(r) for r in rows], unseen

    items, unseen = await ctx.db.read(read)
    page = bounded_page(ctx, "claims", items, q.limit, q.max_bytes, descending=False, key="thread_id")
    if unseen is not None:
        page["unseen"] = unseen
    return page


# -- wakes -------------------------------------------------------------------------------


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
    error: str | None = arg(None, max_len=4000, multiline=True)


def _time(name: str, text: str | None) -> str | None:
    if text is None:
        return None
    try:
        return iso(parse_time(text))
    except ValueError:
        raise InvalidArgument(f"'{name}' must be an RFC 3339 time.", field=name) from None


def wake_dict(row: Any) -> dict[str, Any]:
    import json

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
            "error",
            "created_at",
        )
    }
    item["trigger_ids"] = json.loads(row["trigger_ids"])
    return item


async def record_wake(ctx: Context, p: Principal, req: WakeRecord) -> tuple[int, dict[str, Any]]:
    if not p.is_bot:
        raise Forbidden("Wakes are recorded by a bot's launcher, with the bot's token.")
    started_at, ended_at = _time("started_at", req.started_at), _time("ended_at", req.ended_at)
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
        "error": req.error,
        "created_at": ctx.now(),
    }

    async def write(conn: Connection) -> dict[str, Any]:
        scope.require_writable(await workspace_store.by_id(conn, p.workspace_id or 0))
        wake_id = await store.insert_wake(conn, values)
        await audit.record(
            conn,
            ctx,
            p,
            "wake.record",
            str(wake_id),
            workspace=p.workspace,
            details={"outcome": req.outcome, "cost_usd": req.cost_usd},
        )
        rows = await store.select_wakes(conn, None, p.agent_id, wake_id - 1, 1)
        return wake_dict(rows[0])

    return 201, await ctx.db.write(write)


@dataclass
class WakeList:
    bot: str | None = arg(None, max_len=32)
    workspace: str | None = arg(None, pattern=r"[a-z0-9._-]{2,64}")
    thread: int | None = arg(None, min=1, help="Only wakes a message of this thread triggered.")
    since: int = arg(0, min=0)
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
            root = await scope.require_message(conn, p, await message_store.by_id(conn, q.thread), "thread")
            thread_id = root["thread_id"]
        rows = await store.select_wakes(
            conn, scope.workspace_ids(p, workspace), agent_id, q.since, q.limit + 1, thread_id
        )
        return [wake_dict(r) for r in rows]

    items = await ctx.db.read(read)
    return bounded_page(ctx, "wakes", items, q.limit, q.max_bytes, descending=False)


# -- the sweep's transitions --------------------------------------------------------------


async def nudge(
    conn: Connection, ctx: Context, board: Principal, root: Any, workspace: Any, claim: Any
) -> Event:
    """Remind the holder of a stalled claim, once per stretch without progress."""
    from .messages import post_event

    now = ctx.now()
    await store.mark_nudged(conn, root["id"], now)
    await store.append_history(conn, root["id"], "nudge", board.agent_id, claim["holder_id"], "", now)
    await audit.record(conn, ctx, board, "claim.nudge", str(root["id"]), workspace=workspace["slug"])
    return await post_event(
        conn,
        ctx,
        workspace,
        f"@{claim['holder']} no progress on this claim since {claim['progress_at']}: post an "
        "update, hand it off, or release it.",
        parent=root,
        meta={"claim": "nudge", "thread_id": root["id"]},
    )


async def expire(
    conn: Connection, ctx: Context, board: Principal, root: Any, workspace: Any, claim: Any
) -> Event:
    """Release a claim abandoned past BOARD_RELEASE_AFTER; the thread is open again."""
    return await _transition(
        conn,
        ctx,
        board,
        root,
        workspace,
        action="expire",
        body=f"released by the board: no progress from {claim['holder']} since {claim['progress_at']}",
        holder_id=None,
        note="no progress",
        state="open",
        lease_until=None,
        nudged_at=None,
    )
