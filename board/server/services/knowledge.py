"""The knowledge base: Markdown documents kept as append-only revisions with trust states.

Every change is one job in the writer's transaction: it reads the document's
head, checks the base revision (compare-and-set; the database refuses a
revision that does not follow the latest one, too), appends a revision, moves
the head and its full-text entry, and records the audit row. Reads go to the
heads and join one revision per document, so they cost the same with 1 or
1,000 revisions.

What a document shows: its newest accepted (``settled`` or ``superseded``)
revision, or, while none is accepted, its newest proposal (``proposed``,
unverified). A newer proposal is returned beside it as ``proposal``.
``rejected`` revisions stay in history and are never shown.
"""

from __future__ import annotations

import hashlib
import json
import logging
import weakref
from dataclasses import dataclass
from typing import Any

from aiosqlite import Connection

from ..clock import iso, parse_time
from ..errors import (
    Forbidden,
    InvalidArgument,
    LimitExceeded,
    NotFound,
    Tombstoned,
    VersionConflict,
)
from ..principal import Principal
from ..store import channels as channel_store
from ..store import knowledge as store
from ..store import messages as message_store
from ..store.db import Database
from ..store.identity import Row
from ..validation import arg
from . import audit, scope
from . import knowledge_text as text
from .context import Context
from .messages import fts_query
from .paging import Page, bounded_page

SLUG_PATTERN = r"[a-z0-9._-]{2,64}"
MAX_REASON = 2000
MAX_SOURCES = 50
MAX_OPEN_DISPUTES = 20
PROPOSAL_DIFF_CHARS = 20_000
QUEUE_DIFF_CHARS = 8_000
QUEUE_REVISIONS = 20
STATUSES = ("proposed", "settled", "disputed", "superseded")

log = logging.getLogger(__name__)


# -- inputs -------------------------------------------------------------------------


@dataclass
class Source:
    """One typed reference; exactly one of message, thread, doc (with revision), url or note."""

    message: int | None = arg(None, min=1)
    thread: int | None = arg(None, min=1)
    doc: str | None = arg(None, max_len=text.MAX_PATH)
    revision: int | None = arg(None, min=1, help="With doc: the revision cited (default: shown one).")
    url: str | None = arg(None, max_len=2000, pattern=r"https?://\S+")
    note: str | None = arg(None, max_len=2000, multiline=True)


WorkspaceArg = arg(None, pattern=SLUG_PATTERN, help="Workspace (humans, admin bots).")


@dataclass
class DocumentWrite:
    body: str = arg(max_len=text.MAX_BODY_BYTES, limit=True, multiline=True)
    base_revision: int = arg(min=0, help="The latest revision you read; 0 creates.")
    reason: str = arg(min_len=1, max_len=MAX_REASON, multiline=True)
    sources: list[Source] = arg([], max_items=MAX_SOURCES)
    valid_from: str | None = arg(None, max_len=40, help="Holds from (RFC 3339); absent keeps, '' clears.")
    valid_to: str | None = arg(None, max_len=40, help="Holds until (RFC 3339); absent keeps, '' clears.")
    superseded_by: str | None = arg(None, max_len=text.MAX_PATH, help="The document replacing this one.")
    override_tombstone: bool = arg(False, help="Write a deleted path again (say why in reason).")
    workspace: str | None = WorkspaceArg


@dataclass
class DocumentPatch:
    diff: str = arg(max_len=900_000, limit=True, multiline=True, help="Unified diff against base_revision.")
    base_revision: int = arg(min=0)
    reason: str = arg(min_len=1, max_len=MAX_REASON, multiline=True)
    sources: list[Source] = arg([], max_items=MAX_SOURCES)
    valid_from: str | None = arg(None, max_len=40)
    valid_to: str | None = arg(None, max_len=40)
    superseded_by: str | None = arg(None, max_len=text.MAX_PATH)
    override_tombstone: bool = arg(False)
    workspace: str | None = WorkspaceArg


@dataclass
class DocumentDelete:
    base_revision: int = arg(min=1)
    reason: str = arg(min_len=1, max_len=MAX_REASON, multiline=True)
    workspace: str | None = WorkspaceArg


@dataclass
class DisputeRequest:
    reason: str = arg(min_len=1, max_len=MAX_REASON, multiline=True)
    sources: list[Source] = arg([], max_items=MAX_SOURCES)
    workspace: str | None = WorkspaceArg


@dataclass
class ResolveRequest:
    outcome: str = arg(choices=("upheld", "dismissed"))
    note: str = arg("", max_len=MAX_REASON, multiline=True)
    workspace: str | None = WorkspaceArg


@dataclass
class ReviewRequest:
    decision: str = arg(choices=("approve", "reject"))
    revision: int | None = arg(None, min=1, help="One revision; absent: every open proposal.")
    note: str = arg("", max_len=MAX_REASON, multiline=True)
    workspace: str | None = WorkspaceArg


@dataclass
class RedactRequest:
    revision: int = arg(min=1)
    reason: str = arg(min_len=1, max_len=MAX_REASON, multiline=True)
    workspace: str | None = WorkspaceArg


@dataclass
class KnowledgeList:
    workspace: str | None = WorkspaceArg
    q: str | None = arg(None, min_len=1, max_len=200, help="Full-text search of current documents.")
    prefix: str | None = arg(None, pattern=text.PREFIX_PATTERN, help="Paths starting with this.")
    status: str | None = arg(None, choices=STATUSES)
    as_of: str | None = arg(None, max_len=40, help="What the knowledge base held then.")
    valid_at: str | None = arg(None, max_len=40, help="What held in the world then.")
    expired: bool | None = arg(None, help="true: only expired; false: none expired; absent: all.")
    after: str = arg("", max_len=text.MAX_PATH, help="Path to continue after.")
    offset: int = arg(0, min=0, max=10_000, help="Ranked results to skip (with q).")
    limit: int = arg(20, min=1, max=500)
    max_bytes: int | None = arg(None, min=1)


@dataclass
class DocumentQuery:
    workspace: str | None = WorkspaceArg
    revision: int | None = arg(None, min=1)
    as_of: str | None = arg(None, max_len=40)
    valid_at: str | None = arg(None, max_len=40)
    lines: str | None = arg(None, max_len=24, help="a-b: only these lines (1-based).")
    section: str | None = arg(None, max_len=200, help="Only the section under this heading.")


@dataclass
class HistoryQuery:
    workspace: str | None = WorkspaceArg
    before: int | None = arg(None, min=1, help="Revisions older than this one.")
    limit: int = arg(20, min=1, max=500)
    max_bytes: int | None = arg(None, min=1)
    view: str = arg("full", choices=("full", "compact"), help="compact leaves out bodies.")


@dataclass
class DiffQuery:
    workspace: str | None = WorkspaceArg
    from_: int | None = arg(None, min=0, name="from", help="Default: the revision before 'to'.")
    to: int | None = arg(None, min=1, help="Default: the latest revision.")


@dataclass
class ReviewQueueQuery:
    workspace: str | None = WorkspaceArg
    since: int = arg(0, min=0, help="Continue after this group (next_since).")
    limit: int = arg(10, min=1, max=100, help="Documents (groups) per page.")
    max_bytes: int | None = arg(None, min=1)


# -- small rules ----------------------------------------------------------------------


def needs_review(policy: str, p: Principal) -> bool:
    """Whether the workspace's review policy makes this writer's revisions proposals."""
    return policy == "all" or (policy == "bots" and p.is_bot)


def normalize_time(value: str | None, name: str) -> str | None:
    if value is None:
        return None
    try:
        return iso(parse_time(value))
    except ValueError:
        raise InvalidArgument(
            f"'{name}' is not an RFC 3339 time (2026-12-15T00:00:00Z).", field=name
        ) from None


def accepted_at(row: Row) -> str:
    return str(row["reviewed_at"] or row["recorded_at"])


def is_expired(row: Row, now: str) -> bool:
    return row["valid_to"] is not None and row["valid_to"] <= now


def holds_now(row: Row, now: str) -> bool:
    return not is_expired(row, now) and (row["valid_from"] is None or row["valid_from"] <= now)


def render_sources(raw: str) -> list[dict[str, Any]]:
    """Stored sources with a link to each that resolves on this board."""
    out = []
    for source in json.loads(raw):
        item = dict(source)
        if "message" in source:
            item["href"] = f"/api/messages/{source['message']}"
        elif "thread" in source:
            item["href"] = f"/api/threads/{source['thread']}"
        elif "doc" in source:
            item["href"] = f"/api/knowledge/{source['doc']}?revision={source['revision']}"
        elif "url" in source:
            item["href"] = source["url"]
        out.append(item)
    return out


def _stub(row: Row) -> dict[str, Any] | None:
    if row["redacted_at"] is None:
        return None
    return {
        "by": row["redacted_by"],
        "at": row["redacted_at"],
        "reason": row["redaction_reason"],
        "sha256": row["redacted_sha256"],
    }


def _review(row: Row) -> dict[str, Any] | None:
    if row["reviewed_at"] is None:
        return None
    return {"by": row["reviewed_by"], "at": row["reviewed_at"], "note": row["review_note"]}


def revision_dict(row: Row, now: str, *, body: bool = True) -> dict[str, Any]:
    """One revision as history shows it (a redacted body is an empty string beside its stub)."""
    item: dict[str, Any] = {
        "revision": row["revision"],
        "kind": row["kind"],
        "status": row["status"],
        "title": row["title"],
        "author": row["author"],
        "author_kind": row["author_kind"],
        "reason": row["reason"],
        "sources": render_sources(row["sources"]),
        "recorded_at": row["recorded_at"],
        "valid_from": row["valid_from"],
        "valid_to": row["valid_to"],
        "expired": is_expired(row, now),
        "superseded_by": row["superseded_by"],
        "overrides": row["overrides"],
        "bytes": row["bytes"],
        "review": _review(row),
        "redacted": _stub(row),
    }
    if body:
        item["body"] = row["body"]
    return item


def doc_item(row: Row, now: str, *, historical: bool = False) -> dict[str, Any]:
    """A document in a list: enough to decide whether to read it."""
    item: dict[str, Any] = {
        "path": row["path"],
        "revision": row["revision"],
        "latest_revision": row["latest_revision"],
        "status": row["status"] if historical else row["doc_status"],
        "title": row["title"],
        "excerpt": row["excerpt"],
        "updated_at": accepted_at(row),
        "author": row["author"],
        "expired": is_expired(row, now),
        "valid_from": row["valid_from"],
        "valid_to": row["valid_to"],
    }
    if row["superseded_by"]:
        item["superseded_by"] = row["superseded_by"]
    if not historical and row["pending_revision"]:
        item["proposed_revision"] = row["pending_revision"]
    if row["redacted_at"]:
        item["redacted"] = True
    return item


def tombstoned(path: str, row: Row) -> Tombstoned:
    """TOMBSTONED quoting the deletion: why, by whom, when."""
    return Tombstoned(
        f"{path} was deleted by {row['author']} on {accepted_at(row)}: {row['reason']} "
        'To write it again anyway, send "override_tombstone": true and say why in reason.',
        path=path,
        revision=row["revision"],
        reason=row["reason"],
        author=row["author"],
        deleted_at=accepted_at(row),
    )


def conflict(path: str, base: int, latest: int) -> VersionConflict:
    return VersionConflict(
        f"{path} is at revision {latest}, not {base}: read it again, merge, and retry.",
        path=path,
        current_revision=latest,
        base_revision=base,
    )


# -- read counters ------------------------------------------------------------------

FLUSH_AFTER_SECONDS = 2.0
FLUSH_AFTER_DOCUMENTS = 500


class _Counts:
    """Shown/read counts gathered in memory and added to the documents in one write."""

    def __init__(self) -> None:
        self.pending: dict[int, list[Any]] = {}
        self.since: float | None = None


_COUNTS: weakref.WeakKeyDictionary[Database, _Counts] = weakref.WeakKeyDictionary()


async def count(ctx: Context, document_ids: list[int], what: str) -> None:
    """Note documents shown in a list or pack (``shown``) or read (``read``)."""
    if not document_ids:
        return
    counts = _COUNTS.setdefault(ctx.db, _Counts())
    now = ctx.now()
    for document_id in document_ids:
        entry = counts.pending.setdefault(document_id, [0, 0, None, None])
        if what == "shown":
            entry[0] += 1
            entry[2] = now
        else:
            entry[1] += 1
            entry[3] = now
    if counts.since is None:
        counts.since = ctx.clock.monotonic()
    due = ctx.clock.monotonic() - counts.since >= FLUSH_AFTER_SECONDS
    if due or len(counts.pending) >= FLUSH_AFTER_DOCUMENTS:
        try:
            await flush_counts(ctx)
        except Exception:  # a lost count must not fail the read that noted it
            log.exception("could not write knowledge read counts")


async def flush_counts(ctx: Context) -> None:
    """Write the gathered counts (stats do this first, so they are exact)."""
    counts = _COUNTS.get(ctx.db)
    if counts is None or not counts.pending:
        return
    pending, counts.pending, counts.since = counts.pending, {}, None
    rows = [(document_id, *values) for document_id, values in pending.items()]
    await ctx.db.write(lambda conn: store.add_counts(conn, rows))


# -- the head -----------------------------------------------------------------------


@dataclass
class Head:
    """What a document shows after a change."""

    state: str  # live, tombstoned or hidden
    status: str | None  # proposed, settled, disputed or superseded, when live
    shown_revision: int | None
    latest_revision: int
    open_disputes: int

    @property
    def document_status(self) -> str:
        """The status when live, else the state (tombstoned, hidden)."""
        return self.status if self.state == "live" and self.status else self.state


async def refresh_head(conn: Connection, document_id: int, actor: str, now: str) -> Head:
    """Recompute what a document shows from its revisions; keep the index in step.

    Only newer accepted revisions move the head forward, so this reads two rows
    through partial indexes, not the history.
    """
    doc = await store.document_by_id(conn, document_id)
    assert doc is not None
    accepted = await store.newest_accepted(conn, document_id)
    proposal = await store.newest_proposed(
        conn, doc["workspace_id"], document_id, accepted["revision"] if accepted else 0
    )
    shown = accepted or proposal
    pending = proposal if accepted else None
    state = "hidden" if shown is None else "tombstoned" if shown["kind"] == "tombstone" else "live"
    if state == "tombstoned":
        await store.resolve_disputes(conn, document_id, "upheld", actor, now, "The document was deleted.")
    open_disputes = await store.count_open_disputes(conn, document_id)
    status = None
    if state == "live" and shown is not None:
        status = "disputed" if open_disputes else shown["status"]
    old_indexed = doc["current_id"] if doc["state"] == "live" else None
    new_indexed = shown["revision_id"] if state == "live" and shown is not None else None
    if old_indexed != new_indexed:
        if old_indexed is not None:
            await store.unindex(conn, old_indexed, doc["path"])
        if new_indexed is not None:
            await store.index(conn, new_indexed, doc["path"])
    await store.set_head(
        conn,
        document_id,
        {
            "accepted_revision": accepted["revision"] if accepted else 0,
            "current_id": shown["revision_id"] if shown is not None else None,
            "pending_revision": pending["revision"] if pending is not None else None,
            "state": state,
            "status": status,
            "open_disputes": open_disputes,
            "updated_at": accepted_at(shown) if shown is not None else doc["updated_at"],
        },
    )
    return Head(
        state=state,
        status=status,
        shown_revision=shown["revision"] if shown is not None else None,
        latest_revision=doc["latest_revision"],
        open_disputes=open_disputes,
    )


# -- checks inside a write ------------------------------------------------------------


async def _visible_message(conn: Connection, p: Principal, workspace: Any, message_id: int) -> Row | None:
    row = await message_store.by_id(conn, message_id)
    if row is None or row["workspace_id"] != workspace["id"]:
        return None
    if row["conversation_id"] is not None and not p.is_human:
        members = await channel_store.members(conn, [row["conversation_id"]])
        if p.agent_id not in {m["id"] for m in members.get(row["conversation_id"], [])}:
            return None
    return row


async def check_sources(
    conn: Connection, p: Principal, workspace: Any, sources: list[Source]
) -> list[dict[str, Any]]:
    """Sources as stored: messages, threads and documents must exist in this workspace."""
    out: list[dict[str, Any]] = []
    for i, source in enumerate(sources):
        name = f"sources[{i}]"
        kinds = [k for k in ("message", "thread", "doc", "url", "note") if getattr(source, k) is not None]
        if len(kinds) != 1 or (source.revision is not None and kinds != ["doc"]):
            raise InvalidArgument(
                f"{name} is exactly one of message, thread, doc (with an optional revision), url or note.",
                field=name,
            )
        kind = kinds[0]
        if kind in ("message", "thread"):
            message_id = int(getattr(source, kind))
            row = await _visible_message(conn, p, workspace, message_id)
            if row is None or (kind == "thread" and row["thread_id"] != row["id"]):
                raise InvalidArgument(
                    f"{name}: there is no {kind} {message_id} in workspace {workspace['slug']}.", field=name
                )
            out.append({kind: message_id})
        elif kind == "doc":
            path = text.check_path(str(source.doc))
            doc = await store.document_by_path(conn, workspace["id"], path)
            if doc is None or doc["latest_revision"] == 0:
                raise InvalidArgument(
                    f"{name}: no document {path} in workspace {workspace['slug']}.", field=name
                )
            revision = source.revision
            if revision is None:
                shown = await store.revision_by_id(conn, doc["current_id"]) if doc["current_id"] else None
                revision = shown["revision"] if shown is not None else doc["latest_revision"]
            if revision > doc["latest_revision"]:
                raise InvalidArgument(
                    f"{name}: {doc['path']} has no revision {revision} (latest {doc['latest_revision']}).",
                    field=name,
                )
            out.append({"doc": doc["path"], "revision": revision})
        else:
            out.append({kind: getattr(source, kind)})
    return out


def _validity(given: str | None, name: str, base: Row | None, inherit_from: str) -> str | None:
    """absent keeps the base revision's value, '' clears it, a time sets it."""
    if given is None:
        return base[inherit_from] if base is not None and base["kind"] == "write" else None
    if given == "":
        return None
    return normalize_time(given, name)


# -- writes -------------------------------------------------------------------------


@dataclass
class Change:
    """One revision to append: a write (a body, or a diff against the base) or a tombstone."""

    kind: str
    base_revision: int
    reason: str
    body: str | None = None
    diff: str | None = None
    sources: tuple[Source, ...] = ()
    valid_from: str | None = None
    valid_to: str | None = None
    superseded_by: str | None = None
    override_tombstone: bool = False


async def append(
    conn: Connection, ctx: Context, p: Principal, workspace: Any, path: str, change: Change
) -> dict[str, Any]:
    """Append one revision inside the caller's write: the compare-and-set, the head, the audit row."""
    now = ctx.now()
    doc = await store.document_by_path(conn, workspace["id"], path)
    exists = doc is not None and doc["latest_revision"] > 0
    shown = None
    if doc is not None and doc["current_id"] is not None:
        shown = await store.revision_by_id(conn, doc["current_id"])
    if change.kind == "tombstone":
        if doc is None or doc["state"] == "hidden":
            raise NotFound("document")
        if doc["state"] == "tombstoned" and shown is not None:
            raise tombstoned(doc["path"], shown)
    elif doc is not None and doc["state"] == "tombstoned" and not change.override_tombstone:
        assert shown is not None
        raise tombstoned(doc["path"], shown)
    elif change.override_tombstone and (doc is None or doc["state"] != "tombstoned"):
        raise InvalidArgument(f"{path} is not deleted; drop override_tombstone.", field="override_tombstone")
    latest = doc["latest_revision"] if doc is not None else 0
    if change.base_revision != latest:
        raise conflict(doc["path"] if doc is not None else path, change.base_revision, latest)
    base = None
    if doc is not None and latest:
        same = shown is not None and shown["revision"] == latest
        base = shown if same else await store.revision_by_number(conn, doc["document_id"], latest)

    body = ""
    if change.kind == "write":
        if change.diff is not None:
            body = text.apply_diff(base["body"] if base is not None else "", change.diff, latest)
        else:
            body = change.body or ""
        body = text.check_body(body)
        if not body.strip():
            raise InvalidArgument(
                "The body is empty; to remove a document, DELETE it with a reason.", field="body"
            )
    sources = await check_sources(conn, p, workspace, list(change.sources))
    valid_from = _validity(change.valid_from, "valid_from", base, "valid_from")
    valid_to = _validity(change.valid_to, "valid_to", base, "valid_to")
    if valid_from and valid_to and valid_to <= valid_from:
        raise InvalidArgument("valid_to must be after valid_from.", field="valid_to")
    superseded_by = None
    if change.superseded_by:
        target_path = text.check_path(change.superseded_by)
        target = await store.document_by_path(conn, workspace["id"], target_path)
        if target is None or target["state"] != "live" or target_path.casefold() == path.casefold():
            raise InvalidArgument(
                f"superseded_by names no other live document in workspace {workspace['slug']}.",
                field="superseded_by",
            )
        superseded_by = target["path"]

    if doc is None:
        document_id = await store.insert_document(conn, workspace["id"], path, now)
        doc_path = path
    else:
        document_id, doc_path = doc["document_id"], doc["path"]
    proposed = needs_review(workspace["review_policy"], p)
    status = "proposed" if proposed else ("superseded" if superseded_by else "settled")
    overrides = shown["revision"] if change.override_tombstone and shown is not None else None
    revision = latest + 1
    inserted = await store.insert_revision(
        conn,
        {
            "document_id": document_id,
            "workspace_id": workspace["id"],
            "revision": revision,
            "base_revision": latest,
            "kind": change.kind,
            "status": status,
            "body": body,
            "title": text.title_of(body),
            "excerpt": text.excerpt_of(body),
            "bytes": len(body.encode("utf-8")),
            "author_id": p.agent_id,
            "author": p.handle,
            "author_kind": p.role,
            "reason": change.reason,
            "sources": json.dumps(sources, separators=(",", ":")),
            "recorded_at": now,
            "valid_from": valid_from,
            "valid_to": valid_to,
            "superseded_by": superseded_by,
            "overrides": overrides,
        },
    )
    if inserted is None:  # another board process wrote this number first
        current = await store.document_by_id(conn, document_id)
        raise conflict(doc_path, change.base_revision, current["latest_revision"] if current else latest)
    await store.set_head(conn, document_id, {"latest_revision": revision})
    head = await refresh_head(conn, document_id, p.handle, now)
    if change.kind == "tombstone":
        action = "knowledge.delete"
    elif change.override_tombstone:
        action = "knowledge.override"
    else:
        action = "knowledge.create" if not exists else "knowledge.write"
    await audit.record(
        conn,
        ctx,
        p,
        action,
        doc_path,
        workspace=workspace["slug"],
        reason=change.reason,
        details={
            "revision": revision,
            "status": status,
            "base_revision": latest,
            "via": "patch" if change.diff is not None else change.kind,
            **({"overrides": overrides} if overrides else {}),
        },
    )
    return {
        "workspace": workspace["slug"],
        "path": doc_path,
        "revision": revision,
        "latest_revision": revision,
        "base_revision": latest,
        "kind": change.kind,
        "status": status,
        "document_status": head.document_status,
        "shown_revision": head.shown_revision,
        "recorded_at": now,
        "created": not exists,
        "bytes": len(body.encode("utf-8")),
    }


async def _write(
    ctx: Context, p: Principal, slug: str | None, path: str, change: Change
) -> tuple[int, dict[str, Any]]:
    path = text.check_path(path)

    async def write(conn: Connection) -> dict[str, Any]:
        workspace = await scope.resolve(conn, p, slug)
        scope.require_writable(workspace)
        return await append(conn, ctx, p, workspace, path, change)

    result = await ctx.db.write(write)
    return (201 if result["created"] else 200), result


async def put(
    ctx: Context, p: Principal, slug: str | None, path: str, req: DocumentWrite
) -> tuple[int, dict[str, Any]]:
    """Write a whole body on top of ``base_revision`` (0 creates)."""
    change = Change(
        kind="write",
        base_revision=req.base_revision,
        reason=req.reason,
        body=text.check_body(req.body),
        sources=tuple(req.sources),
        valid_from=req.valid_from,
        valid_to=req.valid_to,
        superseded_by=req.superseded_by,
        override_tombstone=req.override_tombstone,
    )
    return await _write(ctx, p, slug, path, change)


async def patch(
    ctx: Context, p: Principal, slug: str | None, path: str, req: DocumentPatch
) -> tuple[int, dict[str, Any]]:
    """Apply a unified diff to revision ``base_revision``: every hunk applies, or nothing changes."""
    change = Change(
        kind="write",
        base_revision=req.base_revision,
        reason=req.reason,
        diff=req.diff,
        sources=tuple(req.sources),
        valid_from=req.valid_from,
        valid_to=req.valid_to,
        superseded_by=req.superseded_by,
        override_tombstone=req.override_tombstone,
    )
    return await _write(ctx, p, slug, path, change)


async def delete(
    ctx: Context, p: Principal, slug: str | None, path: str, req: DocumentDelete
) -> dict[str, Any]:
    """Append a tombstone: the document leaves lists, search and plain reads; history stays."""
    change = Change(kind="tombstone", base_revision=req.base_revision, reason=req.reason)
    _, result = await _write(ctx, p, slug, path, change)
    return result | {"deleted": result["status"] != "proposed"}


async def _live_document(conn: Connection, workspace: Any, path: str) -> Row:
    """A document that shows something now: NOT_FOUND if none, TOMBSTONED if deleted."""
    doc = await store.document_by_path(conn, workspace["id"], path)
    if doc is None or doc["state"] == "hidden":
        raise NotFound("document")
    if doc["state"] == "tombstoned":
        shown = await store.revision_by_id(conn, doc["current_id"])
        assert shown is not None
        raise tombstoned(doc["path"], shown)
    return doc


def _dispute_dict(row: Row) -> dict[str, Any]:
    item = {
        "id": row["id"],
        "revision": row["revision"],
        "by": row["opened_by"],
        "reason": row["reason"],
        "sources": render_sources(row["sources"]),
        "opened_at": row["opened_at"],
    }
    if "outcome" in row.keys():  # noqa: SIM118 - sqlite3.Row
        item |= {
            "outcome": row["outcome"],
            "resolved_by": row["resolved_by"],
            "resolved_at": row["resolved_at"],
            "note": row["note"],
        }
    return item


async def dispute(
    ctx: Context, p: Principal, slug: str | None, path: str, req: DisputeRequest
) -> tuple[int, dict[str, Any]]:
    """Say a document is wrong: it shows as ``disputed`` until someone resolves it."""
    path = text.check_path(path)

    async def write(conn: Connection) -> dict[str, Any]:
        workspace = await scope.resolve(conn, p, slug)
        scope.require_writable(workspace)
        doc = await _live_document(conn, workspace, path)
        if doc["open_disputes"] >= MAX_OPEN_DISPUTES:
            raise LimitExceeded(
                f"{doc['path']} already has {doc['open_disputes']} open disputes; resolve them first.",
                limit=MAX_OPEN_DISPUTES,
            )
        sources = await check_sources(conn, p, workspace, req.sources)
        shown = await store.revision_by_id(conn, doc["current_id"])
        assert shown is not None
        now = ctx.now()
        dispute_id = await store.insert_dispute(
            conn, doc["document_id"], workspace["id"], shown["revision"], p.handle, req.reason, sources, now
        )
        head = await refresh_head(conn, doc["document_id"], p.handle, now)
        await audit.record(
            conn,
            ctx,
            p,
            "knowledge.dispute",
            doc["path"],
            workspace=workspace["slug"],
            reason=req.reason,
            details={"revision": shown["revision"], "dispute": dispute_id},
        )
        return {
            "workspace": workspace["slug"],
            "path": doc["path"],
            "status": head.status,
            "open_disputes": head.open_disputes,
            "dispute": {
                "id": dispute_id,
                "revision": shown["revision"],
                "by": p.handle,
                "reason": req.reason,
                "sources": render_sources(json.dumps(sources)),
                "opened_at": now,
            },
        }

    return 201, await ctx.db.write(write)


async def resolve(
    ctx: Context, p: Principal, slug: str | None, path: str, req: ResolveRequest
) -> dict[str, Any]:
    """Close a document's open disputes: ``dismissed`` (it stands) or ``upheld`` (it was corrected).

    With none open (someone resolved them first) it answers ``resolved: 0`` and writes nothing.
    """
    path = text.check_path(path)

    async def write(conn: Connection) -> dict[str, Any]:
        workspace = await scope.resolve(conn, p, slug)
        scope.require_writable(workspace)
        doc = await _live_document(conn, workspace, path)
        opened = await store.open_disputes(conn, doc["document_id"], MAX_OPEN_DISPUTES + 1)
        if not opened:  # someone resolved it first: the same end state, nothing to write
            return {
                "workspace": workspace["slug"],
                "path": doc["path"],
                "outcome": req.outcome,
                "resolved": 0,
                "status": doc["doc_status"],
                "open_disputes": 0,
            }
        disputed = max(row["revision"] for row in opened)
        if req.outcome == "upheld" and doc["latest_revision"] <= disputed:
            raise InvalidArgument(
                f"To uphold the dispute, first write the correction on top of revision "
                f"{doc['latest_revision']} (or delete the document), then resolve as upheld; "
                "or resolve as dismissed.",
                field="outcome",
            )
        now = ctx.now()
        closed = await store.resolve_disputes(conn, doc["document_id"], req.outcome, p.handle, now, req.note)
        if req.outcome == "dismissed":
            await store.set_head(conn, doc["document_id"], {"confirmed_at": now})
        head = await refresh_head(conn, doc["document_id"], p.handle, now)
        await audit.record(
            conn,
            ctx,
            p,
            "knowledge.resolve",
            doc["path"],
            workspace=workspace["slug"],
            reason=req.note,
            details={"outcome": req.outcome, "disputes": [row["id"] for row in opened]},
        )
        return {
            "workspace": workspace["slug"],
            "path": doc["path"],
            "outcome": req.outcome,
            "resolved": closed,
            "status": head.status,
            "open_disputes": head.open_disputes,
        }

    return await ctx.db.write(write)


async def review(
    ctx: Context, p: Principal, slug: str | None, path: str, req: ReviewRequest
) -> dict[str, Any]:
    """A human approves (``settled``) or rejects (``rejected``) one proposal or all of a document's."""
    path = text.check_path(path)

    async def write(conn: Connection) -> dict[str, Any]:
        workspace, doc = await _document(conn, p, slug, path)
        if not p.is_human:
            raise Forbidden("Only a human reviews knowledge.")
        scope.require_writable(workspace)
        if req.revision is not None:
            row = await store.revision_by_number(conn, doc["document_id"], req.revision)
            if row is None:
                raise NotFound("revision")
            if row["status"] != "proposed":
                raise InvalidArgument(
                    f"Revision {req.revision} of {doc['path']} is {row['status']}, not proposed; "
                    "only proposals are reviewed.",
                    field="revision",
                )
            targets = [row]
        else:
            targets = await store.proposed_revisions(
                conn, workspace["id"], doc["document_id"], doc["accepted_revision"]
            )
            if not targets:
                raise InvalidArgument(f"{doc['path']} has no open proposal to review.")
        now = ctx.now()
        decisions = []
        for row in targets:
            if req.decision == "reject":
                status = "rejected"
            else:
                status = "superseded" if row["superseded_by"] else "settled"
            await store.decide(conn, row["revision_id"], status, p.handle, now, req.note)
            decisions.append({"revision": row["revision"], "status": status})
            await audit.record(
                conn,
                ctx,
                p,
                "knowledge.review",
                doc["path"],
                workspace=workspace["slug"],
                reason=req.note,
                details={"revision": row["revision"], "decision": req.decision, "status": status},
            )
        if req.decision == "approve":
            await store.set_head(conn, doc["document_id"], {"confirmed_at": now})
        head = await refresh_head(conn, doc["document_id"], p.handle, now)
        return {
            "workspace": workspace["slug"],
            "path": doc["path"],
            "decisions": decisions,
            "document_status": head.document_status,
            "shown_revision": head.shown_revision,
            "latest_revision": head.latest_revision,
        }

    return await ctx.db.write(write)


async def redact(
    ctx: Context, p: Principal, slug: str | None, path: str, req: RedactRequest
) -> dict[str, Any]:
    """Erase a revision's body from the database file, index included; keep a stub with its SHA-256."""
    path = text.check_path(path)

    async def write(conn: Connection) -> dict[str, Any]:
        workspace, doc = await _document(conn, p, slug, path)
        if not p.is_human:
            raise Forbidden("Only a human redacts knowledge.")
        row = await store.revision_by_number(conn, doc["document_id"], req.revision)
        if row is None:
            raise NotFound("revision")
        if row["kind"] == "tombstone":
            raise InvalidArgument("A tombstone has no body to redact.", field="revision")
        if row["redacted_at"] is not None:
            raise InvalidArgument(
                f"Revision {req.revision} of {doc['path']} was already redacted by {row['redacted_by']}.",
                field="revision",
            )
        now = ctx.now()
        digest = hashlib.sha256(row["body"].encode("utf-8")).hexdigest()
        indexed = doc["state"] == "live" and doc["current_id"] == row["revision_id"]
        if indexed:
            await store.unindex(conn, row["revision_id"], doc["path"])
        await store.erase(conn, row["revision_id"], p.handle, now, req.reason, digest)
        if indexed:
            await store.index(conn, row["revision_id"], doc["path"])
        await store.optimize_index(conn)
        await refresh_head(conn, doc["document_id"], p.handle, now)
        await audit.record(
            conn,
            ctx,
            p,
            "knowledge.redact",
            doc["path"],
            workspace=workspace["slug"],
            reason=req.reason,
            details={"revision": req.revision, "sha256": digest},
        )
        return {
            "workspace": workspace["slug"],
            "path": doc["path"],
            "revision": req.revision,
            "redacted": {"by": p.handle, "at": now, "reason": req.reason, "sha256": digest},
        }

    result = await ctx.db.write(write)
    # Old page images of the erased text may still sit in the WAL: fold it into the
    # (securely overwritten) database file and truncate it.
    await store.checkpoint(ctx.db.path)
    return result


# -- reads --------------------------------------------------------------------------


def _times(as_of: str | None, valid_at: str | None) -> tuple[str | None, str | None]:
    return normalize_time(as_of, "as_of"), normalize_time(valid_at, "valid_at")


async def list_documents(ctx: Context, p: Principal, slug: str | None, q: KnowledgeList) -> Page:
    """Current documents by path, or ranked by ``q``; as they were (``as_of``) or held (``valid_at``)."""
    as_of, valid_at = _times(q.as_of, q.valid_at)
    historical = as_of is not None or valid_at is not None
    if q.q is not None and historical:
        raise InvalidArgument("q searches the current documents; drop as_of and valid_at to search.")
    match = fts_query(q.q) if q.q is not None else None
    now = ctx.now()
    flt = store.ListFilter(prefix=q.prefix, status=q.status, expired=q.expired, now=now)

    async def read(conn: Connection) -> tuple[Any, list[Row]]:
        workspace = await scope.resolve(conn, p, slug)
        if match is not None:
            rows = await store.search(conn, workspace["id"], match, flt, limit=q.limit + 1, offset=q.offset)
        elif historical:
            rows = await store.list_at(
                conn, workspace["id"], flt, as_of=as_of, valid_at=valid_at, after=q.after, limit=q.limit + 1
            )
        else:
            rows = await store.list_current(conn, workspace["id"], flt, after=q.after, limit=q.limit + 1)
        return workspace, rows

    workspace, rows = await ctx.db.read(read)
    items = []
    for row in rows:
        item = doc_item(row, now, historical=historical)
        if match is not None:
            item["snippet"] = row["snippet"]
        items.append(item)
    ids = {row["path"]: row["document_id"] for row in rows}
    page = bounded_page(ctx, "documents", items, q.limit, q.max_bytes, descending=False, key="path")
    if match is not None:
        page.pop("next_since", None)
        if page["has_more"]:
            page["next_offset"] = q.offset + len(page["documents"])
    page["workspace"] = workspace["slug"]
    if historical:
        page["as_of"], page["valid_at"] = as_of, valid_at
    await count(ctx, [ids[item["path"]] for item in page["documents"]], "shown")
    return page


def _proposal(shown: Row, pending: Row) -> dict[str, Any]:
    diff = text.make_diff(
        shown["body"], pending["body"], f"revision {shown['revision']}", f"revision {pending['revision']}"
    )
    return {
        "revision": pending["revision"],
        "kind": pending["kind"],
        "status": pending["status"],
        "author": pending["author"],
        "reason": pending["reason"],
        "sources": render_sources(pending["sources"]),
        "recorded_at": pending["recorded_at"],
        "diff": diff[:PROPOSAL_DIFF_CHARS],
        "diff_truncated": len(diff) > PROPOSAL_DIFF_CHARS,
    }


async def get_document(
    ctx: Context, p: Principal, slug: str | None, path: str, q: DocumentQuery
) -> dict[str, Any]:
    """A document (or one revision of it, or a part of it) with its trust state."""
    path = text.check_path(path)
    as_of, valid_at = _times(q.as_of, q.valid_at)
    if q.revision is not None and (as_of or valid_at):
        raise InvalidArgument("Ask for a revision or a time (as_of, valid_at), not both.")
    if q.lines is not None and q.section is not None:
        raise InvalidArgument("Ask for lines or a section, not both.")
    now = ctx.now()

    async def read(conn: Connection) -> tuple[Any, Row, Row, Row | None, list[Row], Row | None]:
        workspace, doc = await _document(conn, p, slug, path)
        pending, disputes, last_dispute = None, [], None
        if q.revision is not None:
            row = await store.revision_by_number(conn, doc["document_id"], q.revision)
            if row is None:
                raise NotFound("revision")
        elif as_of or valid_at:
            row = await store.revision_at(conn, doc["document_id"], as_of, valid_at)
            if row is None or row["kind"] == "tombstone":
                raise NotFound("document")
        else:
            if doc["state"] == "hidden":
                raise NotFound("document")
            row = await store.revision_by_id(conn, doc["current_id"])
            assert row is not None
            if doc["state"] == "tombstoned":
                raise tombstoned(doc["path"], row)
            if doc["pending_revision"]:
                pending = await store.revision_by_number(conn, doc["document_id"], doc["pending_revision"])
            disputes = await store.open_disputes(conn, doc["document_id"])
            last_dispute = await store.last_resolved_dispute(conn, doc["document_id"])
        return workspace, doc, row, pending, disputes, last_dispute

    workspace, doc, row, pending, disputes, last_dispute = await ctx.db.read(read)
    current_read = q.revision is None and not (as_of or valid_at)
    item = revision_dict(row, now)
    item |= {
        "workspace": workspace["slug"],
        "path": doc["path"],
        "latest_revision": doc["latest_revision"],
        "revision_status": row["status"],
        "status": doc["doc_status"] if current_read else row["status"],
        "current": row["revision_id"] == doc["current_id"] and doc["state"] == "live",
        "updated_at": accepted_at(row),
        "proposal": _proposal(row, pending) if pending is not None else None,
        "disputes": [_dispute_dict(d) for d in disputes],
    }
    if current_read:
        item["last_dispute"] = _dispute_dict(last_dispute) if last_dispute is not None else None
    if as_of or valid_at:
        item["as_of"], item["valid_at"] = as_of, valid_at
    body = row["body"]
    total = len(text.split_lines(body))
    if q.lines is not None:
        first, last = text.parse_lines(q.lines, total)
        item["body"] = text.lines_of(body, first, last)
        item["lines"] = {"from": first, "to": last, "total": total}
    elif q.section is not None:
        found = text.section(body, q.section)
        if found is None:
            missing = NotFound("section")
            missing.details["headings"] = [h for _, _, h in text.headings(body)][:50]
            raise missing
        first, last, heading = found
        item["body"] = text.lines_of(body, first, last)
        item["section"] = heading
        item["lines"] = {"from": first, "to": last, "total": total}
    await count(ctx, [doc["document_id"]], "read")
    return item


async def _document(conn: Connection, p: Principal, slug: str | None, path: str) -> tuple[Any, Row]:
    workspace = await scope.resolve(conn, p, slug)
    doc = await store.document_by_path(conn, workspace["id"], path)
    if doc is None or doc["latest_revision"] == 0:
        raise NotFound("document")
    return workspace, doc


async def history(ctx: Context, p: Principal, slug: str | None, path: str, q: HistoryQuery) -> Page:
    """Every revision, newest first; redacted bodies are empty beside their stubs."""
    path = text.check_path(path)
    now = ctx.now()

    async def read(conn: Connection) -> tuple[Any, Row, list[Row]]:
        workspace, doc = await _document(conn, p, slug, path)
        return workspace, doc, await store.history(conn, doc["document_id"], q.before, q.limit + 1)

    workspace, doc, rows = await ctx.db.read(read)
    items = [revision_dict(row, now, body=q.view == "full") for row in rows]
    page = bounded_page(ctx, "revisions", items, q.limit, q.max_bytes, descending=True, key="revision")
    return {
        "workspace": workspace["slug"],
        "path": doc["path"],
        "latest_revision": doc["latest_revision"],
        "state": doc["state"],
    } | page


async def diff(ctx: Context, p: Principal, slug: str | None, path: str, q: DiffQuery) -> dict[str, Any]:
    """A unified diff between two revisions (0 is the empty document)."""
    path = text.check_path(path)

    async def read(conn: Connection) -> tuple[Row, Row | None, Row]:
        _, doc = await _document(conn, p, slug, path)
        to = q.to if q.to is not None else doc["latest_revision"]
        start = q.from_ if q.from_ is not None else to - 1
        new = await store.revision_by_number(conn, doc["document_id"], to)
        old = await store.revision_by_number(conn, doc["document_id"], start) if start > 0 else None
        if new is None or (start > 0 and old is None):
            raise NotFound("revision")
        return doc, old, new

    doc, old, new = await ctx.db.read(read)
    start = old["revision"] if old is not None else 0
    return {
        "path": doc["path"],
        "from": start,
        "to": new["revision"],
        "from_status": old["status"] if old is not None else None,
        "to_status": new["status"],
        "redacted": [r["revision"] for r in (old, new) if r is not None and r["redacted_at"]],
        "diff": text.make_diff(
            old["body"] if old is not None else "",
            new["body"],
            f"{doc['path']}@{start}",
            f"{doc['path']}@{new['revision']}",
        ),
    }


async def review_queue(ctx: Context, p: Principal, q: ReviewQueueQuery) -> Page:
    """Open proposals grouped by document, oldest first, each with its diff against the accepted text."""

    async def read(conn: Connection) -> list[dict[str, Any]]:
        workspace = await scope.resolve_optional(conn, p, q.workspace)
        if not p.is_human:
            raise Forbidden("Only a human reviews knowledge.")
        ids = [workspace["id"]] if workspace is not None else None
        groups = []
        for doc in await store.review_groups(conn, ids, q.since, q.limit + 1):
            accepted = None
            if doc["accepted_revision"]:
                accepted = await store.revision_by_number(conn, doc["document_id"], doc["accepted_revision"])
            base_body = accepted["body"] if accepted is not None else ""
            proposals = await store.proposed_revisions(
                conn, doc["workspace_id"], doc["document_id"], doc["accepted_revision"]
            )
            revisions = []
            for brief in proposals[:QUEUE_REVISIONS]:
                row = await store.revision_by_id(conn, brief["revision_id"])
                assert row is not None
                change = text.make_diff(
                    base_body,
                    row["body"],
                    f"{doc['path']}@{doc['accepted_revision']}",
                    f"{doc['path']}@{row['revision']}",
                )
                revisions.append(
                    {
                        "revision": row["revision"],
                        "kind": row["kind"],
                        "author": row["author"],
                        "author_kind": row["author_kind"],
                        "reason": row["reason"],
                        "sources": render_sources(row["sources"]),
                        "recorded_at": row["recorded_at"],
                        "superseded_by": row["superseded_by"],
                        "diff": change[:QUEUE_DIFF_CHARS],
                        "diff_truncated": len(change) > QUEUE_DIFF_CHARS,
                    }
                )
            groups.append(
                {
                    "id": doc["first_id"],
                    "workspace": doc["workspace"],
                    "path": doc["path"],
                    "settled_revision": doc["accepted_revision"] or None,
                    "latest_revision": doc["latest_revision"],
                    "proposals": doc["proposals"],
                    "revisions": revisions,
                }
            )
        return groups

    groups = await ctx.db.read(read)
    return bounded_page(ctx, "documents", groups, q.limit, q.max_bytes, descending=False)
