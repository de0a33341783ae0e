"""Moderation: disputes and their resolution, the review of proposals and its queue, redaction.

Anyone who may write a document may dispute it or resolve its disputes; only a
human reviews proposals and redacts a revision's text.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ...errors import InvalidArgument, LimitExceeded, NotFound
from ...principal import Principal
from ...store import knowledge as store
from ...store.connection import Connection
from .. import actions, audit, scope
from ..context import Context
from ..paging import Page, bounded_page
from . import text
from .head import find_document, live_document, refresh_head
from .inputs import DisputeRequest, RedactRequest, ResolveRequest, ReviewQueueQuery, ReviewRequest
from .render import queued_revision, render_sources
from .sources import check_sources

MAX_OPEN_DISPUTES = 20
QUEUE_REVISIONS = 20


async def dispute(
    ctx: Context, p: Principal, slug: str | None, path: str, req: DisputeRequest
) -> tuple[int, dict[str, Any]]:
    """Say a document is wrong: it shows as ``disputed`` until someone resolves it."""
    path = text.check_path(path)

    async def write(conn: Connection) -> dict[str, Any]:
        workspace = await scope.resolve(conn, p, slug)
        scope.require_writable(workspace)
        doc = await live_document(conn, workspace, path)
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
        doc = await live_document(conn, workspace, path)
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
        workspace, doc = await find_document(conn, p, slug, path)
        actions.require(p, "kb.review")
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
        workspace, doc = await find_document(conn, p, slug, path)
        actions.require(p, "kb.redact")
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
    await ctx.db.scrub()  # old copies of the erased text may still sit in the log or dead rows
    return result


async def review_queue(ctx: Context, p: Principal, q: ReviewQueueQuery) -> Page:
    """Open proposals grouped by document, oldest first, each with its diff against the accepted text."""

    async def read(conn: Connection) -> list[dict[str, Any]]:
        workspace = await scope.resolve_optional(conn, p, q.workspace)
        actions.require(p, "kb.review")
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
                revisions.append(queued_revision(doc["path"], doc["accepted_revision"], base_body, row))
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
