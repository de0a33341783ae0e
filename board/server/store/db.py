"""Connections to the SQLite database: one writer task, a pool of readers.

Every write is a coroutine function ``fn(conn)`` handed to :meth:`Database.write`.
The writer task takes every write waiting at that moment, runs them in one
``BEGIN IMMEDIATE`` transaction (each inside its own savepoint, so one failing
write does not undo its neighbours), commits once, and only then resolves each
caller's future with its result or its error. The whole batch, its savepoints
and its commit, runs in the write connection's thread in one hand-off, and each
read in its reader's thread in one (``connection.py``: a job's coroutine runs to
its end there without the event loop). Each write runs in its caller's
context (``contextvars``), so what the request set, such as its request id, is
what the write sees (and a call's request id is marked applied together with its
effect, see :mod:`.requests`). A write hands what must be announced once it is durable to
:func:`emit`: the job's outbox, which the writer passes to ``publish`` after the
commit, in commit order, and drops with the job when it fails. Reads run on their
own connections and never wait for the writer.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import fcntl
import logging
import os
import sqlite3
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from . import requests
from .connection import Connection, Owned, drive
from .jsoncolumns import readable_json

log = logging.getLogger(__name__)

T = TypeVar("T")
Job = Callable[[Connection], Awaitable[T]]

MAX_BATCH = 256

_OUTBOX: contextvars.ContextVar[list[Any]] = contextvars.ContextVar("board_outbox")


def emit(item: Any) -> None:
    """Announce ``item`` once the write running now commits; LookupError outside a write."""
    _OUTBOX.get().append(item)


class StoreError(Exception):
    """The database cannot be used (locked by another board, too new, unreadable)."""


def migrations() -> list[tuple[int, str, str]]:
    """The numbered migration scripts shipped with the package, in order."""
    found = []
    for entry in resources.files("board.server.store.migrations").iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:4].isdigit():
            found.append((int(name[:4]), name, entry.read_text(encoding="utf-8")))
    return sorted(found)


def schema_version() -> int:
    """The schema version this code knows how to run."""
    return max(number for number, _, _ in migrations())


def _configure(raw: sqlite3.Connection) -> None:
    """The pragmas of every connection, writer and readers alike."""
    raw.row_factory = sqlite3.Row
    raw.create_function("readable_json", 5, readable_json)
    raw.execute("PRAGMA busy_timeout = 5000")
    raw.execute("PRAGMA foreign_keys = ON")
    raw.execute("PRAGMA synchronous = NORMAL")
    raw.execute("PRAGMA secure_delete = ON")
    raw.execute("PRAGMA temp_store = MEMORY")


def _configure_reader(raw: sqlite3.Connection) -> None:
    _configure(raw)
    raw.execute("PRAGMA query_only = ON")


@dataclass
class _Write:
    fn: Job[Any]
    outbox: list[Any] = field(default_factory=list)
    context: contextvars.Context = field(default_factory=contextvars.copy_context)
    future: asyncio.Future[Any] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


def _call(job: _Write, conn: Connection) -> Any:
    """One job, in its caller's context and its own savepoint."""
    _OUTBOX.set(job.outbox)  # in the job's own context: its emits land in its outbox
    result = drive(job.fn(conn))
    # A call with a request id is marked applied in the same savepoint as its effect.
    drive(requests.mark_applied(conn))
    return result


def _commit_batch(conn: Connection, batch: list[_Write], closing: threading.Event) -> list[tuple[bool, Any]]:
    """Run the batch in one transaction, each job in its own savepoint (in the writer's thread).

    A batch the database started closing under is rolled back, not committed: its
    callers were already told it failed.
    """
    raw = conn.raw
    outcomes: list[tuple[bool, Any]] = []
    try:
        raw.execute("BEGIN IMMEDIATE")
        for job in batch:
            raw.execute("SAVEPOINT job")
            try:
                result = job.context.run(_call, job, conn)
            except Exception as exc:  # the job's own error goes back to its caller
                raw.execute("ROLLBACK TO job")
                raw.execute("RELEASE job")
                outcomes.append((False, exc))
            else:
                raw.execute("RELEASE job")
                outcomes.append((True, result))
        if closing.is_set():
            raise StoreError("the database closed during this write")
        raw.execute("COMMIT")
    except Exception as exc:
        if not closing.is_set():
            log.exception("write batch of %d failed", len(batch))
        if raw.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                raw.execute("ROLLBACK")
        outcomes = [(False, exc)] * len(batch)
    return outcomes


def _read(conn: Connection, fn: Job[T]) -> T:
    """One read in a transaction of its own: a consistent snapshot (in the reader's thread)."""
    conn.raw.execute("BEGIN")
    try:
        return drive(fn(conn))
    finally:
        with contextlib.suppress(sqlite3.OperationalError):  # the job ended the transaction
            conn.raw.execute("COMMIT")


def _scalar(raw: sqlite3.Connection, sql: str) -> Any:
    row = raw.execute(sql).fetchone()
    return row[0] if row else None


def _fail(job: _Write, why: str) -> None:
    if not job.future.done():
        job.future.set_exception(StoreError(why))


@dataclass
class WriterStats:
    """Counters for /metrics."""

    batches: int = 0
    writes: int = 0
    largest_batch: int = 0


class Database:
    """The board's SQLite database: open, migrate, write through one task, read in parallel."""

    def __init__(self, path: str | os.PathLike[str], *, readers: int = 4, exclusive: bool = False):
        self.path = Path(path)
        self.readers = max(1, readers)
        self.exclusive = exclusive
        self.stats = WriterStats()
        self.publish: Callable[[Any], None] | None = None  # receives each committed outbox item
        self._writer: Owned | None = None
        self._pool: asyncio.Queue[Owned] = asyncio.Queue()
        self._all_readers: list[Owned] = []
        self._queue: asyncio.Queue[_Write] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._lock_fd: int | None = None
        self._closing = threading.Event()

    # -- lifecycle -------------------------------------------------------------

    async def open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.exclusive:
            self._take_lock()
        try:
            self._writer = Owned(self.path, _configure)
            await self._writer.open()
            await self._writer.call(self._prepare)
            for _ in range(self.readers):
                reader = Owned(self.path, _configure_reader)
                self._all_readers.append(reader)
                await reader.open()
                self._pool.put_nowait(reader)
        except BaseException as exc:
            await self.close()
            if isinstance(exc, sqlite3.Error):  # not a database, unreadable, locked too long
                raise StoreError(f"{self.path}: cannot open the database: {exc}.") from exc
            raise
        self._task = asyncio.create_task(self._run_writer(), name="board-writer")

    def _prepare(self) -> None:
        """Check the version, switch to WAL, migrate (in the writer's thread)."""
        assert self._writer is not None and self._writer.conn is not None
        raw = self._writer.conn.raw
        # Refuse a newer database before touching it: even switching it to WAL
        # rewrites its header.
        self._check_version(raw)
        mode = _scalar(raw, "PRAGMA journal_mode = WAL")
        if str(mode).lower() != "wal":
            raise StoreError(f"{self.path}: could not switch to WAL mode (got {mode})")
        self._migrate(raw)

    async def close(self) -> None:
        if self._task is not None:
            task, self._task = self._task, None  # write() refuses from here on
            self._closing.set()  # a batch still running in the writer's thread rolls back
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            # No caller waits forever for a write the writer will never run.
            while not self._queue.empty():
                _fail(self._queue.get_nowait(), "the database closed before this write ran")
        for reader in self._all_readers:
            await reader.close()
        self._all_readers.clear()
        if self._writer is not None:
            await self._writer.close()  # after the batch its thread may still be running
            self._writer = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def _take_lock(self) -> None:
        lock_path = f"{self.path}.lock"
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StoreError(
                f"{self.path} is already served by another board process "
                f"(lock {lock_path} is held); stop that one first."
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock_fd = fd

    def _check_version(self, raw: sqlite3.Connection) -> int:
        """The database's schema version; StoreError when it is newer than this code."""
        current = int(_scalar(raw, "PRAGMA user_version"))
        known = schema_version()
        if current > known:
            raise StoreError(
                f"{self.path} has schema version {current}, newer than this board "
                f"understands ({known}); upgrade the board before opening it."
            )
        return current

    def _migrate(self, raw: sqlite3.Connection) -> None:
        current = self._check_version(raw)
        for number, name, script in migrations():
            if number <= current:
                continue
            log.info("applying migration %s", name)
            try:
                raw.executescript(f"BEGIN IMMEDIATE;\n{script}\nPRAGMA user_version = {number};\nCOMMIT;")
            except sqlite3.Error as exc:
                if raw.in_transaction:
                    raw.execute("ROLLBACK")
                raise StoreError(f"migration {name} failed: {exc}") from exc

    # -- writes ----------------------------------------------------------------

    @property
    def queue_depth(self) -> int:
        return self._queue.qsize()

    async def write(self, fn: Job[T]) -> T:
        """Run ``fn`` in the writer's next transaction; return once it is committed.

        What ``fn`` emitted is published in the writer, in commit order, right after
        the commit and before any later write, so a long-poll never sees message 11
        before message 10.
        """
        if self._task is None:
            raise StoreError("the database is not open")
        job = _Write(fn)
        self._queue.put_nowait(job)
        return await job.future

    async def _run_writer(self) -> None:
        assert self._writer is not None and self._writer.conn is not None
        writer, conn = self._writer, self._writer.conn
        while True:
            batch = [await self._queue.get()]
            while len(batch) < MAX_BATCH and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            try:
                outcomes = await writer.call(_commit_batch, conn, batch, self._closing)
            except asyncio.CancelledError:
                for job in batch:
                    _fail(job, "the database closed during this write; it may not have been committed")
                raise
            self._settle(batch, outcomes)

    def _settle(self, batch: list[_Write], outcomes: list[tuple[bool, Any]]) -> None:
        """Publish what the committed jobs emitted, in commit order, then answer each caller."""
        self.stats.batches += 1
        self.stats.writes += len(batch)
        self.stats.largest_batch = max(self.stats.largest_batch, len(batch))
        for job, (ok, value) in zip(batch, outcomes, strict=True):
            if ok and self.publish is not None:
                for item in job.outbox:
                    try:
                        self.publish(item)
                    except Exception:
                        log.exception("publishing a committed event failed")
            if job.future.done():
                continue
            if ok:
                job.future.set_result(value)
            else:
                job.future.set_exception(value)

    # -- reads -----------------------------------------------------------------

    async def read(self, fn: Job[T]) -> T:
        """Run ``fn`` on a reader connection (a consistent snapshot of committed data).

        The reader goes back to the pool when its thread is done with the read, even
        when the caller stopped waiting (a long-poll cut short, a shutdown): a read is
        one call in that thread, so the next one cannot start inside its transaction.
        """
        reader = await self._pool.get()
        assert reader.conn is not None
        done = reader.call(_read, reader.conn, fn)
        done.add_done_callback(lambda _: self._pool.put_nowait(reader))
        return await done
