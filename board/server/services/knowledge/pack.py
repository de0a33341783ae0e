"""Getting knowledge to the bot that needs it, and measuring whether it is used.

The pack is what a launcher puts in a wake prompt: the channel's mandatory
references first, then the settled documents that best match the thread's
text, as excerpts headed by path and revision, never over the token budget
(4 characters a token). Stats list the dead memory a human should prune:
documents never read, shown but never read, and not changed or confirmed in
N days.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ...errors import NotFound
from ...principal import Principal
from ...store import channels as channel_store
from ...store import knowledge as store
from ...store import messages as message_store
from ...store.connection import Connection
from ...store.messages import MessageFilter
from ...store.rows import Row, WorkspaceRow
from ...validation import arg
from .. import scope
from ..context import Context
from . import text
from .inputs import SLUG_PATTERN, WorkspaceArg
from .render import holds_now, is_expired
from .sources import visible_message

CHARS_PER_TOKEN = 4
THREAD_CHARS = 8_000
THREAD_MESSAGES = 50
RANKED_DOCUMENTS = 20
MIN_EXCERPT = 80
DEFAULT_STALE_DAYS = 30


@dataclass
class PackQuery:
    workspace: str | None = WorkspaceArg
    channel: str | None = arg(None, pattern=SLUG_PATTERN, help="Its mandatory references first.")
    thread: int | None = arg(None, min=1, help="Rank documents by this thread's text.")
    q: str | None = arg(None, max_len=500, help="More words to rank by.")
    budget_tokens: int = arg(1500, min=50, max=32_000, help="The pack's size, at 4 characters a token.")


def clip(body: str, limit: int) -> tuple[str, bool]:
    """At most ``limit`` characters of ``body``, cut at a line end when one is near."""
    body = body.strip("\n")
    if len(body) <= limit:
        return body, False
    cut = body[: max(0, limit - 1)]
    line_end = cut.rfind("\n")
    if line_end >= len(cut) * 0.7:
        cut = cut[:line_end]
    return cut.rstrip() + "…", True


def _label(row: Row) -> str:
    status = row["doc_status"]
    extra = {
        "proposed": ", proposed: unverified",
        "disputed": ", disputed",
        "superseded": f", superseded by {row['superseded_by']}",
    }.get(status, "")
    return f"## {row['path']} (revision {row['revision']}{extra})\n"


def why_not(row: Row, now: str) -> str | None:
    """Why a document's shown revision does not belong in a pack now, if it does not."""
    if row["state"] != "live":
        return "deleted"
    if row["redacted_at"] is not None:
        return "redacted"
    if is_expired(row, now):
        return "expired"
    if not holds_now(row, now):
        return "not yet valid"
    return None


async def _thread_text(
    conn: Connection, p: Principal, workspace: WorkspaceRow, thread: int
) -> tuple[str, str | None]:
    """The thread's words (root and replies, bounded) and its channel."""
    row = await visible_message(conn, p, workspace, thread)
    if row is None:
        raise NotFound("thread")
    flt = MessageFilter(thread_id=row["thread_id"], viewer_id=scope.viewer_id(p))
    messages = await message_store.select(conn, flt, descending=False, limit=THREAD_MESSAGES)
    words = " ".join(m["body"] for m in messages)[:THREAD_CHARS]
    root = await message_store.by_id(conn, row["thread_id"])
    return words, root["channel"] if root is not None else None


async def pack(ctx: Context, p: Principal, slug: str | None, q: PackQuery) -> dict[str, Any]:
    """A bounded pack of knowledge for one piece of work."""
    now = ctx.now()

    async def read(conn: Connection) -> tuple[dict[str, Any], list[int]]:
        workspace = await scope.resolve(conn, p, slug)
        return await build(conn, p, workspace, q, now)

    result, included = await ctx.db.read(read)
    await ctx.read_counts.add(included, "shown")
    return result


async def build(
    conn: Connection, p: Principal, workspace: WorkspaceRow, q: PackQuery, now: str
) -> tuple[dict[str, Any], list[int]]:
    """The pack on one connection, and the ids of the documents it shows (to count them)."""
    budget = q.budget_tokens * CHARS_PER_TOKEN
    channel_slug, words_from = q.channel, q.q or ""
    if q.thread is not None:
        thread_words, thread_channel = await _thread_text(conn, p, workspace, q.thread)
        words_from += " " + thread_words
        channel_slug = channel_slug or thread_channel
    mandatory: list[str] = []
    if channel_slug is not None:
        channel = await channel_store.by_slug(conn, workspace["id"], channel_slug)
        if channel is None:
            raise NotFound("channel")
        refs = (await channel_store.refs(conn, [channel["id"]])).get(channel["id"], [])
        mandatory = [str(r["path"]) for r in refs if r["mandatory"]]
    mandatory_rows = await store.current_by_paths(conn, workspace["id"], mandatory)
    words = text.keywords(words_from)
    ranked = []
    if words:
        ranked = await store.search_ranked(
            conn,
            workspace["id"],
            text.any_of(words),
            [row["document_id"] for row in mandatory_rows],
            RANKED_DOCUMENTS,
        )
    by_path = {row["path"].casefold(): row for row in mandatory_rows}
    chunks: list[str] = []
    documents: list[dict[str, Any]] = []
    omitted: list[dict[str, Any]] = []
    included: list[int] = []
    used = 0

    def add(row: Row, is_mandatory: bool, cap: int) -> bool:
        nonlocal used
        header = _label(row)
        room = budget - used - len(header) - 2
        if room < MIN_EXCERPT:
            return False
        excerpt, truncated = clip(row["body"], min(room, cap))
        chunk = f"{header}{excerpt}\n\n"
        chunks.append(chunk)
        included.append(row["document_id"])
        used += len(chunk)
        documents.append(
            {
                "path": row["path"],
                "revision": row["revision"],
                "status": row["doc_status"],
                "mandatory": is_mandatory,
                "title": row["title"],
                "chars": len(excerpt),
                "truncated": truncated,
            }
        )
        return True

    for path in mandatory:
        row = by_path.get(path.casefold())
        why = "missing" if row is None else why_not(row, now)
        if row is not None and why is None and not add(row, True, budget):
            why = "over budget"
        if why is not None:
            omitted.append({"path": path, "mandatory": True, "why": why})
    per_document = max(MIN_EXCERPT * 4, budget // 4)
    for row in ranked:
        if why_not(row, now) is not None or not row["body"].strip():
            continue
        if not add(row, False, per_document):
            break
    pack_text = "".join(chunks)
    assert len(pack_text) <= budget
    return {
        "workspace": workspace["slug"],
        "channel": channel_slug,
        "thread": q.thread,
        "budget_tokens": q.budget_tokens,
        "used_tokens": math.ceil(len(pack_text) / CHARS_PER_TOKEN),
        "chars": len(pack_text),
        "query": words,
        "documents": documents,
        "omitted": omitted,
        "text": pack_text,
    }, included


# -- stats -------------------------------------------------------------------------------


@dataclass
class StatsQuery:
    workspace: str | None = WorkspaceArg
    stale_days: int = arg(DEFAULT_STALE_DAYS, min=1, max=3650, help="Not changed or confirmed in N days.")
    limit: int = arg(20, min=1, max=200, help="Documents per list.")


def _stat_item(row: Row) -> dict[str, Any]:
    return {
        "path": row["path"],
        "revision": row["revision"],
        "status": row["doc_status"],
        "title": row["title"],
        "updated_at": row["updated_at"],
        "confirmed_at": row["confirmed_at"],
        "shown": row["shown_count"],
        "read": row["read_count"],
        "last_shown_at": row["last_shown_at"],
        "last_read_at": row["last_read_at"],
    }


async def stats(ctx: Context, p: Principal, slug: str | None, q: StatsQuery) -> dict[str, Any]:
    """How the workspace's knowledge is used: never read, shown but never read, stale."""
    await ctx.read_counts.flush()
    stale_before = ctx.ago(q.stale_days * 86_400)

    async def read(conn: Connection) -> tuple[Any, Row | None, dict[str, list[Row]]]:
        workspace = await scope.resolve(conn, p, slug)
        totals = await store.stats_totals(conn, workspace["id"], stale_before)
        lists = {
            which: await store.stats_list(conn, workspace["id"], which, stale_before, q.limit + 1)
            for which in store.STATS_LISTS
        }
        return workspace, totals, lists

    workspace, totals, lists = await ctx.db.read(read)
    result: dict[str, Any] = {
        "workspace": workspace["slug"],
        "stale_days": q.stale_days,
        "stale_before": stale_before,
        "documents": totals["documents"] if totals else 0,
        "shown": totals["shown"] if totals else 0,
        "reads": totals["reads"] if totals else 0,
    }
    for which, rows in lists.items():
        result[which] = {
            "count": totals[which] if totals else 0,
            "documents": [_stat_item(row) for row in rows[: q.limit]],
            "has_more": len(rows) > q.limit,
        }
    return result
