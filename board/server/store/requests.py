"""Stored outcomes of mutating calls, keyed by the caller's request id.

A write job carries the request id of the call it runs for (:class:`Mark`, a field
of the job), and the writer records the call inside that job's own savepoint
(:func:`record`), so the effect and its record commit together or not at all. When
the call's answer is what the job produced, the record is that answer itself; else it
is the mark :data:`APPLIED`, filled in once the answer is rendered (:func:`put`). A
board that dies between the commit and the answer leaves the answer (or the mark),
so a retry is answered, or told the call took effect, instead of applying it again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .connection import Connection
from .rows import Row, one

#: Status of a call whose effect is committed and whose answer was never stored.
APPLIED = 0


class AppliedElsewhere(Exception):
    """A call with the same request id took effect first: on another board process sharing
    the database, which a per-process lock cannot hold back. The write is rolled back."""


@dataclass
class Mark:
    """The request id of the call a write runs for, as its write job carries it."""

    agent_id: int
    request_id: str
    fingerprint: str
    now: str
    #: The call's answer (status, text as kept) from its write job's result, when that
    #: result is the answer; None when the answer is rendered after the commit.
    answer: Callable[[Any], tuple[int, str]] | None = None
    marked: bool = False  # a write of this call has recorded it
    answered: bool = False  # ... and what it recorded is the answer itself


async def get(conn: Connection, agent_id: int, request_id: str) -> Row | None:
    return await one(
        conn,
        "SELECT fingerprint, status, response FROM requests WHERE agent_id = ? AND request_id = ?",
        (agent_id, request_id),
    )


async def record(conn: Connection, mark: Mark, result: Any) -> None:
    """Inside a write's savepoint: the call it runs for has taken effect, with this answer if known."""
    if mark.marked:
        return
    status, response = mark.answer(result) if mark.answer is not None else (APPLIED, "")
    cur = await conn.execute(
        """INSERT INTO requests (agent_id, request_id, fingerprint, status, response, created_at)
           VALUES (?,?,?,?,?,?) ON CONFLICT DO NOTHING""",
        (mark.agent_id, mark.request_id, mark.fingerprint, status, response, mark.now),
    )
    if cur.rowcount == 0:
        raise AppliedElsewhere(mark.request_id)
    mark.marked = True
    mark.answered = mark.answer is not None


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


async def prune(conn: Connection, before: str, at_most: int) -> int:
    """Forget at most ``at_most`` calls recorded before ``before``; how many."""
    cur = await conn.execute(
        """DELETE FROM requests WHERE (agent_id, request_id) IN
           (SELECT agent_id, request_id FROM requests WHERE created_at < ? LIMIT ?)""",
        (before, at_most),
    )
    return cur.rowcount
