"""Workspaces: create, rename, review policy, archive, delete (typed slug), members, invites."""

from __future__ import annotations

from aiohttp import web

from ..principal import ADMIN_WORKSPACE
from ..services import agents, auth, workspaces
from .board import all_workspaces
from .onboard import join_line
from .people import cleared
from .routing import PageCall, PageRoute, redirect


async def _page(call: PageCall, *, invite: dict[str, object] | None = None) -> web.Response:
    spaces = await all_workspaces(call.ctx, call.p)
    members = {}
    for space in spaces:
        roster = await agents.roster(call.ctx, call.p, agents.AgentList(workspace=space["slug"], limit=500))
        # A bot's kind on the roster is its harness label: the workspace's bots are its agents.
        members[space["slug"]] = [a for a in roster["agents"] if a["workspace"] == space["slug"]]
    board = f"{call.request.scheme}://{call.request.host}"
    return call.render(
        "workspaces.html",
        workspaces=spaces,
        members=members,
        admin_bots=members.get(ADMIN_WORKSPACE, []),
        invite=invite,
        join=join_line(board, "my-bot", str(invite["invite"])) if invite else None,
    )


async def listing(call: PageCall) -> web.StreamResponse:
    return await _page(call)


async def create(call: PageCall) -> web.StreamResponse:
    await workspaces.create(call.ctx, call.p, call.parsed_form(workspaces.NewWorkspace))
    return redirect("/workspaces")


async def change(call: PageCall) -> web.StreamResponse:
    slug, action = call.arg("slug"), call.arg("action")
    if action == "settings":
        call.form = cleared(call.form)
        await workspaces.patch(call.ctx, call.p, slug, call.parsed_form(workspaces.WorkspacePatch))
    elif action == "archive":
        await workspaces.archive(call.ctx, call.p, slug)
    elif action == "delete":
        await workspaces.delete(call.ctx, call.p, slug, call.parsed_form(workspaces.DeleteWorkspace))
    elif action == "bots":
        names = call.form.pop("bots", "")
        bots = [n for n in names.replace(",", " ").split() if n]
        await workspaces.set_bots(call.ctx, call.p, slug, workspaces.BotMembership(bots=bots))
    elif action == "invite":
        # Rendered, not redirected: the code is shown this once.
        req = call.parsed_form(auth.InviteRequest, workspace=slug)
        return await _page(call, invite=await auth.create_invite(call.ctx, call.p, req))
    return redirect("/workspaces")


ROUTES = [
    PageRoute("GET", "/workspaces", listing, "Workspaces with members and settings."),
    PageRoute("POST", "/workspaces", create, "Create a workspace (with seed material)."),
    PageRoute(
        "POST",
        "/workspaces/{slug}/{action:settings|archive|delete|bots|invite}",
        change,
        "Rename, set the review policy, archive, delete, set members, or invite bots.",
    ),
]
