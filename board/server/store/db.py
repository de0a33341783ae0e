"""Connections to the SQLite database: one writer task, a pool of readers.

Every write is a coroutine function ``fn(conn)`` handed to :meth:`Database.write`.
The writer task takes every write waiting at that moment, runs them in one
``BEGIN IMMEDIATE`` transaction (each inside its own savepoint, so one failing
write does not undo its neighbours), commits once, and only then resolves each
caller's future with its result or its error. Each write runs in its caller's
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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from . import requests
from .jsoncolumns import readable_json

log = logging.getLogger(__name__)

T = TypeVar("T")
Job = Callable[[aiosqlite.Connection], Awaitable[Any]]

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


async def _configure(conn: aiosqlite.Connection) -> None:
    """The pragmas of every connection, writer and readers alike."""
    conn.row_factory = sqlite3.Row
    await conn.create_function("readable_json", 5, readable_json)
    await conn.execute("PRAGMA busy_timeout = 5000")
    await conn.execute("PRAGMA foreign_keys = ON")
    await conn.execute("PRAGMA synchronous = NORMAL")
    await conn.execute("PRAGMA secure_delete = ON")
    await conn.execute("PRAGMA temp_store = MEMORY")


@dataclass
class _Write:
    fn: Job
    outbox: list[Any] = field(default_factory=list)
    context: contextvars.Context = field(default_factory=contextvars.copy_context)
    future: asyncio.Future[Any] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


async def _call(job: _Write, conn: aiosqlite.Connection) -> Any:
    """One job, in its caller's context and its own savepoint."""
    _OUTBOX.set(job.outbox)  # in the job's own context: its emits land in its outbox
    result = await job.fn(conn)
    # A call with a request id is marked applied in the same savepoint as its effect.
    await requests.mark_applied(conn)
    return result


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
        self._writer: aiosqlite.Connection | None = None
        self._pool: asyncio.Queue[aiosqlite.Connection] = asyncio.Queue()
        self._all_readers: list[aiosqlite.Connection] = []
        self._queue: asyncio.Queue[_Write] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._lock_fd: int | None = None

    # -- lifecycle -------------------------------------------------------------

    async def open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.exclusive:
            self._take_lock()
        try:
            self._writer = await aiosqlite.connect(self.path, isolation_level=None)
            await _configure(self._writer)
            # Refuse a newer database before touching it: even switching it to WAL
            # rewrites its header.
            await self._check_version(self._writer)
            mode = await self._scalar(self._writer, "PRAGMA journal_mode = WAL")
            if str(mode).lower() != "wal":
                raise StoreError(f"{self.path}: could not switch to WAL mode (got {mode})")
            await self._migrate(self._writer)
            for _ in range(self.readers):
                conn = await aiosqlite.connect(self.path, isolation_level=None)
                await _configure(conn)
                await conn.execute("PRAGMA query_only = ON")
                self._all_readers.append(conn)
                self._pool.put_nowait(conn)
        except BaseException as exc:
            await self.close()
            if isinstance(exc, sqlite3.Error):  # not a database, unreadable, locked too long
                raise StoreError(f"{self.path}: cannot open the database: {exc}.") from exc
            raise
        self._task = asyncio.create_task(self._run_writer(), name="board-writer")

    async def close(self) -> None:
        if self._task is not None:
            task, self._task = self._task, None  # write() refuses from here on
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            # No caller waits forever for a write the writer will never run.
            while not self._queue.empty():
                _fail(self._queue.get_nowait(), "the database closed before this write ran")
        for conn in self._all_readers:
            await conn.close()
        self._all_readers.clear()
        if self._writer is not None:
            await self._writer.close()
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

    async def _check_version(self, conn: aiosqlite.Connection) -> int:
        """The database's schema version; StoreError when it is newer than this code."""
        current = int(await self._scalar(conn, "PRAGMA user_version"))
        known = schema_version()
        if current > known:
            raise StoreError(
                f"{self.path} has schema version {current}, newer than this board "
                f"understands ({known}); upgrade the board before opening it."
            )
        return current

    async def _migrate(self, conn: aiosqlite.Connection) -> None:
        current = await self._check_version(conn)
        for number, name, script in migrations():
            if number <= current:
                continue
            log.info("applying migration %s", name)
            try:
                await conn.executescript(
                    f"BEGIN IMMEDIATE;\n{script}\nPRAGMA user_version = {number};\nCOMMIT;"
                )
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    await conn.execute("ROLLBACK")
                raise StoreError(f"migration {name} failed: {exc}") from exc

    @staticmethod
    async def _scalar(conn: aiosqlite.Connection, sql: str) -> Any:
        async with conn.execute(sql) as cur:
            row = await cur.fetchone()
        return row[0] if row else None

    # -- writes ----------------------------------------------------------------

    @property
    def queue_depth(self) -> int:
        return self._queue.qsize()

    async def write(self, fn: Callable[[aiosqlite.Connection], Awaitable[T]]) -> T:
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
        assert self._writer is not None
        conn = self._writer
        while True:
            batch = [await self._queue.get()]
            while len(batch) < MAX_BATCH and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            try:
                await self._commit_batch(conn, batch)
            except asyncio.CancelledError:
                for job in batch:
                    _fail(job, "the database closed during this write; it may not have been committed")
                raise

    async def _commit_batch(self, conn: aiosqlite.Connection, batch: list[_Write]) -> None:
        outcomes: list[tuple[bool, Any]] = []
        try:
            await conn.execute("BEGIN IMMEDIATE")
            for job in batch:
                await conn.execute("SAVEPOINT job")
                try:
                    result = await asyncio.create_task(_call(job, conn), context=job.context)
                except Exception as exc:  # the job's own error goes back to its caller
                    await conn.execute("ROLLBACK TO job")
                    await conn.execute("RELEASE job")
                    outcomes.append((False, exc))
                else:
                    await conn.execute("RELEASE job")
                    outcomes.append((True, result))
            await conn.execute("COMMIT")
        except Exception as exc:
            log.exception("write batch of %d failed", len(batch))
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    await conn.execute("ROLLBACK")
            outcomes = [(False, exc)] * len(batch)
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

    async def read(self, fn: Callable[[aiosqlite.Connection], Awaitable[T]]) -> T:
        """Run ``fn`` on a reader connection (a consistent snapshot of committed data)."""
        conn = await self._pool.get()
        try:
            await conn.execute("BEGIN")
            return await fn(conn)
        finally:
            # Shielded: a read cancelled mid-way (a long-poll cut short, a shutdown)
            # still ends its transaction before the connection serves anyone else.
            await asyncio.shield(self._end_read(conn))

    async def _end_read(self, conn: aiosqlite.Connection) -> None:
        try:
            # Statements run in order on the connection's thread, so this COMMIT comes
            # after a BEGIN that was still in flight when the read was cancelled.
            with contextlib.suppress(sqlite3.OperationalError):  # no transaction was begun
                await conn.execute("COMMIT")
        finally:
            self._pool.put_nowait(conn)
