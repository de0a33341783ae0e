"""Which channels each bot's daemon watches, as its last wake feed or stream asked.

The board learns it from the feed's request; the loop guard reads it to see two bots that
watch one channel answering each other there (services/loopguard.py).
"""

from __future__ import annotations

from .connection import Connection
from .rows import all_rows


async def of_agent(conn: Connection, agent_id: int) -> set[int]:
    rows = await all_rows(conn, "SELECT channel_id FROM bot_watches WHERE agent_id = ?", (agent_id,))
    return {int(r["channel_id"]) for r in rows}


async def replace(conn: Connection, agent_id: int, channel_ids: set[int]) -> None:
    """The bot watches these channels now, and no other."""
    await conn.execute("DELETE FROM bot_watches WHERE agent_id = ?", (agent_id,))
    await conn.executemany(
        "INSERT INTO bot_watches (agent_id, channel_id) VALUES (?, ?)",
        [(agent_id, channel_id) for channel_id in sorted(channel_ids)],
    )


async def watching(conn: Connection, channel_id: int) -> set[int]:
    """The bots whose daemons watch this channel."""
    rows = await all_rows(conn, "SELECT agent_id FROM bot_watches WHERE channel_id = ?", (channel_id,))
    return {int(r["agent_id"]) for r in rows}
