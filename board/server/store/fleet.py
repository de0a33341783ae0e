"""Machines and their keepers, enroll codes, bots assigned to machines, and orders."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .connection import Connection
from .rows import Row, all_rows, one

MACHINE_COLUMNS = """m.id, m.name, m.hostname, m.enrolled_at, m.last_report_at, m.interval_s, m.report,
    m.event_seq, m.events_window_at, m.events_in_window, m.events_dropped"""

BOT_SELECT = """SELECT f.agent_id, a.handle, a.last_seen_at, a.workspace_id, w.slug AS workspace,
    f.machine_id, m.name AS machine, f.profile_id, p.name AS profile, f.desired, f.state, f.status,
    f.reported_at, f.assigned_at, f.assigned_by, m.last_report_at AS machine_reported_at,
    m.interval_s AS machine_interval_s
    FROM fleet_bots f JOIN agents a ON a.id = f.agent_id JOIN workspaces w ON w.id = a.workspace_id
    JOIN machines m ON m.id = f.machine_id JOIN profiles p ON p.id = f.profile_id"""


# -- enroll codes and machines ---------------------------------------------------------


async def insert_code(
    conn: Connection, code_hash: str, machine_name: str, expires_at: str, created_by: int | None, now: str
) -> None:
    await conn.execute(
        """INSERT INTO enroll_codes (code_hash, machine_name, expires_at, created_by, created_at)
           VALUES (?,?,?,?,?)""",
        (code_hash, machine_name, expires_at, created_by, now),
    )


async def take_code(conn: Connection, code_hash: str, now: str) -> Row | None:
    """Spend an unused, unexpired code: the row it was, or None."""
    row = await one(
        conn,
        """SELECT id, machine_name FROM enroll_codes
           WHERE code_hash = ? AND used_at IS NULL AND expires_at > ?""",
        (code_hash, now),
    )
    if row is not None:
        await conn.execute("UPDATE enroll_codes SET used_at = ? WHERE id = ?", (now, row["id"]))
    return row


async def machine_by_name(conn: Connection, name: str) -> Row | None:
    return await one(conn, f"SELECT {MACHINE_COLUMNS} FROM machines m WHERE m.name = ?", (name,))


async def machine_by_id(conn: Connection, machine_id: int) -> Row | None:
    return await one(conn, f"SELECT {MACHINE_COLUMNS} FROM machines m WHERE m.id = ?", (machine_id,))


async def machine_by_token(conn: Connection, token_hash: str) -> Row | None:
    return await one(conn, f"SELECT {MACHINE_COLUMNS} FROM machines m WHERE m.token_hash = ?", (token_hash,))


async def machines(conn: Connection, after_name: str, limit: int) -> list[Row]:
    return await all_rows(
        conn,
        f"SELECT {MACHINE_COLUMNS} FROM machines m WHERE m.name > ? ORDER BY m.name LIMIT ?",
        (after_name, limit),
    )


async def enroll_machine(conn: Connection, name: str, hostname: str, token_hash: str, now: str) -> int:
    """Create the machine, or give an existing one a new keeper token (the old one stops)."""
    await conn.execute(
        """INSERT INTO machines (name, hostname, token_hash, enrolled_at) VALUES (?,?,?,?)
           ON CONFLICT (name) DO UPDATE SET hostname = excluded.hostname,
               token_hash = excluded.token_hash, enrolled_at = excluded.enrolled_at""",
        (name, hostname, token_hash, now),
    )
    row = await machine_by_name(conn, name)
    assert row is not None
    return int(row["id"])


@dataclass
class EventWindow:
    """Where a machine's bounded audit window stands after a report."""

    at: str
    recorded: int
    dropped: int


async def store_report(
    conn: Connection,
    machine_id: int,
    report: dict[str, Any],
    interval_s: float,
    event_seq: int,
    window: EventWindow,
    now: str,
) -> None:
    await conn.execute(
        """UPDATE machines SET report = ?, interval_s = ?, last_report_at = ?,
               event_seq = CASE WHEN event_seq > ? THEN event_seq ELSE ? END,
               events_window_at = ?, events_in_window = ?, events_dropped = events_dropped + ?
           WHERE id = ?""",
        (
            json.dumps(report, separators=(",", ":")),
            interval_s,
            now,
            event_seq,
            event_seq,
            window.at,
            window.recorded,
            window.dropped,
            machine_id,
        ),
    )


# -- bots on machines ------------------------------------------------------------------


async def bot(conn: Connection, handle: str) -> Row | None:
    return await one(conn, f"{BOT_SELECT} WHERE a.handle = ?", (handle,))


async def bots_of(conn: Connection, machine_ids: list[int]) -> list[Row]:
    if not machine_ids:
        return []
    marks = ",".join("?" * len(machine_ids))
    return await all_rows(
        conn, f"{BOT_SELECT} WHERE f.machine_id IN ({marks}) ORDER BY a.handle", tuple(machine_ids)
    )


async def assign(
    conn: Connection, agent_id: int, machine_id: int, profile_id: int, by: str, now: str
) -> None:
    await conn.execute(
        """INSERT INTO fleet_bots (agent_id, machine_id, profile_id, desired, assigned_at, assigned_by)
           VALUES (?,?,?,'running',?,?)""",
        (agent_id, machine_id, profile_id, now, by),
    )


async def set_desired(conn: Connection, agent_id: int, desired: str) -> None:
    await conn.execute("UPDATE fleet_bots SET desired = ? WHERE agent_id = ?", (desired, agent_id))


async def set_status(conn: Connection, agent_id: int, state: str, status: dict[str, Any], now: str) -> None:
    await conn.execute(
        "UPDATE fleet_bots SET state = ?, status = ?, reported_at = ? WHERE agent_id = ?",
        (state, json.dumps(status, separators=(",", ":")), now, agent_id),
    )


async def unassign(conn: Connection, agent_id: int) -> None:
    """Off its machine, and its measured history with it."""
    await conn.execute("DELETE FROM fleet_bots WHERE agent_id = ?", (agent_id,))
    await conn.execute("DELETE FROM fleet_samples WHERE agent_id = ?", (agent_id,))


# -- orders ----------------------------------------------------------------------------


async def insert_order(
    conn: Connection, machine_id: int, handle: str, kind: str, by: str, now: str, target: int | None = None
) -> int:
    """An order for the machine's keeper; ``target``: what it acts on (a thread, for remove_worktree)."""
    new_id = await conn.insert(
        """INSERT INTO fleet_orders (machine_id, handle, kind, target, created_at, created_by)
           VALUES (?,?,?,?,?,?)""",
        (machine_id, handle, kind, target, now, by),
    )
    return new_id


async def open_orders(conn: Connection, machine_id: int) -> list[Row]:
    return await all_rows(
        conn,
        """SELECT id, handle, kind, target, created_at, created_by FROM fleet_orders
           WHERE machine_id = ? AND acked_at IS NULL ORDER BY id""",
        (machine_id,),
    )


async def ack_order(
    conn: Connection, machine_id: int, order_id: int, ok: bool, detail: str, now: str
) -> Row | None:
    """Mark an open order of this machine done: the order, or None if it is not one."""
    row = await one(
        conn,
        """SELECT id, handle, kind, target FROM fleet_orders
           WHERE id = ? AND machine_id = ? AND acked_at IS NULL""",
        (order_id, machine_id),
    )
    if row is not None:
        await conn.execute(
            "UPDATE fleet_orders SET acked_at = ?, ok = ?, detail = ? WHERE id = ?",
            (now, int(ok), detail, order_id),
        )
    return row


async def recent_orders(conn: Connection, machine_ids: list[int], limit: int) -> list[Row]:
    if not machine_ids:
        return []
    marks = ",".join("?" * len(machine_ids))
    return await all_rows(
        conn,
        f"""SELECT o.id, m.name AS machine, o.handle, o.kind, o.target, o.created_at, o.created_by,
                o.acked_at, o.ok, o.detail FROM fleet_orders o JOIN machines m ON m.id = o.machine_id
            WHERE o.machine_id IN ({marks}) ORDER BY o.id DESC LIMIT ?""",
        (*machine_ids, limit),
    )


async def pending_orders(conn: Connection, machine_ids: list[int]) -> list[Row]:
    """The orders of these machines their keepers have not acknowledged yet, oldest first."""
    if not machine_ids:
        return []
    marks = ",".join("?" * len(machine_ids))
    return await all_rows(
        conn,
        f"""SELECT id, machine_id, handle, kind, target FROM fleet_orders
            WHERE machine_id IN ({marks}) AND acked_at IS NULL ORDER BY id""",
        tuple(machine_ids),
    )


async def remove_machine(conn: Connection, machine_id: int) -> None:
    """The machine, its token, its orders and its bots' assignments (each a cascade of the row)."""
    await conn.execute("DELETE FROM machines WHERE id = ?", (machine_id,))


# -- each bot's measured history -------------------------------------------------------


async def add_sample(
    conn: Connection, agent_id: int, at: str, cpu_percent: float | None, rss: int | None, gap_from: str
) -> bool:
    """Record a measurement unless the bot has one since ``gap_from``; whether it was recorded."""
    recent = await one(
        conn, "SELECT 1 AS x FROM fleet_samples WHERE agent_id = ? AND at > ? LIMIT 1", (agent_id, gap_from)
    )
    if recent is not None:
        return False
    await conn.execute(
        "INSERT INTO fleet_samples (agent_id, at, cpu_percent, rss) VALUES (?,?,?,?)",
        (agent_id, at, cpu_percent, rss),
    )
    return True


async def forget_samples(conn: Connection, agent_id: int, before: str) -> None:
    await conn.execute("DELETE FROM fleet_samples WHERE agent_id = ? AND at < ?", (agent_id, before))


def _handles(handles: list[str]) -> str:
    return ",".join("?" * len(handles))


async def samples_of(conn: Connection, handles: list[str], since: str) -> list[Row]:
    """The samples of these bots since ``since``, oldest first."""
    if not handles:
        return []
    return await all_rows(
        conn,
        f"""SELECT a.handle, s.at, s.cpu_percent, s.rss
            FROM fleet_samples s JOIN agents a ON a.id = s.agent_id
            WHERE a.handle IN ({_handles(handles)}) AND s.at >= ? ORDER BY s.at""",
        (*handles, since),
    )


async def wake_starts_of(conn: Connection, handles: list[str], since: str, limit: int) -> list[Row]:
    """When these bots' wakes since ``since`` began (the wakes they recorded), the latest ``limit``."""
    if not handles:
        return []
    return await all_rows(
        conn,
        f"""SELECT a.handle, w.started_at FROM wakes w JOIN agents a ON a.id = w.agent_id
            WHERE a.handle IN ({_handles(handles)}) AND w.started_at >= ?
            ORDER BY w.started_at DESC LIMIT ?""",
        (*handles, since, limit),
    )


async def broken_bots(conn: Connection, limit: int) -> set[tuple[str, str]]:
    """(handle, state) of the bots whose keeper last reported them crashed or misconfigured."""
    rows = await all_rows(
        conn,
        """SELECT a.handle, f.state FROM fleet_bots f JOIN agents a ON a.id = f.agent_id
           WHERE f.state IN ('crashed', 'misconfigured') ORDER BY a.handle LIMIT ?""",
        (limit,),
    )
    return {(str(r["handle"]), str(r["state"])) for r in rows}
