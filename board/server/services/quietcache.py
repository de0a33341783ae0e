"""Who has quiet hours, kept in memory so a post's enqueue is one statement.

Read once, then dropped by every change of anyone's quiet hours: this process's (the
``QUIET`` signal its write emits, published after the commit) and, on PostgreSQL,
another's (the same signal, announced to every process). A read that began before a drop
is not kept, so what is cached is never older than the last change it heard of.
"""

from __future__ import annotations

from ..hub import Key
from ..store import notifications as store
from ..store.connection import Connection

#: Signalled after a commit that changed someone's quiet hours.
QUIET: Key = ("quiet", 0)


class QuietCache:
    def __init__(self) -> None:
        self._ids: frozenset[int] | None = None
        self._generation = 0

    async def ids(self, conn: Connection) -> frozenset[int]:
        """The humans with quiet hours (read from ``conn`` when not cached)."""
        if self._ids is not None:
            return self._ids
        generation = self._generation
        ids = await store.quiet_ids(conn)
        if generation == self._generation:
            self._ids = ids
        return ids

    def drop(self) -> None:
        self._ids = None
        self._generation += 1
