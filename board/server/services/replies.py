"""Replies out to the forge: what of an issue's thread is posted back to the issue as a comment.

Opt-in per mapping (``reply_out``). Two things go back, each once:

- a bot's reply in the thread tagged ``forge`` (``"tags": ["forge"]``: the one mark every
  bot can set with the post it already makes, by API or MCP);
- the thread's done summary (``POST /api/threads/{id}/done``), by whoever closes it.

Each is enqueued in the outbox (``notifications``, a row naming the intake source and the
issue) inside the write of the message or the done transition, keyed ``forge:m<message
id>``, and sent by the dispatcher's ``forge`` sender (``board/server/outbox/forge.py``)
with the source's API token read at send time. The comment names who wrote it, links
to the thread, and carries :data:`MARKER`; intake knows its echo (the forge's
``issue_comment`` webhook of it) by the comment id recorded when it was sent, or by the
marker, and ignores it.
"""

from __future__ import annotations

from typing import Any

from ..store import replies as store
from ..store.connection import Connection
from . import outbound
from .context import Context

FORGE_TAG = "forge"
#: In every comment the board posts (an HTML comment: forges do not show it).
MARKER = "<!-- bot-board:"


async def _enqueue(
    conn: Connection, ctx: Context, thread_id: int, message_id: int, kind: str, subject: str, text: str
) -> bool:
    issue = await store.issue_of_thread(conn, thread_id)
    if issue is None or not issue.reply_out:
        return False
    reply = store.Reply(
        idem_key=f"forge:m{message_id}",
        issue=issue,
        thread_id=thread_id,
        kind=kind,
        subject=subject,
        text=text,
        link=f"/t/{thread_id}#m{message_id}",
        next_at=outbound.stamp(ctx.clock.now()),
    )
    added = await store.enqueue(conn, reply, ctx.now())
    if added:
        outbound.wake()
    return added


async def for_message(conn: Connection, ctx: Context, message: dict[str, Any]) -> bool:
    """A bot's reply tagged ``forge`` in an issue's thread: its comment, if the mapping replies out.

    Call it inside the message's write, for bots' messages the loop guard did not hold.
    """
    if FORGE_TAG not in message["tags"] or message["reply_to"] is None:
        return False
    subject = f"Posted by {message['author']}"
    return await _enqueue(
        conn, ctx, int(message["thread_id"]), int(message["id"]), "reply", subject, str(message["body"])
    )


async def for_done(
    conn: Connection, ctx: Context, handle: str, thread_id: int, event_id: int, summary: str
) -> bool:
    """The done summary of an issue's thread (``event_id``: the done event message)."""
    text = summary or "Done, with no summary."
    return await _enqueue(conn, ctx, thread_id, event_id, "done", f"Marked done by {handle}", text)


def view(row: Any) -> dict[str, Any]:
    """A reply out as the thread and the intake page show it: never the token, never the text."""
    return {
        "id": row["id"],
        "kind": row["kind"],
        "source": row["source"],
        "forge": row["forge"],
        "repository": row["repository"],
        "issue": row["issue"],
        "thread_id": row["thread_id"],
        "state": row["state"],
        "attempts": row["attempts"],
        "last_error": row["last_error"],
        "comment_id": row["remote_id"] or None,
        "created_at": row["created_at"],
        "sent_at": row["sent_at"],
    }


async def of_thread(conn: Connection, thread_id: int) -> list[dict[str, Any]]:
    return [view(r) for r in await store.of_thread(conn, thread_id)]
