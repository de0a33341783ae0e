"""Messages as the API shows them, kept in memory by id, so a page does not build each one again.

A stored message never changes: nothing the board does rewrites its body, tags, mentions,
meta or time, nor the workspace slug, channel slug, author handle or kind it shows (those
are never renamed), and an id is never handed out twice. So a message rendered once
(:func:`store.to_dict`) can answer every later read of it, in any process, with no
invalidation: a read selects the page's ids in its snapshot (one value a row instead of
seventeen, whose trip out of SQLite was most of a channel read's reader time) and renders
only the ids it has not seen. A deleted message is simply never asked for again.

The memory is bounded by the bytes its messages take as Python objects, the oldest
dropped first: not by their text's length, which a body past U+FFFF (4 bytes a character)
or a meta of many tiny values (``{}`` is 3 characters of JSON and 64 bytes) outgrows. A row
changed by hand on disk (outside the board) shows as it was read until the process restarts
or its entry is dropped.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from typing import Any

from ..store import messages as store
from ..store.connection import Connection
from ..store.rows import MessageRow

#: How many bytes the kept messages take (:func:`footprint`). 8 MB holds the newest few thousand
#: messages of a busy board.
MAX_BYTES = 8_000_000
#: A message's dict with its keys and short values (ids, names, its time), beside the rest.
ENTRY_BYTES = 800
#: A JSON column up to this long is walked to every value read from it; a longer one (a large
#: meta: rare, and walking its values costs several times their parse) is counted at
#: :data:`JSON_BYTES` a character.
WALKED = 512
#: The most a character of JSON takes once read: ``[[[]]]`` is a list in a list, 88 bytes for 2.
JSON_BYTES = 48
_CONTAINERS = (dict, list)  # what json.loads makes that holds other values


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
        size = footprint(row, message)
        with self._lock:
            if message["id"] not in self._items:
                self._items[message["id"]] = (message, size)
                self._bytes += size
            while self._bytes > self._max_bytes and self._items:
                _, (_, dropped) = self._items.popitem(last=False)
                self._bytes -= dropped
        return message


def footprint(row: MessageRow, message: dict[str, Any]) -> int:
    """The bytes ``message`` (``row`` rendered) takes: :data:`ENTRY_BYTES`, its body, and what
    was read from its JSON columns, walked, or at :data:`JSON_BYTES` a character when long."""
    size = ENTRY_BYTES + sys.getsizeof(message["body"])
    for text, value in (
        (row["tags"], message["tags"]),
        (row["mentions"], message["mentions"]),
        (row["meta"], message["meta"]),
    ):
        long = isinstance(text, str | bytes) and len(text) > WALKED
        size += JSON_BYTES * len(text) if long else _walked(value)
    return size


def _walked(value: Any) -> int:
    """The bytes of ``value`` (as ``json.loads`` made it) and of every value in it; a shared one
    (a small int, None) counts each time. Plain loops: it runs for every message rendered."""
    size = sys.getsizeof(value)
    if type(value) is dict:
        for key, item in value.items():
            size += sys.getsizeof(key) + (_walked(item) if type(item) in _CONTAINERS else sys.getsizeof(item))
    elif type(value) is list:
        for item in value:
            size += _walked(item) if type(item) in _CONTAINERS else sys.getsizeof(item)
    return size
