"""Browser sessions, one-time login links and passwords of humans."""

from __future__ import annotations

from .connection import Connection
from .identity import AGENT_COLUMNS
from .rows import Row, one


async def login_token(conn: Connection, token_hash: str) -> Row | None:
    """A one-time login token, used or not, with its human."""
    return await one(
        conn,
        f"""SELECT {AGENT_COLUMNS}, t.created_at AS issued_at, t.revoked_at AS used_at
            FROM tokens t JOIN agents a ON a.id = t.agent_id
            LEFT JOIN workspaces w ON w.id = a.workspace_id
            WHERE t.hash = ? AND t.kind = 'login'""",
        (token_hash,),
    )


async def spend_login_token(conn: Connection, token_hash: str, now: str) -> bool:
    """Mark a login token used; False when it already was."""
    cur = await conn.execute(
        "UPDATE tokens SET revoked_at = ? WHERE hash = ? AND kind = 'login' AND revoked_at IS NULL",
        (now, token_hash),
    )
    return cur.rowcount == 1


async def insert(
    conn: Connection, session_hash: str, agent_id: int, csrf: str, now: str, expires_at: str
) -> None:
    await conn.execute(
        "INSERT INTO sessions (hash, agent_id, csrf, created_at, expires_at) VALUES (?,?,?,?,?)",
        (session_hash, agent_id, csrf, now, expires_at),
    )


async def live(conn: Connection, session_hash: str, now: str) -> Row | None:
    """The human behind a live session, with the session's CSRF token."""
    return await one(
        conn,
        f"""SELECT {AGENT_COLUMNS}, s.csrf, s.id AS session_id FROM sessions s
            JOIN agents a ON a.id = s.agent_id LEFT JOIN workspaces w ON w.id = a.workspace_id
            WHERE s.hash = ? AND s.revoked_at IS NULL AND s.expires_at > ? AND a.kind = 'human'""",
        (session_hash, now),
    )


async def revoke(conn: Connection, session_hash: str, now: str) -> int:
    cur = await conn.execute(
        "UPDATE sessions SET revoked_at = ? WHERE hash = ? AND revoked_at IS NULL", (now, session_hash)
    )
    return cur.rowcount


async def revoke_others(conn: Connection, agent_id: int, keep_hash: str, now: str) -> int:
    """Revoke every live session of the human but the one hashed ``keep_hash``; how many."""
    cur = await conn.execute(
        "UPDATE sessions SET revoked_at = ? WHERE agent_id = ? AND hash <> ? AND revoked_at IS NULL",
        (now, agent_id, keep_hash),
    )
    return cur.rowcount


async def password_hash(conn: Connection, agent_id: int) -> str | None:
    row = await one(conn, "SELECT hash FROM passwords WHERE agent_id = ?", (agent_id,))
    return None if row is None else str(row["hash"])


async def set_password(conn: Connection, agent_id: int, password_hash: str, now: str) -> None:
    await conn.execute(
        """INSERT INTO passwords (agent_id, hash, set_at) VALUES (?,?,?)
           ON CONFLICT (agent_id) DO UPDATE SET hash = excluded.hash, set_at = excluded.set_at""",
        (agent_id, password_hash, now),
    )
