"""What the loop guard reads: runs of bot messages in a thread, between two bots, and in a
channel two bots watch."""

from __future__ import annotations

from .connection import Connection
from .rows import Row, all_rows, one

# How far back the pair guard looks in each bot's inbox: a loop is recent traffic.
PAIR_SCAN = 200


async def thread_tail_kinds(conn: Connection, thread_id: int, limit: int) -> list[str]:
    """Author kinds of the thread's last ``limit`` messages, newest first (board notices left out)."""
    rows = await all_rows(
        conn,
        """SELECT a.kind FROM messages m JOIN agents a ON a.id = m.author_id
           WHERE m.thread_id = ? AND m.kind <> 'event' ORDER BY m.id DESC LIMIT ?""",
        (thread_id, limit),
    )
    return [str(r["kind"]) for r in rows]


async def recent_inbox(conn: Connection, agent_id: int) -> list[Row]:
    """One agent's newest inbox rows, newest first: message id, time, author and author kind.

    An event's author is the agent who caused it (its ``actor_id``), the board for its own.
    Bounded by count, not time, so the read walks the inbox key backwards and stops.
    """
    return await all_rows(
        conn,
        """SELECT m.id, m.created_at, a.id AS author_id, a.kind FROM inbox i
           JOIN messages m ON m.id = i.message_id JOIN agents a ON a.id = COALESCE(m.actor_id, m.author_id)
           WHERE i.agent_id = ? ORDER BY i.message_id DESC LIMIT ?""",
        (agent_id, PAIR_SCAN),
    )


async def channel_tail(conn: Connection, channel_id: int) -> list[Row]:
    """A channel's newest messages, newest first, as :func:`recent_inbox` reads an inbox's."""
    return await all_rows(
        conn,
        """SELECT m.id, m.created_at, a.id AS author_id, a.kind FROM messages m
           JOIN agents a ON a.id = COALESCE(m.actor_id, m.author_id)
           WHERE m.channel_id = ? ORDER BY m.id DESC LIMIT ?""",
        (channel_id, PAIR_SCAN),
    )


async def noticed_since(conn: Connection, workspace_id: int, tag: str, after_id: int) -> bool:
    """Whether the board posted a notice with this tag in the workspace after a message."""
    row = await one(
        conn,
        """SELECT 1 FROM message_tags t JOIN messages m ON m.id = t.message_id
           WHERE t.tag = ? AND t.message_id > ? AND m.workspace_id = ? LIMIT 1""",
        (tag, after_id, workspace_id),
    )
    return row is not None


async def human_ids(conn: Connection, limit: int = 50) -> list[int]:
    """The board's humans: who hears that a loop was paused."""
    rows = await all_rows(conn, "SELECT id FROM agents WHERE kind = 'human' ORDER BY id LIMIT ?", (limit,))
    return [int(r["id"]) for r in rows]


def _marks(ids: list[int]) -> str:
    return ",".join("?" * len(ids))


async def kinds(conn: Connection, agent_ids: list[int]) -> dict[int, str]:
    """The kind of each of these agents."""
    if not agent_ids:
        return {}
    sql = f"SELECT id, kind FROM agents WHERE id IN ({_marks(agent_ids)})"
    rows = await all_rows(conn, sql, tuple(agent_ids))
    return {int(r["id"]): str(r["kind"]) for r in rows}


async def handles(conn: Connection, agent_ids: list[int]) -> list[str]:
    """The handles of these agents, in the order given."""
    sql = f"SELECT id, handle FROM agents WHERE id IN ({_marks(agent_ids)})"
    found = {int(r["id"]): str(r["handle"]) for r in await all_rows(conn, sql, tuple(agent_ids))}
    return [found[i] for i in agent_ids if i in found]
