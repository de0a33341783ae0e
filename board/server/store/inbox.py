"""The inbox by thread: groups with counts, unread ids, receipts for a thread or all at once.

A message leaves the inbox view once it is *done* (a ``done`` receipt); it is unread
until it is *seen*. Done implies seen, so every write here adds ``seen`` too.
"""

from __future__ import annotations

from typing import Any

from ..principal import ADMIN_WORKSPACE
from .connection import Connection
from .rows import Row, all_rows, count

_NOT_DONE = """NOT EXISTS (SELECT 1 FROM receipts d WHERE d.agent_id = i.agent_id
    AND d.message_id = i.message_id AND d.state = 'done')"""
_UNSEEN = """NOT EXISTS (SELECT 1 FROM receipts r WHERE r.agent_id = i.agent_id
    AND r.message_id = i.message_id AND r.state = 'seen')"""
_WRITABLE = """EXISTS (SELECT 1 FROM messages wm JOIN workspaces ww ON ww.id = wm.workspace_id
    WHERE wm.id = i.message_id AND ww.archived_at IS NULL)"""
#: An inbox row (``i``) whose message its agent reaches now: a bot moved to another workspace keeps
#: the rows of what reached it there, but reads them no more (services/scope.py ``bot_reaches``).
REACHED = f"""EXISTS (SELECT 1 FROM agents ra JOIN messages rm ON rm.id = i.message_id
    LEFT JOIN workspaces rw ON rw.id = ra.workspace_id
    WHERE ra.id = i.agent_id AND (ra.kind <> 'bot' OR ra.workspace_id = rm.workspace_id
    OR rw.slug = '{ADMIN_WORKSPACE}'))"""


async def groups(conn: Connection, agent_id: int, before: int | None, limit: int) -> list[Row]:
    """Threads with messages in the inbox not done, newest first: thread id, counts, latest id.

    An archived workspace's messages are left out: it is read-only, so they could never be marked.
    """
    return await all_rows(
        conn,
        f"""SELECT m.thread_id, count(*) AS messages,
                   sum(CASE WHEN {_UNSEEN} THEN 1 ELSE 0 END) AS unread,
                   max(i.message_id) AS latest
            FROM inbox i JOIN messages m ON m.id = i.message_id
            WHERE i.agent_id = ? AND {_NOT_DONE} AND {_WRITABLE} AND {REACHED}
            GROUP BY m.thread_id HAVING max(i.message_id) < ?
            ORDER BY latest DESC LIMIT ?""",
        (agent_id, before if before is not None else 2**62, limit),
    )


async def unread_count(conn: Connection, agent_id: int) -> int:
    """Messages in the inbox not yet seen (done ones are seen), outside archived workspaces."""
    return await count(
        conn,
        f"SELECT count(*) FROM inbox i WHERE i.agent_id = ? AND {_UNSEEN} AND {_WRITABLE} AND {REACHED}",
        (agent_id,),
    )


async def unread_among(conn: Connection, agent_id: int, ids: list[int]) -> dict[int, str]:
    """Which of these messages are unread in the inbox, with why they are in it."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = await all_rows(
        conn,
        f"""SELECT i.message_id, i.reason FROM inbox i
            WHERE i.agent_id = ? AND i.message_id IN ({marks}) AND {_UNSEEN} AND {REACHED}""",
        (agent_id, *ids),
    )
    return {int(r["message_id"]): str(r["reason"]) for r in rows}


async def in_thread(conn: Connection, agent_id: int, thread_id: int) -> int:
    """How many of a thread's messages are in the inbox and not done."""
    return await count(
        conn,
        f"""SELECT count(*) FROM inbox i JOIN messages m ON m.id = i.message_id
            WHERE i.agent_id = ? AND m.thread_id = ? AND {_NOT_DONE} AND {REACHED}""",
        (agent_id, thread_id),
    )


async def mark(conn: Connection, agent_id: int, thread_id: int | None, state: str, now: str) -> int:
    """Receipts of ``state`` for the inbox's messages (one thread's, or all) outside archived
    workspaces, in one statement each; how many messages gained one."""
    where = "i.agent_id = ?"
    params: list[Any] = [agent_id]
    if thread_id is not None:
        where += " AND i.message_id IN (SELECT id FROM messages WHERE thread_id = ?)"
        params.append(thread_id)
    added = 0
    for kind in ("seen", "done") if state == "done" else ("seen",):
        cursor = await conn.execute(
            f"""INSERT INTO receipts (message_id, agent_id, state, at)
                SELECT i.message_id, i.agent_id, ?, ? FROM inbox i WHERE {where} AND {_WRITABLE} AND {REACHED}
                ON CONFLICT DO NOTHING""",
            (kind, now, *params),
        )
        if kind == state:
            added = max(cursor.rowcount, 0)
    return added


async def notify_off(conn: Connection, agent_id: int) -> set[str]:
    rows = await all_rows(conn, "SELECT kind FROM notify_off WHERE agent_id = ?", (agent_id,))
    return {str(r["kind"]) for r in rows}


async def set_notify(conn: Connection, agent_id: int, kind: str, on: bool) -> None:
    if on:
        await conn.execute("DELETE FROM notify_off WHERE agent_id = ? AND kind = ?", (agent_id, kind))
    else:
        await conn.execute(
            "INSERT INTO notify_off (agent_id, kind) VALUES (?, ?) ON CONFLICT DO NOTHING", (agent_id, kind)
        )
