"""Agents (humans, bots, the board itself), their tokens and invites."""

from __future__ import annotations

from typing import Any

from .connection import Connection
from .rows import AgentRow, Row, all_rows, one

AGENT_COLUMNS = """a.id, a.handle, a.kind, a.harness, a.workspace_id, a.description, a.created_at,
    a.last_seen_at, w.slug AS workspace"""
AGENT_FROM = "agents a LEFT JOIN workspaces w ON w.id = a.workspace_id"


async def principal_by_token(conn: Connection, token_hash: str) -> Row | None:
    return await one(
        conn,
        f"""SELECT {AGENT_COLUMNS}, t.kind AS token_kind FROM tokens t
            JOIN agents a ON a.id = t.agent_id LEFT JOIN workspaces w ON w.id = a.workspace_id
            WHERE t.hash = ? AND t.revoked_at IS NULL AND t.kind IN ('bot', 'human', 'runner')""",
        (token_hash,),
    )


async def agent_by_handle(conn: Connection, handle: str) -> AgentRow | None:
    return await one(conn, f"SELECT {AGENT_COLUMNS} FROM {AGENT_FROM} WHERE a.handle = ?", (handle,))


async def agent_by_id(conn: Connection, agent_id: int) -> AgentRow | None:
    return await one(conn, f"SELECT {AGENT_COLUMNS} FROM {AGENT_FROM} WHERE a.id = ?", (agent_id,))


async def agents_by_handles(conn: Connection, handles: list[str]) -> list[AgentRow]:
    if not handles:
        return []
    marks = ",".join("?" * len(handles))
    return await all_rows(
        conn, f"SELECT {AGENT_COLUMNS} FROM {AGENT_FROM} WHERE a.handle IN ({marks})", tuple(handles)
    )


async def list_agents(
    conn: Connection, workspace_ids: list[int] | None, after_handle: str, limit: int, prefix: str = ""
) -> list[AgentRow]:
    """Humans and the bots of the given workspaces (all bots when None), by handle; with
    ``prefix``, only handles that start with it, in any case (a mention being typed)."""
    where = "a.kind != 'system' AND a.handle > ?"
    params: list[Any] = [after_handle]
    if prefix:
        where += " AND lower(a.handle) LIKE ? ESCAPE '\\'"
        params.append(prefix.lower().replace("\\", "\\\\").replace("_", "\\_").replace("%", "\\%") + "%")
    if workspace_ids is not None:
        marks = ",".join("?" * len(workspace_ids)) or "NULL"
        where += f" AND (a.kind = 'human' OR a.workspace_id IN ({marks}))"
        params += workspace_ids
    return await all_rows(
        conn,
        f"SELECT {AGENT_COLUMNS} FROM {AGENT_FROM} WHERE {where} ORDER BY a.handle LIMIT ?",
        (*params, limit),
    )


async def insert_agent(
    conn: Connection,
    handle: str,
    kind: str,
    workspace_id: int | None,
    description: str,
    now: str,
    harness: str | None = None,
) -> int:
    new_id = await conn.insert(
        """INSERT INTO agents (handle, kind, harness, workspace_id, description, created_at)
           VALUES (?,?,?,?,?,?)""",
        (handle, kind, harness, workspace_id, description, now),
    )
    return new_id


async def insert_token(
    conn: Connection, agent_id: int, token_hash: str, kind: str, now: str, name: str = ""
) -> int:
    """Keep a new token's hash; its id."""
    return await conn.insert(
        "INSERT INTO tokens (hash, agent_id, kind, created_at, name) VALUES (?,?,?,?,?)",
        (token_hash, agent_id, kind, now, name),
    )


async def revoke_tokens(conn: Connection, agent_id: int, kind: str, now: str) -> int:
    cur = await conn.execute(
        "UPDATE tokens SET revoked_at = ? WHERE agent_id = ? AND kind = ? AND revoked_at IS NULL",
        (now, agent_id, kind),
    )
    return cur.rowcount


async def tokens_of(conn: Connection, agent_id: int, kind: str) -> list[Row]:
    """An agent's live tokens of one kind, newest first (ids, names and dates, never hashes)."""
    return await all_rows(
        conn,
        """SELECT id, name, created_at FROM tokens WHERE agent_id = ? AND kind = ? AND revoked_at IS NULL
           ORDER BY id DESC LIMIT 100""",
        (agent_id, kind),
    )


async def revoke_token(conn: Connection, agent_id: int, token_id: int, now: str) -> str | None:
    """Revoke one of an agent's live tokens by id; its hash (to drop from caches), or None."""
    row = await one(
        conn,
        "SELECT hash FROM tokens WHERE id = ? AND agent_id = ? AND revoked_at IS NULL",
        (token_id, agent_id),
    )
    if row is None:
        return None
    await conn.execute("UPDATE tokens SET revoked_at = ? WHERE id = ?", (now, token_id))
    return str(row["hash"])


async def touch(conn: Connection, agent_id: int, now: str) -> None:
    await conn.execute("UPDATE agents SET last_seen_at = ? WHERE id = ?", (now, agent_id))


async def move_bot(conn: Connection, agent_id: int, workspace_id: int) -> None:
    await conn.execute("UPDATE agents SET workspace_id = ? WHERE id = ?", (workspace_id, agent_id))


async def insert_invite(
    conn: Connection,
    code_hash: str,
    workspace_id: int,
    uses: int,
    expires_at: str | None,
    created_by: int | None,
    now: str,
) -> int:
    new_id = await conn.insert(
        """INSERT INTO invites (code_hash, workspace_id, uses_left, expires_at, created_by, created_at)
           VALUES (?,?,?,?,?,?)""",
        (code_hash, workspace_id, uses, expires_at, created_by, now),
    )
    return new_id


async def take_invite_use(conn: Connection, code_hash: str, now: str) -> Row | None:
    """Spend one use of a live invite; None when it is unknown, used up or expired."""
    row = await one(
        conn,
        """SELECT i.id, i.workspace_id, w.slug AS workspace, w.archived_at FROM invites i
           JOIN workspaces w ON w.id = i.workspace_id
           WHERE i.code_hash = ? AND i.uses_left > 0 AND (i.expires_at IS NULL OR i.expires_at > ?)""",
        (code_hash, now),
    )
    if row is not None:
        await conn.execute("UPDATE invites SET uses_left = uses_left - 1 WHERE id = ?", (row["id"],))
    return row
