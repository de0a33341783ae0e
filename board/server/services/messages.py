"""Messages: posting (with mentions and inbox fan-out), lists, threads, inbox, search.

A post is one write: the message, its tags, the thread summary, and a row in
the inbox of everyone it is for. The event reaches the hub after the commit,
carrying the rendered message, so long-polls wake with the row in hand.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from aiosqlite import Connection

from ..errors import Forbidden, InvalidArgument, LimitExceeded, NotFound
from ..hub import Event, Key
from ..principal import Principal
from ..store import channels as channel_store
from ..store import identity as identity_store
from ..store import messages as store
from ..store.messages import MessageFilter
from ..validation import arg
from . import claims, scope
from .context import Context
from .longpoll import poll
from .paging import Page, bounded_page

SLUG_PATTERN = r"[a-z0-9._-]{2,64}"
TAG_PATTERN = r"[A-Za-z0-9._:/-]{1,32}"
MAX_BODY = 16_000
MAX_META_BYTES = 8192
PREVIEW_CHARS = 160
MENTION = re.compile(r"(?<![\w@])@([A-Za-z0-9._-]{2,32})")


# -- rendering -------------------------------------------------------------------


def compact(message: dict[str, Any]) -> dict[str, Any]:
    """The triage row of a message: enough to decide whether to read it."""
    row = {
        key: message[key]
        for key in (
            "id",
            "workspace",
            "channel",
            "conversation",
            "kind",
            "author",
            "created_at",
            "tags",
            "mentions",
            "reply_to",
            "thread_id",
        )
    }
    row["preview"] = message["body"][:PREVIEW_CHARS]
    row["body_chars"] = len(message["body"])
    row["meta_keys"] = sorted(message["meta"])
    for key in ("claim", "replies", "reason", "snippet", "for_me", "watched"):
        if key in message:
            row[key] = message[key]
    return row


def render(items: list[dict[str, Any]], view: str) -> list[dict[str, Any]]:
    return [compact(m) for m in items] if view == "compact" else items


async def with_thread_state(conn: Connection, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Give each root its reply summary and claim."""
    roots = [m["id"] for m in items if m["reply_to"] is None]
    info = await store.thread_info(conn, roots)
    claims = await thread_claims(conn, roots)
    for message in items:
        if message["reply_to"] is None:
            message["replies"] = info[message["id"]]
            message["claim"] = claims.get(message["id"])
    return items


async def thread_claims(conn: Connection, root_ids: list[int]) -> dict[int, dict[str, Any]]:
    """The claim state of these threads, by root id."""
    return await claims.claims_for_threads(conn, root_ids)


async def _rows_to_messages(conn: Connection, rows: list[Any]) -> list[dict[str, Any]]:
    items = []
    for row in rows:
        item = store.to_dict(row)
        for extra in ("reason", "snippet"):
            if extra in row.keys():  # noqa: SIM118 - sqlite3.Row
                item[extra] = row[extra]
        items.append(item)
    return await with_thread_state(conn, items)


# -- posting ---------------------------------------------------------------------


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
        raise LimitExceeded(
            f"meta is {size} bytes of JSON; at most {MAX_META_BYTES} are allowed.", field="meta"
        )


async def _mentions(
    conn: Connection, body: str, workspace_id: int, audience: frozenset[int] | None = None
) -> dict[int, str]:
    """Handles mentioned in ``body`` that exist in the workspace's scope: id -> handle.

    In a conversation (``audience``, its members) only its members and humans count:
    a mention must not carry the conversation's words to a bot outside it.
    """
    wanted = {name.rstrip(".") for name in MENTION.findall(body)}
    if not wanted:
        return {}
    found = {}
    for agent in await identity_store.agents_by_handles(conn, sorted(wanted)):
        if audience is not None:
            in_scope = agent["kind"] == "human" or agent["id"] in audience
        else:
            in_scope = (
                agent["kind"] == "human"
                or agent["workspace_id"] == workspace_id
                or agent["workspace"] == "admin"
            )
        if in_scope and agent["kind"] != "system":
            found[agent["id"]] = agent["handle"]
    return found


async def append(
    conn: Connection,
    ctx: Context,
    *,
    workspace: Any,
    author: Principal,
    body: str,
    kind: str,
    channel: Any | None = None,
    conversation_id: int | None = None,
    parent: Any | None = None,
    tags: list[str] | None = None,
    meta: dict[str, Any] | None = None,
    also_for: dict[int, str] | None = None,
    actor_id: int | None = None,
    parse_mentions: bool = True,
) -> Event:
    """Write one message and its fan-out; return the event to publish after commit.

    ``channel`` is the channel row of a new root; a reply takes its place from
    ``parent``. ``actor_id`` is who caused an event message: like the author, it
    does not find its own doing in its inbox. ``parse_mentions=False`` is for a
    body that quotes text addressed to nobody: an ``@handle`` in it mentions no
    one. The message is rendered from what was written, as the read path would
    render it, without reading it back.
    """
    channel_id, channel_slug = (channel["id"], channel["slug"]) if channel is not None else (None, None)
    if parent is not None:
        channel_id, channel_slug = parent["channel_id"], parent["channel"]
        conversation_id = parent["conversation_id"]
    audience = None
    if conversation_id is not None:
        members = (await channel_store.members(conn, [conversation_id]))[conversation_id]
        audience = frozenset(m["id"] for m in members)
    wanted = parse_mentions and "@" in body
    mentioned = await _mentions(conn, body, workspace["id"], audience) if wanted else {}
    mentions = sorted(mentioned.values(), key=str.lower)
    now = ctx.now()
    message_id = await store.insert(
        conn,
        workspace_id=workspace["id"],
        channel_id=channel_id,
        conversation_id=conversation_id,
        kind=kind,
        author_id=author.agent_id,
        body=body,
        reply_to=parent["id"] if parent is not None else None,
        thread_id=parent["thread_id"] if parent is not None else None,
        tags=tags or [],
        mentions=mentions,
        meta=meta or {},
        now=now,
    )
    reasons: dict[int, str] = {}
    if parent is not None:
        for agent_id in await store.thread_participant_ids(conn, parent["thread_id"]):
            reasons[agent_id] = "thread"
        holder = await claims.on_post(conn, ctx, parent["thread_id"], author.agent_id)
        if holder is not None:
            reasons[holder] = "thread"
    if audience is not None:
        reasons.update(dict.fromkeys(audience, "conversation"))
    reasons.update(dict.fromkeys(mentioned, "mention"))
    reasons.update(also_for or {})
    if audience is not None:
        # A conversation's messages reach only its members (and humans, who see everything).
        for agent_id in [a for a in reasons if a not in audience]:
            agent = await identity_store.agent_by_id(conn, agent_id)
            if agent is None or agent["kind"] != "human":
                reasons.pop(agent_id)
    reasons.pop(author.agent_id, None)
    if actor_id is not None:
        reasons.pop(actor_id, None)
    if reasons:
        await store.add_to_inboxes(conn, message_id, reasons)
    message: dict[str, Any] = {
        "id": message_id,
        "workspace": workspace["slug"],
        "channel": channel_slug,
        "conversation": conversation_id,
        "kind": kind,
        "author": author.handle,
        "author_kind": author.kind,
        "body": body,
        "reply_to": parent["id"] if parent is not None else None,
        "thread_id": parent["thread_id"] if parent is not None else message_id,
        "tags": tags or [],
        "mentions": mentions,
        "meta": meta or {},
        "created_at": now,
    }
    if parent is None:
        authors = [] if kind == "event" else [author.handle]
        message["replies"] = {"count": 0, "last_id": None, "last_at": None, "authors": authors}
        message["claim"] = {"state": "open", "holder": None}
    return Event(
        message=message,
        workspace_id=workspace["id"],
        channel_id=channel_id,
        conversation_id=conversation_id,
        thread_id=message["thread_id"],
        recipients=reasons,
        audience=audience,
    )


async def _channel_for_post(conn: Connection, ctx: Context, p: Principal, workspace: Any, slug: str) -> Any:
    """The channel row of ``slug``, created (and audited) on first post."""
    channel = await channel_store.by_slug(conn, workspace["id"], slug)
    if channel is not None:
        return channel
    from . import audit

    await channel_store.insert(conn, workspace["id"], slug, "", ctx.now())
    await audit.record(conn, ctx, p, "channel.create", slug, workspace=workspace["slug"])
    return await channel_store.by_slug(conn, workspace["id"], slug)


async def _require_member(conn: Connection, p: Principal, conversation_id: int) -> None:
    members = (await channel_store.members(conn, [conversation_id])).get(conversation_id, [])
    if not p.is_human and p.agent_id not in {m["id"] for m in members}:
        raise Forbidden("Only its participants may post in a conversation.")


async def post(ctx: Context, p: Principal, req: PostMessage) -> dict[str, Any]:
    _check_meta(req.meta)
    if not req.body.strip():
        raise InvalidArgument("The body is empty; say something.", field="body")
    targets = [x for x in (req.channel, req.conversation, req.reply_to) if x is not None]
    if req.reply_to is None and len(targets) != 1:
        raise InvalidArgument("A new root names exactly one of channel or conversation.")
    if req.reply_to is not None and req.conversation is not None:
        raise InvalidArgument("A reply takes its conversation from the thread; drop conversation.")

    async def write(conn: Connection) -> Event:
        parent = None
        channel = None
        conversation_id = None
        if req.reply_to is not None:
            parent = await store.by_id(conn, req.reply_to)
            if parent is None or not scope.visible(p, parent["workspace_id"]):
                raise NotFound("message")
            if req.workspace is not None and req.workspace != parent["workspace"]:
                raise NotFound("message")
            if req.channel is not None and req.channel != parent["channel"]:
                raise InvalidArgument(
                    f"A reply goes in its thread's channel ({parent['channel']}); drop channel.",
                    field="channel",
                )
            workspace = await scope.resolve(conn, p, parent["workspace"])
            if parent["conversation_id"] is not None:
                await _require_member(conn, p, parent["conversation_id"])
        elif req.conversation is not None:
            conversation = await channel_store.conversation_by_id(conn, req.conversation)
            if conversation is None or not scope.visible(p, conversation["workspace_id"]):
                raise NotFound("conversation")
            workspace = await scope.resolve(conn, p, conversation["workspace"])
            await _require_member(conn, p, conversation["id"])
            conversation_id = conversation["id"]
        else:
            workspace = await scope.resolve(conn, p, req.workspace)
        scope.require_writable(workspace)
        if req.channel is not None and parent is None:
            channel = await _channel_for_post(conn, ctx, p, workspace, req.channel)
        return await append(
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

    event = await ctx.db.write(write, after_commit=ctx.hub.publish)
    return event.message


async def post_event(
    conn: Connection,
    ctx: Context,
    workspace: Any,
    body: str,
    *,
    channel: str | None = None,
    parent: Any | None = None,
    author: Principal | None = None,
    meta: dict[str, Any] | None = None,
    tags: list[str] | None = None,
    also_for: dict[int, str] | None = None,
    parse_mentions: bool = True,
) -> Event:
    """A ``kind: event`` message written by the board, in a channel or a thread."""
    row = await identity_store.agent_by_handle(conn, "board")
    board = Principal(agent_id=row["id"], handle="board", kind="system")
    channel_row = None
    if parent is None:
        channel_row = await _channel_for_post(conn, ctx, author or board, workspace, channel or "lobby")
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
        actor_id=author.agent_id if author is not None else None,
        parse_mentions=parse_mentions,
    )


# -- reading ---------------------------------------------------------------------


@dataclass
class MessageQuery:
    workspace: str | None = arg(None, pattern=SLUG_PATTERN)
    channel: str | None = arg(None, pattern=SLUG_PATTERN)
    conversation: int | None = arg(None, min=1)
    thread: int | None = arg(None, min=1)
    author: str | None = arg(None, max_len=32)
    tag: str | None = arg(None, max_len=32)
    roots: bool = arg(False, help="Only thread roots.")
    since: int | None = arg(None, min=0, help="Messages after this id, oldest first.")
    before: int | None = arg(None, min=1, help="Messages before this id, newest first.")
    order: str | None = arg(None, choices=("asc", "desc"))
    limit: int = arg(20, min=1, max=500)
    max_bytes: int | None = arg(None, min=1)
    wait: int = arg(0, min=0, max=60, help="Seconds to hold the request for new messages.")
    view: str = arg("full", choices=("full", "compact"))


async def _channel_id(conn: Connection, workspace: Any | None, slug: str) -> int:
    """The id of a channel named in a read; a human reading every workspace must name one."""
    if workspace is None:
        raise InvalidArgument("Name the workspace of the channel: workspace=<slug>.")
    channel = await channel_store.by_slug(conn, workspace["id"], slug)
    if channel is None:
        raise NotFound("channel")
    return int(channel["id"])


async def list_messages(ctx: Context, p: Principal, q: MessageQuery) -> Page:
    if q.since is not None and q.before is not None:
        raise InvalidArgument("Give since or before, not both.")
    descending = q.order == "desc" if q.order else q.since is None
    if q.wait and descending:
        raise InvalidArgument("wait needs ascending order: give since=<cursor>.")

    async def resolve(conn: Connection) -> tuple[MessageFilter, list[Key]]:
        workspace = await scope.resolve_optional(conn, p, q.workspace)
        # A thread or conversation names its own workspace (its visibility is checked below),
        # so an admin bot naming none is not held to `admin` for it.
        located = q.workspace is None and (q.thread is not None or q.conversation is not None)
        flt = MessageFilter(
            workspace_ids=None if located and p.sees_all_workspaces else scope.workspace_ids(p, workspace),
            viewer_id=None if p.is_human else p.agent_id,
            since=q.since,
            before=q.before,
            tag=q.tag,
            roots=q.roots,
        )
        keys: list[Key] = [("workspace", i) for i in flt.workspace_ids or []] or [("all", 0)]
        if q.channel is not None:
            flt.channel_id = await _channel_id(conn, workspace, q.channel)
            keys = [("channel", flt.channel_id)]
        if q.conversation is not None:
            conversation = await channel_store.conversation_by_id(conn, q.conversation)
            if (
                conversation is None
                or not scope.visible(p, conversation["workspace_id"])
                or not await _member_or_human(conn, p, conversation["id"])
            ):
                raise NotFound("conversation")
            flt.conversation_id = conversation["id"]
            keys = [("conversation", conversation["id"])]
        if q.thread is not None:
            root = await store.by_id(conn, q.thread)
            if root is None or not _row_visible(p, root) or not await _conversation_ok(conn, p, root):
                raise NotFound("thread")
            flt.thread_id = root["thread_id"]
            keys = [("thread", root["thread_id"])]
        if q.author is not None:
            author = await identity_store.agent_by_handle(conn, q.author)
            flt.author_id = author["id"] if author is not None else -1
        return flt, keys

    flt, keys = await ctx.db.read(resolve)

    head = {"cursor": q.since or 0}  # the head as the list's own read saw it: never skips

    async def fetch() -> list[dict[str, Any]]:
        async def read(conn: Connection) -> list[dict[str, Any]]:
            head["cursor"] = await store.max_id(conn)
            rows = await store.select(conn, flt, descending=descending, limit=q.limit + 1)
            return await _rows_to_messages(conn, rows)

        return await ctx.db.read(read)

    def match(event: Event) -> dict[str, Any] | None:
        m = event.message
        if not scope.event_visible(p, event) or (q.since is not None and m["id"] <= q.since):
            return None
        if flt.channel_id is not None and event.channel_id != flt.channel_id:
            return None
        if flt.conversation_id is not None and event.conversation_id != flt.conversation_id:
            return None
        if flt.thread_id is not None and event.thread_id != flt.thread_id:
            return None
        if q.tag is not None and q.tag not in m["tags"]:
            return None
        if q.author is not None and m["author"].lower() != q.author.lower():
            return None
        if q.roots and m["reply_to"] is not None:
            return None
        return m

    items = await poll(ctx, keys, q.wait, fetch, match, since=q.since)
    cursor = head["cursor"]
    return bounded_page(
        ctx,
        "messages",
        render(items, q.view),
        q.limit,
        q.max_bytes,
        descending=descending,
        cursor=cursor,
    )


async def get_message(ctx: Context, p: Principal, message_id: int) -> dict[str, Any]:
    async def read(conn: Connection) -> dict[str, Any]:
        row = await store.by_id(conn, message_id)
        if row is None or not _row_visible(p, row) or not await _conversation_ok(conn, p, row):
            raise NotFound("message")
        message = (await _rows_to_messages(conn, [row]))[0]
        message["receipts"] = [
            {"handle": r["handle"], "reason": r["reason"], "seen_at": r["seen_at"], "done_at": r["done_at"]}
            for r in await store.receipts_for(conn, message_id)
        ]
        return message

    return await ctx.db.read(read)


def _row_visible(p: Principal, row: Any) -> bool:
    return scope.visible(p, row["workspace_id"])


async def _conversation_ok(conn: Connection, p: Principal, row: Any) -> bool:
    if row["conversation_id"] is None:
        return True
    return await _member_or_human(conn, p, row["conversation_id"])


async def _member_or_human(conn: Connection, p: Principal, conversation_id: int) -> bool:
    """Whether ``p`` may read the conversation: its members, and humans."""
    if p.is_human:
        return True
    members = (await channel_store.members(conn, [conversation_id])).get(conversation_id, [])
    return p.agent_id in {m["id"] for m in members}


@dataclass
class ThreadQuery:
    since: int = arg(0, min=0, help="Replies after this id (the root is always first).")
    limit: int = arg(100, min=1, max=500)
    max_bytes: int | None = arg(None, min=1)
    view: str = arg("full", choices=("full", "compact"))


async def thread(ctx: Context, p: Principal, message_id: int, q: ThreadQuery) -> Page:
    async def read(conn: Connection) -> Page:
        row = await store.by_id(conn, message_id)
        if row is None or not _row_visible(p, row) or not await _conversation_ok(conn, p, row):
            raise NotFound("thread")
        root_id = row["thread_id"]
        flt = MessageFilter(thread_id=root_id, since=max(q.since, root_id) if q.since else None)
        rows = await store.select(conn, flt, descending=False, limit=q.limit + 1)
        items = await _rows_to_messages(conn, rows)
        page = bounded_page(ctx, "messages", render(items, q.view), q.limit, q.max_bytes, descending=False)
        state = await thread_claims(conn, [root_id])
        return {
            "thread_id": root_id,
            "claim": state[root_id],
            "claim_history": await claims.claim_history(conn, root_id),
        } | page

    return await ctx.db.read(read)


@dataclass
class InboxQuery:
    since: int = arg(0, min=0)
    limit: int = arg(20, min=1, max=500)
    max_bytes: int | None = arg(None, min=1)
    wait: int = arg(0, min=0, max=60)
    view: str = arg("full", choices=("full", "compact"))
    ack: bool = arg(False, help="Record a seen receipt for what is returned.")


async def inbox(ctx: Context, p: Principal, q: InboxQuery) -> Page:
    head = {"cursor": q.since}  # the cursor as the inbox's own read saw it: it never skips

    async def fetch() -> list[dict[str, Any]]:
        async def read(conn: Connection) -> list[dict[str, Any]]:
            head["cursor"] = await store.max_id(conn)
            rows = await store.inbox(conn, p.agent_id, q.since, q.limit + 1)
            return await _rows_to_messages(conn, rows)

        return await ctx.db.read(read)

    def match(event: Event) -> dict[str, Any] | None:
        reason = event.recipients.get(p.agent_id)
        if reason is None or event.id <= q.since:
            return None
        return event.message | {"reason": reason}

    items = await poll(ctx, [("agent", p.agent_id)], q.wait, fetch, match, since=q.since)
    page = bounded_page(
        ctx,
        "messages",
        render(items, q.view),
        q.limit,
        q.max_bytes,
        descending=False,
        cursor=head["cursor"],
    )
    if q.ack and page["messages"]:
        # ack is a side effect of a read: the messages of an archived workspace are
        # shown, but not marked, since nothing is written into it any more.
        await mark(ctx, p, [m["id"] for m in page["messages"]], "seen", skip_read_only=True)
    return page


async def mark(
    ctx: Context, p: Principal, message_ids: list[int], state: str, *, skip_read_only: bool = False
) -> list[int]:
    """Record receipts for messages addressed to ``p``; returns the ids recorded.

    Done implies seen: a bot that only marks what it finished is not flagged unseen.
    A message in an archived workspace is FORBIDDEN, or left out with ``skip_read_only``.
    """

    async def write(conn: Connection) -> list[int]:
        addressed = await store.addressed(conn, p.agent_id, message_ids)
        missing = [i for i in message_ids if i not in addressed]
        if missing:
            raise NotFound(f"message addressed to you ({missing[0]})")
        read_only = await store.in_archived_workspaces(conn, message_ids)
        if read_only and not skip_read_only:
            raise Forbidden(f"Message {min(read_only)} is in an archived workspace, which is read-only.")
        recorded = [i for i in message_ids if i not in read_only]
        if recorded:
            for kind in ("seen", "done") if state == "done" else (state,):
                await store.add_receipts(conn, p.agent_id, recorded, kind, ctx.now())
        return recorded

    return await ctx.db.write(write)


@dataclass
class Receipts:
    message_ids: list[int] = arg(max_items=500, min=1)
    state: str = arg(choices=("seen", "done"))


async def receipts(ctx: Context, p: Principal, req: Receipts) -> dict[str, Any]:
    if not req.message_ids:
        raise InvalidArgument("Name at least one message id.", field="message_ids")
    recorded = await mark(ctx, p, sorted(set(req.message_ids)), req.state)
    return {"state": req.state, "message_ids": recorded}


@dataclass
class SearchQuery:
    q: str = arg(min_len=1, max_len=200, help="Words to find (all of them); word* for a prefix.")
    workspace: str | None = arg(None, pattern=SLUG_PATTERN)
    channel: str | None = arg(None, pattern=SLUG_PATTERN)
    author: str | None = arg(None, max_len=32)
    before: int | None = arg(None, min=1)
    offset: int = arg(0, min=0, max=10_000, help="Ranked results to skip (from next_offset).")
    limit: int = arg(20, min=1, max=500)
    max_bytes: int | None = arg(None, min=1)
    view: str = arg("full", choices=("full", "compact"))


def fts_query(text: str) -> str:
    """Plain words to an FTS5 query: every word must match; ``word*`` is a prefix."""
    terms = []
    for word in text.split():
        prefix = word.endswith("*")
        word = word.rstrip("*").replace('"', '""')
        if word:
            terms.append(f'"{word}"' + ("*" if prefix else ""))
    if not terms:
        raise InvalidArgument("Search for at least one word.", field="q")
    return " ".join(terms)


async def search(ctx: Context, p: Principal, q: SearchQuery) -> Page:
    match = fts_query(q.q)

    async def read(conn: Connection) -> list[dict[str, Any]]:
        workspace = await scope.resolve_optional(conn, p, q.workspace)
        flt = MessageFilter(
            workspace_ids=scope.workspace_ids(p, workspace),
            viewer_id=None if p.is_human else p.agent_id,
            before=q.before,
        )
        if q.channel is not None:
            flt.channel_id = await _channel_id(conn, workspace, q.channel)
        if q.author is not None:
            author = await identity_store.agent_by_handle(conn, q.author)
            flt.author_id = author["id"] if author is not None else -1
        rows = await store.search(conn, match, flt, q.limit + 1, q.offset)
        return await _rows_to_messages(conn, rows)

    items = await ctx.db.read(read)
    page = bounded_page(ctx, "messages", render(items, q.view), q.limit, q.max_bytes, descending=True)
    page.pop("next_before", None)
    if page["has_more"]:
        page["next_offset"] = q.offset + len(page["messages"])
    return page
