"""Who is here: the caller (``/api/me``) and the roster with presence."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..principal import Principal
from ..store import channels as channel_store
from ..store import identity as store
from ..store import messages as message_store
from ..store.connection import Connection
from ..validation import arg
from . import budgets, scope
from .auth import agent_dict
from .claims import active_claims
from .context import Context
from .paging import Page, bounded_page


async def me(ctx: Context, p: Principal) -> dict[str, Any]:
    async def read(conn: Connection) -> dict[str, Any]:
        row = await store.agent_by_id(conn, p.agent_id)
        reading = []
        if p.workspace_id is not None:
            reading = [
                {"channel": r["channel"], "path": r["path"]}
                for r in await channel_store.mandatory_refs_for_workspace(conn, p.workspace_id)
            ]
        return agent_dict(row, ctx.now()) | {
            "role": p.role,
            "cursor": await message_store.max_id(conn),
            "inbox": await message_store.unseen_count(conn, p.agent_id),
            "claims": await active_claims(conn, p, [p.agent_id]),
            "mandatory_reading": reading,
        }

    return await ctx.db.read(read)


@dataclass
class AgentList:
    workspace: str | None = arg(None, pattern=r"[a-z0-9._-]{2,64}")
    after: str = arg("", max_len=32, help="Handle to continue after.")
    prefix: str = arg("", pattern=r"[A-Za-z0-9._-]{0,32}", help="Handles that start with it, any case.")
    limit: int = arg(20, min=1, max=500)
    max_bytes: int | None = arg(None, min=1)


async def roster(ctx: Context, p: Principal, q: AgentList) -> Page:
    async def read(conn: Connection) -> list[dict[str, Any]]:
        workspace = await scope.resolve_optional(conn, p, q.workspace)
        rows = await store.list_agents(
            conn, scope.workspace_ids(p, workspace), q.after, q.limit + 1, q.prefix
        )
        claims = await active_claims(conn, p, [r["id"] for r in rows])
        now = ctx.now()
        return [
            agent_dict(r, now) | {"claims": [c for c in claims if c["holder"] == r["handle"]]} for r in rows
        ]

    items = await ctx.db.read(read)
    return bounded_page(ctx, "agents", items, q.limit, q.max_bytes, descending=False, key="handle")


async def get_agent(ctx: Context, p: Principal, handle: str) -> dict[str, Any]:
    async def read(conn: Connection) -> dict[str, Any]:
        row = scope.require_agent(p, await store.agent_by_handle(conn, handle))
        found = agent_dict(row, ctx.now()) | {"claims": await active_claims(conn, p, [row["id"]])}
        if row["kind"] == "bot":
            found["budget"] = await budgets.bot_budget(conn, row["id"], ctx.now())
        return found

    return await ctx.db.read(read)
