"""Reading knowledge: lists and search, one document (or a part of it), its history, diffs.

Reads go to the heads and join one revision per document, so they cost the
same with 1 or 1,000 revisions. Each read notes what it showed in the
board's read counts.
"""

from __future__ import annotations

from typing import Any

from ...errors import InvalidArgument, NotFound
from ...principal import Principal
from ...store import knowledge as store
from ...store.connection import Connection
from ...store.rows import Row
from ...store.search import Terms, bounded, snippet, start_of
from .. import scope
from ..context import Context
from ..messages import fts_query
from ..paging import Page, bounded_page
from . import text
from .head import find_document, tombstoned
from .inputs import DiffQuery, DocumentQuery, HistoryQuery, KnowledgeList, normalize_time
from .render import accepted_at, dispute_dict, doc_item, proposal_dict, revision_dict


def _times(as_of: str | None, valid_at: str | None) -> tuple[str | None, str | None]:
    """The query's times as stored (its parameters, so refusals call them so)."""
    return normalize_time(as_of, "as_of", query=True), normalize_time(valid_at, "valid_at", query=True)


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
    for at, row in enumerate(rows):
        item = doc_item(row, now, historical=historical)
        if match is not None and at < q.limit:  # not the row that only says there are more
            item["snippet"] = _snippet(match, row)
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
    await ctx.read_counts.add([ids[item["path"]] for item in page["documents"]], "shown")
    return page


def _snippet(match: Terms, row: Row) -> str:
    """A hit's snippet: SQLite's, or on PostgreSQL one cut from the body's start
    (store.knowledge._snippet), with ``…`` after it where the body went on."""
    if row["snippet_text"] is None:
        return bounded(row["snippet"] or "")
    text, cut = start_of(row["snippet_text"], store.SNIPPET_FROM)
    return snippet(match, text, cut=cut)


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
        workspace, doc = await find_document(conn, p, slug, path)
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
        "proposal": proposal_dict(row, pending) if pending is not None else None,
        "disputes": [dispute_dict(d) for d in disputes],
    }
    if current_read:
        item["last_dispute"] = dispute_dict(last_dispute) if last_dispute is not None else None
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
    await ctx.read_counts.add([doc["document_id"]], "read")
    return item


async def history(ctx: Context, p: Principal, slug: str | None, path: str, q: HistoryQuery) -> Page:
    """Every revision, newest first; redacted bodies are empty beside their stubs."""
    path = text.check_path(path)
    now = ctx.now()

    async def read(conn: Connection) -> tuple[Any, Row, list[Row]]:
        workspace, doc = await find_document(conn, p, slug, path)
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
        _, doc = await find_document(conn, p, slug, path)
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
