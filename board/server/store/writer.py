"""What every store has in common: writes through one batching task, an outbox per write.

Every write is a coroutine function ``fn(conn)`` handed to :meth:`Store.write`.
The writer task takes every write waiting at that moment and hands the batch to
the store, which runs them in one transaction (each inside its own savepoint, so
one failing write does not undo its neighbours) and commits once; only then is
each caller's future resolved with its result or its error. Each write runs in
its caller's context (``contextvars``). A write job may carry the request id of the
call it runs for (:class:`ForRequest` adds it to each write of one call), which the
store records in the job's own savepoint, together with its effect (see
:mod:`.requests`). A write hands what must be
announced once it is durable to :func:`emit`: the job's outbox, which the writer
passes to ``publish`` after the commit, in commit order, and drops with the job
when it fails (a store several processes share publishes it where its commit comes
among theirs: store/postgres.py). Reads run on their own connections and never wait for the writer.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from .connection import Connection
from .requests import Mark

log = logging.getLogger(__name__)

T = TypeVar("T")
Job = Callable[[Connection], Awaitable[T]]
Outcome = tuple[bool, Any]

MAX_BATCH = 256

_OUTBOX: contextvars.ContextVar[list[Any]] = contextvars.ContextVar("board_outbox")


def emit(item: Any) -> None:
    """Announce ``item`` once the write running now commits; LookupError outside a write."""
    _OUTBOX.get().append(item)


class StoreError(Exception):
    """The database cannot be used (locked by another board, too new, unreadable)."""


class DatabaseUnreachable(StoreError):
    """The database server does not answer (stopped, or the network cut): a retry may succeed."""


@dataclass
class Write:
    """One queued write: its job, the request id it runs for, its outbox, its caller's context and future."""

    fn: Job[Any]
    request: Mark | None = None
    #: Seconds its batch may take where a store bounds a batch (PostgreSQL), if more than its
    #: own bound: for a write known to be long, such as deleting a whole workspace.
    allowed: float | None = None
    outbox: list[Any] = field(default_factory=list)
    context: contextvars.Context = field(default_factory=contextvars.copy_context)
    future: asyncio.Future[Any] = field(default_factory=lambda: asyncio.get_running_loop().create_future())

    def start(self) -> None:
        """Point :func:`emit` at this job's outbox (call in the job's own context)."""
        self.outbox.clear()
        _OUTBOX.set(self.outbox)


def _fail(job: Write, why: str) -> None:
    if not job.future.done():
        job.future.set_exception(StoreError(why))


@dataclass
class WriterStats:
    """Counters for /metrics."""

    batches: int = 0
    writes: int = 0
    largest_batch: int = 0
    folds: int = 0  # the log folded into the database while the writer was idle (SQLite)


class Store(ABC):
    """A database the board runs on: open, migrate, write through one task, read in parallel."""

    #: Where the store lives, for messages (a file path or a URL without its password).
    where: str

    def __init__(self) -> None:
        self.stats = WriterStats()
        self.publish: Callable[[Any], None] | None = None  # receives each committed outbox item
        #: What an outbox item becomes for the board's other processes (ids only), or None.
        self.describe: Callable[[Any], dict[str, Any] | None] = lambda item: None
        #: Called with what other processes announced, in commit order: the items that
        #: arrived together in one call, so their messages are read back together.
        self.on_remote: Callable[[list[dict[str, Any]]], Awaitable[None]] | None = None
        self._queue: asyncio.Queue[Write] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    @abstractmethod
    async def open(self) -> None: ...

    @abstractmethod
    async def close(self) -> None: ...

    @abstractmethod
    async def read(self, fn: Job[T]) -> T:
        """Run ``fn`` on a reader connection (a consistent snapshot of committed data)."""

    @abstractmethod
    async def _commit(self, batch: list[Write]) -> list[Outcome]:
        """Run ``batch`` in one transaction; one ``(ok, result or error)`` per job."""

    @contextlib.asynccontextmanager
    async def duty(self, name: str) -> AsyncIterator[bool]:
        """Whether this process should run the background duty ``name`` now.

        One process serves a SQLite file, so the answer is always yes; a store shared
        by several processes says yes to one of them at a time.
        """
        yield True

    @abstractmethod
    async def scrub(self) -> None:
        """Overwrite old copies of erased rows that the database keeps beside the live ones."""

    @abstractmethod
    def announce(self, item: dict[str, Any]) -> None:
        """Tell the board's other processes about ``item`` at once."""

    @abstractmethod
    def _caught_up(self) -> None:
        """The writer committed its last batch and has no write waiting: a moment for upkeep."""

    async def published(self) -> None:
        """Return once what every write committed so far emitted has reached :attr:`publish`
        here: at once where the writer publishes at each commit."""
        return None

    # -- writes ----------------------------------------------------------------

    @property
    def queue_depth(self) -> int:
        return self._queue.qsize()

    def _start_writer(self) -> None:
        self._task = asyncio.create_task(self._run_writer(), name="board-writer")

    async def _stop_writer(self) -> None:
        """Cancel the writer; every write it will never run fails at once."""
        if self._task is None:
            return
        task, self._task = self._task, None  # write() refuses from here on
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        while not self._queue.empty():
            _fail(self._queue.get_nowait(), "the database closed before this write ran")

    async def write(self, fn: Job[T], request: Mark | None = None, *, allowed: float | None = None) -> T:
        """Run ``fn`` in the writer's next transaction; return once it is committed.

        What ``fn`` emitted is published in the writer, in commit order, right after
        the commit and before any later write, so a long-poll never sees message 11
        before message 10. With ``request``, the call it runs for is recorded in the
        same savepoint (:func:`.requests.record`). ``allowed``: :attr:`Write.allowed`.
        """
        if self._task is None:
            raise StoreError("the database is not open")
        job = Write(fn, request, allowed)
        self._queue.put_nowait(job)
        return cast(T, await job.future)

    async def _run_writer(self) -> None:
        while True:
            batch = [await self._queue.get()]
            self._fill(batch)
            try:
                outcomes = await self._commit(batch)
            except asyncio.CancelledError:
                for job in batch:
                    _fail(job, "the database closed during this write; it may not have been committed")
                raise
            self._settle(batch, outcomes)
            if self._queue.empty():
                self._caught_up()

    def _fill(self, batch: list[Write]) -> None:
        """Add the writes queued by now to ``batch``, up to ``MAX_BATCH`` in all."""
        while len(batch) < MAX_BATCH and not self._queue.empty():
            batch.append(self._queue.get_nowait())

    def _settle(self, batch: list[Write], outcomes: list[Outcome]) -> None:
        """Publish what the committed jobs emitted, in commit order, then answer each caller."""
        self.stats.batches += 1
        self.stats.writes += len(batch)
        self.stats.largest_batch = max(self.stats.largest_batch, len(batch))
        self._publish_all(
            [item for job, (ok, _) in zip(batch, outcomes, strict=True) if ok for item in job.outbox]
        )
        for job, (ok, value) in zip(batch, outcomes, strict=True):
            if job.future.done():
                continue
            if ok:
                job.future.set_result(value)
            else:
                job.future.set_exception(value)

    def _publish_all(self, items: list[Any]) -> None:
        """Hand committed ``items`` to :attr:`publish`, in order; one that fails stops no other."""
        if self.publish is None:
            return
        for item in items:
            try:
                self.publish(item)
            except Exception:
                log.exception("publishing a committed event failed")


class ForRequest(Store):
    """A store as one call with a request id sees it: each write it hands over carries the id.

    Everything else is the store's own: its writer, its readers, its counters.
    """

    def __init__(self, store: Store, request: Mark) -> None:  # no Store.__init__: nothing of its own
        self._store = store
        self.request = request

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def write(self, fn: Job[T], request: Mark | None = None, *, allowed: float | None = None) -> T:
        return await self._store.write(fn, request or self.request, allowed=allowed)

    async def read(self, fn: Job[T]) -> T:
        return await self._store.read(fn)

    @contextlib.asynccontextmanager
    async def duty(self, name: str) -> AsyncIterator[bool]:
        async with self._store.duty(name) as mine:
            yield mine

    async def open(self) -> None:
        raise StoreError("a call's view of the store does not open it")

    async def close(self) -> None:
        raise StoreError("a call's view of the store does not close it")

    async def _commit(self, batch: list[Write]) -> list[Outcome]:
        raise StoreError("a call's view of the store has no writer of its own")

    def _caught_up(self) -> None:
        raise StoreError("a call's view of the store has no writer of its own")

    async def published(self) -> None:
        await self._store.published()

    async def scrub(self) -> None:
        await self._store.scrub()

    def announce(self, item: dict[str, Any]) -> None:
        self._store.announce(item)
