"""Whether a daemon waits for a bot: the time it last long-polled the bot's wake feed.

A message to a bot that no daemon has waited for in ``BOARD_UNREACHABLE_AFTER``
seconds shows as ``unreachable`` (``delivery.py``). The time is written at most
every :data:`WAIT_WRITE_EVERY` seconds per bot, so a daemon's re-poll after every
wake costs no write. Each board's marks sit on its ``Context``.
"""

from __future__ import annotations

from ..clock import Clock, iso
from ..hub import Key, Signal
from ..principal import Principal
from ..store import delivery as store
from ..store.connection import Connection
from ..store.writer import Store, emit

WAIT_WRITE_EVERY = 30.0
DELIVERY = "delivery"  # the kind of hub key that delivery changes are announced under


def delivery_key(workspace_id: int) -> Key:
    """The hub key of a workspace's delivery changes (a page's live feed follows it)."""
    return (DELIVERY, workspace_id)


class WaitMarks:
    """One board's last write of each bot's ``last_wait_at``.

    A bot that was unreachable (nothing written for ``unreachable_after``) and waits
    again changes its messages' states: its workspace's pages are told (message id 0).
    """

    def __init__(self, db: Store, clock: Clock, unreachable_after: float) -> None:
        self._db = db
        self._clock = clock
        self._unreachable_after = unreachable_after
        self._written: dict[int, float] = {}

    async def touch(self, p: Principal) -> None:
        now = self._clock.monotonic()
        last = self._written.get(p.agent_id)
        if last is not None and now - last < WAIT_WRITE_EVERY:
            return
        self._written[p.agent_id] = now
        returning = last is None or now - last > self._unreachable_after
        stamp = iso(self._clock.now())

        async def write(conn: Connection) -> None:
            await store.touch_wait(conn, p.agent_id, stamp)
            if returning and p.workspace_id is not None:
                emit(Signal(delivery_key(p.workspace_id), 0))

        await self._db.write(write)
