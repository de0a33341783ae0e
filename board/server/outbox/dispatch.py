"""The dispatcher: sends due outbox rows after their commit, retries with backoff, records all.

It runs with the app (``housekeeping.outbox``, a clean-up context) where the ``notify`` duty
is held: on PostgreSQL one board process dispatches at a time (an advisory lock), the
others wait to take over. Taking rows is a write (``pending`` to ``sending``), and every
write takes its turn, so no row is taken twice even without the duty.

What survives a stop: rows are only ever ``pending`` (due at ``next_at``), ``sending``,
``sent`` or ``failed``, all stored. A stop between attempts leaves the row ``pending``
with its next time; a process that dies mid-send leaves it ``sending``, and the next
dispatcher to take the duty sets it ``pending`` again (the one window where a receiver may
see a row twice: each send carries the row's ``idem_key`` to deduplicate on).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
from datetime import timedelta
from typing import Any

import aiohttp

from .. import logs
from ..clock import parse_time
from ..hub import Waiter
from ..services import outbound
from ..services.context import Context
from ..settings import Settings, announced_url
from ..store import notifications as store
from ..store import replies
from ..store.connection import Connection
from ..store.rows import Row
from . import forge  # noqa: F401  (its decorator registers the forge sender)
from .guard import GuardedConnector
from .senders import SENDERS, Delivery, Note, SendFailed

log = logging.getLogger(__name__)

BATCH = 50


def absolute_link(settings: Settings, link: str) -> str:
    """A row's link as a reader away from the board opens it: a board path gets the board's
    announced address (a wildcard bind is no address to open, nor is a bare IPv6 one)."""
    return announced_url(settings) + link if link.startswith("/") else link


class Dispatcher:
    """Sends the outbox; ``attempts``, ``backoff`` (seconds, doubled per retry) and ``timeout``
    (seconds per send) are attributes so a test can shorten them."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.attempts = 6
        self.backoff = 10.0
        self.timeout = 10.0
        self.gather = 0.05  # seconds from a commit's wake to the pass, so a burst goes in one batch
        # Every enqueue wakes it, another process's too (its signal comes with NOTIFY board);
        # look this often besides, for a wake a reconnecting listener lost.
        self.poll = 5.0
        self.duty_retry = 15.0
        self.http: aiohttp.ClientSession | None = None
        self._stopping = asyncio.Event()
        self._waiter: Waiter | None = None

    async def run(self) -> None:
        """Dispatch while holding the ``notify`` duty, until :meth:`stop`; wait for the duty otherwise."""
        allow_local = bool(self.ctx.settings.notify_allow_local)
        self.http = aiohttp.ClientSession(connector=None if allow_local else GuardedConnector())
        try:
            while not self._stopping.is_set():
                async with self.ctx.db.duty("notify") as mine:
                    if mine:
                        await self._dispatch_while_running()
                if mine:  # ended by a stop, or by its lock lost with its connection: ask again now
                    continue
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), self.duty_retry)
        finally:
            await self.http.close()

    @property
    def dispatching(self) -> bool:
        """Whether this process holds the ``notify`` duty and sends the outbox now."""
        return self._waiter is not None

    def stop(self) -> None:
        """Finish the pass under way and stop; a send in flight ends at its timeout or is cancelled."""
        self._stopping.set()
        if self._waiter is not None:
            self._waiter.wake()

    async def _dispatch_while_running(self) -> None:
        """Passes until :meth:`stop`. A pass that fails (the database too: the duty's lock may
        outlive the other connections) is tried again at the next wake or poll, not ended on."""
        self._waiter = waiter = self.ctx.hub.subscribe([outbound.QUEUED], request=False)
        left_mid_send = True  # by the last holder: pending again before this one takes any row
        try:
            while not self._stopping.is_set():
                idle = self.poll
                try:
                    if left_mid_send:
                        released = await self.ctx.db.write(store.release_sending)
                        left_mid_send = False
                        if released:
                            log.info("outbox: %d notifications left mid-send are pending again", released)
                    await self.send_due()
                    idle = await self._idle_for()
                except Exception:
                    logs.failed(log, "outbox: a pass failed; trying again")
                if self._stopping.is_set():
                    return
                await waiter.wait(idle)
                if waiter.take() and not self._stopping.is_set():
                    # Woken by a commit: let its answer go out, and what follows it gather.
                    await asyncio.sleep(self.gather)
        finally:
            self._waiter = None
            self.ctx.hub.unsubscribe(waiter)

    async def _idle_for(self) -> float:
        due = await self.ctx.db.read(store.next_due)
        if due is None:
            return self.poll
        left = (parse_time(due) - self.ctx.clock.now()).total_seconds()
        return min(max(left, 0.0), self.poll)

    async def send_due(self) -> int:
        """Send every row due now, a batch at a time; how many were tried.

        A batch is one write to take its rows, the sends at once, and one write for all
        their outcomes: a burst of notifications costs two writes per batch, not per row.
        """
        tried = 0
        while True:
            rows = await self.ctx.db.write(self._take)
            if not rows:
                return tried
            outcomes = await asyncio.gather(*(self._attempt(r) for r in rows))
            await self.ctx.db.write(functools.partial(self._record, rows=rows, outcomes=outcomes))
            tried += len(rows)

    async def _take(self, conn: Connection) -> list[Row]:
        return await store.take_due(conn, outbound.stamp(self.ctx.clock.now()), BATCH)

    async def _attempt(self, row: Row) -> tuple[str | None, str]:
        """Send one row: (None, what the receiver named it) when it went through, else its error."""
        try:
            return None, await self._deliver(row) or ""
        except SendFailed as exc:
            return str(exc) or type(exc).__name__, ""
        except Exception as exc:  # a sender's surprise is this row's failure, not the loop's
            log.exception("outbox: sender of %s failed unexpectedly", row["idem_key"])
            return f"unexpected error: {type(exc).__name__}", ""

    async def _target(self, row: Row) -> tuple[str, dict[str, Any]]:
        """The row's kind of destination and its settings: a human's destination (taken with
        the row), or, for a reply out to the forge, the intake source, its token read now."""
        if row["source_id"] is None:
            return str(row["destination_kind"]), json.loads(row["settings"])
        source = await self.ctx.db.read(lambda conn: replies.target(conn, int(row["source_id"])))
        if source is None:
            raise SendFailed("the intake source was removed")
        return "forge", source | {"repository": row["repository"], "issue": row["issue"]}

    async def _deliver(self, row: Row) -> str | None:
        kind, settings = await self._target(row)
        send = SENDERS.get(kind)
        if send is None:
            raise SendFailed(f"no sender for destination kind {kind}")
        assert self.http is not None
        link = str(row["link"])
        note = Note(
            id=int(row["id"]),
            idem_key=str(row["idem_key"]),
            kind=str(row["kind"]),
            subject=str(row["subject"]),
            text=str(row["text"]),
            link=absolute_link(self.ctx.settings, link),
            created_at=str(row["created_at"]),
            manage=""
            if row["destination_id"] is None
            else absolute_link(self.ctx.settings, f"/settings/destinations/{row['destination_id']}"),
        )
        allow_local = bool(self.ctx.settings.notify_allow_local)
        delivery = Delivery(note, kind, settings, self.http, self.timeout, allow_local)
        try:
            return await asyncio.wait_for(send(delivery), self.timeout)
        except TimeoutError as exc:
            raise SendFailed(f"no answer in {self.timeout:g} s") from exc

    async def _record(
        self, conn: Connection, *, rows: list[Row], outcomes: list[tuple[str | None, str]]
    ) -> None:
        """Each row's outcome: sent, pending again after its backoff, or failed after the last attempt."""
        now = self.ctx.clock.now()
        for row, (error, remote_id) in zip(rows, outcomes, strict=True):
            notification_id = int(row["id"])
            attempts = int(row["attempts"]) + 1  # take_due counted this one in the stored row
            if error is None:
                await store.mark_sent(conn, notification_id, self.ctx.now(), remote_id)
            elif attempts >= self.attempts:
                await store.mark_failed(conn, notification_id, error)
                log.warning("outbox: %s failed after %d attempts: %s", row["idem_key"], attempts, error)
            else:
                later = now + timedelta(seconds=self.backoff * 2 ** (attempts - 1))
                await store.mark_retry(conn, notification_id, error, outbound.stamp(later))
                log.info("outbox: %s attempt %d failed: %s", row["idem_key"], attempts, error)
