"""What a store function is handed, and the SQLite connection that runs a job in one hop.

Every store function takes a :class:`Connection` and awaits its statements. The
SQLite one (:class:`SqliteConnection`) is owned by one thread: aiosqlite handed
every statement to the connection's thread and back, and a write job of ten
statements paid ten round trips through the event loop. Here a job (a coroutine
function taking a connection) runs *inside* the connection's thread: the
connection's methods are coroutines only in name, answering at once, so the
job's coroutine runs from start to end in one ``send`` without the event loop. A
whole read, or a whole batch of writes with its savepoints and commit, is one
hand-off. The PostgreSQL connection (``postgres.py``) awaits the server for real.

A job therefore must await nothing but its connection (no sleeps, no other
reads): :func:`drive` refuses one that suspends on SQLite.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Generator, Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar, cast

T = TypeVar("T")


class JobSuspended(RuntimeError):
    """A database job awaited something other than its connection."""


class Cursor(Protocol):
    """A statement's result; the fetches answer at once."""

    @property
    def rowcount(self) -> int: ...

    async def fetchone(self) -> Any: ...

    async def fetchall(self) -> list[Any]: ...


class _SqliteCursor:
    def __init__(self, cur: sqlite3.Cursor) -> None:
        self._cur = cur

    @property
    def rowcount(self) -> int:
        return self._cur.rowcount

    async def fetchone(self) -> Any:
        return self._cur.fetchone()

    async def fetchall(self) -> list[Any]:
        return self._cur.fetchall()


class Statement:
    """``await conn.execute(...)`` or ``async with conn.execute(...) as cur``, as with aiosqlite."""

    def __init__(self, run: Callable[[], Awaitable[Cursor]]) -> None:
        self._run = run

    def __await__(self) -> Generator[Any, None, Cursor]:
        return self._run().__await__()

    async def __aenter__(self) -> Cursor:
        return await self._run()

    async def __aexit__(self, *exc: object) -> None:
        return None


class Connection(ABC):
    """What store functions see: ``await conn.execute(sql, params)`` with ``?`` placeholders.

    The SQL is the common dialect of SQLite and PostgreSQL; where they part (full-text
    search, a few functions), a store function asks :attr:`dialect`.
    """

    dialect: ClassVar[str]
    #: What the driver raises when the database refuses or fails a statement.
    Error: ClassVar[type[Exception]]
    #: What the driver raises when a constraint or a trigger refuses a change.
    IntegrityError: ClassVar[type[Exception]]

    @abstractmethod
    def execute(self, sql: str, params: Iterable[Any] = ()) -> Statement: ...

    @abstractmethod
    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Statement: ...

    @abstractmethod
    async def executescript(self, script: str) -> None: ...

    @property
    @abstractmethod
    def in_transaction(self) -> bool: ...

    async def execute_fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        cur = await self.execute(sql, params)
        return await cur.fetchall()

    async def insert(self, sql: str, params: Iterable[Any] = ()) -> int:
        """Run an ``INSERT`` into a table with an ``id`` column; the new row's id."""
        cur = await self.execute(f"{sql} RETURNING id", params)
        row = await cur.fetchone()
        return int(row[0])


class SqliteConnection(Connection):
    """A connection owned by one thread: every statement runs now, in that thread."""

    dialect = "sqlite"
    Error = sqlite3.Error
    IntegrityError = sqlite3.IntegrityError

    def __init__(self, raw: sqlite3.Connection) -> None:
        self.raw = raw

    def _now(self, run: Callable[[], sqlite3.Cursor]) -> Statement:
        async def cursor() -> Cursor:
            return _SqliteCursor(run())

        return Statement(cursor)

    def execute(self, sql: str, params: Iterable[Any] = ()) -> Statement:
        return self._now(lambda: self.raw.execute(sql, tuple(params)))

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Statement:
        return self._now(lambda: self.raw.executemany(sql, rows))

    async def execute_fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        return self.raw.execute(sql, tuple(params)).fetchall()

    async def executescript(self, script: str) -> None:
        self.raw.executescript(script)

    @property
    def in_transaction(self) -> bool:
        return self.raw.in_transaction


def drive(job: Awaitable[T]) -> T:
    """Run an awaitable that never suspends to its end, in the calling thread."""
    steps = job.__await__()
    try:
        steps.send(None)
    except StopIteration as done:
        return cast(T, done.value)
    with contextlib.suppress(AttributeError):
        steps.close()
    raise JobSuspended("a database job may await only its connection")


#: A call handed to an :class:`Owned` connection's thread: where to answer, and what to run.
_Call = tuple[
    asyncio.AbstractEventLoop, asyncio.Future[Any], contextvars.Context, Callable[..., Any], tuple[Any, ...]
]


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    """Answer a call on its loop, unless its caller stopped waiting."""
    if future.done():
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)


def _run(
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[Any],
    context: contextvars.Context,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
) -> None:
    """One call, in the connection's thread, answered on its caller's loop."""
    result, error = None, None
    try:
        result = context.run(fn, *args)
    except BaseException as exc:  # the caller's to handle, as an executor hands it over
        error = exc
    with contextlib.suppress(RuntimeError):  # the caller's loop is closed: nobody waits
        loop.call_soon_threadsafe(_settle, future, result, error)


class Owned:
    """A raw connection and the single thread every call on it runs in.

    The thread takes calls from a queue and answers each on its caller's loop
    (``call_soon_threadsafe``). Every read and every write batch pays this round trip;
    through ``run_in_executor`` it cost twice the CPU (a ThreadPoolExecutor's future with
    its locks, chained to an asyncio future). The thread is a daemon, as nothing but
    :meth:`close` (which lets every call handed to it run first) ends it.
    """

    def __init__(
        self, path: Path, configure: Callable[[sqlite3.Connection], None], *, read_only: bool = False
    ) -> None:
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._closed = False
        self._path = path
        self._configure = configure
        self._read_only = read_only
        self.conn: SqliteConnection | None = None
        threading.Thread(target=self._serve, name="board-sqlite", daemon=True).start()

    def _serve(self) -> None:
        while (call := self._calls.get()) is not None:
            _run(*call)
            del call  # hold nothing of a finished call while idle

    def _open(self) -> None:
        if self._read_only:  # opened read-only by SQLite itself: never creates, migrates or checkpoints
            where = f"{self._path.resolve().as_uri()}?mode=ro"
            raw = sqlite3.connect(where, isolation_level=None, check_same_thread=False, uri=True)
        else:
            raw = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        try:
            self._configure(raw)
        except BaseException:
            raw.close()
            raise
        self.conn = SqliteConnection(raw)

    async def open(self) -> None:
        await self.call(self._open)

    def call(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """``fn(*args)`` in this connection's thread, in the caller's context."""
        if self._closed:
            raise RuntimeError("this connection's thread is closed")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._calls.put((loop, future, contextvars.copy_context(), fn, args))
        return future

    async def close(self) -> None:
        """Close once every call already handed to the thread has finished."""
        if self.conn is not None:
            conn, self.conn = self.conn, None
            await self.call(conn.raw.close)
        if not self._closed:
            self._closed = True
            self._calls.put(None)  # the thread ends after the calls queued before it
