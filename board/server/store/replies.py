"""Replies out to the forge: outbox rows that name an intake source and an issue, not a destination.

They live in the ``notifications`` table beside the humans' notifications, so the one
dispatcher sends both with the same retries. The source's API token is read here, at
send time, by :func:`target` only; every other read answers what was posted and how it went.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .connection import Connection
from .rows import Row, all_rows, one

REPLY = """SELECT n.id, n.kind, n.subject, n.state, n.attempts, n.last_error, n.created_at, n.sent_at,
    n.repository, n.issue, n.thread_id, n.remote_id, s.name AS source, s.forge
    FROM notifications n JOIN intake_sources s ON s.id = n.source_id"""


@dataclass(frozen=True)
class Issue:
    """The issue behind a thread, and whether its mapping sends replies back."""

    source_id: int
    source: str
    forge: str
    repository: str
    number: int
    reply_out: bool


async def issue_of_thread(conn: Connection, thread_id: int) -> Issue | None:
    """The issue a thread was opened for, with ``reply_out`` of a mapping of its repository
    to the thread's own workspace and channel (the mapping it came through)."""
    row = await one(
        conn,
        """SELECT i.source_id, s.name, s.forge, i.repository, i.issue,
               EXISTS (SELECT 1 FROM intake_mappings m
                       WHERE m.source_id = i.source_id AND m.repository = i.repository
                         AND m.workspace_id = t.workspace_id AND m.channel = c.slug
                         AND m.reply_out = 1) AS reply_out
           FROM intake_issues i JOIN intake_sources s ON s.id = i.source_id
           JOIN messages t ON t.id = i.thread_id JOIN channels c ON c.id = t.channel_id
           WHERE i.thread_id = ?""",
        (thread_id,),
    )
    if row is None:
        return None
    return Issue(
        int(row["source_id"]),
        str(row["name"]),
        str(row["forge"]),
        str(row["repository"]),
        int(row["issue"]),
        bool(row["reply_out"]),
    )


@dataclass(frozen=True)
class Reply:
    """One comment to post on an issue."""

    idem_key: str
    issue: Issue
    thread_id: int
    kind: str  # reply or done
    subject: str  # who wrote it, as the comment names them
    text: str
    link: str
    next_at: str


async def enqueue(conn: Connection, r: Reply, now: str) -> bool:
    """Add ``r`` unless its idem_key is in the outbox already; whether it was added."""
    cursor = await conn.execute(
        """INSERT INTO notifications (idem_key, destination_id, kind, subject, text, link, state,
               attempts, next_at, last_error, created_at, source_id, repository, issue, thread_id)
           VALUES (?, NULL, ?, ?, ?, ?, 'pending', 0, ?, '', ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING""",
        (
            r.idem_key,
            r.kind,
            r.subject,
            r.text,
            r.link,
            r.next_at,
            now,
            r.issue.source_id,
            r.issue.repository,
            r.issue.number,
            r.thread_id,
        ),
    )
    return cursor.rowcount > 0


async def target(conn: Connection, source_id: int) -> dict[str, Any] | None:
    """What the forge sender needs of the source, its token included; None once it is removed."""
    row = await one(
        conn, "SELECT name, forge, api_url, api_token FROM intake_sources WHERE id = ?", (source_id,)
    )
    if row is None:
        return None
    return {
        "source": row["name"],
        "forge": row["forge"],
        "api_url": row["api_url"],
        "token": row["api_token"],
    }


async def own_comment(conn: Connection, source_id: int, comment_id: str) -> bool:
    """Whether the board posted the comment with this id through this source."""
    row = await one(
        conn, "SELECT 1 FROM notifications WHERE source_id = ? AND remote_id = ?", (source_id, comment_id)
    )
    return row is not None


async def of_thread(conn: Connection, thread_id: int) -> list[Row]:
    return await all_rows(conn, f"{REPLY} WHERE n.thread_id = ? ORDER BY n.id", (thread_id,))


async def of_source(conn: Connection, source_id: int | None, limit: int) -> list[Row]:
    """The newest replies out first, of one source or of all."""
    if source_id is None:
        return await all_rows(conn, f"{REPLY} ORDER BY n.id DESC LIMIT ?", (limit,))
    return await all_rows(
        conn, f"{REPLY} WHERE n.source_id = ? ORDER BY n.id DESC LIMIT ?", (source_id, limit)
    )
