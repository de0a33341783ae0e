"""Claims: which one holder works on a thread, decided inside the writer's transaction.

The writer runs one transaction at a time (``BEGIN IMMEDIATE``), and each
transition reads the thread's claim and writes its new state inside that one
transaction, so two claimers are serialized by the database: exactly one wins,
every other sees the winner. Each transition appends to the claim's history
and posts a ``kind: event`` message in the thread (through ``posting``, whose
event the writer publishes after the commit). Which thread a caller may claim,
and to whom it may be handed, is asked of ``scope``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...wire import CLAIM_ENDS
from ..errors import Claimed, InvalidArgument
from ..hub import Event
from ..principal import Principal
from ..store import claims as store
from ..store import identity as identity_store
from ..store import messages as message_store
from ..store import workspaces as workspace_store
from ..store import worktrees as worktree_store
from ..store.connection import Connection
from ..store.rows import AgentRow, ClaimRow, MessageRow, WorkspaceRow
from ..validation import arg
from . import actions, audit, leases, replies, scope
from .context import Context
from .paging import Page, bounded_page
from .posting import post_event


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
    return {tid: found.get(tid) or store.unclaimed() for tid in thread_ids}


async def claim_history(conn: Connection, thread_id: int) -> list[dict[str, Any]]:
    return [dict(row) for row in await store.history(conn, thread_id)]


async def active_claims(conn: Connection, p: Principal, holder_ids: list[int]) -> list[dict[str, Any]]:
    """What these agents hold, of what ``p`` may see: its workspaces, its conversations."""
    return [
        to_dict(row)
        for row in await store.held_by(
            conn,
            holder_ids,
            workspace_ids=scope.workspace_ids(p, None),
            viewer_id=scope.viewer_id(p),
        )
    ]


# -- transitions -----------------------------------------------------------------------


async def _thread(conn: Connection, p: Principal, thread_id: int) -> tuple[Any, Any]:
    """The root of a visible thread (named by any of its messages) and its writable workspace."""
    root = await scope.visible_root(conn, p, thread_id)
    workspace = await scope.resolve(conn, p, root["workspace"])
    scope.require_writable(workspace)
    return root, workspace


def _expired(claim: ClaimRow, now: str) -> bool:
    return claim["lease_until"] is not None and claim["lease_until"] <= now


async def _transition(
    conn: Connection,
    ctx: Context,
    p: Principal | None,
    root: MessageRow,
    workspace: WorkspaceRow,
    *,
    action: str,
    body: str,
    holder_id: int | None,
    note: str,
    also_for: dict[int, str] | None = None,
    **state: Any,
) -> Event:
    """Write the new state, its history row, its audit row and the thread's event message (answered).

    A holder whose claim someone else ends or moves (a human, the sweep, a claimer
    after the lease ran out) finds the event in its inbox, so it stops working. An event that
    ends a claim also reaches each bot with a live worktree for the thread, one only mentioned
    in it too: its daemon closes the worktree on it, and runs no turn (docs/bots.md, Worktrees);
    not a bot that has moved out of the thread's reach since.
    """
    now = ctx.now()
    if action in CLAIM_ENDS:
        live = await worktree_store.live_on_thread(conn, root["id"])
        reached = [
            int(r["agent_id"])
            for r in live
            if scope.bot_reaches(r["workspace"], r["workspace_id"], root["workspace_id"])
        ]
        also_for = {**dict.fromkeys(reached, "thread"), **(also_for or {})}
    before = await store.get(conn, root["id"])
    if (
        before is not None
        and before["state"] == "claimed"
        and before["holder_id"] is not None
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
    conn: Connection, ctx: Context, p: Principal, bot: AgentRow, to_workspace: WorkspaceRow
) -> None:
    """Release what a bot held where its move takes it out of reach.

    A claim held by a bot that can no longer see the thread only stalls it. Claims
    in an archived workspace stay as they were: nothing is written there.
    """
    for claim in await store.held_by(conn, [bot["id"]]):
        if scope.bot_reaches(to_workspace["slug"], to_workspace["id"], claim["workspace_id"]):
            continue
        workspace = await workspace_store.by_id(conn, claim["workspace_id"])
        root = await message_store.by_id(conn, claim["thread_id"])
        if workspace is None or root is None or workspace["archived_at"]:
            continue
        note = f"{bot['handle']} moved to workspace {to_workspace['slug']}"
        await _transition(
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


@dataclass
class ClaimRequest:
    note: str = arg("", max_len=500)
    lease_minutes: int = arg(leases.DEFAULT_LEASE_MINUTES, min=1, max=7 * 24 * 60)


async def claim(ctx: Context, p: Principal, thread_id: int, req: ClaimRequest) -> tuple[int, dict[str, Any]]:
    """Take the thread: 201 when taken, 200 when the holder renews, CLAIMED when held by another."""

    async def write(conn: Connection) -> tuple[int, dict[str, Any]]:
        root, workspace = await _thread(conn, p, thread_id)
        now = ctx.now()
        lease = leases.lease_until(ctx.clock, req.lease_minutes)
        current = await store.get(conn, root["id"])
        if current is not None and current["state"] == "claimed":
            if current["holder_id"] == p.agent_id:
                await store.progress(conn, root["id"], p.agent_id, now, lease)
                await store.append_history(conn, root["id"], "renew", p.agent_id, p.agent_id, req.note, now)
                return 200, to_dict(await store.get(conn, root["id"]))
            if not _expired(current, now):
                raise Claimed(
                    f"Thread {root['id']} is claimed by {current['holder']}; pick another "
                    f"thread, or ask {current['holder']} to hand it off.",
                    holder=current["holder"],
                    claim=to_dict(current),
                )
        verb = "claimed" if current is None or current["state"] != "done" else "reopened"
        await _transition(
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
        return 201, to_dict(await store.get(conn, root["id"]))

    return await ctx.db.write(write)


async def _held(
    conn: Connection, p: Principal, thread_id: int, action: str, doing: str
) -> tuple[Any, Any, Any]:
    root, workspace = await _thread(conn, p, thread_id)
    current = await store.get(conn, root["id"])
    if current is None or current["state"] == "open":
        raise InvalidArgument(f"Thread {root['id']} is not claimed; nothing to {doing}.")
    actions.require(p, action, claim=current)
    return root, workspace, current


@dataclass
class ReleaseRequest:
    reason: str = arg("", max_len=500)


async def release(ctx: Context, p: Principal, thread_id: int, req: ReleaseRequest) -> dict[str, Any]:
    async def write(conn: Connection) -> dict[str, Any]:
        root, workspace, current = await _held(conn, p, thread_id, "claim.release", "release")
        if current["state"] != "claimed":
            raise InvalidArgument(f"Thread {root['id']} is done; nothing to release.")
        await _transition(
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
        return to_dict(await store.get(conn, root["id"]))

    return await ctx.db.write(write)


@dataclass
class HandoffRequest:
    to: str = arg(pattern=r"[A-Za-z0-9._-]{2,32}")
    note: str = arg("", max_len=2000, multiline=True)


async def handoff(ctx: Context, p: Principal, thread_id: int, req: HandoffRequest) -> dict[str, Any]:
    async def write(conn: Connection) -> dict[str, Any]:
        root, workspace, current = await _held(conn, p, thread_id, "claim.handoff", "hand off")
        if current["state"] != "claimed":
            raise InvalidArgument(f"Thread {root['id']} is done; claim it again to hand it off.")
        target = await scope.handoff_target(conn, req.to, root)
        now = ctx.now()
        lease = leases.lease_until(ctx.clock, leases.lease_minutes(current))
        await _transition(
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
        return to_dict(await store.get(conn, root["id"]))

    return await ctx.db.write(write)


@dataclass
class DoneRequest:
    summary: str = arg("", max_len=4000, multiline=True)


async def done(ctx: Context, p: Principal, thread_id: int, req: DoneRequest) -> dict[str, Any]:
    """Close the thread; closing it again answers the first outcome and changes nothing."""

    async def write(conn: Connection) -> dict[str, Any]:
        root, workspace = await _thread(conn, p, thread_id)
        current = await store.get(conn, root["id"])
        if current is not None and current["state"] == "done":
            return to_dict(current)
        holder_id: int | None
        if current is None or current["state"] == "open":
            actions.require(p, "thread.close_unclaimed", thread=root["id"])
            holder_id = p.agent_id
        else:
            actions.require(p, "claim.close", claim=current)
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
        await replies.for_done(conn, ctx, p.handle, root["id"], int(event.message["id"]), req.summary)
        return to_dict(await store.get(conn, root["id"]))

    return await ctx.db.write(write)


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
            viewer_id=scope.viewer_id(p),
        )
        unseen = None
        if q.stalled:
            unseen = [dict(r) for r in await store.unseen(conn, ids, scope.viewer_id(p), 100)]
        return [to_dict(r) for r in rows], unseen

    items, unseen = await ctx.db.read(read)
    page = bounded_page(ctx, "claims", items, q.limit, q.max_bytes, descending=False, key="thread_id")
    if unseen is not None:
        page["unseen"] = unseen
    return page


# -- the sweep's transitions --------------------------------------------------------------


async def nudge(
    conn: Connection,
    ctx: Context,
    board: Principal,
    root: MessageRow,
    workspace: WorkspaceRow,
    claim: ClaimRow,
) -> None:
    """Remind the holder of a stalled claim, once per stretch without progress."""
    now = ctx.now()
    await store.mark_nudged(conn, root["id"], now)
    await store.append_history(conn, root["id"], "nudge", board.agent_id, claim["holder_id"], "", now)
    await audit.record(conn, ctx, board, "claim.nudge", str(root["id"]), workspace=workspace["slug"])
    await post_event(
        conn,
        ctx,
        workspace,
        f"@{claim['holder']} no progress on this claim since {claim['progress_at']}: post an "
        "update, hand it off, or release it.",
        parent=root,
        meta={"claim": "nudge", "thread_id": root["id"]},
    )


async def expire(
    conn: Connection,
    ctx: Context,
    board: Principal,
    root: MessageRow,
    workspace: WorkspaceRow,
    claim: ClaimRow,
) -> None:
    """Release a claim abandoned past BOARD_RELEASE_AFTER; the thread is open again."""
    body = f"released by the board: no progress from {claim['holder']} since {claim['progress_at']}"
    await _board_release(conn, ctx, board, root, workspace, action="expire", body=body, note="no progress")


async def release_by_board(
    conn: Connection, ctx: Context, board: Principal, root: MessageRow, workspace: WorkspaceRow, why: str
) -> bool:
    """Release a thread's claim for a reason of the board's (a routine run timed out).

    False when nobody holds it. The holder finds the event in its inbox and stops.
    """
    current = await store.get(conn, root["id"])
    if current is None or current["state"] != "claimed":
        return False
    body = f"released by the board from {current['holder']}: {why}"
    await _board_release(conn, ctx, board, root, workspace, action="release", body=body, note=why)
    return True


async def _board_release(
    conn: Connection,
    ctx: Context,
    board: Principal,
    root: MessageRow,
    workspace: WorkspaceRow,
    *,
    action: str,
    body: str,
    note: str,
) -> None:
    await _transition(
        conn,
        ctx,
        board,
        root,
        workspace,
        action=action,
        body=body,
        holder_id=None,
        note=note,
        state="open",
        lease_until=None,
        nudged_at=None,
    )


async def close_by_board(
    conn: Connection, ctx: Context, board: Principal, root: MessageRow, workspace: WorkspaceRow, why: str
) -> bool:
    """Mark a thread done for a reason outside the board (its issue was closed on the forge).

    The holder, if any, keeps the done thread (a later reply still reaches it) and finds
    the event in its inbox, so it stops; an open thread is done with nobody holding it.
    False when the thread is done already.
    """
    current = await store.get(conn, root["id"])
    if current is not None and current["state"] == "done":
        return False
    holder_id = current["holder_id"] if current is not None and current["state"] == "claimed" else None
    await _transition(
        conn,
        ctx,
        board,
        root,
        workspace,
        action="done",
        body=f"done: {why}",
        holder_id=holder_id,
        note=why,
        state="done",
        lease_until=None,
    )
    return True
