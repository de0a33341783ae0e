"""Channels (topics and knowledge references) and conversations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InvalidArgument, NotFound
from ..principal import Principal
from ..store import channels as store
from ..store.connection import Connection
from ..validation import arg, check_new_name
from . import audit, scope
from .context import Context
from .paging import Page, bounded_page

SLUG_PATTERN = r"[a-z0-9._-]{2,64}"
DOC_PATH_PATTERN = r"(?:[A-Za-z0-9._-]+/)*[A-Za-z0-9._-]+\.md"


def parse_seen(text: str) -> dict[str, int]:
    """``slug:id,slug:id`` into a map; what each reader last saw per channel."""
    seen: dict[str, int] = {}
    for part in filter(None, text.split(",")):
        slug, sep, last = part.rpartition(":")
        if not sep or not slug or not last.isdigit():
            raise InvalidArgument("seen is slug:id,slug:id,...", field="seen")
        seen[slug] = int(last)
    return seen


@dataclass
class ChannelList:
    workspace: str | None = arg(None, pattern=SLUG_PATTERN)
    since: int | None = arg(None, min=0, help="Count messages after this id as unread.")
    seen: str | None = arg(None, max_len=8000, help="slug:id,... last seen per channel.")
    after: str = arg("", max_len=64, help="Slug to continue after.")
    limit: int = arg(20, min=1, max=500)
    max_bytes: int | None = arg(None, min=1)


async def list_channels(ctx: Context, p: Principal, q: ChannelList) -> Page:
    seen = parse_seen(q.seen) if q.seen else None

    async def read(conn: Connection) -> list[dict[str, Any]]:
        workspace = await scope.resolve(conn, p, q.workspace)
        rows = await store.list_channels(conn, workspace["id"], q.after, q.limit + 1)
        refs = await store.refs(conn, [r["id"] for r in rows])
        counted = q.since is not None or seen is not None
        bases = {r["id"]: (q.since if seen is None else seen.get(r["slug"], 0)) or 0 for r in rows}
        unread = await store.counts_after(conn, "channel_id", bases if counted else {}, p.agent_id)
        items = []
        for row in rows:
            item = {
                "slug": row["slug"],
                "workspace": workspace["slug"],
                "topic": row["topic"],
                "refs": refs.get(row["id"], []),
                "last_id": row["last_id"],
                "created_at": row["created_at"],
            }
            if counted:
                item["unread"] = unread[row["id"]]
            items.append(item)
        return items

    items = await ctx.db.read(read)
    return bounded_page(ctx, "channels", items, q.limit, q.max_bytes, descending=False, key="slug")


@dataclass
class Ref:
    path: str = arg(max_len=200, pattern=DOC_PATH_PATTERN)
    mandatory: bool = arg(False)


@dataclass
class ChannelWrite:
    slug: str = arg(pattern=SLUG_PATTERN)
    topic: str | None = arg(None, max_len=500)
    refs: list[Ref] | None = arg(None, max_items=50)
    workspace: str | None = arg(None, pattern=SLUG_PATTERN)


@dataclass
class ChannelPatch:
    topic: str | None = arg(None, max_len=500)
    refs: list[Ref] | None = arg(None, max_items=50)
    workspace: str | None = arg(None, pattern=SLUG_PATTERN)


async def upsert(ctx: Context, p: Principal, req: ChannelWrite, *, create: bool = True) -> dict[str, Any]:
    """Create a channel, or change its topic and references (each document named once)."""
    paths = [r.path for r in req.refs or []]
    for i, path in enumerate(paths):
        if path in paths[:i]:
            raise InvalidArgument(
                f"refs[{i}] names {path} again; name each document once.", field=f"refs[{i}]"
            )

    async def write(conn: Connection) -> dict[str, Any]:
        workspace = await scope.resolve(conn, p, req.workspace)
        scope.require_writable(workspace)
        row = await store.by_slug(conn, workspace["id"], req.slug)
        if row is None and not create:
            raise NotFound("channel")
        if row is None:
            check_new_name("channel", req.slug, "slug")
            channel_id = await store.insert(conn, workspace["id"], req.slug, req.topic or "", ctx.now())
            action = "channel.create"
        else:
            channel_id = row["id"]
            if req.topic is not None:
                await store.set_topic(conn, channel_id, req.topic)
            action = "channel.update"
        if req.refs is not None:
            await store.set_refs(conn, channel_id, [(r.path, r.mandatory) for r in req.refs])
        await audit.record(
            conn,
            ctx,
            p,
            action,
            req.slug,
            workspace=workspace["slug"],
            details={"topic": req.topic, "refs": None if req.refs is None else len(req.refs)},
        )
        fresh = await store.by_slug(conn, workspace["id"], req.slug)
        assert fresh is not None  # written in this transaction
        return {
            "slug": fresh["slug"],
            "workspace": workspace["slug"],
            "topic": fresh["topic"],
            "refs": (await store.refs(conn, [channel_id])).get(channel_id, []),
            "created_at": fresh["created_at"],
            "created": row is None,
        }

    return await ctx.db.write(write)


async def patch(ctx: Context, p: Principal, slug: str, req: ChannelPatch) -> dict[str, Any]:
    full = ChannelWrite(slug=slug, topic=req.topic, refs=req.refs, workspace=req.workspace)
    return await upsert(ctx, p, full, create=False)


# -- conversations -----------------------------------------------------------------


def conversation_dict(row: Any, members: list[Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "workspace": row["workspace"],
        "participants": [m["handle"] for m in members],
        "topic": row["topic"],
        "created_at": row["created_at"],
    }


@dataclass
class ConversationList:
    workspace: str | None = arg(None, pattern=SLUG_PATTERN)
    since: int | None = arg(None, min=0)
    seen: str | None = arg(None, max_len=8000, help="id:last,... last seen per conversation.")
    after: int = arg(0, min=0, help="Conversation id to continue after.")
    limit: int = arg(20, min=1, max=500)
    max_bytes: int | None = arg(None, min=1)


async def list_conversations(ctx: Context, p: Principal, q: ConversationList) -> Page:
    seen = {int(k): v for k, v in parse_seen(q.seen).items() if k.isdigit()} if q.seen else None

    async def read(conn: Connection) -> list[dict[str, Any]]:
        workspace = await scope.resolve_optional(conn, p, q.workspace)
        rows = await store.list_conversations(
            conn,
            scope.viewer_id(p),
            workspace["id"] if workspace is not None else None,
            q.after,
            q.limit + 1,
        )
        members = await store.members(conn, [r["id"] for r in rows])
        counted = q.since is not None or seen is not None
        bases = {r["id"]: (q.since if seen is None else seen.get(r["id"], 0)) or 0 for r in rows}
        unread = await store.counts_after(conn, "conversation_id", bases if counted else {}, p.agent_id)
        items = []
        for row in rows:
            item = conversation_dict(row, members.get(row["id"], [])) | {"last_id": row["last_id"]}
            if counted:
                item["unread"] = unread[row["id"]]
            items.append(item)
        return items

    items = await ctx.db.read(read)
    return bounded_page(ctx, "conversations", items, q.limit, q.max_bytes, descending=False)


@dataclass
class NewConversation:
    participants: list[str] = arg(max_items=50, pattern=r"[A-Za-z0-9._-]{2,32}")
    topic: str = arg("", max_len=500)
    workspace: str | None = arg(None, pattern=SLUG_PATTERN)


async def open_conversation(ctx: Context, p: Principal, req: NewConversation) -> tuple[int, dict[str, Any]]:
    """The conversation of exactly these participants (and the caller): 201 new, 200 existing."""

    async def write(conn: Connection) -> tuple[int, dict[str, Any]]:
        workspace, agents = await scope.conversation_workspace(conn, p, req.workspace, req.participants)
        scope.require_writable(workspace)
        member_ids = sorted({a["id"] for a in agents} | {p.agent_id})
        if len(member_ids) < 2:
            raise InvalidArgument("A conversation needs someone besides you.", field="participants")
        key = ",".join(str(i) for i in member_ids)
        row = await store.conversation_by_key(conn, workspace["id"], key)
        status = 200
        if row is None:
            conversation_id = await store.insert_conversation(
                conn, workspace["id"], member_ids, req.topic, ctx.now()
            )
            await audit.record(
                conn,
                ctx,
                p,
                "conversation.create",
                str(conversation_id),
                workspace=workspace["slug"],
                details={"participants": len(member_ids)},
            )
            status = 201
        else:
            conversation_id = row["id"]
        row = await store.conversation_by_id(conn, conversation_id)
        members = (await store.members(conn, [conversation_id]))[conversation_id]
        return status, {"conversation": conversation_dict(row, members), "created": status == 201}

    return await ctx.db.write(write)
