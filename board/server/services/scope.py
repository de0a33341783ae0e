"""Workspace scope, decided from the credential.

A bot acts in its own workspace: naming another answers NOT_FOUND, exactly as
if it did not exist. Admin bots and humans name the workspace they act in;
admin bots default to ``admin``.
"""

from __future__ import annotations

from typing import Any

from aiosqlite import Connection

from ..errors import Forbidden, InvalidArgument, NotFound
from ..principal import ADMIN_WORKSPACE, Principal
from ..store import channels as channel_store
from ..store import workspaces as store


async def resolve(conn: Connection, p: Principal, slug: str | None) -> Any:
    """The workspace row ``p`` acts in when it names ``slug`` (or none)."""
    if p.is_bot and not p.is_admin_bot:
        if slug is not None and slug != p.workspace:
            raise NotFound("workspace")
        slug = p.workspace
    elif slug is None:
        if p.is_admin_bot:
            slug = ADMIN_WORKSPACE
        else:
            raise InvalidArgument("Name the workspace: workspace=<slug>.")
    row = await store.by_slug(conn, slug or "")
    if row is None:
        raise NotFound("workspace")
    return row


async def resolve_optional(conn: Connection, p: Principal, slug: str | None) -> Any | None:
    """Like :func:`resolve`, but a human naming none means every workspace (``None``)."""
    if slug is None and p.is_human:
        return None
    return await resolve(conn, p, slug)


def visible(p: Principal, workspace_id: int) -> bool:
    return p.sees_all_workspaces or p.workspace_id == workspace_id


def require_visible(p: Principal, workspace_id: int, what: str) -> None:
    if not visible(p, workspace_id):
        raise NotFound(what)


async def in_conversation(conn: Connection, p: Principal, conversation_id: int | None) -> bool:
    """Whether ``p`` may read a conversation: its members, and humans. A channel (None) is open."""
    if conversation_id is None or p.is_human:
        return True
    members = (await channel_store.members(conn, [conversation_id])).get(conversation_id, [])
    return p.agent_id in {m["id"] for m in members}


async def message_visible(conn: Connection, p: Principal, row: Any) -> bool:
    """Whether ``p`` may read a stored message row: its workspace, and its conversation if any."""
    return visible(p, row["workspace_id"]) and await in_conversation(conn, p, row["conversation_id"])


async def require_message(conn: Connection, p: Principal, row: Any | None, what: str) -> Any:
    """The message row, or NOT_FOUND as for an absent one when ``p`` may not read it."""
    if row is None or not await message_visible(conn, p, row):
        raise NotFound(what)
    return row


def require_writable(workspace: Any) -> None:
    if workspace["archived_at"]:
        raise Forbidden(f"Workspace {workspace['slug']} is archived and read-only.")


def workspace_ids(p: Principal, workspace: Any | None) -> list[int] | None:
    """The workspaces a read spans: the named one, or all for a human naming none."""
    if workspace is not None:
        return [workspace["id"]]
    return None if p.sees_all_workspaces else [p.workspace_id or 0]


def machine_visible(p: Principal, machine_id: int) -> bool:
    """Humans see every machine of the fleet; a keeper its own machine only; no one else any."""
    return p.is_human or (p.is_keeper and p.machine_id == machine_id)


def require_on_machine(p: Principal, row: Any | None, what: str) -> Any:
    """A row of a machine's (a bot assigned to it), or NOT_FOUND as for an absent one."""
    if row is None or not machine_visible(p, row["machine_id"]):
        raise NotFound(what)
    return row
