"""Stored outcomes of mutating calls, keyed by the caller's request id.

A row with status 0 marks a call whose effect committed but whose answer was
never stored (the board stopped in between): a retry learns it was carried out.
"""

from __future__ import annotations

from aiosqlite import Connection

from .identity import Row, one

#: The status of a call carried out whose answer is not known.
CARRIED_OUT = 0


async def get(conn: Connection, agent_id: int, request_id: str) -> Row | None:
    return await one(
        conn,
        "SELECT fingerprint, status, response FROM requests WHERE agent_id = ? AND request_id = ?",
        (agent_id, request_id),
    )


async def put(
    conn: Connection,
    agent_id: int,
    request_id: str,
    fingerprint: str,
    status: int,
    response: str,
    now: str,
) -> None:
    """Store an outcome; a stored answer is kept, a carried-out mark gives way to the answer."""
    await conn.execute(
        """INSERT INTO requests (agent_id, request_id, fingerprint, status, response, created_at)
           VALUES (?,?,?,?,?,?)
           ON CONFLICT (agent_id, request_id) DO UPDATE
           SET status = excluded.status, response = excluded.response
           WHERE requests.status = 0 AND requests.fingerprint = excluded.fingerprint""",
        (agent_id, request_id, fingerprint, status, response, now),
    )


async def prune(conn: Connection, before: str) -> int:
    cur = await conn.execute("DELETE FROM requests WHERE created_at < ?", (before,))
    return cur.rowcount
