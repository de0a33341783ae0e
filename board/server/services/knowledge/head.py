"""What a document shows: finding its head, refusing a deleted one, and recomputing it after a change.

A document's head (its ``kb_documents`` row) names the revision it shows,
the newest revision number, a pending proposal, its state (``live``,
``tombstoned``, ``hidden``) and its status. Every change recomputes it in the
same transaction, so reads join one revision per document.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import NotFound, Tombstoned
from ...principal import Principal
from ...store import knowledge as store
from ...store.connection import Connection
from ...store.rows import DocumentRow, Row, WorkspaceRow
from .. import scope
from .render import accepted_at


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


async def find_document(
    conn: Connection, p: Principal, slug: str | None, path: str
) -> tuple[WorkspaceRow, DocumentRow]:
    """The workspace ``p`` acts in and its document at ``path`` (any state), or NOT_FOUND."""
    workspace = await scope.resolve(conn, p, slug)
    doc = await store.document_by_path(conn, workspace["id"], path)
    if doc is None or doc["latest_revision"] == 0:
        raise NotFound("document")
    return workspace, doc


async def live_document(conn: Connection, workspace: WorkspaceRow, path: str) -> DocumentRow:
    """A document that shows something now: NOT_FOUND if none, TOMBSTONED if deleted."""
    doc = await store.document_by_path(conn, workspace["id"], path)
    if doc is None or doc["state"] == "hidden":
        raise NotFound("document")
    if doc["state"] == "tombstoned":
        shown = await store.revision_by_id(conn, doc["current_id"])
        assert shown is not None
        raise tombstoned(doc["path"], shown)
    return doc


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
