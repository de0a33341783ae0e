"""Channels (with their knowledge references) and conversations."""

from __future__ import annotations

from collections.abc import Mapping

from .connection import Connection
from .rows import ChannelRow, Row, all_rows, newest_message_id, one


async def by_slug(conn: Connection, workspace_id: int, slug: str) -> ChannelRow | None:
    return await one(
        conn,
        "SELECT id, workspace_id, slug, topic, created_at FROM channels WHERE workspace_id = ? AND slug = ?",
        (workspace_id, slug),
    )


async def insert(conn: Connection, workspace_id: int, slug: str, topic: str, now: str) -> int:
    new_id = await conn.insert(
        "INSERT INTO channels (workspace_id, slug, topic, created_at) VALUES (?,?,?,?)",
        (workspace_id, slug, topic, now),
    )
    return new_id


async def set_topic(conn: Connection, channel_id: int, topic: str) -> None:
    await conn.execute("UPDATE channels SET topic = ? WHERE id = ?", (topic, channel_id))


async def set_refs(conn: Connection, channel_id: int, refs: list[tuple[str, bool]]) -> None:
    await conn.execute("DELETE FROM channel_refs WHERE channel_id = ?", (channel_id,))
    await conn.executemany(
        "INSERT INTO channel_refs (channel_id, path, mandatory) VALUES (?,?,?)",
        [(channel_id, path, int(mandatory)) for path, mandatory in refs],
    )


async def refs(conn: Connection, channel_ids: list[int]) -> dict[int, list[dict[str, object]]]:
    if not channel_ids:
        return {}
    marks = ",".join("?" * len(channel_ids))
    rows = await all_rows(
        conn,
        f"SELECT channel_id, path, mandatory FROM channel_refs WHERE channel_id IN ({marks}) ORDER BY path",
        tuple(channel_ids),
    )
    found: dict[int, list[dict[str, object]]] = {}
    for row in rows:
        found.setdefault(row["channel_id"], []).append(
            {"path": row["path"], "mandatory": bool(row["mandatory"])}
        )
    return found


async def list_channels(conn: Connection, workspace_id: int, after_slug: str, limit: int) -> list[Row]:
    return await all_rows(
        conn,
        f"""SELECT c.id, c.slug, c.topic, c.created_at,
                  {newest_message_id("channel_id", "c.id")} AS last_id
           FROM channels c WHERE c.workspace_id = ? AND c.slug > ? ORDER BY c.slug LIMIT ?""",
        (workspace_id, after_slug, limit),
    )


async def counts_after(
    conn: Connection, column: str, since: Mapping[int, int], exclude_author: int
) -> dict[int, int]:
    """Messages after each channel's or conversation's own ``since`` (owner id to message id),
    not written by the reader: one statement for a whole page of owners, where one each was a
    round trip each on PostgreSQL."""
    assert column in ("channel_id", "conversation_id")
    if not since:
        return {}
    owners = ", ".join("(CAST(? AS BIGINT), CAST(? AS BIGINT))" for _ in since)
    rows = await all_rows(
        conn,
        f"""WITH page(owner, since) AS (VALUES {owners})
            SELECT page.owner, (SELECT count(*) FROM messages m WHERE m.{column} = page.owner
                                  AND m.id > page.since AND m.author_id != ?) AS unread
            FROM page""",
        (*[value for pair in since.items() for value in pair], exclude_author),
    )
    return {int(row[0]): int(row[1]) for row in rows}


async def mandatory_refs_for_workspace(conn: Connection, workspace_id: int) -> list[Row]:
    return await all_rows(
        conn,
        """SELECT c.slug AS channel, r.path FROM channel_refs r JOIN channels c ON c.id = r.channel_id
           WHERE c.workspace_id = ? AND r.mandatory = 1 ORDER BY c.slug, r.path""",
        (workspace_id,),
    )


# -- conversations ---------------------------------------------------------------


async def conversation_by_key(conn: Connection, workspace_id: int, member_key: str) -> Row | None:
    return await one(
        conn,
        """SELECT id, workspace_id, topic, created_at FROM conversations
           WHERE workspace_id = ? AND member_key = ?""",
        (workspace_id, member_key),
    )


async def conversation_by_id(conn: Connection, conversation_id: int) -> Row | None:
    return await one(
        conn,
        """SELECT c.id, c.workspace_id, w.slug AS workspace, c.topic, c.created_at
           FROM conversations c JOIN workspaces w ON w.id = c.workspace_id WHERE c.id = ?""",
        (conversation_id,),
    )


async def insert_conversation(
    conn: Connection, workspace_id: int, member_ids: list[int], topic: str, now: str
) -> int:
    key = ",".join(str(i) for i in sorted(member_ids))
    new_id = await conn.insert(
        "INSERT INTO conversations (workspace_id, member_key, topic, created_at) VALUES (?,?,?,?)",
        (workspace_id, key, topic, now),
    )
    conversation_id = new_id
    await conn.executemany(
        "INSERT INTO conversation_members (conversation_id, agent_id) VALUES (?,?)",
        [(conversation_id, agent_id) for agent_id in sorted(member_ids)],
    )
    return conversation_id


async def members(conn: Connection, conversation_ids: list[int]) -> dict[int, list[Row]]:
    if not conversation_ids:
        return {}
    marks = ",".join("?" * len(conversation_ids))
    rows = await all_rows(
        conn,
        f"""SELECT cm.conversation_id, a.id, a.handle, a.kind FROM conversation_members cm
            JOIN agents a ON a.id = cm.agent_id WHERE cm.conversation_id IN ({marks})
            ORDER BY a.handle""",
        tuple(conversation_ids),
    )
    found: dict[int, list[Row]] = {}
    for row in rows:
        found.setdefault(row["conversation_id"], []).append(row)
    return found


async def list_conversations(
    conn: Connection, agent_id: int | None, workspace_id: int | None, after_id: int, limit: int
) -> list[Row]:
    """Conversations one agent is in (or all of a workspace, for a human), by id."""
    where, params = "c.id > ?", [after_id]
    if agent_id is not None:
        where += " AND c.id IN (SELECT conversation_id FROM conversation_members WHERE agent_id = ?)"
        params.append(agent_id)
    if workspace_id is not None:
        where += " AND c.workspace_id = ?"
        params.append(workspace_id)
    return await all_rows(
        conn,
        f"""SELECT c.id, c.workspace_id, w.slug AS workspace, c.topic, c.created_at,
                   {newest_message_id("conversation_id", "c.id")} AS last_id
            FROM conversations c JOIN workspaces w ON w.id = c.workspace_id
            WHERE {where} ORDER BY c.id LIMIT ?""",
        (*params, limit),
    )
