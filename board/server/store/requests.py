"""Stored outcomes of mutating calls, keyed by the caller's request id."""

from __future__ import annotations

from .connection import Connection
from .identity import Row, one


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
    await conn.execute(
        """INSERT OR IGNORE INTO requests (agent_id, request_id, fingerprint, status, response, created_at)
           VALUES (?,?,?,?,?,?)""",
        (agent_id, request_id, fingerprint, status, response, now),
    )


async def prune(conn: Connection, before: str) -> int:
    cur = await conn.execute("DELETE FROM requests WHERE created_at < ?", (before,))
    return cur.rowcount
