"""The periodic sweep: nudge stalled claims, release abandoned ones, flag unseen mail.

Each pass is one write transaction that decides from the stored state (a claim
is nudged only if it has not been nudged since its last progress), so running
it twice in a row, or from two processes on one database, nudges nothing twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aiosqlite import Connection

from .hub import Event
from .principal import Principal
from .services import claims
from .services.context import Context
from .store import claims as store
from .store import identity as identity_store
from .store import messages as message_store
from .store import requests as request_store
from .store import workspaces as workspace_store

BATCH = 500
UNSEEN_AFTER = 1800
AWAY_AFTER = 86400
REQUESTS_KEPT = 7 * 86400


@dataclass
class SweepReport:
    nudged: list[int] = field(default_factory=list)
    released: list[int] = field(default_factory=list)
    flagged: int = 0
    pruned_requests: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "nudged": self.nudged,
            "released": self.released,
            "flagged": self.flagged,
            "pruned_requests": self.pruned_requests,
        }


async def sweep(ctx: Context) -> SweepReport:
    """One pass; events are published after it commits."""
    stall_before = ctx.ago(ctx.settings.stall_after)
    release_before = ctx.ago(ctx.settings.release_after)

    async def write(conn: Connection) -> tuple[SweepReport, list[Event]]:
        report, events = SweepReport(), []
        board_row = await identity_store.agent_by_handle(conn, "board")
        assert board_row is not None, "the board's own agent is created by the first migration"
        board = Principal(board_row["id"], "board", "system")
        for claim in await store.stale_claims(conn, stall_before, release_before, BATCH):
            root = await message_store.by_id(conn, claim["thread_id"])
            workspace = await workspace_store.by_id(conn, claim["workspace_id"])
            if workspace is None or workspace["archived_at"]:
                continue
            if claim["progress_at"] < release_before:
                events.append(await claims.expire(conn, ctx, board, root, workspace, claim))
                report.released.append(claim["thread_id"])
            elif claim["nudged_at"] is None or claim["nudged_at"] < claim["progress_at"]:
                events.append(await claims.nudge(conn, ctx, board, root, workspace, claim))
                report.nudged.append(claim["thread_id"])
        report.flagged = await store.flag_unseen(
            conn, ctx.ago(AWAY_AFTER), ctx.ago(UNSEEN_AFTER), ctx.now(), BATCH
        )
        report.pruned_requests = await request_store.prune(conn, ctx.ago(REQUESTS_KEPT))
        return report, events

    def publish(result: tuple[SweepReport, list[Event]]) -> None:
        for event in result[1]:
            ctx.hub.publish(event)

    report, _ = await ctx.db.write(write, after_commit=publish)
    return report
