"""The audit log: appended by every mutation, never updated (triggers refuse it)."""

from __future__ import annotations

import json
from typing import Any

from .connection import Connection
from .rows import Row, all_rows

#: Details that cannot be read back (logged once) show as this, so one bad row never fails the list.
UNREADABLE = '{"unreadable":true}'


async def append(
    conn: Connection,
    *,
    at: str,
    actor_id: int | None,
    actor: str,
    workspace: str | None,
    action: str,
    target: str,
    reason: str,
    request_id: str | None,
    details: dict[str, Any],
) -> None:
    await conn.execute(
        """INSERT INTO audit (at, actor_id, actor, workspace, action, target, reason, request_id, details)
           VALUES (?,?,?,?,?,?,?,?,?)""",
        (
            at,
            actor_id,
            actor,
            workspace,
            action,
            target,
            reason,
            request_id,
            json.dumps(details, separators=(",", ":")),
        ),
    )


async def select(
    conn: Connection,
    *,
    workspace: str | None,
    actor: str | None,
    action: str | None,
    since: int,
    limit: int,
    at_from: str | None = None,
    at_until: str | None = None,
    before: int | None = None,
) -> list[Row]:
    """Rows after ``since`` oldest first; with ``before``, rows below it newest first."""
    clauses: list[str] = ["id > ?"]
    params: list[int | str] = [since]
    for clause, value in (
        ("id < ?", before),
        ("workspace = ?", workspace),
        ("actor = ?", actor),
        ("action = ?", action),
        ("at >= ?", at_from),
        ("at < ?", at_until),
    ):
        if value is not None:
            clauses.append(clause)
            params.append(value)
    return await all_rows(
        conn,
        f"""SELECT id, at, actor, workspace, action, target, reason, request_id,
                   readable_json('audit', id, 'details', details, '{UNREADABLE}') AS details FROM audit
            WHERE {" AND ".join(clauses)} ORDER BY id {"DESC" if before is not None else ""} LIMIT ?""",
        (*params, limit),
    )


async def distinct(conn: Connection, column: str, limit: int) -> list[str]:
    """The values ``column`` (actor or action) holds, in order: one index step per value, not a scan."""
    if column not in ("actor", "action"):
        raise ValueError(f"no index to list audit {column} values by")
    rows = await all_rows(
        conn,
        f"""WITH RECURSIVE found(value) AS (
                SELECT min({column}) FROM audit
                UNION ALL
                SELECT (SELECT min({column}) FROM audit WHERE {column} > found.value)
                FROM found WHERE found.value IS NOT NULL
            )
            SELECT value FROM found WHERE value IS NOT NULL LIMIT ?""",
        (limit,),
    )
    return [str(row["value"]) for row in rows]
