"""The audit helper every mutation goes through, and the audit log reader."""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Any

from ..principal import Principal
from ..store import audit as store
from ..store.connection import Connection
from ..store.jsoncolumns import read_json
from ..validation import arg, rfc3339
from . import actions
from .context import Context
from .paging import Page, bounded_page

CHOICES = 200  # values a pick-list offers; the log's actions are a fixed set, its actors the people and bots

#: The request id of the call being served, if the caller gave one.
request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)


def _details(row: Any) -> Any:
    """What the store read back; the unreadable marker for anything the strict parser refuses."""
    details, _ = read_json("audit", row["id"], "details", row["details"], {"unreadable": True})
    return details


async def record(
    conn: Connection,
    ctx: Context,
    actor: Principal | None,
    action: str,
    target: str = "",
    *,
    workspace: str | None = None,
    reason: str = "",
    details: dict[str, Any] | None = None,
) -> None:
    """Append one audit row inside the caller's write (``actor=None``: the operator's CLI)."""
    await store.append(
        conn,
        at=ctx.now(),
        actor_id=actor.agent_id if actor else None,
        actor=actor.handle if actor else "operator",
        workspace=workspace,
        action=action,
        target=target,
        reason=reason,
        request_id=request_id.get(),
        details=details or {},
    )


@dataclass
class AuditQuery:
    workspace: str | None = arg(None, max_len=64)
    actor: str | None = arg(None, max_len=64)
    action: str | None = arg(None, max_len=64)
    since: int = arg(0, min=0, help="Audit row id to continue after.")
    before: int | None = arg(None, min=1, help="Entries before this id, newest first.")
    at_from: str | None = arg(None, max_len=40, name="from", help="Entries at or after this time (RFC 3339).")
    until: str | None = arg(None, max_len=40, help="Entries before this time (RFC 3339).")
    limit: int = arg(20, min=1, max=500)
    max_bytes: int | None = arg(None, min=1)


async def entries(ctx: Context, p: Principal, q: AuditQuery) -> Page:
    actions.require(p, "audit.read")
    at_from, at_until = rfc3339("from", q.at_from, query=True), rfc3339("until", q.until, query=True)
    rows = await ctx.db.read(
        lambda conn: store.select(
            conn,
            workspace=q.workspace,
            actor=q.actor,
            action=q.action,
            since=q.since,
            limit=q.limit + 1,
            at_from=at_from,
            at_until=at_until,
            before=q.before,
        )
    )
    items = [dict(row) | {"details": _details(row)} for row in rows]
    return bounded_page(ctx, "entries", items, q.limit, q.max_bytes, descending=q.before is not None)


async def choices(ctx: Context, p: Principal) -> dict[str, list[str]]:
    """The actors and actions the log holds, for the page's pick-lists (at most CHOICES of each)."""
    actions.require(p, "audit.read")

    async def read(conn: Connection) -> dict[str, list[str]]:
        return {
            "actors": await store.distinct(conn, "actor", CHOICES),
            "actions": await store.distinct(conn, "action", CHOICES),
        }

    return await ctx.db.read(read)
