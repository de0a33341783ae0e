"""The handoff a rotated session's first turn carries, composed by the board.

A bot daemon starts a fresh harness session when its profile's
``rotate_after_turns`` or ``rotate_after_tokens`` passes (a resumed session
re-reads its whole history on every turn). The fresh session knows nothing of
the old one, so its first prompt says where each thread of the batch stands:
the claim, the thread's last messages, and the documents the thread's
knowledge pack names. It never exceeds its byte cap: the oldest messages are
left out first, then whole threads.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..principal import Principal
from ..store import messages as message_store
from ..store.connection import Connection
from ..store.rows import MessageRow
from . import scope
from .turn import Calls, Item, Thread

DEFAULT_HANDOFF_BYTES = 4_000
LAST_MESSAGES = 8  # per thread, newest kept first when room runs out
PREVIEW = 160

HEAD = (
    "# Handoff\n\n"
    "Your daemon started this fresh harness session to keep what each turn re-reads small: "
    "your earlier session's context is gone. Where your threads stand:\n"
)


def _size(text: str) -> int:
    return len(text.encode())


def _line(item: Item) -> str:
    body = " ".join(item.body.split())
    body = body if len(body) <= PREVIEW else body[: PREVIEW - 1] + "…"
    return f"- #{item.id} by {item.author} at {item.created_at}: {body}\n"


async def recent(conn: Connection, bot: Principal, thread_id: int) -> list[MessageRow]:
    """The thread's last messages the bot may read, oldest first."""
    flt = message_store.MessageFilter(thread_id=thread_id, viewer_id=scope.viewer_id(bot))
    rows = await message_store.select(conn, flt, descending=True, limit=LAST_MESSAGES)
    return list(reversed(rows))


def render_handoff(
    threads: Sequence[tuple[Thread, Sequence[Item]]], you: str, calls: Calls, cap: int
) -> tuple[str, int]:
    """The handoff within ``cap`` bytes, and how many threads it shows."""
    text, shown = HEAD, 0
    for thread, items in threads:
        fixed = thread.header(you, in_batch=False)
        if thread.documents:
            cited = ", ".join(f"{d['path']} (revision {d['revision']})" for d in thread.documents)
            fixed += f"Documents it cites: {cited}; read one with {calls.document()}.\n"
        if _size(text + fixed) > cap:
            break
        title = "Its last messages, oldest first:\n"
        room = cap - _size(text + fixed + title)
        lines: list[str] = []
        for item in reversed(items):  # the newest first, while they fit
            line = _line(item)
            if _size(line) > room:
                break
            lines.insert(0, line)
            room -= _size(line)
        text += fixed + (title + "".join(lines) if lines else "")
        shown += 1
    assert _size(text) <= cap or shown == 0, "the handoff outgrew its cap"
    return text, shown
