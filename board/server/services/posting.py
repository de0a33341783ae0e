"""Posting: the one way a message is written, with its mentions, fan-out and events.

A post is one write: the message, its tags, the thread summary, the holder's
lease renewed, and a row in the inbox of everyone it is for. :func:`append`
adds the message's event to the write's outbox (``store.db.emit``), so the
writer publishes it after the commit, in commit order, carrying the rendered
message: long-polls wake with the row in hand, and no caller publishes anything.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidArgument, LimitExceeded, NotFound
from ..hub import Event
from ..principal import Principal
from ..store import channels as channel_store
from ..store import claims as claim_store
from ..store import identity as identity_store
from ..store import loops as loop_store
from ..store import messages as store
from ..store.connection import Connection
from ..store.rows import ChannelRow, MessageRow, WorkspaceRow
from ..store.writer import emit
from ..validation import arg, check_new_name, the, too_large
from . import audit, leases, loopguard, outbound, replies, scope
from .context import Context

SLUG_PATTERN = r"[a-z0-9._-]{2,64}"
TAG_PATTERN = r"[A-Za-z0-9._:/-]{1,32}"
MAX_BODY = store.MAX_BODY
MAX_META_BYTES = 8192
MENTION = re.compile(r"(?<![\w@])@([A-Za-z0-9._-]{2,32})")


async def _renew_holder(conn: Connection, ctx: Context, thread_id: int, author_id: int) -> int | None:
    """A new message in a thread: the holder's own post renews its lease; returns the holder.

    A done thread keeps its last holder: a later reply reopens nothing but reaches it.
    """
    claim = await claim_store.get(conn, thread_id)
    if claim is None or claim["state"] == "open" or claim["holder_id"] is None:
        return None
    if claim["state"] == "claimed" and claim["holder_id"] == author_id:
        lease = leases.lease_until(ctx.clock, leases.lease_minutes(claim))
        await claim_store.progress(conn, thread_id, author_id, ctx.now(), lease)
    return int(claim["holder_id"])


async def append(
    conn: Connection,
    ctx: Context,
    *,
    workspace: WorkspaceRow,
    author: Principal,
    body: str,
    kind: str,
    channel: ChannelRow | None = None,
    conversation_id: int | None = None,
    parent: MessageRow | None = None,
    tags: list[str] | None = None,
    meta: dict[str, Any] | None = None,
    also_for: dict[int, str] | None = None,
    actor: Principal | None = None,
    parse_mentions: bool = True,
    notify: bool = True,
    mention: list[str] | None = None,
) -> Event:
    """Write one message and its fan-out; its event is published once the write commits.

    ``channel`` is the channel row of a new root; a reply takes its place from
    ``parent``. ``actor`` is who caused an event message: like the author, it
    does not find its own doing in its inbox, and the loop guard screens the
    event as its. ``parse_mentions=False`` is for a body that quotes text
    addressed to nobody: an ``@handle`` in it mentions no one. The message is
    rendered from what was written, as the read path would render it, without
    reading it back. ``notify=False`` is for a record kept in a thread for
    whoever reads it (a routine's bookkeeping): it lands in no inbox but those
    of ``also_for``. A bot's message may be held by the loop guard
    (``services/loopguard.py``): it is tagged so and lands in no bot's inbox.
    ``mention`` names who the message mentions instead of its body's ``@handles``: a body
    carrying text from outside the board (a forge's issue) mentions only whom the board names.
    """
    channel_id, channel_slug = (channel["id"], channel["slug"]) if channel is not None else (None, None)
    if parent is not None:
        channel_id, channel_slug = parent["channel_id"], parent["channel"]
        conversation_id = parent["conversation_id"]
    audience = await scope.audience(conn, conversation_id)
    if mention is not None:
        wanted = sorted(set(mention))
    else:
        wanted = sorted({name.rstrip(".") for name in MENTION.findall(body)}) if parse_mentions else []
    mentioned = await scope.mentionable(conn, wanted, workspace["id"], audience) if wanted else {}
    mentions = sorted(mentioned.values(), key=str.lower)
    reasons: dict[int, str] = {}
    if parent is not None:
        for them in await store.thread_participants(conn, parent["thread_id"]):
            if them["kind"] != "bot" or scope.bot_reaches(
                them["workspace"], them["workspace_id"], workspace["id"]
            ):
                reasons[int(them["agent_id"])] = "thread"
        holder = await _renew_holder(conn, ctx, parent["thread_id"], author.agent_id)
        if holder is not None:
            reasons[holder] = "thread"
    reasons.update(dict.fromkeys(audience or (), "conversation"))
    reasons.update(dict.fromkeys(mentioned, "mention"))
    reasons.update(also_for or {})
    reasons = await scope.within_audience(conn, reasons, audience)
    reasons.pop(author.agent_id, None)
    if actor is not None:
        reasons.pop(actor.agent_id, None)
    if not notify:
        reasons = {agent_id: why for agent_id, why in reasons.items() if agent_id in (also_for or {})}
    tags = list(tags or [])
    verdict = loopguard.Verdict()
    bots: list[int] = []  # those of reasons that are bots, asked only for a bot's post or act
    acting = actor or author
    if acting.is_bot:
        kinds = await loop_store.kinds(conn, list(reasons))
        bots = [agent_id for agent_id, kind in kinds.items() if kind == "bot"]
        verdict = await loopguard.screen(
            conn,
            ctx,
            workspace,
            acting,
            parent["thread_id"] if parent is not None else None,
            bots,
            event=kind == "event",
            channel=(channel_id, channel_slug) if channel_id is not None and channel_slug else None,
        )
        if verdict.held:
            tags.append(loopguard.HELD_TAG)
            reasons = {agent_id: why for agent_id, why in reasons.items() if agent_id not in bots}
    draft = store.Draft(
        kind=kind,
        body=body,
        reply_to=parent["id"] if parent is not None else None,
        thread_id=parent["thread_id"] if parent is not None else None,
        tags=tags,
        mentions=mentions,
        meta=meta or {},
        created_at=ctx.now(),
    )
    message_id = await store.insert(
        conn,
        draft,
        workspace_id=workspace["id"],
        channel_id=channel_id,
        conversation_id=conversation_id,
        author_id=author.agent_id,
        actor_id=actor.agent_id if actor is not None else None,
    )
    if reasons:
        await store.add_to_inboxes(conn, message_id, reasons)
    message = draft.written(
        message_id,
        workspace=workspace["slug"],
        channel=channel_slug,
        conversation=conversation_id,
        author=author.handle,
        author_kind=author.kind,
    )
    if parent is None:  # what a read finds for a new root: no replies, and nobody's claim
        message["replies"] = store.no_replies([] if kind == "event" else [author.handle])
        message["claim"] = claim_store.unclaimed()
    event = Event(
        message=message,
        workspace_id=workspace["id"],
        channel_id=channel_id,
        conversation_id=conversation_id,
        thread_id=message["thread_id"],
        recipients=reasons,
        audience=audience,
        author_id=author.agent_id,
    )
    emit(event)
    if reasons:
        await outbound.for_message(conn, ctx, message, reasons, author.agent_id, frozenset(bots))
    if author.is_bot and not verdict.held:
        await replies.for_message(conn, ctx, message)
    if verdict.notice is not None:
        await _loop_notice(conn, ctx, workspace, message, verdict)
    return event


async def _loop_notice(
    conn: Connection, ctx: Context, workspace: WorkspaceRow, held: dict[str, Any], verdict: loopguard.Verdict
) -> None:
    """The one notice of a pause, replying to the held message, for the humans only."""
    thread = await store.by_id(conn, held["id"])
    humans = await loop_store.human_ids(conn)
    await post_event(
        conn,
        ctx,
        workspace,
        verdict.notice or "",
        parent=thread,
        tags=[loopguard.NOTICE_TAG, *([verdict.notice_tag] if verdict.notice_tag else [])],
        also_for=dict.fromkeys(humans, "paused"),
        parse_mentions=False,
        notify=False,
    )


async def channel_for_post(
    conn: Connection, ctx: Context, p: Principal, workspace: WorkspaceRow, slug: str
) -> ChannelRow:
    """The channel row of ``slug``, created (and audited, as ``p``'s) on first post."""
    channel = await channel_store.by_slug(conn, workspace["id"], slug)
    if channel is not None:
        return channel
    check_new_name("channel", slug, "channel")
    await channel_store.insert(conn, workspace["id"], slug, "", ctx.now())
    await audit.record(conn, ctx, p, "channel.create", slug, workspace=workspace["slug"])
    created = await channel_store.by_slug(conn, workspace["id"], slug)
    assert created is not None
    return created


async def board_principal(conn: Connection) -> Principal:
    """The board's own system agent (made by the first migration): the author of event messages."""
    row = await identity_store.agent_by_handle(conn, "board")
    if row is None:
        raise LookupError("the database has no board agent; it was not migrated")
    return Principal(agent_id=row["id"], handle="board", kind="system")


async def post_event(
    conn: Connection,
    ctx: Context,
    workspace: WorkspaceRow,
    body: str,
    *,
    channel: str | None = None,
    parent: MessageRow | None = None,
    author: Principal | None = None,
    meta: dict[str, Any] | None = None,
    tags: list[str] | None = None,
    also_for: dict[int, str] | None = None,
    parse_mentions: bool = True,
    notify: bool = True,
) -> Event:
    """A ``kind: event`` message written by the board, in a channel or a thread."""
    board = await board_principal(conn)
    channel_row = None
    if parent is None:
        channel_row = await channel_for_post(conn, ctx, author or board, workspace, channel or "lobby")
    meta = dict(meta or {})
    if author is not None:
        meta.setdefault("by", author.handle)
    return await append(
        conn,
        ctx,
        workspace=workspace,
        author=board,
        body=body,
        kind="event",
        channel=channel_row,
        parent=parent,
        meta=meta,
        tags=tags,
        also_for=also_for,
        actor=author,
        parse_mentions=parse_mentions,
        notify=notify,
    )


# -- POST /api/messages ---------------------------------------------------------------


@dataclass
class PostMessage:
    body: str = arg(max_len=MAX_BODY, limit=True, multiline=True)
    channel: str | None = arg(None, pattern=SLUG_PATTERN, help="Channel of a new root.")
    conversation: int | None = arg(None, min=1, help="Conversation of a new root.")
    reply_to: int | None = arg(None, min=1, help="Reply in this message's thread.")
    tags: list[str] = arg([], max_items=10, max_len=32, limit=True, pattern=TAG_PATTERN)
    meta: dict[str, Any] = arg({})
    workspace: str | None = arg(None, pattern=SLUG_PATTERN)


def _check_meta(meta: dict[str, Any]) -> None:
    size = len(json.dumps(meta, separators=(",", ":")).encode())
    if size > MAX_META_BYTES:
        raise LimitExceeded(too_large(the("meta"), size, MAX_META_BYTES, "bytes of JSON"), field="meta")


async def post(ctx: Context, p: Principal, req: PostMessage) -> dict[str, Any]:
    """A message by ``p``: a new root in a channel or conversation, or a reply in a thread.

    A thread or conversation ``p`` may not read is NOT_FOUND, as if absent.
    """
    _check_meta(req.meta)
    if not req.body.strip():
        raise InvalidArgument("The body is empty; say something.", field="body")
    targets = [x for x in (req.channel, req.conversation, req.reply_to) if x is not None]
    if req.reply_to is None and len(targets) != 1:
        raise InvalidArgument("A new root names exactly one of channel or conversation.")
    if req.reply_to is not None and req.conversation is not None:
        raise InvalidArgument("A reply takes its conversation from the thread; drop conversation.")

    async def write(conn: Connection) -> dict[str, Any]:
        parent = None
        channel = None
        conversation_id = None
        if req.reply_to is not None:
            parent = await scope.visible_message(conn, p, req.reply_to)
            if req.workspace is not None and req.workspace != parent["workspace"]:
                raise NotFound("message")
            if req.channel is not None and req.channel != parent["channel"]:
                raise InvalidArgument(
                    f"A reply goes in its thread's channel ({parent['channel']}); drop channel.",
                    field="channel",
                )
            workspace = await scope.resolve(conn, p, parent["workspace"])
        elif req.conversation is not None:
            conversation = await scope.require_conversation(conn, p, req.conversation)
            workspace = await scope.resolve(conn, p, conversation["workspace"])
            conversation_id = conversation["id"]
        else:  # a new root in a channel: the one statement reads the workspace and the channel
            workspace, channel = await scope.resolve_with_channel(conn, p, req.workspace, req.channel or "")
        scope.require_writable(workspace)
        if channel is None and req.channel is not None and parent is None:
            channel = await channel_for_post(conn, ctx, p, workspace, req.channel)
        event = await append(
            conn,
            ctx,
            workspace=workspace,
            author=p,
            body=req.body,
            kind="conversation" if (conversation_id or (parent and parent["conversation_id"])) else "channel",
            channel=channel,
            conversation_id=conversation_id,
            parent=parent,
            tags=req.tags,
            meta=req.meta,
        )
        return event.message  # the job's result is the answer: a request id keeps it in this write

    return await ctx.db.write(write)
