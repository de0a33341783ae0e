"""Routines, their versions, their runs and the change log the runner follows."""

from __future__ import annotations

from typing import Any

from .connection import Connection
from .rows import Row, all_rows, one

ROUTINE = """SELECT r.id, r.name, r.workspace_id, w.slug AS workspace, r.thread_id, r.paused,
    r.active_since, r.created_at FROM routines r JOIN workspaces w ON w.id = r.workspace_id"""
VERSION = """SELECT v.*, pa.handle AS proposed_by_handle, da.handle AS decided_by_handle
    FROM routine_versions v LEFT JOIN agents pa ON pa.id = v.proposed_by
    LEFT JOIN agents da ON da.id = v.decided_by"""
#: A run with what its wakes cost: every harness run its prompt message triggered.
RUN = """SELECT u.*, (SELECT SUM(k.cost_usd) FROM wakes k, json_each(k.trigger_ids) j
        WHERE u.message_id IS NOT NULL AND j.value = u.message_id) AS wake_cost
    FROM routine_runs u"""
VERSION_FIELDS = (
    "schedule",
    "timezone",
    "bot",
    "prompt",
    "max_run_seconds",
    "grace_seconds",
    "quiet_hours",
    "why",
    "digest",
)


def _marks(ids: list[int]) -> str:
    """The placeholders of an ``IN (...)`` list; NULL matches nothing when it is empty."""
    return ",".join("?" * len(ids)) or "NULL"


async def by_name(conn: Connection, name: str) -> Row | None:
    return await one(conn, f"{ROUTINE} WHERE r.name = ?", (name,))


async def select(conn: Connection, workspace_ids: list[int] | None) -> list[Row]:
    if workspace_ids is None:
        return await all_rows(conn, f"{ROUTINE} ORDER BY r.name")
    marks = _marks(workspace_ids)
    return await all_rows(
        conn, f"{ROUTINE} WHERE r.workspace_id IN ({marks}) ORDER BY r.name", tuple(workspace_ids)
    )


async def insert(conn: Connection, name: str, workspace_id: int, thread_id: int, now: str) -> int:
    new_id = await conn.insert(
        "INSERT INTO routines (name, workspace_id, thread_id, created_at) VALUES (?,?,?,?)",
        (name, workspace_id, thread_id, now),
    )
    return new_id


async def set_paused(conn: Connection, routine_id: int, paused: bool, active_since: str | None) -> None:
    await conn.execute(
        "UPDATE routines SET paused = ?, active_since = COALESCE(?, active_since) WHERE id = ?",
        (int(paused), active_since, routine_id),
    )


async def set_active_since(conn: Connection, routine_id: int, now: str) -> None:
    await conn.execute("UPDATE routines SET active_since = ? WHERE id = ?", (now, routine_id))


# -- versions ------------------------------------------------------------------------


async def versions(conn: Connection, routine_ids: list[int]) -> list[Row]:
    marks = _marks(routine_ids)
    return await all_rows(
        conn,
        f"{VERSION} WHERE v.routine_id IN ({marks}) ORDER BY v.routine_id, v.version",
        tuple(routine_ids),
    )


async def version(conn: Connection, routine_id: int, number: int) -> Row | None:
    return await one(conn, f"{VERSION} WHERE v.routine_id = ? AND v.version = ?", (routine_id, number))


async def latest_version(conn: Connection, routine_id: int) -> Row | None:
    return await one(conn, f"{VERSION} WHERE v.routine_id = ? ORDER BY v.version DESC LIMIT 1", (routine_id,))


async def insert_version(
    conn: Connection, routine_id: int, fields: dict[str, Any], proposed_by: int, now: str
) -> int:
    row = await one(
        conn,
        "SELECT COALESCE(MAX(version), 0) + 1 AS n FROM routine_versions WHERE routine_id = ?",
        (routine_id,),
    )
    number = int(row["n"]) if row is not None else 1
    names = ", ".join(VERSION_FIELDS)
    await conn.execute(
        f"""INSERT INTO routine_versions (routine_id, version, state, {names}, proposed_by, proposed_at)
            VALUES (?, ?, 'pending', {",".join("?" * len(VERSION_FIELDS))}, ?, ?)""",
        (routine_id, number, *(fields[name] for name in VERSION_FIELDS), proposed_by, now),
    )
    return number


async def decide(conn: Connection, version_id: int, state: str, decided_by: int, note: str, now: str) -> None:
    await conn.execute(
        "UPDATE routine_versions SET state = ?, decided_by = ?, decided_at = ?, note = ? WHERE id = ?",
        (state, decided_by, now, note, version_id),
    )


async def retire_approved(conn: Connection, routine_id: int) -> int | None:
    """Retire the approved version, if any; returns its number."""
    row = await one(
        conn,
        "SELECT version FROM routine_versions WHERE routine_id = ? AND state = 'approved'",
        (routine_id,),
    )
    if row is None:
        return None
    await conn.execute(
        "UPDATE routine_versions SET state = 'retired' WHERE routine_id = ? AND state = 'approved'",
        (routine_id,),
    )
    return int(row["version"])


# -- runs ----------------------------------------------------------------------------


async def insert_run(
    conn: Connection,
    routine_id: int,
    version: int,
    scheduled_for: str,
    cause: str,
    state: str,
    now: str,
    *,
    outcome: str = "",
) -> int | None:
    """A new run; None when ``(routine, scheduled_for)`` already has one."""
    try:
        new_id = await conn.insert(
            """INSERT INTO routine_runs (routine_id, version, scheduled_for, cause, state, outcome,
                   ended_at, created_at) VALUES (?,?,?,?,?,?,?,?)""",
            (
                routine_id,
                version,
                scheduled_for,
                cause,
                state,
                outcome,
                now if state == "missed" else None,
                now,
            ),
        )
    except conn.IntegrityError:
        return None
    return new_id


async def run(conn: Connection, run_id: int) -> Row | None:
    return await one(conn, f"{RUN} WHERE u.id = ?", (run_id,))


async def run_at(conn: Connection, routine_id: int, scheduled_for: str) -> Row | None:
    return await one(
        conn, f"{RUN} WHERE u.routine_id = ? AND u.scheduled_for = ?", (routine_id, scheduled_for)
    )


async def runs(conn: Connection, routine_id: int, before: int | None, limit: int) -> list[Row]:
    return await all_rows(
        conn,
        f"{RUN} WHERE u.routine_id = ? AND u.id < ? ORDER BY u.id DESC LIMIT ?",
        (routine_id, before if before is not None else 2**62, limit),
    )


async def open_runs(conn: Connection, routine_ids: list[int]) -> list[Row]:
    marks = _marks(routine_ids)
    return await all_rows(
        conn,
        f"{RUN} WHERE u.state IN ('scheduled', 'running') AND u.routine_id IN ({marks}) ORDER BY u.id",
        tuple(routine_ids),
    )


async def last_runs(conn: Connection, routine_ids: list[int]) -> dict[int, Row]:
    """Each routine's latest run by scheduled time."""
    marks = _marks(routine_ids)
    rows = await all_rows(
        conn,
        f"""{RUN} WHERE u.id IN (SELECT (SELECT id FROM routine_runs x WHERE x.routine_id = r.id
                ORDER BY x.scheduled_for DESC, x.id DESC LIMIT 1) FROM routines r WHERE r.id IN ({marks}))""",
        tuple(routine_ids),
    )
    return {row["routine_id"]: row for row in rows}


async def covered_until(conn: Connection, routine_ids: list[int]) -> dict[int, str]:
    """Until when each routine's schedule is covered: its latest scheduled run's time, or its
    start when that was later (times passing while a run waited are coalesced into it)."""
    marks = _marks(routine_ids)
    rows = await all_rows(
        conn,
        f"""SELECT routine_id, MAX(CASE WHEN started_at > scheduled_for THEN started_at
                ELSE scheduled_for END) AS at FROM routine_runs
            WHERE cause <> 'run-now' AND routine_id IN ({marks}) GROUP BY routine_id""",
        tuple(routine_ids),
    )
    return {row["routine_id"]: row["at"] for row in rows}


async def last_outcome(conn: Connection, routine_id: int) -> Row | None:
    """The latest finished run with its outcome: where a routine's prompt says it left off."""
    return await one(
        conn,
        f"{RUN} WHERE u.routine_id = ? AND u.state = 'done' ORDER BY u.ended_at DESC, u.id DESC LIMIT 1",
        (routine_id,),
    )


async def start_run(conn: Connection, run_id: int, message_id: int, claim_mark: int, now: str) -> None:
    await conn.execute(
        """UPDATE routine_runs SET state = 'running', message_id = ?, claim_mark = ?, started_at = ?
           WHERE id = ? AND state = 'scheduled'""",
        (message_id, claim_mark, now, run_id),
    )


async def finish_run(conn: Connection, run_id: int, state: str, outcome: str, now: str) -> None:
    await conn.execute(
        "UPDATE routine_runs SET state = ?, outcome = ?, ended_at = ? WHERE id = ? AND state = 'running'",
        (state, outcome, now, run_id),
    )


async def claim_mark(conn: Connection, thread_id: int) -> int:
    row = await one(
        conn, "SELECT COALESCE(MAX(id), 0) AS m FROM claim_events WHERE thread_id = ?", (thread_id,)
    )
    return int(row["m"]) if row is not None else 0


#: The claim actions after which a thread's claim is held.
HOLDING = ("claim", "renew", "handoff")


async def run_done(conn: Connection, thread_id: int, mark: int) -> Row | None:
    """The ``done`` that ends a run started at ``mark``, with who closed it.

    It is the first ``done`` after the mark that closes a claim of the run's own: a claim
    still held when the run started belongs to an earlier job, so its ``done`` ends
    nothing, unless that claim was let go (released, expired, closed) or taken again
    after the mark first.
    """
    last = await one(
        conn,
        "SELECT action FROM claim_events WHERE thread_id = ? AND id <= ? ORDER BY id DESC LIMIT 1",
        (thread_id, mark),
    )
    held = int(last is not None and last["action"] in HOLDING)
    return await one(
        conn,
        """SELECT e.id, e.note, e.at, a.handle AS actor FROM claim_events e
           LEFT JOIN agents a ON a.id = e.actor_id
           WHERE e.thread_id = ? AND e.id > ? AND e.action = 'done'
             AND (? = 0 OR EXISTS (SELECT 1 FROM claim_events x WHERE x.thread_id = e.thread_id
                 AND x.id > ? AND x.id < e.id AND x.action IN ('claim', 'release', 'expire', 'done')))
           ORDER BY e.id LIMIT 1""",
        (thread_id, mark, held, mark),
    )


async def running_run(conn: Connection, routine_id: int) -> Row | None:
    """The routine's running run: at most one, as runs share the routine's thread and claim."""
    return await one(
        conn, f"{RUN} WHERE u.routine_id = ? AND u.state = 'running' ORDER BY u.id LIMIT 1", (routine_id,)
    )


async def failed_wake(conn: Connection, message_id: int) -> Row | None:
    """A harness run woken by this message that failed."""
    return await one(
        conn,
        """SELECT k.id, k.outcome, k.error FROM wakes k, json_each(k.trigger_ids) j
           WHERE j.value = ? AND k.outcome IN ('failed', 'timeout', 'error') ORDER BY k.id LIMIT 1""",
        (message_id,),
    )


# -- changes -------------------------------------------------------------------------


async def add_change(conn: Connection, routine_id: int, what: str, now: str) -> int:
    new_id = await conn.insert(
        "INSERT INTO routine_changes (routine_id, what, at) VALUES (?,?,?)", (routine_id, what, now)
    )
    return new_id


async def change_cursor(conn: Connection) -> int:
    row = await one(conn, "SELECT COALESCE(MAX(id), 0) AS c FROM routine_changes")
    return int(row["c"]) if row is not None else 0


async def failed_since(conn: Connection, since: str, limit: int) -> list[Row]:
    """Runs that failed or timed out at or after ``since``, with their routine's name and thread."""
    return await all_rows(
        conn,
        """SELECT k.id, k.state, k.outcome, r.name, r.thread_id FROM routine_runs k
             JOIN routines r ON r.id = k.routine_id
            WHERE k.state IN ('failed', 'timed_out') AND k.ended_at >= ? ORDER BY k.id LIMIT ?""",
        (since, limit),
    )
