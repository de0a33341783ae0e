"""A SQLite connection owned by one thread, and the jobs that run on it in one hop.

aiosqlite hands every statement to the connection's thread and back: a write job
of ten statements paid ten round trips through the event loop, and the writer,
which runs every job in turn, spent its time in those hand-offs. Here a job (a
coroutine function taking a :class:`Connection`) runs *inside* the connection's
thread: the connection's methods are coroutines only in name, answering at once,
so the job's coroutine runs from start to end in one ``send`` without the event
loop. A whole read, or a whole batch of writes with its savepoints and commit, is
one hand-off.

A job therefore must await nothing but its connection (no sleeps, no other
reads): :func:`drive` refuses one that suspends.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import sqlite3
from collections.abc import Awaitable, Callable, Generator, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


class JobSuspended(RuntimeError):
    """A database job awaited something other than its connection."""


class Cursor:
    """A statement's result; the fetches answer at once."""

    def __init__(self, cur: sqlite3.Cursor) -> None:
        self._cur = cur

    @property
    def lastrowid(self) -> int | None:
        return self._cur.lastrowid

    @property
    def rowcount(self) -> int:
        return self._cur.rowcount

    async def fetchone(self) -> Any:
        return self._cur.fetchone()

    async def fetchall(self) -> list[Any]:
        return self._cur.fetchall()


class _Statement:
    """``await conn.execute(...)`` or ``async with conn.execute(...) as cur``, as with aiosqlite."""

    def __init__(self, run: Callable[[], sqlite3.Cursor]) -> None:
        self._run = run

    async def _cursor(self) -> Cursor:
        return Cursor(self._run())

    def __await__(self) -> Generator[Any, None, Cursor]:
        return self._cursor().__await__()

    async def __aenter__(self) -> Cursor:
        return await self._cursor()

    async def __aexit__(self, *exc: object) -> None:
        return None


class Connection:
    """What store functions see: ``await conn.execute(...)`` runs the statement now."""

    def __init__(self, raw: sqlite3.Connection) -> None:
        self.raw = raw

    def execute(self, sql: str, params: Iterable[Any] = ()) -> _Statement:
        return _Statement(lambda: self.raw.execute(sql, tuple(params)))

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> _Statement:
        return _Statement(lambda: self.raw.executemany(sql, rows))

    async def execute_fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        return self.raw.execute(sql, tuple(params)).fetchall()

    async def executescript(self, script: str) -> Cursor:
        return Cursor(self.raw.executescript(script))

    @property
    def in_transaction(self) -> bool:
        return self.raw.in_transaction


def drive(job: Awaitable[T]) -> T:
    """Run an awaitable that never suspends to its end, in the calling thread."""
    steps = job.__await__()
    try:
        steps.send(None)
    except StopIteration as done:
        return done.value
    with contextlib.suppress(AttributeError):
        steps.close()
    raise JobSuspended("a database job may await only its connection")


class Owned:
    """A raw connection and the single thread every call on it runs in."""

    def __init__(self, path: Path, configure: Callable[[sqlite3.Connection], None]) -> None:
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="board-sqlite")
        self._path = path
        self._configure = configure
        self.conn: Connection | None = None

    def _open(self) -> None:
        raw = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        try:
            self._configure(raw)
        except BaseException:
            raw.close()
            raise
        self.conn = Connection(raw)

    async def open(self) -> None:
        await self.call(self._open)

    def call(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """``fn(*args)`` in this connection's thread, in the caller's context."""
        context = contextvars.copy_context()
        return asyncio.get_running_loop().run_in_executor(self._thread, context.run, fn, *args)

    async def close(self) -> None:
        """Close once every call already handed to the thread has finished."""
        if self.conn is not None:
            conn, self.conn = self.conn, None
            await self.call(conn.raw.close)
        self._thread.shutdown(wait=False)
