"""Workspaces: create, read, settings, archive, delete, bot membership."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import Forbidden, InvalidArgument, NameConflict, NotFound
from ..principal import ADMIN_WORKSPACE, Principal
from ..store import identity as identity_store
from ..store import workspaces as store
from ..store.connection import Connection
from ..validation import arg, check_new_name
from . import actions, audit, budgets, claims, scope
from .context import Context
from .paging import Page, bounded_page
from .posting import post_event

SLUG_PATTERN = r"[a-z0-9._-]{2,64}"


def to_dict(row: Any) -> dict[str, Any]:
    item = {
        "slug": row["slug"],
        "name": row["name"],
        "review": row["review_policy"],
        "loop_hops": row["loop_hops"],
        **budgets.limits_view(row),
        "archived": row["archived_at"] is not None,
        "archived_at": row["archived_at"],
        "created_at": row["created_at"],
    }
    for count in ("bots", "channels", "last_id"):
        if count in row.keys():  # noqa: SIM118 - sqlite3.Row has keys(), no __contains__ by name
            item[count] = row[count]
    return item


@dataclass
class WorkspaceList:
    after: str = arg("", max_len=64, help="Slug to continue after.")
    limit: int = arg(20, min=1, max=500)
    max_bytes: int | None = arg(None, min=1)


async def list_workspaces(ctx: Context, p: Principal, q: WorkspaceList) -> Page:
    scope.require_every_workspace(p, "Only humans and admin bots list workspaces.")
    rows = await ctx.db.read(lambda conn: store.list_with_counts(conn, q.after, q.limit + 1))
    return bounded_page(
        ctx,
        "workspaces",
        [to_dict(r) for r in rows],
        q.limit,
        q.max_bytes,
        descending=False,
        key="slug",
    )


def first_to_show(listed: list[dict[str, Any]]) -> str:
    """The workspace a page opens on when none is named: the first live project one, else admin."""
    live = [w["slug"] for w in listed if not w["archived"] and w["slug"] != ADMIN_WORKSPACE]
    return live[0] if live else ADMIN_WORKSPACE


async def get(ctx: Context, p: Principal, slug: str) -> dict[str, Any]:
    async def read(conn: Connection) -> Any:
        row = await scope.visible_workspace(conn, p, slug)
        return row

    return to_dict(await ctx.db.read(read))


@dataclass
class NewWorkspace:
    slug: str = arg(pattern=SLUG_PATTERN, help="2-64 of [a-z0-9._-].")
    name: str = arg("", max_len=200)
    seed: str = arg("", max_len=16_000, multiline=True, help="Material for an admin bot.")


async def create(ctx: Context, p: Principal, req: NewWorkspace) -> dict[str, Any]:
    actions.require(p, "workspace.create")
    check_new_name("workspace", req.slug, "slug")

    async def write(conn: Connection) -> dict[str, Any]:
        if await store.by_slug(conn, req.slug) is not None:
            raise NameConflict(f"Workspace {req.slug!r} exists; pick another slug.")
        now = ctx.now()
        workspace_id = await store.insert(conn, req.slug, req.name or req.slug, now)
        await audit.record(conn, ctx, p, "workspace.create", req.slug, workspace=req.slug)
        if req.seed:
            admin = await store.by_slug(conn, ADMIN_WORKSPACE)
            assert admin is not None  # made by the first migration
            await post_event(
                conn,
                ctx,
                admin,
                f"New workspace **{req.slug}**: please write its knowledge base from this "
                f"seed material.\n\n{req.seed}",
                channel="lobby",
                author=p,
                meta={"seed_workspace": req.slug},
                tags=["seed"],
                # The seed is the human's material quoted as is: a handle in it
                # wakes no one. Admin bots find the thread by its tag.
                parse_mentions=False,
            )
        return to_dict(await store.by_id(conn, workspace_id))

    return await ctx.db.write(write)


@dataclass
class WorkspacePatch(budgets.Limits):
    name: str | None = arg(None, max_len=200)
    review: str | None = arg(None, choices=("none", "bots", "all"))
    loop_hops: int | None = arg(
        None, min=0, max=1000, help="Bot messages in a row that pause bot wakes; 0 turns the guard off."
    )


async def patch(ctx: Context, p: Principal, slug: str, req: WorkspacePatch) -> dict[str, Any]:
    async def write(conn: Connection) -> Any:
        row = await scope.visible_workspace(conn, p, slug)
        actions.require(p, "workspace.update")
        scope.require_writable(row)
        changes: dict[str, Any] = {}
        if req.name is not None:
            changes["name"] = req.name
        if req.review is not None:
            changes["review_policy"] = req.review
        if req.loop_hops is not None:
            changes["loop_hops"] = req.loop_hops
        if limits := budgets.changed_limits(req):
            changes |= limits
            budgets.changed(await store.bot_ids(conn, row["id"]))
        if not changes:
            raise InvalidArgument("Nothing to change: give name, review, loop_hops or a budget_ limit.")
        await store.update(conn, row["id"], changes)
        await audit.record(conn, ctx, p, "workspace.update", slug, workspace=slug, details=changes)
        return await store.by_id(conn, row["id"])

    return to_dict(await ctx.db.write(write))


async def archive(ctx: Context, p: Principal, slug: str) -> dict[str, Any]:
    async def write(conn: Connection) -> Any:
        row = await scope.visible_workspace(conn, p, slug)
        actions.require(p, "workspace.archive")
        if slug == ADMIN_WORKSPACE:
            raise Forbidden("The admin workspace cannot be archived.")
        if row["archived_at"] is None:
            await store.update(conn, row["id"], {"archived_at": ctx.now()})
            await audit.record(conn, ctx, p, "workspace.archive", slug, workspace=slug)
        return await store.by_id(conn, row["id"])

    return to_dict(await ctx.db.write(write))


@dataclass
class DeleteWorkspace:
    confirm: str = arg(max_len=64, help="The workspace's slug, typed again.")


#: Seconds a workspace's deletion may take where writes are bounded (PostgreSQL: 30 s a batch):
#: it deletes every message of the workspace in one transaction, some 20,000 a second there.
DELETE_ALLOWED = 600.0


async def delete(ctx: Context, p: Principal, slug: str, req: DeleteWorkspace) -> dict[str, Any]:
    async def write(conn: Connection) -> tuple[dict[str, Any], list[int]]:
        row = await scope.visible_workspace(conn, p, slug)
        actions.require(p, "workspace.delete")
        if row["archived_at"] is None:
            raise Forbidden("Archive the workspace before deleting it.")
        if req.confirm != slug:
            raise InvalidArgument(f'Type the slug to confirm: {{"confirm": "{slug}"}}.')
        elsewhere: dict[str, list[str]] = {}
        for bot in await store.bot_history_elsewhere(conn, row["id"]):
            elsewhere.setdefault(bot["handle"], []).append(bot["workspace"])
        if elsewhere:
            listed = "; ".join(f"{h} in {', '.join(w)}" for h, w in elsewhere.items())
            raise Forbidden(
                f"Some of this workspace's bots have messages or claims in other workspaces "
                f"({listed}); deleting them would orphan that history. Move them to another "
                f"workspace first (PUT /api/workspaces/<slug>/bots), then delete.",
                bots=elsewhere,
            )
        bots = await store.bot_ids(conn, row["id"])
        counts = await store.delete(conn, row["id"])
        await audit.record(conn, ctx, p, "workspace.delete", slug, workspace=slug, details=counts)
        return {"deleted": slug, "removed": counts}, bots

    result, bots = await ctx.db.write(write, allowed=DELETE_ALLOWED)
    for agent_id in bots:
        ctx.tokens.forget_agent(agent_id)
    return result


@dataclass
class BotMembership:
    bots: list[str] = arg(max_items=500, pattern=r"[A-Za-z0-9._-]{2,32}")


async def set_bots(ctx: Context, p: Principal, slug: str, req: BotMembership) -> dict[str, Any]:
    """Make the named bots this workspace's whole set, moving them in from where they are.

    A bot belongs to exactly one workspace, so a member left out has nowhere to go: the
    call is refused, naming them, until they are named in another workspace's set (or
    kept in this one). Moving them to ``admin`` would make them admin bots.
    """

    async def write(conn: Connection) -> tuple[dict[str, Any], list[int]]:
        row = await scope.visible_workspace(conn, p, slug)
        actions.require(p, "workspace.set_bots")
        scope.require_writable(row)
        agents = {a["handle"].lower(): a for a in await identity_store.agents_by_handles(conn, req.bots)}
        for handle in req.bots:
            agent = agents.get(handle.lower())
            if agent is None or agent["kind"] != "bot":
                raise NotFound(f"bot {handle}")
        named = {a["id"] for a in agents.values()}
        current = await store.bot_ids(conn, row["id"])
        if left_out := [agent_id for agent_id in current if agent_id not in named]:
            rows = await identity_store.list_agents(conn, [row["id"]], "", len(current) + 1)
            handles = [r["handle"] for r in rows if r["id"] in set(left_out)]
            raise InvalidArgument(
                f"PUT sets the whole list, and {', '.join(handles)} would be left without a "
                f"workspace (a bot belongs to exactly one). Keep them in the list, or first name "
                f"them in another workspace's list.",
                field="bots",
                left_out=handles,
            )
        moved = []
        for handle in req.bots:
            agent = agents[handle.lower()]
            if agent["workspace_id"] != row["id"]:
                await identity_store.move_bot(conn, agent["id"], row["id"])
                moved.append(agent["id"])
                await claims.release_on_move(conn, ctx, p, agent, row)
                await audit.record(
                    conn,
                    ctx,
                    p,
                    "membership.move",
                    agent["handle"],
                    workspace=slug,
                    details={"from": agent["workspace"]},
                )
        members = await identity_store.list_agents(conn, [row["id"]], "", 501)
        return (
            {
                "workspace": slug,
                "bots": [m["handle"] for m in members if m["kind"] == "bot"],
            },
            moved,
        )

    result, moved = await ctx.db.write(write)
    for agent_id in moved:
        ctx.tokens.forget_agent(agent_id)
    return result
