"""The references a revision or a dispute cites, checked inside its write.

A message or thread must be one the writer may read (the scope module
decides) in the document's workspace; a document must exist there. A source
that fails names its index, and says it is not there, as for an absent one.
"""

from __future__ import annotations

from typing import Any

from ...errors import InvalidArgument
from ...principal import Principal
from ...store import knowledge as store
from ...store import messages as message_store
from ...store.connection import Connection
from ...store.rows import Row, WorkspaceRow
from .. import scope
from . import text
from .inputs import Source


async def visible_message(
    conn: Connection, p: Principal, workspace: WorkspaceRow, message_id: int
) -> Row | None:
    """The message in ``workspace``, if ``p`` may read it (None as for an absent one)."""
    row = await message_store.by_id(conn, message_id)
    if row is None or row["workspace_id"] != workspace["id"] or not await scope.message_visible(conn, p, row):
        return None
    return row


async def check_sources(
    conn: Connection, p: Principal, workspace: WorkspaceRow, sources: list[Source]
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
            row = await visible_message(conn, p, workspace, message_id)
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
