"""What the knowledge base gives a bot's prompt: the index for its first turn, a pack per thread.

The prompt composer (``services/prompt.py``) calls these on its own read
connection and leaves out any part that answers None.
"""

from __future__ import annotations

from typing import Any

from ...principal import Principal
from ...store import knowledge as store
from ...store import workspaces as workspace_store
from ...store.connection import Connection
from .pack import PackQuery, build, clip, why_not

INDEX_PATH = "INDEX.md"
INDEX_CHARS = 4000
INDEX_DOCUMENTS = 50
PACK_TOKENS = 400


async def knowledge_index(conn: Connection, workspace_id: int, now: str) -> str | None:
    """The workspace's ``INDEX.md`` (clipped), else a list of its documents; None when empty."""
    rows = await store.current_by_paths(conn, workspace_id, [INDEX_PATH])
    if rows and why_not(rows[0], now) is None and rows[0]["body"].strip():
        excerpt, _ = clip(rows[0]["body"], INDEX_CHARS)
        return f"{INDEX_PATH} (revision {rows[0]['revision']}):\n{excerpt}\n"
    documents = await store.list_current(
        conn, workspace_id, store.ListFilter(now=now), after="", limit=INDEX_DOCUMENTS + 1
    )
    if not documents:
        return None
    lines = []
    for d in documents[:INDEX_DOCUMENTS]:
        title = f": {d['title']}" if d["title"] else ""
        lines.append(f"- {d['path']} (revision {d['revision']}, {d['doc_status']}){title}")
    if len(documents) > INDEX_DOCUMENTS:
        lines.append("- … more: GET /api/knowledge")
    return "\n".join(lines) + "\n"


async def knowledge_pack(
    conn: Connection, bot: Principal, workspace_id: int, thread_id: int, now: str
) -> tuple[str | None, list[int], list[dict[str, Any]]]:
    """The knowledge pack for one thread of a turn's batch, the ids of the documents it
    shows, and those documents (path, revision, title, ...) for a handoff to name."""
    workspace = await workspace_store.by_id(conn, workspace_id)
    assert workspace is not None  # the bot's own
    result, shown = await build(
        conn, bot, workspace, PackQuery(thread=thread_id, budget_tokens=PACK_TOKENS), now
    )
    return (result["text"] or None), shown, list(result["documents"])
