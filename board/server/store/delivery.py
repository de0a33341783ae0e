"""What the delivery states of a page of messages are computed from, in a few queries.

Each function takes the whole page (bounded by the list's limit), never one
message: a page of fifty costs two queries (three when the loop guard held one),
each by the page's message ids on an index.
"""

from __future__ import annotations

from .connection import Connection
from .rows import Row, all_rows

#: The inbox reasons that make a message *addressed* to a bot: a mention or a direct message.
ADDRESSED = ("mention", "conversation")


def _marks(values: list[int] | list[str]) -> str:
    return ",".join("?" * len(values))


async def recipients(conn: Connection, message_ids: list[int]) -> list[Row]:
    """The bots each message is addressed to, with what they did about it.

    Per (message, bot): the bot's last wait on its wake feed, its ``seen`` receipt,
    and the time of its first message in the thread after this one (looked for only
    in a thread the bot posted in: the thread's tail is not read for a bot that never did).
    """
    if not message_ids:
        return []
    return await all_rows(
        conn,
        f"""SELECT i.message_id, i.agent_id, a.handle, a.last_wait_at,
                (SELECT r.at FROM receipts r WHERE r.message_id = i.message_id
                   AND r.agent_id = i.agent_id AND r.state = 'seen') AS seen_at,
                CASE WHEN EXISTS (SELECT 1 FROM thread_participants tp
                                  WHERE tp.thread_id = m.thread_id AND tp.agent_id = i.agent_id)
                  THEN (SELECT x.created_at FROM messages x WHERE x.thread_id = m.thread_id
                          AND x.id > m.id AND x.author_id = i.agent_id ORDER BY x.id LIMIT 1)
                END AS replied_at
            FROM inbox i JOIN agents a ON a.id = i.agent_id JOIN messages m ON m.id = i.message_id
            WHERE i.message_id IN ({_marks(message_ids)}) AND a.kind = 'bot'
              AND i.reason IN ({_marks(list(ADDRESSED))})
            ORDER BY i.message_id, a.handle""",
        (*message_ids, *ADDRESSED),
    )


async def held_recipients(conn: Connection, message_ids: list[int], mentioned: list[str]) -> list[Row]:
    """The bots of messages the loop guard held, which are in no bot's inbox.

    A held message was for the bots it mentions (``mentioned``: their handles, as
    the message stores them) and, in a conversation, its bot members.
    """
    if not message_ids:
        return []
    members = await all_rows(
        conn,
        f"""SELECT m.id AS message_id, a.id AS agent_id, a.handle FROM messages m
            JOIN conversation_members cm ON cm.conversation_id = m.conversation_id
            JOIN agents a ON a.id = cm.agent_id
            WHERE m.id IN ({_marks(message_ids)}) AND a.kind = 'bot' AND a.id != m.author_id""",
        tuple(message_ids),
    )
    if not mentioned:
        return members
    bots = await all_rows(
        conn,
        f"SELECT NULL AS message_id, id AS agent_id, handle FROM agents WHERE kind = 'bot' "
        f"AND handle IN ({_marks(mentioned)})",
        tuple(mentioned),
    )
    return [*members, *bots]


async def wakes(conn: Connection, message_ids: list[int]) -> list[Row]:
    """The wakes that name any of these messages, oldest first (by ``wake_triggers``)."""
    if not message_ids:
        return []
    return await all_rows(
        conn,
        f"""SELECT t.message_id, t.agent_id, k.outcome, k.error, k.started_at, k.ended_at
            FROM wake_triggers t JOIN wakes k ON k.id = t.wake_id
            WHERE t.message_id IN ({_marks(message_ids)}) ORDER BY k.id""",
        tuple(message_ids),
    )


async def touch_wait(conn: Connection, agent_id: int, now: str) -> None:
    """A daemon is long-polling this bot's wake feed now."""
    await conn.execute("UPDATE agents SET last_wait_at = ? WHERE id = ?", (now, agent_id))


async def workspaces_of(conn: Connection, message_ids: list[int]) -> dict[int, int]:
    """The workspace id of each of these messages."""
    if not message_ids:
        return {}
    rows = await all_rows(
        conn, f"SELECT id, workspace_id FROM messages WHERE id IN ({_marks(message_ids)})", tuple(message_ids)
    )
    return {int(r["id"]): int(r["workspace_id"]) for r in rows}
