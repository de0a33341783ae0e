"""Messages as the API shows them, kept in memory by id, so a page does not build each one again.

A stored message never changes: nothing the board does rewrites its body, tags, mentions,
meta or time, nor the workspace slug, channel slug, author handle or kind it shows (those
are never renamed), and an id is never handed out twice. So a message rendered once
(:func:`store.to_dict`) can answer every later read of it, in any process, with no
invalidation: a read selects the page's ids in its snapshot (one value a row instead of
seventeen, whose trip out of SQLite was most of a channel read's reader time) and renders
only the ids it has not seen. A deleted message is simply never asked for again.

The memory is bounded by about the bytes it holds; the oldest entries go first. A row
changed by hand on disk (outside the board) shows as it was read until the process restarts
or its entry is dropped.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from ..store import messages as store
from ..store.connection import Connection
from ..store.rows import MessageRow

#: About how many bytes the kept messages take: their stored text (body, tags, mentions, meta)
#: and :data:`ENTRY_BYTES` each. 8 MB holds the newest few thousand messages of a busy board.
MAX_BYTES = 8_000_000
#: A message's cost beside its text: the dict, its keys and its small values.
ENTRY_BYTES = 1_000


class RenderedMessages:
    """What :func:`store.to_dict` made of each message read, oldest first; safe across reader threads."""

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self._items: OrderedDict[int, tuple[dict[str, Any], int]] = OrderedDict()
        self._bytes = 0
        self._max_bytes = max_bytes
        self._lock = threading.Lock()  # readers run in threads of their own

    async def messages(self, conn: Connection, ids: list[int]) -> list[dict[str, Any]]:
        """These messages (all in ``conn``'s snapshot), in order: copies the caller may extend."""
        items = self._items
        found = {i: hit[0] for i in ids if (hit := items.get(i)) is not None}
        missing = [i for i in ids if i not in found]
        if missing:
            for row in await store.by_ids(conn, missing):
                found[row["id"]] = self._put(row)
        return [dict(found[i]) for i in ids]

    def _put(self, row: MessageRow) -> dict[str, Any]:
        message = store.to_dict(row)
        size = ENTRY_BYTES + sum(_length(row[c]) for c in ("body", "tags", "mentions", "meta"))
        with self._lock:
            if message["id"] not in self._items:
                self._items[message["id"]] = (message, size)
                self._bytes += size
            while self._bytes > self._max_bytes and self._items:
                _, (_, dropped) = self._items.popitem(last=False)
                self._bytes -= dropped
        return message


def _length(value: Any) -> int:
    """A stored text's length (near its bytes in memory); a damaged column may hold something else."""
    return len(value) if isinstance(value, str | bytes) else 0
