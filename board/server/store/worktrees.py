"""The worktree each bot has for a thread, one row per (thread, bot): written by the bot's
daemon, read by the thread's answer and page and by the delivery states."""

from __future__ import annotations

import json
from typing import Any

from .connection import Connection
from .rows import Row, all_rows

COLUMNS = """w.thread_id, w.agent_id, a.handle AS bot, w.state, w.branch, w.base, w.path, w.ahead,
    w.commits, w.diffstat, w.detail, w.updated_at"""


async def upsert(conn: Connection, thread_id: int, agent_id: int, values: dict[str, Any], now: str) -> None:
    """The bot's record for the thread, replacing the one it had."""
    await conn.execute(
        """INSERT INTO thread_worktrees
               (thread_id, agent_id, state, branch, base, path, ahead, commits, diffstat, detail, updated_at)
           VALUES (?,?,?,?,?,?,?,?,?,?,?)
           ON CONFLICT (thread_id, agent_id) DO UPDATE SET state = excluded.state,
               branch = excluded.branch, base = excluded.base, path = excluded.path,
               ahead = excluded.ahead, commits = excluded.commits, diffstat = excluded.diffstat,
               detail = excluded.detail, updated_at = excluded.updated_at""",
        (
            thread_id,
            agent_id,
            values["state"],
            values["branch"],
            values["base"],
            values["path"],
            values["ahead"],
            json.dumps(values["commits"], separators=(",", ":")),
            values["diffstat"],
            values["detail"],
            now,
        ),
    )


async def of_thread(conn: Connection, thread_id: int, agent_id: int | None = None) -> list[Row]:
    """A thread's records (one bot's, given ``agent_id``), newest first."""
    one_bot = "" if agent_id is None else " AND w.agent_id = ?"
    return await all_rows(
        conn,
        f"""SELECT {COLUMNS} FROM thread_worktrees w JOIN agents a ON a.id = w.agent_id
            WHERE w.thread_id = ?{one_bot} ORDER BY w.updated_at DESC, a.handle""",
        (thread_id,) if agent_id is None else (thread_id, agent_id),
    )


async def live_on_thread(conn: Connection, thread_id: int) -> list[Row]:
    """The bots with a live worktree for the thread (``agent_id``), with the workspace each
    lives in now (``workspace_id``, ``workspace``): one that moved may no longer reach it."""
    return await all_rows(
        conn,
        """SELECT w.agent_id, a.workspace_id, s.slug AS workspace
             FROM thread_worktrees w JOIN agents a ON a.id = w.agent_id
             LEFT JOIN workspaces s ON s.id = a.workspace_id
            WHERE w.thread_id = ? AND w.state = 'live'
            ORDER BY w.agent_id""",
        (thread_id,),
    )


async def waiting(conn: Connection, pairs: list[tuple[int, int]]) -> list[Row]:
    """Of these (thread, bot) pairs, the ones whose record is ``waiting``, with its detail."""
    if not pairs:
        return []
    threads = sorted({t for t, _ in pairs})
    agents = sorted({a for _, a in pairs})
    rows = await all_rows(
        conn,
        f"""SELECT thread_id, agent_id, detail FROM thread_worktrees
            WHERE state = 'waiting' AND thread_id IN ({",".join("?" * len(threads))})
              AND agent_id IN ({",".join("?" * len(agents))})""",
        (*threads, *agents),
    )
    wanted = set(pairs)
    return [r for r in rows if (int(r["thread_id"]), int(r["agent_id"])) in wanted]


async def set_state(
    conn: Connection, thread_id: int, handle: str, state: str, now: str, detail: str | None = None
) -> bool:
    """Set the state (and the detail, given one) of a bot's record for a thread, by the bot's
    handle; the rest of the record stays. False if it has none."""
    cursor = await conn.execute(
        """UPDATE thread_worktrees SET state = ?, detail = COALESCE(?, detail), updated_at = ?
           WHERE thread_id = ? AND agent_id = (SELECT id FROM agents WHERE handle = ?)""",
        (state, detail, now, thread_id, handle),
    )
    return bool(cursor.rowcount)


async def queued_in_thread(conn: Connection, thread_id: int, agent_id: int, limit: int) -> list[int]:
    """Ids of the newest messages of a thread in the bot's inbox as addressed to it (bounded)."""
    rows = await all_rows(
        conn,
        """SELECT m.id FROM inbox i JOIN messages m ON m.id = i.message_id
           WHERE m.thread_id = ? AND i.agent_id = ? ORDER BY m.id DESC LIMIT ?""",
        (thread_id, agent_id, limit),
    )
    return [int(r["id"]) for r in rows]
