"""Notifications out of band: destinations, the kinds each is sent, quiet hours, the outbox.

A destination's ``settings`` column is JSON text holding its secrets too; the service
(``services/outbound.py``) decides what of it is ever answered. The outbox is the
``notifications`` table: a row is enqueued once per ``idem_key`` (``ON CONFLICT DO
NOTHING``), taken by the dispatcher (``sending``) and left ``sent``, ``pending`` again
with its next time, or ``failed``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .connection import Connection
from .rows import Row, all_rows, first_column, one

DESTINATION = "SELECT id, agent_id, name, kind, settings, created_at, active FROM destinations"
NOTIFICATION = """SELECT id, idem_key, destination_id, kind, subject, text, link, state, attempts,
    next_at, last_error, created_at, sent_at, source_id, repository, issue FROM notifications"""


async def destinations_of(conn: Connection, agent_id: int) -> list[Row]:
    return await all_rows(conn, f"{DESTINATION} WHERE agent_id = ? ORDER BY id", (agent_id,))


async def destination(conn: Connection, destination_id: int) -> Row | None:
    return await one(conn, f"{DESTINATION} WHERE id = ?", (destination_id,))


async def insert_destination(
    conn: Connection, agent_id: int, name: str, kind: str, settings: dict[str, Any], active: bool, now: str
) -> int:
    row = await one(
        conn,
        """INSERT INTO destinations (agent_id, name, kind, settings, created_at, active)
           VALUES (?, ?, ?, ?, ?, ?) RETURNING id""",
        (agent_id, name, kind, json.dumps(settings), now, int(active)),
    )
    assert row is not None
    return int(row[0])


async def update_destination(
    conn: Connection, destination_id: int, name: str, settings: dict[str, Any], active: bool
) -> None:
    await conn.execute(
        "UPDATE destinations SET name = ?, settings = ?, active = ? WHERE id = ?",
        (name, json.dumps(settings), int(active), destination_id),
    )


async def delete_destination(conn: Connection, destination_id: int) -> None:
    await conn.execute("DELETE FROM notifications WHERE destination_id = ?", (destination_id,))
    await conn.execute("DELETE FROM destination_kinds WHERE destination_id = ?", (destination_id,))
    await conn.execute("DELETE FROM destinations WHERE id = ?", (destination_id,))


async def kinds_of(conn: Connection, destination_ids: list[int]) -> dict[int, list[str]]:
    """The kinds each destination is sent, sorted."""
    if not destination_ids:
        return {}
    marks = ",".join("?" * len(destination_ids))
    rows = await all_rows(
        conn,
        f"SELECT destination_id, kind FROM destination_kinds WHERE destination_id IN ({marks}) ORDER BY kind",
        tuple(destination_ids),
    )
    found: dict[int, list[str]] = {i: [] for i in destination_ids}
    for r in rows:
        found[int(r["destination_id"])].append(str(r["kind"]))
    return found


async def failing(conn: Connection, destination_ids: list[int]) -> dict[int, str]:
    """The error of each destination's newest notification tried, where that one has not gone
    through (failed, or waiting for its retry); a destination whose newest went through is absent.

    Each destination's newest is found walking its (destination, id) index back from its end,
    so a destination's years of sent mail are not read for it."""
    if not destination_ids:
        return {}
    marks = ",".join("?" * len(destination_ids))
    rows = await all_rows(
        conn,
        f"""SELECT n.destination_id, n.last_error FROM notifications n
            WHERE n.id IN (SELECT (SELECT m.id FROM notifications m
                                   WHERE m.destination_id = d.id AND m.attempts > 0
                                   ORDER BY m.id DESC LIMIT 1)
                           FROM destinations d WHERE d.id IN ({marks}))
              AND n.state <> 'sent' AND n.last_error <> ''""",
        tuple(destination_ids),
    )
    return {int(r["destination_id"]): str(r["last_error"]) for r in rows}


async def set_kinds(conn: Connection, destination_id: int, kinds: list[str]) -> None:
    await conn.execute("DELETE FROM destination_kinds WHERE destination_id = ?", (destination_id,))
    for kind in kinds:
        await conn.execute(
            "INSERT INTO destination_kinds (destination_id, kind) VALUES (?, ?)", (destination_id, kind)
        )


async def routes_for(conn: Connection, agent_ids: list[int], kind: str) -> list[Row]:
    """The active destinations of these humans that take ``kind``, with each owner's quiet hours."""
    if not agent_ids:
        return []
    marks = ",".join("?" * len(agent_ids))
    return await all_rows(
        conn,
        f"""SELECT d.id, d.agent_id, q.start_min, q.end_min, q.timezone
            FROM destinations d JOIN destination_kinds k ON k.destination_id = d.id
            JOIN agents a ON a.id = d.agent_id LEFT JOIN quiet_hours q ON q.agent_id = d.agent_id
            WHERE d.agent_id IN ({marks}) AND a.kind = 'human' AND d.active = 1 AND k.kind = ?
            ORDER BY d.id""",
        (*agent_ids, kind),
    )


async def human_ids(conn: Connection) -> list[int]:
    """Every human with at least one active destination: who may hear of a board-wide event."""
    return [
        int(i)
        for i in await first_column(
            conn,
            """SELECT DISTINCT d.agent_id FROM destinations d JOIN agents a ON a.id = d.agent_id
               WHERE d.active = 1 AND a.kind = 'human' ORDER BY d.agent_id""",
        )
    ]


async def quiet_hours(conn: Connection, agent_id: int) -> Row | None:
    return await one(
        conn, "SELECT start_min, end_min, timezone FROM quiet_hours WHERE agent_id = ?", (agent_id,)
    )


async def set_quiet_hours(conn: Connection, agent_id: int, start: int, end: int, timezone: str) -> None:
    await conn.execute(
        """INSERT INTO quiet_hours (agent_id, start_min, end_min, timezone) VALUES (?, ?, ?, ?)
           ON CONFLICT (agent_id) DO UPDATE SET start_min = excluded.start_min,
               end_min = excluded.end_min, timezone = excluded.timezone""",
        (agent_id, start, end, timezone),
    )


async def clear_quiet_hours(conn: Connection, agent_id: int) -> None:
    await conn.execute("DELETE FROM quiet_hours WHERE agent_id = ?", (agent_id,))


# -- the outbox ------------------------------------------------------------------------


@dataclass(frozen=True)
class Outgoing:
    """One notification to enqueue for one destination."""

    idem_key: str
    destination_id: int
    kind: str
    subject: str
    text: str
    link: str
    next_at: str


async def enqueue(conn: Connection, n: Outgoing, now: str) -> bool:
    """Add ``n`` unless its idem_key is in the outbox already; whether it was added."""
    cursor = await conn.execute(
        """INSERT INTO notifications (idem_key, destination_id, kind, subject, text, link, state,
               attempts, next_at, last_error, created_at)
           VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?, '', ?) ON CONFLICT DO NOTHING""",
        (n.idem_key, n.destination_id, n.kind, n.subject, n.text, n.link, n.next_at, now),
    )
    return cursor.rowcount > 0


async def enqueue_unheld(
    conn: Connection, agent_ids: list[int], held_ids: list[int], event_key: str, n: Outgoing, now: str
) -> int:
    """One statement: ``n`` for each active destination of these humans that takes its kind,
    due at ``n.next_at``, except those of ``held_ids`` (their quiet hours decide); how many.

    Each row's idem key is ``"<event key>:<destination id>"`` (``n``'s own key and
    destination are not used).
    """
    if not agent_ids:
        return 0
    marks = ",".join("?" * len(agent_ids))
    held = f" AND d.agent_id NOT IN ({','.join('?' * len(held_ids))})" if held_ids else ""
    cursor = await conn.execute(
        f"""INSERT INTO notifications (idem_key, destination_id, kind, subject, text, link, state,
               attempts, next_at, last_error, created_at)
            SELECT ? || ':' || CAST(d.id AS TEXT), d.id, ?, ?, ?, ?, 'pending', 0, ?, '', ?
              FROM destinations d JOIN destination_kinds k ON k.destination_id = d.id
              JOIN agents a ON a.id = d.agent_id
             WHERE d.agent_id IN ({marks}){held} AND a.kind = 'human' AND d.active = 1 AND k.kind = ?
             ORDER BY d.id
            ON CONFLICT DO NOTHING""",
        (event_key, n.kind, n.subject, n.text, n.link, n.next_at, now, *agent_ids, *held_ids, n.kind),
    )
    return max(cursor.rowcount, 0)


async def quiet_ids(conn: Connection) -> frozenset[int]:
    """The humans who have quiet hours."""
    return frozenset(int(i) for i in await first_column(conn, "SELECT agent_id FROM quiet_hours"))


async def take_due(conn: Connection, now: str, limit: int) -> list[Row]:
    """Mark the due pending rows ``sending`` and answer them, oldest first, each with its
    destination's ``destination_kind`` and ``settings``, or a reply out's intake source and
    issue (``source_id``, ``repository``, ``issue``; the dispatcher reads the source's token).

    A paused destination's rows wait (pending) until it is active again. The replies out to
    one issue go one at a time, in order: a row waits while an earlier one of its issue is
    still to send, so the comments land on the forge as they were written.
    """
    rows = await all_rows(
        conn,
        """SELECT n.id, n.idem_key, n.destination_id, n.kind, n.subject, n.text, n.link, n.attempts,
                  n.created_at, d.kind AS destination_kind, d.settings, n.source_id, n.repository, n.issue
           FROM notifications n LEFT JOIN destinations d ON d.id = n.destination_id
           WHERE n.state = 'pending' AND n.next_at <= ?
             AND (d.active = 1 OR n.source_id IS NOT NULL AND NOT EXISTS (
                 SELECT 1 FROM notifications e WHERE e.source_id = n.source_id
                    AND e.repository = n.repository AND e.issue = n.issue AND e.id < n.id
                    AND e.state IN ('pending', 'sending')))
           ORDER BY n.next_at, n.id LIMIT ?""",
        (now, limit),
    )
    if rows:
        marks = ",".join("?" * len(rows))
        await conn.execute(
            f"UPDATE notifications SET state = 'sending', attempts = attempts + 1 WHERE id IN ({marks})",
            tuple(int(r["id"]) for r in rows),
        )
    return rows


async def release_sending(conn: Connection) -> int:
    """Rows left ``sending`` by a process that stopped mid-send: pending again, due now."""
    cursor = await conn.execute("UPDATE notifications SET state = 'pending' WHERE state = 'sending'")
    return max(cursor.rowcount, 0)


async def mark_sent(conn: Connection, notification_id: int, now: str, remote_id: str = "") -> None:
    """Sent; ``remote_id`` is what the receiver named it (a forge's comment id), if anything."""
    await conn.execute(
        "UPDATE notifications SET state = 'sent', sent_at = ?, last_error = '', remote_id = ? WHERE id = ?",
        (now, remote_id, notification_id),
    )


async def mark_retry(conn: Connection, notification_id: int, error: str, next_at: str) -> None:
    await conn.execute(
        "UPDATE notifications SET state = 'pending', last_error = ?, next_at = ? WHERE id = ?",
        (error, next_at, notification_id),
    )


async def mark_failed(conn: Connection, notification_id: int, error: str) -> None:
    await conn.execute(
        "UPDATE notifications SET state = 'failed', last_error = ? WHERE id = ?", (error, notification_id)
    )


async def next_due(conn: Connection) -> str | None:
    """When the next pending row of an active destination, or of a reply out, is due, if any."""
    row = await one(
        conn,
        """SELECT min(next_at) FROM notifications WHERE state = 'pending'
           AND (source_id IS NOT NULL OR destination_id IN (SELECT id FROM destinations WHERE active = 1))""",
    )
    return str(row[0]) if row and row[0] is not None else None


async def log(conn: Connection, destination_id: int, before: int | None, limit: int) -> list[Row]:
    """A destination's notifications, newest first."""
    return await all_rows(
        conn,
        f"{NOTIFICATION} WHERE destination_id = ? AND id < ? ORDER BY id DESC LIMIT ?",
        (destination_id, before if before is not None else 2**62, limit),
    )


async def by_idem_key(conn: Connection, idem_key: str) -> Row | None:
    return await one(conn, f"{NOTIFICATION} WHERE idem_key = ?", (idem_key,))


async def prune_sent(conn: Connection, before: str, at_most: int) -> int:
    """Delete at most ``at_most`` notifications sent before ``before``; how many."""
    cursor = await conn.execute(
        """DELETE FROM notifications WHERE id IN
           (SELECT id FROM notifications WHERE state = 'sent' AND sent_at < ? LIMIT ?)""",
        (before, at_most),
    )
    return max(cursor.rowcount, 0)
