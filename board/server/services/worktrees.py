"""Worktrees per thread: what a bot running a git worktree per thread says of each one.

The bot's daemon records its worktree for a thread (``PUT /api/threads/{id}/worktree``):
``waiting`` (all its worktrees are in use: the thread's messages stay queued, and
their delivery state reads ``held``), ``live``, ``kept`` (the claim ended with work
on the branch: its commits and diffstat are kept here for the human) or
``removed``. The thread's answer and page show every bot's record; a keeper's ok
answer to a ``remove_worktree`` order sets the record to ``removed``, and so does
the bot's daemon or keeper saying a kept one's folder is gone (:mod:`.fleet`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..errors import InvalidArgument
from ..principal import Principal
from ..store import workspaces as workspace_store
from ..store import worktrees as store
from ..store.connection import Connection
from ..store.jsoncolumns import read_json
from ..store.rows import Row
from ..validation import arg
from . import actions, delivery, scope
from .context import Context

STATES = ("waiting", "live", "kept", "removed")
#: A git branch name as the daemon makes and checks them; never an option to git.
BRANCH = r"(?!-)[A-Za-z0-9._/-]{0,200}"
MAX_COMMITS = 50
#: The queued messages of the thread whose delivery state a change of record moves, at most.
SIGNALLED = 50


@dataclass
class Commit:
    sha: str = arg(pattern=r"[0-9a-f]{7,40}", help="The commit's hash, abbreviated or whole.")
    subject: str = arg("", max_len=200)


@dataclass
class WorktreeRecord:
    state: str = arg(choices=STATES)
    branch: str = arg("", max_len=200, pattern=BRANCH, help='The branch; "" only while waiting.')
    base: str = arg("", max_len=200, pattern=BRANCH, help="The branch it started from.")
    path: str = arg("", max_len=1000, help="The worktree's folder on the bot's machine.")
    ahead: int = arg(0, min=0, max=1_000_000, help="Commits on the branch ahead of base.")
    commits: list[Commit] = arg([], max_items=MAX_COMMITS, help="Those commits, newest first.")
    diffstat: str = arg("", max_len=4000, multiline=True, help="git diff --stat base...branch.")
    detail: str = arg("", max_len=500, help="Why it waits, or what happened to it.")


def record_dict(row: Row) -> dict[str, Any]:
    """A stored record as the API answers it; commits that do not read back are none."""
    commits, _ = read_json("thread_worktrees", int(row["thread_id"]), "commits", row["commits"], [])
    return {
        "thread_id": row["thread_id"],
        "bot": row["bot"],
        "state": row["state"],
        "branch": row["branch"],
        "base": row["base"],
        "path": row["path"],
        "ahead": row["ahead"],
        "commits": [
            {"sha": str(c.get("sha", ""))[:40], "subject": str(c.get("subject", ""))[:200]}
            for c in (commits if isinstance(commits, list) else [])[:MAX_COMMITS]
            if isinstance(c, dict)
        ],
        "diffstat": row["diffstat"],
        "detail": row["detail"],
        "updated_at": row["updated_at"],
    }


async def of_thread(conn: Connection, thread_id: int) -> list[dict[str, Any]]:
    """Every bot's record for a thread, newest first (the thread's answer and page)."""
    return [record_dict(r) for r in await store.of_thread(conn, thread_id)]


async def record(ctx: Context, p: Principal, thread_id: int, req: WorktreeRecord) -> dict[str, Any]:
    """The calling bot's record of its worktree for a thread, replacing the one it had."""
    actions.require(p, "thread.worktree")
    if req.state != "waiting" and not req.branch:
        raise InvalidArgument(
            f"The branch is required for a {req.state} worktree; only waiting has none.", field="branch"
        )
    values = asdict(req)

    async def write(conn: Connection) -> dict[str, Any]:
        root = await scope.visible_root(conn, p, thread_id)
        workspace = await workspace_store.by_id(conn, root["workspace_id"])
        assert workspace is not None  # a message's workspace outlives it
        scope.require_writable(workspace)
        before = await store.of_thread(conn, root["id"], p.agent_id)
        await store.upsert(conn, root["id"], p.agent_id, values, ctx.now())
        was_waiting = bool(before) and before[0]["state"] == "waiting"
        if was_waiting != (req.state == "waiting"):
            # The queued messages of the thread read held, or no longer: tell their pages.
            queued = await store.queued_in_thread(conn, root["id"], p.agent_id, SIGNALLED)
            delivery.changed(dict.fromkeys(queued, int(root["workspace_id"])))
        (row,) = await store.of_thread(conn, root["id"], p.agent_id)
        return record_dict(row)

    return await ctx.db.write(write)
