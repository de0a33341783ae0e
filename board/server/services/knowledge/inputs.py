"""What callers send the knowledge base: request bodies and queries, and the times they name."""

from __future__ import annotations

from dataclasses import dataclass

from ...clock import iso, parse_time
from ...errors import InvalidArgument
from ...validation import arg, the
from . import text

SLUG_PATTERN = r"[a-z0-9._-]{2,64}"
MAX_REASON = 2000
MAX_SOURCES = 50
STATUSES = ("proposed", "settled", "disputed", "superseded")


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
    reason: str = arg(blank=False, max_len=MAX_REASON, multiline=True)
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
    reason: str = arg(blank=False, max_len=MAX_REASON, multiline=True)
    sources: list[Source] = arg([], max_items=MAX_SOURCES)
    valid_from: str | None = arg(None, max_len=40)
    valid_to: str | None = arg(None, max_len=40)
    superseded_by: str | None = arg(None, max_len=text.MAX_PATH)
    override_tombstone: bool = arg(False)
    workspace: str | None = WorkspaceArg


@dataclass
class DocumentDelete:
    base_revision: int = arg(min=1)
    reason: str = arg(blank=False, max_len=MAX_REASON, multiline=True)
    workspace: str | None = WorkspaceArg


@dataclass
class DisputeRequest:
    reason: str = arg(blank=False, max_len=MAX_REASON, multiline=True)
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
    reason: str = arg(blank=False, max_len=MAX_REASON, multiline=True)
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


def normalize_time(value: str | None, name: str, *, query: bool = False) -> str | None:
    """A named time as stored (RFC 3339, UTC), or INVALID_ARGUMENT naming the field (the
    parameter, of a ``query`` string)."""
    if value is None:
        return None
    try:
        return iso(parse_time(value))
    except ValueError:
        raise InvalidArgument(
            f"{the(name, query=query)} is not an RFC 3339 time (2026-12-15T00:00:00Z).", field=name
        ) from None
