"""Daily budgets: the limits set on bots, profiles and workspaces, and what their wakes spent."""

from __future__ import annotations

from typing import Any

from .connection import Connection
from .registry import LINKED_BOTS
from .rows import Row, one

#: The measures, as their columns are named (``budget_<measure>``).
MEASURES = ("wakes", "tokens", "cost_usd")
LIMITS = ", ".join(f"budget_{m}" for m in MEASURES)
#: What a day of wakes spent, on each measure; a skipped wake ran no harness and counts for nothing.
SPENT = """SELECT COALESCE(SUM(CASE WHEN outcome != 'skipped' THEN 1 ELSE 0 END), 0) AS wakes,
    COALESCE(SUM(COALESCE(input_tokens, 0) + COALESCE(output_tokens, 0)), 0) AS tokens,
    COALESCE(SUM(cost_usd), 0) AS cost_usd FROM wakes"""


async def bot(conn: Connection, agent_id: int) -> Row | None:
    """A bot's own limits, lift and last notice, with its workspace's id."""
    return await one(
        conn,
        f"SELECT id, workspace_id, {LIMITS}, budget_lifted_until, budget_noticed FROM agents WHERE id = ?",
        (agent_id,),
    )


async def profile_of_bot(conn: Connection, agent_id: int) -> Row | None:
    """The limits of the profile a bot runs with (one of its own workspace), with its name."""
    return await one(
        conn,
        f"""SELECT p.name, {", ".join(f"p.budget_{m}" for m in MEASURES)} FROM profiles p
            {LINKED_BOTS} WHERE bp.agent_id = ?""",
        (agent_id,),
    )


async def workspace(conn: Connection, workspace_id: int) -> Row | None:
    return await one(
        conn, f"SELECT id, slug, {LIMITS}, budget_noticed FROM workspaces WHERE id = ?", (workspace_id,)
    )


async def spent_by_bot(conn: Connection, agent_id: int, start: str, end: str) -> dict[str, float]:
    return await _spent(conn, "agent_id", agent_id, start, end)


async def spent_by_workspace(conn: Connection, workspace_id: int, start: str, end: str) -> dict[str, float]:
    return await _spent(conn, "workspace_id", workspace_id, start, end)


async def _spent(conn: Connection, column: str, row_id: int, start: str, end: str) -> dict[str, float]:
    """Today's sums as plain numbers (PostgreSQL sums BIGINTs as NUMERIC)."""
    row = await one(
        conn, f"{SPENT} WHERE {column} = ? AND started_at >= ? AND started_at < ?", (row_id, start, end)
    )
    assert row is not None  # an aggregate has a row
    cost = round(float(row["cost_usd"]), 9)  # sums of floats drift: 0.7 + 0.1 must reach a limit of 0.8
    return {"wakes": int(row["wakes"]), "tokens": int(row["tokens"]), "cost_usd": cost}


async def set_bot(conn: Connection, agent_id: int, changes: dict[str, Any]) -> None:
    """Write some of a bot's ``budget_*`` columns."""
    sets = ", ".join(f"{name} = ?" for name in changes)
    await conn.execute(f"UPDATE agents SET {sets} WHERE id = ?", (*changes.values(), agent_id))


async def noticed(conn: Connection, table: str, row_id: int) -> str | None:
    """The key of the hold last told of, for a bot (``agents``) or a workspace."""
    assert table in ("agents", "workspaces")
    row = await one(conn, f"SELECT budget_noticed FROM {table} WHERE id = ?", (row_id,))
    return row["budget_noticed"] if row is not None else None


async def mark_noticed(conn: Connection, table: str, row_id: int, key: str) -> bool:
    """Record ``key`` as the hold told of; False when it was told already (by another feed)."""
    assert table in ("agents", "workspaces")
    cur = await conn.execute(
        f"UPDATE {table} SET budget_noticed = ? WHERE id = ? AND budget_noticed IS DISTINCT FROM ?",
        (key, row_id, key),
    )
    return bool(cur.rowcount)
