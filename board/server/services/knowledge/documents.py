"""Writing documents: whole bodies, diffs and tombstones, each one revision on a compare-and-set.

Every change is one job in the writer's transaction: it reads the document's
head, checks the base revision (compare-and-set; the database refuses a
revision that does not follow the latest one, too), appends a revision, moves
the head and its full-text entry, and records the audit row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...errors import InvalidArgument, NotFound, VersionConflict
from ...hub import Key, Signal
from ...principal import Principal
from ...store import knowledge as store
from ...store.connection import Connection
from ...store.rows import Row, WorkspaceRow
from ...store.writer import emit
from .. import audit, outbound, scope
from ..context import Context
from . import text
from .head import refresh_head, tombstoned
from .inputs import DocumentDelete, DocumentPatch, DocumentWrite, Source, normalize_time
from .sources import check_sources

#: Signalled after a commit that added a proposal waiting for review (humans' open tabs).
REVIEWS: Key = ("kb-review", 0)


def needs_review(policy: str, p: Principal) -> bool:
    """Whether the workspace's review policy makes this writer's revisions proposals."""
    return policy == "all" or (policy == "bots" and p.is_bot)


def conflict(path: str, base: int, latest: int) -> VersionConflict:
    return VersionConflict(
        f"{path} is at revision {latest}, not {base}: read it again, merge, and retry.",
        path=path,
        current_revision=latest,
        base_revision=base,
    )


def _validity(given: str | None, name: str, base: Row | None, inherit_from: str) -> str | None:
    """absent keeps the base revision's value, '' clears it, a time sets it."""
    if given is None:
        return base[inherit_from] if base is not None and base["kind"] == "write" else None
    if given == "":
        return None
    return normalize_time(given, name)


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
    conn: Connection, ctx: Context, p: Principal, workspace: WorkspaceRow, path: str, change: Change
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
    if inserted is None:
        # Another writer took this number first, so the document is at least at it. Nothing more
        # is read: on PostgreSQL the refused insert aborted the transaction until the job's
        # savepoint is rolled back to, and any statement now would fail instead of the conflict.
        raise conflict(doc_path, change.base_revision, revision)
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
    if proposed:
        emit(Signal(REVIEWS, revision))
        await outbound.enqueue(
            conn,
            ctx,
            kind="review",
            event_key=f"kb:{document_id}:{revision}",
            to=await outbound.everyone(conn),
            subject=f"{p.handle} proposes a change to {doc_path} in {workspace['slug']}",
            text=change.reason or text.excerpt_of(body),
            link="/kb/review",
            actor_id=p.agent_id,
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


def _write_change(
    req: DocumentWrite | DocumentPatch, *, body: str | None = None, diff: str | None = None
) -> Change:
    """The revision a write (``body``) or a patch (``diff``) asks for."""
    return Change(
        kind="write",
        base_revision=req.base_revision,
        reason=req.reason,
        body=body,
        diff=diff,
        sources=tuple(req.sources),
        valid_from=req.valid_from,
        valid_to=req.valid_to,
        superseded_by=req.superseded_by,
        override_tombstone=req.override_tombstone,
    )


async def put(
    ctx: Context, p: Principal, slug: str | None, path: str, req: DocumentWrite
) -> tuple[int, dict[str, Any]]:
    """Write a whole body on top of ``base_revision`` (0 creates)."""
    return await _write(ctx, p, slug, path, _write_change(req, body=text.check_body(req.body)))


async def patch(
    ctx: Context, p: Principal, slug: str | None, path: str, req: DocumentPatch
) -> tuple[int, dict[str, Any]]:
    """Apply a unified diff to revision ``base_revision``: every hunk applies, or nothing changes."""
    return await _write(ctx, p, slug, path, _write_change(req, diff=req.diff))


async def delete(
    ctx: Context, p: Principal, slug: str | None, path: str, req: DocumentDelete
) -> dict[str, Any]:
    """Append a tombstone: the document leaves lists, search and plain reads; history stays."""
    change = Change(kind="tombstone", base_revision=req.base_revision, reason=req.reason)
    _, result = await _write(ctx, p, slug, path, change)
    return result | {"deleted": result["status"] != "proposed"}
