"""Reading messages: lists, threads, the inbox and its receipts, search.

Posting is ``posting.py``; what a caller may read is asked of ``scope``. A list
that waits (``wait=``) is woken by the events posting publishes, matched here
against the same filter the stored read applies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import Forbidden, InvalidArgument, NotFound
from ..hub import Event, Key, Signal
from ..jsonvalues import Encoded
from ..principal import Principal
from ..store import channels as channel_store
from ..store import identity as identity_store
from ..store import messages as store
from ..store import workspaces as workspace_store
from ..store.connection import Connection
from ..store.messages import MessageFilter
from ..store.rows import MessageRow, WorkspaceRow
from ..store.search import Terms, index_words, snippet, word_parts
from ..store.writer import emit
from ..validation import arg
from . import claims, delivery, loopguard, replies, scope, worktrees
from .context import Context
from .longpoll import poll, reach_heard
from .paging import Page, bounded_page
from .posting import SLUG_PATTERN

PREVIEW_CHARS = 160


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
    for key in ("claim", "replies", "reason", "snippet", "for_me", "watched", "delivery"):
        if key in message:
            row[key] = message[key]
    return row


def render(items: list[dict[str, Any]], view: str) -> list[dict[str, Any]]:
    return [compact(m) for m in items] if view == "compact" else items


def event_view(event: Event, view: str, **extra: Any) -> dict[str, Any]:
    """The event's message with ``extra`` fields in ``view``, rendered and encoded once per event.

    Every waiter woken by one event asks here, so a fan-out encodes the message once per
    distinct view. The key holds everything the item depends on (the view and the
    per-reader fields), so readers whose items differ never share one.
    """
    key = ("message", view, *sorted(extra.items()))
    return event.view(key, lambda: Encoded(render([event.message | extra], view)[0]))


class PageQuery(Protocol):
    """What every list of messages takes: how many, how many bytes, which view."""

    limit: int
    max_bytes: int | None
    view: str


def message_page(
    ctx: Context,
    items: list[dict[str, Any]],
    q: PageQuery,
    *,
    descending: bool,
    cursor: int | None = None,
    rendered: bool = False,
) -> Page:
    """The answer of a list of messages, in the query's view, within its limit and byte cap.

    ``rendered``: the items are in the query's view already (a long-poll's, from :func:`event_view`).
    """
    items = items if rendered else render(items, q.view)
    return bounded_page(ctx, "messages", items, q.limit, q.max_bytes, descending=descending, cursor=cursor)


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


async def rows_to_messages(conn: Connection, rows: list[MessageRow]) -> list[dict[str, Any]]:
    # The rows of one query share their columns: which extras they carry is asked once.
    reason = bool(rows) and "reason" in rows[0].keys()  # noqa: SIM118
    items = []
    for row in rows:
        item = store.to_dict(row)
        if reason:
            item["reason"] = row["reason"]
        items.append(item)
    return await with_thread_state(conn, items)


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


async def _channel_id(conn: Connection, workspace: WorkspaceRow | None, slug: str) -> int:
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
        # A thread or conversation names its own workspace (its visibility is checked below),
        # so an admin bot naming none is not held to `admin` for it.
        located = q.thread is not None or q.conversation is not None
        workspace = await scope.resolve_optional(conn, p, q.workspace, anywhere=located)
        flt = MessageFilter(
            workspace_ids=scope.workspace_ids(p, workspace),
            viewer_id=scope.viewer_id(p),
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
            conversation = await scope.require_conversation(conn, p, q.conversation)
            flt.conversation_id = conversation["id"]
            keys = [("conversation", conversation["id"])]
        if q.thread is not None:
            root = await scope.visible_message(conn, p, q.thread, "thread")
            flt.thread_id = root["thread_id"]
            keys = [("thread", root["thread_id"])]
        if q.author is not None:
            author = await identity_store.agent_by_handle(conn, q.author)
            flt.author_id = author["id"] if author is not None else -1
        return flt, keys

    head = {"cursor": q.since or 0}  # the head as the list's own read saw it: never skips

    async def rows(conn: Connection, flt: MessageFilter) -> list[dict[str, Any]]:
        head["cursor"] = await store.max_id(conn)
        ids = await store.select_ids(conn, flt, descending=descending, limit=q.limit + 1)
        items = await ctx.rendered.messages(conn, ids)
        return await delivery.attach(conn, ctx, await with_thread_state(conn, items))

    if not q.wait:  # the usual read: resolve and read in one snapshot, one trip to a reader

        async def resolve_and_read(conn: Connection) -> list[dict[str, Any]]:
            flt, _ = await resolve(conn)
            return await rows(conn, flt)

        items = await ctx.db.read(resolve_and_read)
        return message_page(ctx, items, q, descending=descending, cursor=head["cursor"])

    with reach_heard(ctx, p.agent_id) as heard:
        flt, keys = await ctx.db.read(resolve)

        async def fetch() -> list[dict[str, Any]]:
            return render(await ctx.db.read(lambda conn: rows(conn, flt)), q.view)

        def match(event: Event) -> dict[str, Any] | None:
            return event_view(event, q.view) if flt.matches(event) else None

        items = await poll(ctx, keys, q.wait, fetch, match, owner=p.agent_id, since=q.since, heard=heard)
    return message_page(ctx, items, q, descending=descending, cursor=head["cursor"], rendered=True)


async def get_message(ctx: Context, p: Principal, message_id: int) -> dict[str, Any]:
    async def read(conn: Connection) -> dict[str, Any]:
        row = await scope.visible_message(conn, p, message_id)
        message = (await delivery.attach(conn, ctx, await rows_to_messages(conn, [row])))[0]
        message["receipts"] = [
            {"handle": r["handle"], "reason": r["reason"], "seen_at": r["seen_at"], "done_at": r["done_at"]}
            for r in await store.receipts_for(conn, message_id)
        ]
        return message

    return await ctx.db.read(read)


@dataclass
class ThreadQuery:
    since: int = arg(0, min=0, help="Replies after this id (the root is always first).")
    limit: int = arg(20, min=1, max=500)
    max_bytes: int | None = arg(None, min=1)
    view: str = arg("full", choices=("full", "compact"))


async def thread(ctx: Context, p: Principal, message_id: int, q: ThreadQuery) -> Page:
    async def read(conn: Connection) -> Page:
        row = await scope.visible_message(conn, p, message_id, "thread")
        root_id = row["thread_id"]
        flt = MessageFilter(thread_id=root_id, since=max(q.since, root_id) if q.since else None)
        rows = await store.select(conn, flt, descending=False, limit=q.limit + 1)
        items = await delivery.attach(conn, ctx, await rows_to_messages(conn, rows))
        page = message_page(ctx, items, q, descending=False)
        state = await thread_claims(conn, [root_id])
        workspace = await workspace_store.by_id(conn, row["workspace_id"])
        assert workspace is not None  # a message's workspace outlives it
        return {
            "thread_id": root_id,
            "paused": await loopguard.thread_paused(conn, workspace, root_id),
            "claim": state[root_id],
            "claim_history": await claims.claim_history(conn, root_id),
            "worktrees": await worktrees.of_thread(conn, root_id),
            "forge_replies": await replies.of_thread(conn, root_id),
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
    flt = scope.inbox_of(p, q.since)

    async def fetch() -> list[dict[str, Any]]:
        async def read(conn: Connection) -> list[dict[str, Any]]:
            head["cursor"] = await store.max_id(conn)
            rows = await store.inbox(conn, flt, q.limit + 1)
            return render(await rows_to_messages(conn, rows), q.view)

        return await ctx.db.read(read)

    def match(event: Event) -> dict[str, Any] | None:
        reason = flt.reason(event)
        return None if reason is None else event_view(event, q.view, reason=reason)

    items = await poll(ctx, [("agent", p.agent_id)], q.wait, fetch, match, owner=p.agent_id, since=q.since)
    page = message_page(ctx, items, q, descending=False, cursor=head["cursor"], rendered=True)
    if q.ack and page["messages"]:
        # ack is a side effect of a read: the messages of an archived workspace are
        # shown, but not marked, since nothing is written into it any more.
        await mark(ctx, p, [m["id"] for m in page["messages"]], "seen", skip_read_only=True)
    return page


def inbox_changes(agent_id: int) -> Key:
    """The hub key signalled when an agent's receipts change: its open tabs recount."""
    return ("inbox", agent_id)


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
            await delivery.seen_by(conn, p, recorded)
            emit(Signal(inbox_changes(p.agent_id), len(recorded)))
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
    q: str = arg(
        min_len=1,
        max_len=200,
        help="Words to find (all of them, at most 8); word* for a prefix of 2 letters or more.",
    )
    workspace: str | None = arg(None, pattern=SLUG_PATTERN)
    channel: str | None = arg(None, pattern=SLUG_PATTERN)
    author: str | None = arg(None, max_len=32)
    before: int | None = arg(
        None, min=1, help="Rank only matches older than this id (next_before: the next page or window)."
    )
    offset: int = arg(
        0, min=0, max=10_000, help="Ranked results to skip (next_offset, sent with next_before as before)."
    )
    limit: int = arg(20, min=1, max=500)
    max_bytes: int | None = arg(None, min=1)
    view: str = arg("full", choices=("full", "compact"))


#: Words a search may hold (a word given twice counts once), and the fewest letters a prefix
#: may have: a prefix stands for every indexed word it starts, so a search of one-letter
#: prefixes (``a* b* c* ...``) read the whole index, seconds at 10^5 messages, and found nothing.
MAX_WORDS = 8
SHORTEST_PREFIX = 2


def fts_query(text: str) -> Terms:
    """Plain words to a search: every word must match; ``word*`` is a prefix."""
    terms: list[tuple[str, bool]] = []
    for word in text.split():
        prefix = word.endswith("*")
        word = word.rstrip("*")
        if not word or any(word.casefold() == w.casefold() and prefix == p for w, p in terms):
            continue
        # The word's last part as either store's index reads it (they part on a few characters).
        last = [parts[-1] for parts in (word_parts(word), index_words(word)) if parts]
        if prefix and last and min(map(len, last)) < SHORTEST_PREFIX:
            raise InvalidArgument(
                f"A prefix needs at least {SHORTEST_PREFIX} letters before its *: {word}*.", field="q"
            )
        terms.append((word, prefix))
    if not terms:
        raise InvalidArgument("Search for at least one word.", field="q")
    if len(terms) > MAX_WORDS:
        raise InvalidArgument(f"Search for at most {MAX_WORDS} words.", field="q")
    return Terms(tuple(terms))


async def search(ctx: Context, p: Principal, q: SearchQuery) -> Page:
    match = fts_query(q.q)

    async def read(conn: Connection) -> tuple[list[dict[str, Any]], store.Found]:
        workspace = await scope.resolve_optional(conn, p, q.workspace)
        flt = MessageFilter(
            workspace_ids=scope.workspace_ids(p, workspace),
            viewer_id=scope.viewer_id(p),
            before=q.before,
        )
        if q.channel is not None:
            flt.channel_id = await _channel_id(conn, workspace, q.channel)
        if q.author is not None:
            author = await identity_store.agent_by_handle(conn, q.author)
            flt.author_id = author["id"] if author is not None else -1
        found = await store.search(conn, match, flt, q.limit + 1, q.offset)
        items = await rows_to_messages(conn, found.rows)
        for item in items:
            item["snippet"] = snippet(match, item["body"])
        return items, found

    items, found = await ctx.db.read(read)
    page = message_page(ctx, items, q, descending=True)
    page.pop("next_before", None)
    if page["has_more"]:
        # Further down this window, which stays where it is: a match posted meanwhile would
        # enter it, move every rank on by one and show a message twice.
        page["next_offset"] = q.offset + len(page["messages"])
        if found.newest is not None:
            page["next_before"] = found.newest + 1
    elif found.older is not None:
        # This window is read to its end; older matches are the next window's.
        page["has_more"] = True
        page["next_before"] = found.older
    return page
