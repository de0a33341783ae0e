"""Stored knowledge rows as the API shows them: documents in lists, revisions, disputes, proposals."""

from __future__ import annotations

from typing import Any

from ...jsonvalues import strict_loads
from ...store.knowledge import UNREADABLE_SOURCES
from ...store.rows import Row
from . import text

PROPOSAL_DIFF_CHARS = 20_000
QUEUE_DIFF_CHARS = 8_000


def accepted_at(row: Row) -> str:
    return str(row["reviewed_at"] or row["recorded_at"])


def is_expired(row: Row, now: str) -> bool:
    return row["valid_to"] is not None and row["valid_to"] <= now


def holds_now(row: Row, now: str) -> bool:
    return not is_expired(row, now) and (row["valid_from"] is None or row["valid_from"] <= now)


def render_sources(raw: str) -> list[dict[str, Any]]:
    """Stored sources with a link to each that resolves on this board.

    The store answers a column it cannot read back as a note saying so; text that
    still fails the strict parser shows the same note, never a failed read.
    """
    try:
        sources = strict_loads(raw)
    except ValueError:
        sources = strict_loads(UNREADABLE_SOURCES)
    out = []
    for source in sources:
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


def dispute_dict(row: Row) -> dict[str, Any]:
    """An open dispute, or a resolved one with its outcome."""
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


def proposal_dict(shown: Row, pending: Row) -> dict[str, Any]:
    """A newer open proposal beside the revision shown, with its diff against the shown text."""
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


def queued_revision(path: str, accepted_revision: int, base_body: str, row: Row) -> dict[str, Any]:
    """A proposal in the review queue, with its diff against the accepted text."""
    change = text.make_diff(
        base_body, row["body"], f"{path}@{accepted_revision}", f"{path}@{row['revision']}"
    )
    return {
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
