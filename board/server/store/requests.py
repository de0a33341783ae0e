"""Stored outcomes of mutating calls, keyed by the caller's request id.

A call with a request id is marked applied inside the savepoint of its own write
(:func:`mark_applied`, run by the writer), so its effect and the mark commit together
or not at all. Its answer is filled in once it is rendered (:func:`put`); a board
that dies between the two leaves the mark, and a retry is told the call took effect
instead of applying it again.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass

from .connection import Connection
from .rows import Row, one

#: Status of a call whose effect is committed and whose answer was never stored.
APPLIED = 0


class AppliedElsewhere(Exception):
    """A call with the same request id took effect first: on another board process sharing
    the database, which a per-process lock cannot hold back. The write is rolled back."""


@dataclass
class Pending:
    """The request id of the call a write runs for."""

    agent_id: int
    request_id: str
    fingerprint: str
    now: str
    marked: bool = False  # a write of this call has marked it applied


#: Set by the API around a call with a request id; the writer reads it in each write's context.
pending: contextvars.ContextVar[Pending | None] = contextvars.ContextVar("pending_request", default=None)


async def get(conn: Connection, agent_id: int, request_id: str) -> Row | None:
    return await one(
        conn,
        "SELECT fingerprint, status, response FROM requests WHERE agent_id = ? AND request_id = ?",
        (agent_id, request_id),
    )


async def mark_applied(conn: Connection) -> None:
    """Inside a write's savepoint: the call it runs for (if any) has taken effect."""
    key = pending.get()
    if key is None or key.marked:
        return
    cur = await conn.execute(
        """INSERT INTO requests (agent_id, request_id, fingerprint, status, response, created_at)
           VALUES (?,?,?,?,'',?) ON CONFLICT DO NOTHING""",
        (key.agent_id, key.request_id, key.fingerprint, APPLIED, key.now),
    )
    if cur.rowcount == 0:
        raise AppliedElsewhere(key.request_id)
    key.marked = True


async def put(
    conn: Connection,
    agent_id: int,
    request_id: str,
    fingerprint: str,
    status: int,
    response: str,
    now: str,
) -> None:
    """The call's answer, kept for replays; a first answer is never replaced."""
    await conn.execute(
        """INSERT INTO requests (agent_id, request_id, fingerprint, status, response, created_at)
           VALUES (?,?,?,?,?,?)
           ON CONFLICT (agent_id, request_id) DO UPDATE
           SET status = excluded.status, response = excluded.response
           WHERE requests.status = ?""",
        (agent_id, request_id, fingerprint, status, response, now, APPLIED),
    )


async def prune(conn: Connection, before: str) -> int:
    cur = await conn.execute("DELETE FROM requests WHERE created_at < ?", (before,))
    return cur.rowcount
