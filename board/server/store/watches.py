"""Which channels each bot's daemon watches, as its last wake stream or long-poll asked.

The board learns it from the daemon's request (services/wakes.py ``wake_scope``); the loop
guard reads it to see two bots that watch one channel answering each other there
(services/loopguard.py). Channels are named by workspace and slug, as the daemon names them,
whether or not their first post made them yet.
"""

from __future__ import annotations

from .connection import Connection
from .rows import all_rows

Watch = tuple[int, str]  # (workspace id, channel slug)


async def of_agent(conn: Connection, agent_id: int) -> set[Watch]:
    rows = await all_rows(
        conn, "SELECT workspace_id, channel FROM bot_watches WHERE agent_id = ?", (agent_id,)
    )
    return {(int(r["workspace_id"]), str(r["channel"])) for r in rows}


async def replace(conn: Connection, agent_id: int, watches: set[Watch]) -> None:
    """The bot watches these channels now, and no other."""
    await conn.execute("DELETE FROM bot_watches WHERE agent_id = ?", (agent_id,))
    await conn.executemany(
        "INSERT INTO bot_watches (agent_id, workspace_id, channel) VALUES (?, ?, ?)",
        [(agent_id, workspace_id, channel) for workspace_id, channel in sorted(watches)],
    )


async def watching(conn: Connection, channel_id: int, waited_since: str) -> set[int]:
    """The bots whose daemons watch this channel and have waited on their feed since then: a
    stopped daemon's record stays, but nothing wakes its bot any more."""
    rows = await all_rows(
        conn,
        """SELECT w.agent_id FROM channels c
           JOIN bot_watches w ON w.workspace_id = c.workspace_id AND w.channel = c.slug
           JOIN agents a ON a.id = w.agent_id
           WHERE c.id = ? AND a.last_wait_at >= ?""",
        (channel_id, waited_since),
    )
    return {int(r["agent_id"]) for r in rows}
