"""The SQLite store: one writer connection, a pool of readers, each on its own thread.

The writer task (``writer.py``) hands each batch to :func:`_commit_batch`: the whole
batch, its savepoints and its commit, runs in the write connection's thread in one
hand-off, and each read in its reader's thread in one (``connection.py``: a job's
coroutine runs to its end there without the event loop).

The write-ahead log is folded into the database file (a checkpoint) by a connection of
its own when the writer falls idle (:meth:`Database._caught_up`). Left to SQLite, the
commit that takes the log past 1,000 pages folds it before it returns: 10 to 19 ms
added to that commit, and to the wake of whoever its message was for (bench/README.md).
A writer that is never idle still has SQLite's own fold, so the log stays bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from . import requests
from .connection import Owned, SqliteConnection, drive
from .dialects import SQLITE
from .jsoncolumns import readable_json
from .schema import current_version, migrate
from .sqlitefile import FILE_ERRORS, error_text, flocked, lock_path, open_lock_path, private_dir, private_file
from .writer import Job, Outcome, Store, StoreError, Write

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Batches committed since the last fold after which an idle writer has the log folded:
#: at a post's 5 to 10 pages (bench/README.md), 80 to 160 pages copied off the writer's path.
FOLD_AFTER = 16


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


def _call(job: Write, conn: SqliteConnection) -> Any:
    """One job, in its caller's context and its own savepoint."""
    job.start()  # in the job's own context: its emits land in its outbox
    result = drive(job.fn(conn))
    if job.request is not None:  # the call it runs for is recorded with its effect
        drive(requests.record(conn, job.request, result))
    return result


def _commit_batch(conn: SqliteConnection, batch: list[Write], closing: threading.Event) -> list[Outcome]:
    """Run the batch in one transaction, each job in its own savepoint (in the writer's thread).

    A batch the database started closing under is rolled back, not committed: its
    callers were already told it failed.
    """
    raw = conn.raw
    outcomes: list[Outcome] = []
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


def _read(conn: SqliteConnection, fn: Job[T]) -> T:
    """One read in a transaction of its own: a consistent snapshot (in the reader's thread)."""
    conn.raw.execute("BEGIN")
    try:
        return drive(fn(conn))
    finally:
        with contextlib.suppress(sqlite3.OperationalError):  # the job ended the transaction
            conn.raw.execute("COMMIT")


def _fold(conn: SqliteConnection) -> None:
    """Copy the log's committed pages into the database file, waiting on no one: pages a
    reader still needs, or that a commit adds meanwhile, stay for the next fold."""
    conn.raw.execute("PRAGMA wal_checkpoint(PASSIVE)")


def _scalar(raw: sqlite3.Connection, sql: str) -> Any:
    row = raw.execute(sql).fetchone()
    return row[0] if row else None


class Database(Store):
    """The board's SQLite database: open, migrate, write through one task, read in parallel."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        readers: int = 4,
        exclusive: bool = False,
        read_only: bool = False,
    ):
        super().__init__()
        self.path = Path(path)
        self.where = str(self.path)
        self.readers = max(1, readers)
        self.exclusive = exclusive
        self.read_only = read_only  # readers only, opened read-only: writes fail (board doctor)
        self._writer: Owned | None = None
        self._pool: asyncio.Queue[Owned] = asyncio.Queue()
        self._all_readers: list[Owned] = []
        self._lock_fds: list[int] = []  # the locks held (_take_locks)
        self._closing = threading.Event()
        self._folder: Owned | None = None  # folds the log while the writer is idle
        self._folding = False
        self._fold_mark = 0  # the writer's batches when the last fold began

    # -- lifecycle -------------------------------------------------------------

    async def open(self) -> None:
        if self.read_only:
            await self._open_readers()
            return
        private_dir(self.path.parent)
        try:
            self._take_locks()
        except BaseException:
            self._let_go()
            raise
        private_file(self.path)
        try:
            self._writer = Owned(self.path, _configure)
            await self._writer.open()
            await self._writer.call(self._prepare)
        except BaseException as exc:
            await self._failed(exc)
        await self._open_readers()
        try:
            self._folder = Owned(self.path, _configure)
            await self._folder.open()
        except BaseException as exc:
            await self._failed(exc)
        self._start_writer()

    async def _open_readers(self) -> None:
        try:
            for _ in range(self.readers):
                reader = Owned(self.path, _configure_reader, read_only=self.read_only)
                self._all_readers.append(reader)
                await reader.open()
                self._pool.put_nowait(reader)
        except BaseException as exc:
            await self._failed(exc)

    async def _failed(self, exc: BaseException) -> NoReturn:
        await self.close()
        if isinstance(exc, FILE_ERRORS):  # not a database, damaged, locked too long
            raise StoreError(f"{self.path}: cannot open the database: {error_text(exc)}.") from exc
        raise exc

    def _prepare(self) -> None:
        """Check the version, switch to WAL, migrate (in the writer's thread)."""
        assert self._writer is not None and self._writer.conn is not None
        conn = self._writer.conn
        # Refuse a newer database before touching it: even switching it to WAL
        # rewrites its header.
        drive(current_version(conn, SQLITE, self.where))
        mode = _scalar(conn.raw, "PRAGMA journal_mode = WAL")
        if str(mode).lower() != "wal":
            raise StoreError(f"{self.path}: could not switch to WAL mode (got {mode})")
        drive(migrate(conn, SQLITE, self.where))

    async def close(self) -> None:
        if self._task is not None:
            self._closing.set()  # a batch still running in the writer's thread rolls back
            await self._stop_writer()
        if self._folder is not None:
            await self._folder.close()  # after a fold it may still be running
            self._folder = None
        for reader in self._all_readers:
            await reader.close()
        self._all_readers.clear()
        if self._writer is not None:
            await self._writer.close()  # after the batch its thread may still be running
            self._writer = None
        self._let_go()

    def _let_go(self) -> None:
        while self._lock_fds:
            os.close(self._lock_fds.pop())

    def _take_locks(self) -> None:
        """The open lock, shared, for every process that writes; the board's lock too for the
        one that serves the file (sqlitefile's docstring)."""
        replaced = f"{self.path} is being replaced by a restore or a move to PostgreSQL"
        self._lock_fds.append(
            flocked(open_lock_path(self.path), replaced, "run this again when it is done.", shared=True)
        )
        if not self.exclusive:
            return
        served = f"{self.path} is already served by another board process"
        fd = flocked(lock_path(self.path), served, "stop that one first.")
        self._lock_fds.append(fd)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())

    # -- writes ----------------------------------------------------------------

    async def _commit(self, batch: list[Write]) -> list[Outcome]:
        assert self._writer is not None and self._writer.conn is not None
        return await self._writer.call(_commit_batch, self._writer.conn, batch, self._closing)

    def announce(self, item: dict[str, Any]) -> None:
        """Nothing to tell: one process serves a SQLite file."""

    def _caught_up(self) -> None:
        """Fold the log on the folder's connection once :data:`FOLD_AFTER` batches are in it
        (one fold at a time), so that no commit grows it to SQLite's own fold."""
        folder, batches = self._folder, self.stats.batches
        if folder is None or folder.conn is None or self._folding or batches - self._fold_mark < FOLD_AFTER:
            return
        self._folding, self._fold_mark = True, batches
        folder.call(_fold, folder.conn).add_done_callback(self._folded)

    def _folded(self, done: asyncio.Future[None]) -> None:
        self._folding = False
        if done.cancelled():
            return
        if (exc := done.exception()) is not None:
            log.warning("folding the write-ahead log failed: %s", exc)
            return
        self.stats.folds += 1

    async def scrub(self) -> None:
        """Fold the WAL, which may hold page images of erased text, into the (securely
        overwritten) file and truncate it; on a connection of its own, as a checkpoint
        cannot run inside the writer's transaction."""

        def checkpoint() -> None:
            raw = sqlite3.connect(self.path, isolation_level=None)
            try:
                raw.execute("PRAGMA busy_timeout = 5000")
                raw.execute("PRAGMA secure_delete = ON")
                raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                raw.close()

        await asyncio.to_thread(checkpoint)

    # -- reads -----------------------------------------------------------------

    async def read(self, fn: Job[T]) -> T:
        """Run ``fn`` on a reader connection (a consistent snapshot of committed data).

        The reader goes back to the pool when its thread is done with the read, even
        when the caller stopped waiting (a long-poll cut short, a shutdown): a read is
        one call in that thread, so the next one cannot start inside its transaction.
        """
        reader = await self._pool.get()
        assert reader.conn is not None
        done: asyncio.Future[T] = reader.call(_read, reader.conn, fn)
        done.add_done_callback(lambda _: self._pool.put_nowait(reader))
        return await done
