"""Delivery states: where a message addressed to a bot stands, per bot, for whoever reads it.

A mention of a bot, or a direct message to one, moves through ``queued`` (in
the bot's inbox), ``woken`` (its daemon started a turn on it: the bot's ``seen``
receipt, which the daemon sends as the turn starts), ``replied`` (the bot posted
in the thread after it) or ``failed`` (the last wake naming it failed, timed out
or erred). ``held`` is a message the loop guard held, or one queued for a bot
whose daily budget holds its wakes, and ``unreachable`` a queued one for a bot
no daemon has long-polled for ``BOARD_UNREACHABLE_AFTER`` seconds.

Nothing is stored: the states are read from the inbox, receipts, replies and
wake records, for a whole page at once (:func:`attach`). A change a page should
show is announced as a ``delivery`` signal of the message's workspace
(:func:`changed`), which carries only the message id.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..hub import Signal
from ..principal import Principal
from ..store import delivery as store
from ..store import worktrees as worktree_store
from ..store.connection import Connection
from ..store.rows import Row
from ..store.writer import emit
from . import budgets, loopguard
from .context import Context
from .reach import delivery_key

FAILED = ("failed", "timeout", "error")


def changed(workspace_ids: dict[int, int]) -> None:
    """Announce, after the write commits, that these messages' (id -> workspace) states moved."""
    for message_id, workspace_id in sorted(workspace_ids.items()):
        emit(Signal(delivery_key(workspace_id), message_id))


def _entry(handle: str, state: str, at: str | None, reason: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"handle": handle, "state": state, "at": at}
    if reason:
        entry["reason"] = reason
    return entry


def _wake_state(handle: str, wake: Row | None) -> dict[str, Any] | None:
    if wake is None or wake["outcome"] not in FAILED:
        return None
    reason = str(wake["outcome"]) + (f": {wake['error']}" if wake["error"] else "")
    return _entry(handle, "failed", wake["ended_at"] or wake["started_at"], reason[:500])


async def attach(conn: Connection, ctx: Context, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Give each message addressed to a bot its ``delivery``: one entry per bot, by handle.

    Two queries for the page (the recipients with their receipts and replies, and the
    wakes naming its messages), one more when the loop guard held one, and one more when
    a message is still queued (whether its bot's worktree for the thread waits).
    """
    by_id = {int(m["id"]): m for m in items}
    held = [i for i, m in by_id.items() if loopguard.HELD_TAG in m["tags"]]
    rows = [r for r in await store.recipients(conn, list(by_id)) if r["message_id"] not in held]
    if held:
        for message_id, handles in (await _held(conn, [by_id[i] for i in held])).items():
            reason = "loop guard: bots answering bots wake no bot until a human writes"
            at = by_id[message_id]["created_at"]
            by_id[message_id]["delivery"] = [_entry(h, "held", at, reason) for h in handles]
    if not rows:
        return items
    wakes: dict[tuple[int, int], Row] = {}
    for wake in await store.wakes(conn, sorted({int(r["message_id"]) for r in rows})):
        wakes[int(wake["message_id"]), int(wake["agent_id"])] = wake  # oldest first: the last one wins
    now = ctx.now()
    cutoff = ctx.ago(ctx.settings.unreachable_after)
    holds: dict[int, budgets.Hold | None] = {}  # asked once per bot of the page
    queued: list[tuple[dict[str, Any], Row]] = []  # not taken yet: their state needs the page's waits
    for row in rows:
        message = by_id[int(row["message_id"])]
        handle, agent_id = str(row["handle"]), int(row["agent_id"])
        wake = wakes.get((int(row["message_id"]), agent_id))
        entry = _wake_state(handle, wake)
        if entry is None and row["replied_at"] is not None:
            entry = _entry(handle, "replied", row["replied_at"])
        if entry is None and (row["seen_at"] is not None or wake is not None):
            entry = _entry(handle, "woken", row["seen_at"] or (wake and wake["started_at"]))
        if entry is None:
            if agent_id not in holds:
                holds[agent_id] = await budgets.hold_of(conn, agent_id, now)
            entry = {}  # filled below, in its place among the message's bots
            queued.append((entry, row))
        message.setdefault("delivery", []).append(entry)
    waits = await _worktree_waits(
        conn, [(int(by_id[int(r["message_id"])]["thread_id"]), r) for _, r in queued]
    )
    for entry, row in queued:
        agent_id = int(row["agent_id"])
        thread_id = int(by_id[int(row["message_id"])]["thread_id"])
        created_at = by_id[int(row["message_id"])]["created_at"]
        wait = waits.get((thread_id, agent_id))
        entry.update(
            _queued(str(row["handle"]), created_at, row["last_wait_at"], cutoff, holds[agent_id], wait)
        )
    return items


async def _worktree_waits(conn: Connection, queued: list[tuple[int, Row]]) -> dict[tuple[int, int], str]:
    """The detail of each (thread, bot) whose worktree waits, of the queued messages: one query,
    none when nothing is queued."""
    pairs = sorted({(thread_id, int(row["agent_id"])) for thread_id, row in queued})
    rows = await worktree_store.waiting(conn, pairs)
    return {(int(r["thread_id"]), int(r["agent_id"])): str(r["detail"]) for r in rows}


def _queued(
    handle: str,
    created_at: str,
    last_wait: str | None,
    cutoff: str,
    hold: budgets.Hold | None,
    wait: str | None = None,
) -> dict[str, Any]:
    """The state of a message its bot has not taken yet: held by a budget or by the bot's worktrees
    all in use, unreachable or queued."""
    if hold is not None:
        return _entry(handle, "held", created_at, f"budget: {hold.which}")
    if wait is not None:
        return _entry(handle, "held", created_at, f"worktrees: {wait or 'every worktree is in use'}"[:500])
    if last_wait is None or last_wait < cutoff:
        since = f"since {last_wait}" if last_wait else "ever"
        return _entry(handle, "unreachable", last_wait, f"no daemon has waited for @{handle} {since}")
    return _entry(handle, "queued", created_at)


async def _held(conn: Connection, messages: list[dict[str, Any]]) -> dict[int, list[str]]:
    """The handles of the bots each held message was for, by message id."""
    mentioned = sorted({h for m in messages for h in m["mentions"]})
    rows = await store.held_recipients(conn, [int(m["id"]) for m in messages], mentioned)
    bots = {str(r["handle"]) for r in rows if r["message_id"] is None}
    found: dict[int, set[str]] = {int(m["id"]): bots & set(m["mentions"]) for m in messages}
    for r in rows:
        if r["message_id"] is not None:
            found[int(r["message_id"])].add(str(r["handle"]))
    return {i: sorted(handles, key=str.lower) for i, handles in found.items() if handles}


async def seen_by(conn: Connection, p: Principal, message_ids: Iterable[int]) -> None:
    """A bot's ``seen`` receipts moved these messages to ``woken``: tell their pages."""
    if p.is_bot:
        changed(await store.workspaces_of(conn, sorted(set(message_ids))))
