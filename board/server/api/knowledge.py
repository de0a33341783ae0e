"""Knowledge routes: the same handlers under ``/api/knowledge`` (the caller's workspace, or
``workspace=``) and under ``/api/workspaces/{slug}/knowledge`` (a named workspace).

A document's path may hold ``/``, so its routes use ``{path:.+}``; the fixed
routes and the suffixed ones (``/history``, ``/diff``, ...) are registered
before the bare document route so they are matched first.
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidArgument
from ..services.knowledge import documents, inputs, moderation, reads
from ..services.knowledge import pack as knowledge_pack
from .responses import ANY_OBJECT, BOOL, INT, STR, TIME, array, obj, page, ref
from .route import Answer, Call, Route

DOC = "/{path:.+}"
#: A list of documents in the knowledge statistics.
STAT_LIST = obj({"count": INT, "documents": array(ANY_OBJECT), "has_more": BOOL})


def _workspace(call: Call, named: str | None) -> str | None:
    """The workspace a call names: the path's ``{slug}`` or the ``workspace`` field, which must agree."""
    slug = call.params.get("slug")
    if slug is None:
        return named
    if named is not None and named != slug:
        raise InvalidArgument(f"The path names workspace {slug} and workspace says {named}; drop one.")
    return slug


def _named(call: Call) -> str | None:
    args = call.body if call.body is not None else call.query
    return _workspace(call, getattr(args, "workspace", None))


async def listing(call: Call) -> Any:
    return await reads.list_documents(call.ctx, call.p, _named(call), call.query)


async def review_queue(call: Call) -> Any:
    query = call.query
    query.workspace = _named(call)
    return await moderation.review_queue(call.ctx, call.p, query)


async def pack(call: Call) -> Any:
    return await knowledge_pack.pack(call.ctx, call.p, _named(call), call.query)


async def stats(call: Call) -> Any:
    return await knowledge_pack.stats(call.ctx, call.p, _named(call), call.query)


async def get(call: Call) -> Any:
    return await reads.get_document(call.ctx, call.p, _named(call), call.arg("path"), call.query)


async def put(call: Call) -> tuple[int, Any]:
    return await documents.put(call.ctx, call.p, _named(call), call.arg("path"), call.body)


async def patch(call: Call) -> tuple[int, Any]:
    return await documents.patch(call.ctx, call.p, _named(call), call.arg("path"), call.body)


async def delete(call: Call) -> Any:
    return await documents.delete(call.ctx, call.p, _named(call), call.arg("path"), call.body)


async def history(call: Call) -> Any:
    return await reads.history(call.ctx, call.p, _named(call), call.arg("path"), call.query)


async def diff(call: Call) -> Any:
    return await reads.diff(call.ctx, call.p, _named(call), call.arg("path"), call.query)


async def dispute(call: Call) -> tuple[int, Any]:
    return await moderation.dispute(call.ctx, call.p, _named(call), call.arg("path"), call.body)


async def resolve(call: Call) -> Any:
    return await moderation.resolve(call.ctx, call.p, _named(call), call.arg("path"), call.body)


async def review(call: Call) -> Any:
    return await moderation.review(call.ctx, call.p, _named(call), call.arg("path"), call.body)


async def redact(call: Call) -> Any:
    return await moderation.redact(call.ctx, call.p, _named(call), call.arg("path"), call.body)


# (method, suffix, handler, summary, answer, body, query, status), in matching order.
_TABLE: list[tuple[str, str, Any, str, Answer, type | None, type | None, int]] = [
    (
        "GET",
        "",
        listing,
        "Current documents by path, or ranked by q; as_of, valid_at, prefix, status.",
        Answer(page("documents", ref("DocumentItem"), workspace=STR)),
        None,
        inputs.KnowledgeList,
        200,
    ),
    (
        "GET",
        "/review",
        review_queue,
        "Open proposals grouped by document, with diffs (humans).",
        Answer(
            page(
                "documents",
                obj(
                    {
                        "id": INT,
                        "path": STR,
                        "workspace": STR,
                        "latest_revision": INT,
                        "proposals": INT,
                        "revisions": array(ANY_OBJECT),
                    }
                ),
            )
        ),
        None,
        inputs.ReviewQueueQuery,
        200,
    ),
    (
        "GET",
        "/pack",
        pack,
        "A bounded pack: a channel's mandatory documents, then the best matches.",
        Answer(
            obj(
                {
                    "workspace": STR,
                    "text": STR,
                    "documents": array(
                        obj({"path": STR, "revision": INT, "mandatory": BOOL, "truncated": BOOL})
                    ),
                    "omitted": array(obj({"path": STR, "why": STR})),
                    "budget_tokens": INT,
                    "used_tokens": INT,
                }
            )
        ),
        None,
        knowledge_pack.PackQuery,
        200,
    ),
    (
        "GET",
        "/stats",
        stats,
        "Documents never read, shown but never read, and stale.",
        Answer(
            obj(
                {
                    "workspace": STR,
                    "documents": INT,
                    "shown": INT,
                    "reads": INT,
                    "never_read": STAT_LIST,
                    "shown_never_read": STAT_LIST,
                    "stale": STAT_LIST,
                }
            )
        ),
        None,
        knowledge_pack.StatsQuery,
        200,
    ),
    (
        "GET",
        DOC + "/history",
        history,
        "Every revision of a document, newest first.",
        Answer(page("revisions", ref("Revision"), path=STR, workspace=STR, latest_revision=INT)),
        None,
        inputs.HistoryQuery,
        200,
    ),
    (
        "GET",
        DOC + "/diff",
        diff,
        "A unified diff between two revisions.",
        Answer(obj({"path": STR, "from": INT, "to": INT, "diff": STR})),
        None,
        inputs.DiffQuery,
        200,
    ),
    (
        "POST",
        DOC + "/dispute",
        dispute,
        "Say a document is wrong (it shows as disputed).",
        Answer(
            obj(
                {
                    "path": STR,
                    "workspace": STR,
                    "dispute": ref("Dispute"),
                    "open_disputes": INT,
                    "status": STR,
                }
            )
        ),
        inputs.DisputeRequest,
        None,
        201,
    ),
    (
        "POST",
        DOC + "/resolve",
        resolve,
        "Close a document's disputes: upheld or dismissed.",
        Answer(
            obj(
                {
                    "path": STR,
                    "workspace": STR,
                    "outcome": STR,
                    "resolved": INT,
                    "open_disputes": INT,
                    "status": STR,
                }
            )
        ),
        inputs.ResolveRequest,
        None,
        200,
    ),
    (
        "POST",
        DOC + "/review",
        review,
        "Approve or reject a proposed revision, or all of them (humans).",
        Answer(
            obj(
                {
                    "path": STR,
                    "workspace": STR,
                    "decisions": array(obj({"revision": INT, "status": STR})),
                    "document_status": STR,
                    "latest_revision": INT,
                }
            )
        ),
        inputs.ReviewRequest,
        None,
        200,
    ),
    (
        "POST",
        DOC + "/redact",
        redact,
        "Erase a revision's text from the database, leaving a stub (humans).",
        Answer(
            obj(
                {
                    "path": STR,
                    "workspace": STR,
                    "revision": INT,
                    "redacted": obj({"at": TIME, "by": STR, "reason": STR}),
                }
            )
        ),
        inputs.RedactRequest,
        None,
        200,
    ),
    (
        "GET",
        DOC,
        get,
        "A document, one revision, or part of one (lines, section).",
        Answer(ref("Document")),
        None,
        inputs.DocumentQuery,
        200,
    ),
    (
        "PUT",
        DOC,
        put,
        "Write a document on top of base_revision (0 creates; 201 new, 200 changed).",
        Answer(ref("DocumentWrite"), (200, 201)),
        inputs.DocumentWrite,
        None,
        200,
    ),
    (
        "PATCH",
        DOC,
        patch,
        "Apply a unified diff to base_revision: all hunks or nothing (PATCH_FAILED).",
        Answer(ref("DocumentWrite"), (200, 201)),
        inputs.DocumentPatch,
        None,
        200,
    ),
    (
        "DELETE",
        DOC,
        delete,
        "Delete a document with a reason: a tombstone revision.",
        Answer(ref("DocumentWrite")),
        inputs.DocumentDelete,
        None,
        200,
    ),
]

PREFIXES = ("/api/knowledge", "/api/workspaces/{slug}/knowledge")

ROUTES = [
    Route(method, prefix + suffix, handler, summary, answer=answer, body=body, query=query, status=status)
    for prefix in PREFIXES
    for method, suffix, handler, summary, answer, body, query, status in _TABLE
]
