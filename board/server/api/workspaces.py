"""Workspace routes."""

from __future__ import annotations

from typing import Any

from ..services import actions, workspaces
from .responses import ANY_OBJECT, STR, array, obj, page, ref
from .route import Answer, Call, Route


async def listing(call: Call) -> Any:
    return await workspaces.list_workspaces(call.ctx, call.p, call.query)


async def create(call: Call) -> Any:
    return await workspaces.create(call.ctx, call.p, call.body)


async def get(call: Call) -> Any:
    return await workspaces.get(call.ctx, call.p, call.arg("slug"))


async def patch(call: Call) -> Any:
    return await workspaces.patch(call.ctx, call.p, call.arg("slug"), call.body)


async def archive(call: Call) -> Any:
    return await workspaces.archive(call.ctx, call.p, call.arg("slug"))


async def delete(call: Call) -> Any:
    return await workspaces.delete(call.ctx, call.p, call.arg("slug"), call.body)


async def bots(call: Call) -> Any:
    return await workspaces.set_bots(call.ctx, call.p, call.arg("slug"), call.body)


ROUTES = [
    Route(
        "GET",
        "/api/workspaces",
        listing,
        "Workspaces with counts (humans, admin bots).",
        answer=Answer(page("workspaces", ref("Workspace"))),
        query=workspaces.WorkspaceList,
    ),
    Route(
        "POST",
        "/api/workspaces",
        create,
        "Create a workspace, optionally seeding it (humans).",
        answer=Answer(ref("Workspace")),
        body=workspaces.NewWorkspace,
        status=201,
        role=actions.only("workspace.create"),
    ),
    Route(
        "GET",
        "/api/workspaces/{slug}",
        get,
        "A workspace's settings.",
        answer=Answer(ref("Workspace")),
    ),
    Route(
        "PATCH",
        "/api/workspaces/{slug}",
        patch,
        "Rename, or set the review policy (humans).",
        answer=Answer(ref("Workspace")),
        body=workspaces.WorkspacePatch,
    ),
    Route(
        "POST",
        "/api/workspaces/{slug}/archive",
        archive,
        "Make a workspace read-only (humans).",
        answer=Answer(ref("Workspace")),
    ),
    Route(
        "DELETE",
        "/api/workspaces/{slug}",
        delete,
        "Delete an archived workspace and everything in it (humans).",
        answer=Answer(obj({"deleted": STR, "removed": ANY_OBJECT})),
        body=workspaces.DeleteWorkspace,
    ),
    Route(
        "PUT",
        "/api/workspaces/{slug}/bots",
        bots,
        "Move bots into this workspace (humans).",
        answer=Answer(obj({"workspace": STR, "bots": array(STR)})),
        body=workspaces.BotMembership,
    ),
]
