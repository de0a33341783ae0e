"""How often documents are shown and read: counted in memory, added to the documents in one write.

Each board's counts sit on its ``Context``. They are written when the oldest
is ``FLUSH_AFTER_SECONDS`` old or ``FLUSH_AFTER_DOCUMENTS`` documents wait (checked
as reads note more), before stats are computed (so stats are exact), and when
the board stops (``housekeeping``), so a clean stop loses none.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

from ... import logs
from ...clock import Clock, iso
from ...store import knowledge as store
from ...store.writer import Store

FLUSH_AFTER_SECONDS = 2.0
FLUSH_AFTER_DOCUMENTS = 500

log = logging.getLogger(__name__)


@dataclass
class _Pending:
    shown: int = 0
    read: int = 0
    last_shown_at: str | None = None
    last_read_at: str | None = None


class ReadCounts:
    """One board's shown/read counts not yet written."""

    def __init__(self, db: Store, clock: Clock) -> None:
        self._db = db
        self._clock = clock
        self._pending: dict[int, _Pending] = {}
        self._since: float | None = None

    async def add(self, document_ids: list[int], what: Literal["shown", "read"]) -> None:
        """Note documents shown in a list or pack (``shown``) or read (``read``); write them when due."""
        if not document_ids:
            return
        now = iso(self._clock.now())
        for document_id in document_ids:
            entry = self._pending.setdefault(document_id, _Pending())
            if what == "shown":
                entry.shown += 1
                entry.last_shown_at = now
            else:
                entry.read += 1
                entry.last_read_at = now
        if self._since is None:
            self._since = self._clock.monotonic()
        due = self._clock.monotonic() - self._since >= FLUSH_AFTER_SECONDS
        if due or len(self._pending) >= FLUSH_AFTER_DOCUMENTS:
            try:
                await self.flush()
            except Exception:  # a lost count must not fail the read that noted it
                logs.failed(log, "could not write knowledge read counts")

    async def flush(self) -> None:
        """Write every count gathered so far in one write."""
        if not self._pending:
            return
        pending, self._pending, self._since = self._pending, {}, None
        rows = [(doc, e.shown, e.read, e.last_shown_at, e.last_read_at) for doc, e in pending.items()]
        await self._db.write(lambda conn: store.add_counts(conn, rows))
