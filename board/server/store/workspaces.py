"""Workspaces and their membership counts."""

from __future__ import annotations

from typing import Any, cast

from . import knowledge
from .connection import Connection
from .rows import ChannelRow, Row, WorkspaceRow, all_rows, newest_message_id, one

COLUMNS = """id, slug, name, review_policy, loop_hops, budget_wakes, budget_tokens, budget_cost_usd,
    archived_at, created_at"""
_NAMES = tuple(name.strip() for name in COLUMNS.split(","))
_CHANNEL = ("id", "workspace_id", "slug", "topic", "created_at")  # ``channels.by_slug``'s columns


async def by_slug(conn: Connection, slug: str) -> WorkspaceRow | None:
    return await one(conn, f"SELECT {COLUMNS} FROM workspaces WHERE slug = ?", (slug,))


async def by_slug_with_channel(
    conn: Connection, slug: str, channel: str
) -> tuple[WorkspaceRow | None, ChannelRow | None]:
    """The workspace ``slug`` and its channel ``channel`` (None until made) in one statement: a
    post's two lookups, one round trip on PostgreSQL where each statement is one."""
    row = await one(
        conn,
        f"""SELECT {", ".join("w." + name for name in _NAMES)}, {", ".join("c." + name for name in _CHANNEL)}
            FROM workspaces w LEFT JOIN channels c ON c.workspace_id = w.id AND c.slug = ?
            WHERE w.slug = ?""",
        (channel, slug),
    )
    if row is None:
        return None, None
    values = tuple(row)
    workspace = cast(WorkspaceRow, dict(zip(_NAMES, values[: len(_NAMES)], strict=True)))
    found = values[len(_NAMES) :]
    return workspace, None if found[0] is None else cast(ChannelRow, dict(zip(_CHANNEL, found, strict=True)))


async def by_id(conn: Connection, workspace_id: int) -> WorkspaceRow | None:
    return await one(conn, f"SELECT {COLUMNS} FROM workspaces WHERE id = ?", (workspace_id,))


async def list_with_counts(conn: Connection, after_slug: str, limit: int) -> list[Row]:
    return await all_rows(
        conn,
        f"""SELECT {COLUMNS},
              (SELECT count(*) FROM agents a WHERE a.workspace_id = workspaces.id) AS bots,
              (SELECT count(*) FROM channels c WHERE c.workspace_id = workspaces.id) AS channels,
              {newest_message_id("workspace_id", "workspaces.id")} AS last_id
            FROM workspaces WHERE slug > ? ORDER BY slug LIMIT ?""",
        (after_slug, limit),
    )


async def insert(conn: Connection, slug: str, name: str, now: str) -> int:
    """A new workspace, with its ``lobby`` channel."""
    new_id = await conn.insert(
        "INSERT INTO workspaces (slug, name, created_at) VALUES (?,?,?)", (slug, name, now)
    )
    workspace_id = new_id
    await conn.execute(
        "INSERT INTO channels (workspace_id, slug, created_at) VALUES (?, 'lobby', ?)",
        (workspace_id, now),
    )
    return workspace_id


async def update(conn: Connection, workspace_id: int, changes: dict[str, Any]) -> None:
    sets = ", ".join(f"{name} = ?" for name in changes)
    await conn.execute(f"UPDATE workspaces SET {sets} WHERE id = ?", (*changes.values(), workspace_id))


async def bot_ids(conn: Connection, workspace_id: int) -> list[int]:
    rows = await all_rows(conn, "SELECT id FROM agents WHERE workspace_id = ?", (workspace_id,))
    return [row["id"] for row in rows]


async def bot_history_elsewhere(conn: Connection, workspace_id: int) -> list[Row]:
    """(handle, workspace) of this workspace's bots that wrote in, or still hold a claim in,
    another workspace (where they were before a move)."""
    return await all_rows(
        conn,
        """SELECT a.handle, w.slug AS workspace FROM agents a
               JOIN messages m ON m.author_id = a.id JOIN workspaces w ON w.id = m.workspace_id
               WHERE a.workspace_id = ?1 AND m.workspace_id != ?1
           UNION
           SELECT a.handle, w.slug FROM agents a
               JOIN claims c ON c.holder_id = a.id AND c.state = 'claimed'
               JOIN workspaces w ON w.id = c.workspace_id
               WHERE a.workspace_id = ?1 AND c.workspace_id != ?1
           ORDER BY 1, 2""",
        (workspace_id,),
    )


async def delete(conn: Connection, workspace_id: int) -> dict[str, int]:
    """Remove the workspace and everything in it, its bots included; return the counts."""
    counts = {}
    for name, sql in (
        ("messages", "SELECT count(*) FROM messages WHERE workspace_id = ?"),
        ("channels", "SELECT count(*) FROM channels WHERE workspace_id = ?"),
        ("conversations", "SELECT count(*) FROM conversations WHERE workspace_id = ?"),
        ("bots", "SELECT count(*) FROM agents WHERE workspace_id = ?"),
    ):
        row = await one(conn, sql, (workspace_id,))
        counts[name] = int(row[0]) if row else 0
    counts["documents"] = await knowledge.purge_workspace(conn, workspace_id)
    bots = "SELECT id FROM agents WHERE workspace_id = ?"
    await conn.execute("DELETE FROM messages WHERE workspace_id = ?", (workspace_id,))
    # requests too: an agent id can be used again once the newest agents are gone, and
    # a newcomer must not replay a deleted bot's answers.
    for table in ("inbox", "thread_participants", "conversation_members", "tokens", "requests"):
        await conn.execute(f"DELETE FROM {table} WHERE agent_id IN ({bots})", (workspace_id,))
    await conn.execute("DELETE FROM agents WHERE workspace_id = ?", (workspace_id,))
    await conn.execute("DELETE FROM workspaces WHERE id = ?", (workspace_id,))
    return counts
