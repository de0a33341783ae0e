"""The knowledge base: a workspace's tree, one document with its trust and history, the review queue."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..errors import InvalidArgument
from ..services import workspaces
from ..services.knowledge import documents, inputs, moderation, reads
from ..validation import whole_number
from .board import all_workspaces
from .routing import NOTHING_KEPT, Kept, PageCall, PageRoute, redirect

DOC = "/kb/{slug}/{path:.+}"


def tree(docs: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Documents grouped by folder, folders in path order."""
    folders: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        folder = doc["path"].rpartition("/")[0]
        folders.setdefault(folder, []).append(doc)
    return sorted(folders.items())


async def index(call: PageCall) -> web.StreamResponse:
    q = call.query(inputs.KnowledgeList)
    spaces = await all_workspaces(call.ctx, call.p)
    if q.workspace is None:
        q.workspace = workspaces.first_to_show(spaces)
    q.limit = 500 if q.q is None else q.limit
    page = await reads.list_documents(call.ctx, call.p, q.workspace, q)
    found = page["documents"]
    return call.render(
        "kb.html",
        workspaces=spaces,
        workspace=q.workspace,
        q=q,
        folders=tree(found) if q.q is None else [("", found)] if found else [],  # none: the page says so
        next_after=page.get("next_since") or page.get("next_after"),
    )


def _doc_url(slug: str, path: str) -> str:
    return f"/kb/{slug}/{path}"


async def document(call: PageCall, kept: Kept = NOTHING_KEPT) -> web.StreamResponse:
    """One document's page; ``kept`` a refused form of it (its reason typed) to show again."""
    slug, path = call.arg("slug"), call.arg("path")
    query = dict(call.request.query)
    revision = whole_number("revision", query["revision"], query=True) if query.get("revision") else None
    view = inputs.DocumentQuery(workspace=slug, revision=revision)
    doc = await reads.get_document(call.ctx, call.p, slug, path, view)
    history = await reads.history(
        call.ctx, call.p, slug, path, inputs.HistoryQuery(workspace=slug, limit=50, view="compact")
    )
    diff = None
    if "to" in query or "from" in query:
        diff = await reads.diff(
            call.ctx,
            call.p,
            slug,
            path,
            inputs.DiffQuery(
                workspace=slug,
                from_=whole_number("from", query["from"], query=True) if query.get("from") else None,
                to=whole_number("to", query["to"], query=True) if query.get("to") else None,
            ),
        )
    return call.render(
        "kb_doc.html",
        doc=doc,
        history=history["revisions"],
        diff=diff,
        workspace=slug,
        doc_path=path,
        kept=kept,
    )


async def act(call: PageCall) -> web.StreamResponse:
    """Review, resolve, dispute, delete or redact from the document's page."""
    slug, path, action = call.arg("slug"), call.arg("path"), call.arg("action")
    ctx, p = call.ctx, call.p
    if action == "review":
        await moderation.review(ctx, p, slug, path, call.parsed_form(inputs.ReviewRequest))
    elif action == "resolve":
        await moderation.resolve(ctx, p, slug, path, call.parsed_form(inputs.ResolveRequest))
    elif action == "dispute":
        await moderation.dispute(ctx, p, slug, path, call.parsed_form(inputs.DisputeRequest))
    elif action == "delete":
        await documents.delete(ctx, p, slug, path, call.parsed_form(inputs.DocumentDelete))
    elif action == "redact":
        # Redaction erases text for good: the form asks for the word typed out.
        if call.form.pop("confirm", "") != "redact":
            raise InvalidArgument("Type redact to confirm: the text is erased for good.")
        await moderation.redact(ctx, p, slug, path, call.parsed_form(inputs.RedactRequest))
    else:
        raise InvalidArgument(f"Unknown action {action!r}.")
    return redirect(_doc_url(slug, path))


async def review_queue(call: PageCall) -> web.StreamResponse:
    q = call.query(inputs.ReviewQueueQuery)
    page = await moderation.review_queue(call.ctx, call.p, q)
    return call.render("kb_review.html", groups=page["documents"], next_since=page.get("next_since"), q=q)


async def review_from_queue(call: PageCall) -> web.StreamResponse:
    """Approve or reject one proposal, or every open one of a document."""
    slug = call.form.pop("workspace", "")
    path = call.form.pop("path", "")
    req = call.parsed_form(inputs.ReviewRequest)
    await moderation.review(call.ctx, call.p, slug, path, req)
    return redirect("/kb/review")


ROUTES = [
    PageRoute("GET", "/kb", index, "A workspace's documents as a tree; search."),
    PageRoute("GET", "/kb/review", review_queue, "The review queue, grouped by document."),
    PageRoute(
        "POST", "/kb/review", review_from_queue, "Approve or reject one proposal or all of a document."
    ),
    PageRoute("GET", DOC, document, "One document: status, sources, history, diff, disputes."),
    PageRoute(
        "POST",
        "/kb/{slug}/{path:.+}/{action:review|resolve|dispute|delete|redact}",
        act,
        "Review, resolve, dispute, delete or redact.",
        refill=document,
    ),
]
