"""The periodic sweep: nudge stalled claims, release abandoned ones, flag unseen mail, forget
old request ids and the forge's delivery ids, prune sent notifications.

Each pass is one write transaction that decides from the stored state (a claim
is nudged only if it has not been nudged since its last progress), so running
it twice in a row, or from two processes on one database, nudges nothing twice.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from . import logs
from .services import claims
from .services.context import Context
from .services.posting import board_principal
from .store import claims as store
from .store import intake as intake_store
from .store import messages as message_store
from .store import notifications as notification_store
from .store import requests as request_store
from .store import workspaces as workspace_store
from .store.connection import Connection

log = logging.getLogger(__name__)

BATCH = 500
UNSEEN_AFTER = 1800
AWAY_AFTER = 86400
REQUESTS_KEPT = 7 * 86400
#: Sent notifications are kept this long in their destination's log; failed ones until removed.
NOTIFICATIONS_KEPT = 30 * 86400
#: A forge redelivers a delivery within days; its id is kept 90 to answer a late one 409.
DELIVERIES_KEPT = 90 * 86400
#: Rows of each kind a sweep's transaction prunes at most. A pass prunes a few minutes' worth;
#: the first after a long stop finds all that expired meanwhile (a day of a busy fleet's
#: request ids: millions), and prunes them in transactions of this many, one after another,
#: so that no transaction holds the writer for long.
PRUNE_AT_MOST = 5_000


#: Rows pruned in one transaction: request ids, sent notifications, intake deliveries.
Pruned = tuple[int, int, int]


@dataclass
class SweepReport:
    nudged: list[int] = field(default_factory=list)
    released: list[int] = field(default_factory=list)
    flagged: int = 0
    pruned_requests: int = 0
    pruned_notifications: int = 0
    pruned_deliveries: int = 0

    def count(self, pruned: Pruned) -> None:
        self.pruned_requests += pruned[0]
        self.pruned_notifications += pruned[1]
        self.pruned_deliveries += pruned[2]

    def as_dict(self) -> dict[str, Any]:
        return {
            "nudged": self.nudged,
            "released": self.released,
            "flagged": self.flagged,
            "pruned_requests": self.pruned_requests,
            "pruned_notifications": self.pruned_notifications,
            "pruned_deliveries": self.pruned_deliveries,
        }


async def sweep(ctx: Context) -> SweepReport:
    """One pass; its event messages are published after it commits. A backlog of rows past
    their keep is pruned after it, :data:`PRUNE_AT_MOST` of each kind a transaction."""
    stall_before = ctx.ago(ctx.settings.stall_after)
    release_before = ctx.ago(ctx.settings.release_after)

    async def write(conn: Connection) -> tuple[SweepReport, Pruned]:
        report = SweepReport()
        board = await board_principal(conn)
        for claim in await store.stale_claims(conn, stall_before, release_before, BATCH):
            root = await message_store.by_id(conn, claim["thread_id"])
            workspace = await workspace_store.by_id(conn, claim["workspace_id"])
            if root is None or workspace is None or workspace["archived_at"]:
                continue
            progress = claim["progress_at"] or ""  # never NULL here: the query compares it
            if progress < release_before:
                await claims.expire(conn, ctx, board, root, workspace, claim)
                report.released.append(claim["thread_id"])
            elif claim["nudged_at"] is None or claim["nudged_at"] < progress:
                await claims.nudge(conn, ctx, board, root, workspace, claim)
                report.nudged.append(claim["thread_id"])
        report.flagged = await store.flag_unseen(
            conn, ctx.ago(AWAY_AFTER), ctx.ago(UNSEEN_AFTER), ctx.now(), BATCH
        )
        return report, await _prune(conn, ctx)

    report, pruned = await ctx.db.write(write)
    report.count(pruned)
    try:  # a backlog: the rest in transactions of their own, other writes between them
        while PRUNE_AT_MOST in pruned:
            pruned = await ctx.db.write(lambda conn: _prune(conn, ctx))
            report.count(pruned)
    except Exception:  # what the pass decided is committed and reported; the next pass prunes on
        logs.failed(log, "sweep: pruning a backlog failed; the next pass goes on with it")
    return report


async def _prune(conn: Connection, ctx: Context) -> Pruned:
    """Prune at most :data:`PRUNE_AT_MOST` rows of each kind past its keep."""
    return (
        await request_store.prune(conn, ctx.ago(REQUESTS_KEPT), PRUNE_AT_MOST),
        await notification_store.prune_sent(conn, ctx.ago(NOTIFICATIONS_KEPT), PRUNE_AT_MOST),
        await intake_store.prune_deliveries(conn, ctx.ago(DELIVERIES_KEPT), PRUNE_AT_MOST),
    )
