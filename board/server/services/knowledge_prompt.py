"""What the knowledge base gives a bot's prompt: hooks the knowledge service fills.

The prompt composer (``services/prompt.py``) calls these and leaves out any
part that answers None. Until the knowledge base lands they answer None:
the prompt never shows invented knowledge.
"""

from __future__ import annotations

from aiosqlite import Connection


async def knowledge_index(conn: Connection, workspace_id: int) -> str | None:
    """The workspace's knowledge index for a bot's first turn (Markdown), or None."""
    return None


async def knowledge_pack(conn: Connection, workspace_id: int, thread_id: int) -> str | None:
    """The knowledge pack for one thread of a turn's batch (Markdown), or None."""
    return None
