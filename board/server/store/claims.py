"""Claims: the current state per thread, its history, wakes and unseen flags."""

from __future__ import annotations

import json
from typing import Any

from .connection import Connection
from .inbox import REACHED
from .rows import ClaimRow, Row, all_rows, one

COLUMNS = """c.thread_id, c.workspace_id, w.slug AS workspace, c.state, c.holder_id,
    a.handle AS holder, c.note, c.claimed_at, c.lease_until, c.progress_at, c.nudged_at, c.updated_at"""
FROM = """claims c JOIN workspaces w ON w.id = c.workspace_id
    LEFT JOIN agents a ON a.id = c.holder_id"""
# A claim of a conversation's thread shows only to the conversation's members.
MEMBER_CLAUSE = """NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = c.thread_id
    AND m.conversation_id IS NOT NULL AND m.conversation_id NOT IN
        (SELECT conversation_id FROM conversation_members WHERE agent_id = ?))"""


def _scope(workspace_ids: list[int] | None, viewer_id: int | None) -> tuple[list[str], list[Any]]:
    """Clauses keeping claims in these workspaces (all: None) that ``viewer_id`` may see (all: None)."""
    clauses: list[str] = []
    params: list[Any] = []
    if workspace_ids is not None:
        clauses.append(f"c.workspace_id IN ({','.join('?' * len(workspace_ids)) or 'NULL'})")
        params += workspace_ids
    if viewer_id is not None:
        clauses.append(MEMBER_CLAUSE)
        params.append(viewer_id)
    return clauses, params


def unclaimed() -> dict[str, Any]:
    """The claim of a thread nobody claimed, as the API shows it."""
    return {"state": "open", "holder": None}


async def get(conn: Connection, thread_id: int) -> ClaimRow | None:
    return await one(conn, f"SELECT {COLUMNS} FROM {FROM} WHERE c.thread_id = ?", (thread_id,))


async def for_threads(conn: Connection, thread_ids: list[int]) -> list[ClaimRow]:
    if not thread_ids:
        return []
    marks = ",".join("?" * len(thread_ids))
    return await all_rows(
        conn, f"SELECT {COLUMNS} FROM {FROM} WHERE c.thread_id IN ({marks})", tuple(thread_ids)
    )


async def held_by(
    conn: Connection,
    holder_ids: list[int],
    *,
    workspace_ids: list[int] | None = None,
    viewer_id: int | None = None,
) -> list[Row]:
    """Claims these agents hold, of those a viewer may see (see :func:`_scope`)."""
    if not holder_ids:
        return []
    marks = ",".join("?" * len(holder_ids))
    clauses, params = _scope(workspace_ids, viewer_id)
    extra = "".join(f" AND {c}" for c in clauses)
    return await all_rows(
        conn,
        f"""SELECT {COLUMNS} FROM {FROM} WHERE c.state = 'claimed' AND c.holder_id IN ({marks}){extra}
            ORDER BY c.thread_id LIMIT 500""",
        (*holder_ids, *params),
    )


async def select(
    conn: Connection,
    *,
    workspace_ids: list[int] | None,
    holder_id: int | None,
    state: str | None,
    progress_before: str | None,
    after: int,
    limit: int,
    viewer_id: int | None = None,
) -> list[Row]:
    clauses, params = _scope(workspace_ids, viewer_id)
    clauses.insert(0, "c.thread_id > ?")
    params.insert(0, after)
    if holder_id is not None:
        clauses.append("c.holder_id = ?")
        params.append(holder_id)
    if state is not None:
        clauses.append("c.state = ?")
        params.append(state)
    if progress_before is not None:
        clauses.append("c.state = 'claimed' AND c.progress_at < ?")
        params.append(progress_before)
    return await all_rows(
        conn,
        f"SELECT {COLUMNS} FROM {FROM} WHERE {' AND '.join(clauses)} ORDER BY c.thread_id LIMIT ?",
        (*params, limit),
    )


async def put(conn: Connection, thread_id: int, workspace_id: int, **values: Any) -> None:
    """Insert or replace the current state of one thread's claim."""
    names = ["thread_id", "workspace_id", *values]
    await conn.execute(
        f"""INSERT INTO claims ({", ".join(names)}) VALUES ({", ".join("?" * len(names))})
            ON CONFLICT (thread_id) DO UPDATE SET
            {", ".join(f"{n} = excluded.{n}" for n in values)}""",
        (thread_id, workspace_id, *values.values()),
    )


async def progress(conn: Connection, thread_id: int, holder_id: int, now: str, lease_until: str) -> bool:
    """A post by the holder: renew the lease and count it as progress."""
    cur = await conn.execute(
        """UPDATE claims SET progress_at = ?, lease_until = ?, updated_at = ?
           WHERE thread_id = ? AND state = 'claimed' AND holder_id = ?""",
        (now, lease_until, now, thread_id, holder_id),
    )
    return cur.rowcount > 0


async def append_history(
    conn: Connection,
    thread_id: int,
    action: str,
    actor_id: int | None,
    holder_id: int | None,
    note: str,
    now: str,
) -> None:
    await conn.execute(
        """INSERT INTO claim_events (thread_id, action, actor_id, holder_id, note, at)
           VALUES (?,?,?,?,?,?)""",
        (thread_id, action, actor_id, holder_id, note, now),
    )


async def history(conn: Connection, thread_id: int, limit: int = 200) -> list[Row]:
    return await all_rows(
        conn,
        """SELECT e.id, e.action, actor.handle AS actor, holder.handle AS holder, e.note, e.at
           FROM claim_events e LEFT JOIN agents actor ON actor.id = e.actor_id
           LEFT JOIN agents holder ON holder.id = e.holder_id
           WHERE e.thread_id = ? ORDER BY e.id LIMIT ?""",
        (thread_id, limit),
    )


async def insert_wake(conn: Connection, values: dict[str, Any]) -> int:
    """A wake record, and a row per message it names (``wake_triggers``, for delivery states)."""
    triggers = sorted(set(values["trigger_ids"]))
    values = dict(values, trigger_ids=json.dumps(values["trigger_ids"]))
    names = list(values)
    new_id = await conn.insert(
        f"INSERT INTO wakes ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
        tuple(values.values()),
    )
    await conn.executemany(
        "INSERT INTO wake_triggers (message_id, wake_id, agent_id) VALUES (?, ?, ?)",
        [(message_id, new_id, values["agent_id"]) for message_id in triggers],
    )
    return new_id


async def select_wakes(
    conn: Connection,
    workspace_ids: list[int] | None,
    agent_id: int | None,
    since: int,
    limit: int,
    thread_id: int | None = None,
    before: int | None = None,
) -> list[Row]:
    """Wakes after ``since`` oldest first, or before ``before`` newest first; with ``thread_id``,
    those a message of that thread triggered."""
    clauses, params = ["k.id > ?"], [since]
    if before is not None:
        clauses.append("k.id < ?")
        params.append(before)
    if thread_id is not None:
        clauses.append(
            "EXISTS (SELECT 1 FROM json_each(k.trigger_ids) j JOIN messages m ON m.id = j.value"
            " WHERE m.thread_id = ?)"
        )
        params.append(thread_id)
    if workspace_ids is not None:
        clauses.append(f"k.workspace_id IN ({','.join('?' * len(workspace_ids)) or 'NULL'})")
        params += workspace_ids
    if agent_id is not None:
        clauses.append("k.agent_id = ?")
        params.append(agent_id)
    return await all_rows(
        conn,
        f"""SELECT k.*, a.handle AS bot, w.slug AS workspace FROM wakes k
            JOIN agents a ON a.id = k.agent_id JOIN workspaces w ON w.id = k.workspace_id
            WHERE {" AND ".join(clauses)} ORDER BY k.id {"DESC" if before is not None else ""} LIMIT ?""",
        (*params, limit),
    )


async def stale_claims(
    conn: Connection, progress_before: str, release_before: str, limit: int
) -> list[ClaimRow]:
    """Stalled claims the sweep must act on: due for release, or not nudged since their progress.

    Claims already nudged for this stretch, and those of archived workspaces, are left
    out so that they never fill the batch ahead of claims that need a nudge.
    """
    return await all_rows(
        conn,
        f"""SELECT {COLUMNS} FROM {FROM} WHERE c.state = 'claimed' AND c.progress_at < ?
              AND w.archived_at IS NULL
              AND (c.progress_at < ? OR c.nudged_at IS NULL OR c.nudged_at < c.progress_at)
            ORDER BY c.progress_at LIMIT ?""",
        (progress_before, release_before, limit),
    )


async def mark_nudged(conn: Connection, thread_id: int, now: str) -> None:
    await conn.execute("UPDATE claims SET nudged_at = ? WHERE thread_id = ?", (now, thread_id))


async def flag_unseen(conn: Connection, away_before: str, created_before: str, now: str, limit: int) -> int:
    """Flag messages addressed to away bots and still unseen, that they can still read (a
    moved bot's old inbox it cannot mark seen); returns how many were new."""
    cur = await conn.execute(
        f"""INSERT INTO unseen_flags (message_id, agent_id, flagged_at)
           SELECT i.message_id, i.agent_id, ? FROM inbox i
           JOIN agents a ON a.id = i.agent_id JOIN messages m ON m.id = i.message_id
           WHERE a.kind = 'bot' AND (a.last_seen_at IS NULL OR a.last_seen_at < ?)
             AND m.created_at < ? AND {REACHED}
             AND NOT EXISTS (SELECT 1 FROM receipts r WHERE r.agent_id = i.agent_id
                             AND r.message_id = i.message_id AND r.state = 'seen')
             AND NOT EXISTS (SELECT 1 FROM unseen_flags f WHERE f.agent_id = i.agent_id
                             AND f.message_id = i.message_id)
           LIMIT ?
           ON CONFLICT DO NOTHING""",
        (now, away_before, created_before, limit),
    )
    return cur.rowcount


async def unseen(
    conn: Connection, workspace_ids: list[int] | None, viewer_id: int | None, limit: int
) -> list[Row]:
    """Flagged unseen mail its bot still reads (not a moved bot's, flagged before its move); a
    conversation's only for its members (``viewer_id``; None: a human)."""
    where = ""
    params: list[Any] = []
    if workspace_ids is not None:
        where = f"AND m.workspace_id IN ({','.join('?' * len(workspace_ids)) or 'NULL'})"
        params = list(workspace_ids)
    if viewer_id is not None:
        where += """ AND (m.conversation_id IS NULL OR m.conversation_id IN
                     (SELECT conversation_id FROM conversation_members WHERE agent_id = ?))"""
        params.append(viewer_id)
    return await all_rows(
        conn,
        f"""SELECT f.message_id, a.handle, f.flagged_at, m.thread_id FROM unseen_flags f
            JOIN agents a ON a.id = f.agent_id JOIN messages m ON m.id = f.message_id
            JOIN inbox i ON i.agent_id = f.agent_id AND i.message_id = f.message_id
            WHERE {REACHED} AND NOT EXISTS (SELECT 1 FROM receipts r WHERE r.agent_id = f.agent_id
                              AND r.message_id = f.message_id AND r.state = 'seen') {where}
            ORDER BY f.message_id LIMIT ?""",
        (*params, limit),
    )
