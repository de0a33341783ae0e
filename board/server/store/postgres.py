"""The PostgreSQL store: several board processes on one database, with SQLite's guarantees.

The store functions are the same; their SQL is the dialect both databases share,
with ``?`` placeholders rewritten to ``$n`` here. What one SQLite writer gave for
free, the database gives across processes:

- **Commit order.** Every write batch takes the board's write lock (a transaction
  advisory lock) before its first statement and holds it to its commit. Batches of
  all processes therefore commit one at a time, so ids of every table are handed
  out in commit order, and a ``since`` reader can never skip a row committed later
  with a lower id. Within a process, the writer batches up to 256 writes per lock:
  those queued when the batch starts, and those queued while it awaited the lock.
- **Claims, compare-and-set, replays** are decided inside that transaction, and the
  schema's unique constraints (one claim per thread, one ``(document, revision)``,
  one request id per caller) refuse a second winner whatever a later change does
  to the lock.
- **Waking.** Before its commit, a batch sends ``NOTIFY board`` with the ids of what
  it emitted (never bodies: a payload is at most 8,000 bytes); PostgreSQL delivers
  notifications in commit order once the transaction commits. Every other process
  listens and hands what arrived together to :attr:`PostgresStore.on_remote`, which
  reads its messages back by id in one read and publishes them to its own hub. A
  process hears its own notifications too, and publishes what a batch of its own
  emitted only where its notification comes among the others' (:class:`_Held`): had it
  published at its commit, an earlier commit of another process still being read back
  would reach its hub after a later id, and a reader at the later id would never get it.
- **Duties.** The sweep and the routines runner run where :meth:`PostgresStore.duty`
  holds a session advisory lock: one process at a time, taken over when it dies.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import logging
import os
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import orjson
import psycopg
from psycopg import sql
from psycopg.adapt import Loader
from psycopg.rows import RowMaker
from psycopg.types.numeric import Int8Dumper

from . import requests
from .connection import Connection, Cursor, Statement
from .dialects import BOARD, LOCKS, POSTGRESQL
from .schema import migrate
from .urls import redacted
from .writer import DatabaseUnreachable, Job, Outcome, Store, StoreError, Write

log = logging.getLogger(__name__)

T = TypeVar("T")

CHANNEL = "board"
LISTENER = "bot-board listener"  # the notification connection's name in pg_stat_activity
_LOCK = f"SELECT pg_advisory_xact_lock({BOARD}, {LOCKS['writes']})"  # the board's write lock
MAX_PAYLOAD = 7900  # PostgreSQL refuses a NOTIFY payload of 8,000 bytes or more
MAX_TAKEN = 256  # items of other processes handed on in one call, once one payload is in
RETAKE_AFTER = 1.0  # seconds before a take whose read failed is read again, doubled each time
RETAKE_AT_MOST = 30.0  # ... up to this
RETAKES = 8  # tries of one take (about two minutes), after which it is given up
ARRIVED = 64  # payloads heard and not yet handed on; the listener waits when there are more
#: Batches of this process's own held for their notification at most; past it the oldest is
#: published at once (its order among the other processes' commits no longer kept).
MAX_HELD = 1024
#: Seconds a listener may hear nothing before it asks its server for an answer: a server
#: process stopped while its connection stays up (``kill -STOP``) sends nothing, yet the
#: kernel still answers keepalives, so silence alone never ends the connection ...
LISTEN_QUIET = 10.0
#: ... and seconds it waits for that answer before it listens again on a new connection.
LISTEN_ANSWER = 5.0


@functools.lru_cache(maxsize=4096)
def placeholders(sql: str) -> str:
    """``sql`` with each ``?`` outside quotes and comments numbered as ``$1``, ``$2``...

    ``?NNN`` (SQLite's numbered parameter, for a value used twice) becomes ``$NNN``.
    """
    out: list[str] = []
    number = 0
    quote = ""
    i = 0
    while i < len(sql):
        ch = sql[i]
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "-" and sql.startswith("--", i):
            end = sql.find("\n", i)
            end = len(sql) if end < 0 else end
            out.append(sql[i:end])
            i = end
            continue
        elif ch == "?":
            digits = i + 1
            while digits < len(sql) and sql[digits].isdigit():
                digits += 1
            if digits > i + 1:
                out.append(f"${sql[i + 1 : digits]}")
            else:
                number += 1
                out.append(f"${number}")
            i = digits
            continue
        out.append(ch)
        i += 1
    return "".join(out)


class Row:
    """A result row read by position or by column name, like ``sqlite3.Row``."""

    __slots__ = ("_names", "_values")

    def __init__(self, names: dict[str, int], values: Sequence[Any]) -> None:
        self._names = names
        self._values = tuple(values)

    def __getitem__(self, key: int | str | slice) -> Any:
        if isinstance(key, str):
            return self._values[self._names[key]]
        return self._values[key]

    def keys(self) -> list[str]:
        return list(self._names)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Row):
            return self._values == other._values and self._names == other._names
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values)

    def __repr__(self) -> str:
        return f"Row({dict(zip(self._names, self._values, strict=True))!r})"


def _rows(cursor: Any) -> RowMaker[Row]:
    """Rows of the cursor's result, their names read from the result itself: the cursor's
    ``description`` builds a column object per column, with its type looked up, for every
    statement (a tenth of the board's CPU a post)."""
    result = cursor.pgresult
    names = {} if result is None else {result.fname(i).decode(): i for i in range(result.nfields)}
    return functools.partial(Row, names)


class _Number(Loader):
    """``numeric`` as SQLite answers it: an int when whole (``SUM`` of integers), else a float."""

    def load(self, data: Any) -> int | float:
        text = bytes(data).decode()
        try:
            return int(text)
        except ValueError:
            return float(text)


class _Bool(Loader):
    """A comparison's truth as SQLite answers it: 1 or 0."""

    def load(self, data: Any) -> int:
        return 1 if bytes(data) == b"t" else 0


def _adapt(conn: psycopg.AsyncConnection[Any]) -> None:
    conn.adapters.register_loader("numeric", _Number)
    conn.adapters.register_loader("bool", _Bool)
    conn.adapters.register_dumper(bool, Int8Dumper)  # booleans are stored as 0/1 integers


class _Fetched:
    """A statement's rows, already read from the server."""

    def __init__(self, rows: list[Any], rowcount: int) -> None:
        self._rows = rows
        self._at = 0
        self.rowcount = rowcount

    async def fetchone(self) -> Any:
        if self._at >= len(self._rows):
            return None
        self._at += 1
        return self._rows[self._at - 1]

    async def fetchall(self) -> list[Any]:
        rest, self._at = self._rows[self._at :], len(self._rows)
        return rest


class PostgresConnection(Connection):
    """One server connection; a statement is one round trip, awaited for real."""

    dialect = "postgresql"
    Error: ClassVar[type[Exception]] = psycopg.Error
    IntegrityError: ClassVar[type[Exception]] = psycopg.IntegrityError

    def __init__(self, raw: psycopg.AsyncConnection[Any]) -> None:
        self.raw = raw

    @property
    def raw(self) -> psycopg.AsyncConnection[Any]:
        return self._raw

    @raw.setter
    def raw(self, raw: psycopg.AsyncConnection[Any]) -> None:
        """A new server connection comes with a new cursor of its own."""
        self._raw = raw
        self._cursor = raw.cursor()

    def execute(self, sql: str, params: Iterable[Any] = ()) -> Statement:
        """One statement, on the connection's one cursor: a new cursor for each statement (as
        ``AsyncConnection.execute`` makes) costs about 15 % of the driver's CPU a statement. Its
        rows are read with no wait in between, and a connection runs one statement at a time
        (the writer's jobs one after another, a read alone on its connection), so no other
        statement's result takes their place."""

        async def run() -> Cursor:
            cur = self._cursor
            await cur.execute(placeholders(sql), tuple(params) or None)
            rows = await cur.fetchall() if _has_rows(cur) else []
            return _Fetched(rows, cur.rowcount)

        return Statement(run)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Statement:
        async def run() -> Cursor:
            async with self.raw.cursor() as cur:
                await cur.executemany(placeholders(sql), [tuple(r) for r in rows])
                return _Fetched([], cur.rowcount)

        return Statement(run)

    async def executescript(self, script: str) -> None:
        await self.raw.execute(script)  # no parameters: one simple query, many statements

    @property
    def in_transaction(self) -> bool:
        return self.raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE


async def _connect(url: str) -> PostgresConnection:
    """A connection for the writer or a reader, bounded as :func:`_bounded` says, and whose
    transaction the server ends when it sits idle for :data:`IDLE_IN_TRANSACTION`: a board
    process frozen or cut off mid-batch would otherwise hold every process's write lock."""
    raw = await psycopg.AsyncConnection.connect(
        _bounded(url, options=f"-c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION}"),
        autocommit=True,  # transactions are begun and ended by the statements below, as on SQLite
        cursor_factory=psycopg.AsyncRawCursor,
        row_factory=_rows,
        application_name="bot-board",
    )
    _adapt(raw)
    return PostgresConnection(raw)


async def _roll_back(conn: PostgresConnection) -> None:
    """End a transaction a failure left open on a connection that still works, so that the
    connection's next user begins afresh; a broken one is revived instead (``_revive``). Bounded
    as a statement is, for a server process that stopped between two statements: psycopg then
    closes the connection (:data:`WRITE_TIMEOUT`)."""
    if conn.in_transaction and not conn.raw.broken:
        with contextlib.suppress(psycopg.Error, TimeoutError):
            async with asyncio.timeout(READ_TIMEOUT / 1000):
                await conn.raw.execute("ROLLBACK")


def require_utf8(raw: psycopg.BaseConnection[Any], where: str) -> None:
    """Refuse a database in another encoding than UTF8, before anything is written to it.

    ``createdb`` without ``-E`` takes the cluster's, which is SQL_ASCII under the C locale:
    psycopg then reads text as bytes, and the board would break on its first read.
    """
    encoding = raw.info.parameter_status("server_encoding")
    if encoding != "UTF8":
        raise StoreError(
            f"{where}: the database's encoding is {encoding}; the board needs UTF8: create it with "
            "createdb -T template0 -E UTF8 --lc-collate=C --lc-ctype=C.UTF-8 (docs/scale.md)"
        )


#: The oldest PostgreSQL the board runs on (``server_version_num``): 14 keeps a function's body
#: of SQL as what it names (migration 0033), so that pg_restore can rebuild the schema.
OLDEST_SERVER = 140000


async def _require_server(raw: psycopg.AsyncConnection[Any], where: str) -> None:
    """Refuse, before migrating, a server older than :data:`OLDEST_SERVER` or built without
    ICU: the search reads a text's letters and digits as ICU has them, whatever the
    database's character type (migration 0033)."""
    if raw.info.server_version < OLDEST_SERVER:
        raise StoreError(
            f"{where}: this PostgreSQL server is version {raw.info.server_version // 10000}; "
            f"the board needs {OLDEST_SERVER // 10000} or newer (docs/scale.md)"
        )
    cursor = await raw.execute("SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu'")
    if await cursor.fetchone() is None:
        raise StoreError(
            f"{where}: this PostgreSQL server has no ICU collations (it was built without ICU); "
            "the board's search needs them: use a build with ICU, as the PostgreSQL project's "
            "and the major distributions' packages are (docs/scale.md)"
        )


def _own_it(raw: psycopg.AsyncConnection[Any]) -> str:
    """What to run when the board's role may not create in its database: PostgreSQL 15 and later
    give CREATE in a new database's public schema to its owner alone (docs/scale.md)."""
    role, database = raw.info.user, raw.info.dbname
    return (
        f'The role {role} must own the database: as a superuser, ALTER DATABASE "{database}" '
        f"OWNER TO {role} (or create it with createdb -O {role}, docs/scale.md)"
    )


async def _simple(raw: psycopg.AsyncConnection[Any], statements: str) -> None:
    """``statements`` (no parameters, ``;`` between them) in one round trip: a simple query,
    never prepared (a prepared statement holds one statement)."""
    await raw.execute(statements, prepare=False)


#: How every connection finds out that the server went silent (a network cut, a host frozen):
#: TCP keepalives for those that only wait (the listener, a duty's lock), in about a minute
#: rather than the system's two hours; a limit on data sent and not acknowledged for one
#: awaiting an answer, which TCP would otherwise send again for some fifteen minutes; and a
#: limit on connecting. A call then gets 503 within about half a minute instead of hanging.
#: A URL's own settings win; a Unix socket has no TCP to time.
_LINK = {
    "keepalives": "1",
    "keepalives_idle": "30",
    "keepalives_interval": "10",
    "keepalives_count": "3",
    "tcp_user_timeout": "30000",  # ms
    "connect_timeout": "10",  # s
}
#: How long the server lets a writer's or reader's transaction sit idle before it ends it (ms).
#: A batch never waits on anything but its own statements.
IDLE_IN_TRANSACTION = 60_000
#: How long a read's statement may run (ms, the server's ``statement_timeout`` within the read's
#: transaction): one waiting behind a lock (a migration's rewrite of a table, an operator's
#: ``LOCK TABLE``) is unavailable then, rather than holding its request and a reader
#: connection for as long as the lock is held. A read takes milliseconds. The board bounds the
#: whole read by it too (:data:`WRITE_TIMEOUT` says why).
READ_TIMEOUT = 30_000
#: How long a write batch may take (ms), from its begin to its commit: its wait for the write
#: lock (another process's batch held up), its statements and its commit. Bounded by the board,
#: as a read is too, because a server process that is stopped (``kill -STOP``) while its
#: connection stays up hears neither its own timeout nor a cancel: psycopg, cancelled, asks the
#: server to cancel, waits a few seconds, then closes the connection, which is made anew.
WRITE_TIMEOUT = 30_000


def _bounded(url: str, options: str = "") -> str:
    """``url`` with :data:`_LINK` where it names none of its own, and the server settings
    ``options`` before its own (the URL's, else ``PGOPTIONS``, which libpq reads only where a
    URL sets none): the server takes a setting's last value, so the user's still win."""
    given = psycopg.conninfo.conninfo_to_dict(url)
    wanted = {k: v for k, v in _LINK.items() if k not in given}
    theirs = given.get("options", os.environ.get("PGOPTIONS", ""))
    if options:
        wanted["options"] = f"{options} {theirs}".strip()
    return psycopg.conninfo.make_conninfo(url, **wanted)


#: The server's side of :data:`_LINK`, for a connection that sits idle outside a transaction
#: (a duty's lock, the listener): the server's own defaults keep a session whose host died or
#: was cut off for some two hours, and a duty's lock with it, so that no process took the duty
#: over. Any role may set these; over a Unix socket they do nothing.
_SERVER_LINK = (
    "-c tcp_keepalives_idle=30 -c tcp_keepalives_interval=10 -c tcp_keepalives_count=3 "
    "-c tcp_user_timeout=30000"
)


async def _plain(url: str, name: str = "bot-board") -> psycopg.AsyncConnection[Any]:
    """A connection of its own, outside any transaction (listening, locks held for a duty),
    under ``name`` in ``pg_stat_activity``, that the server drops within a minute of its
    host's silence (:data:`_SERVER_LINK`)."""
    return await psycopg.AsyncConnection.connect(
        _bounded(url, options=_SERVER_LINK), autocommit=True, application_name=name
    )


def _payloads(items: list[dict[str, Any]]) -> Iterator[str]:
    """``items`` as NOTIFY payloads, each under the server's limit."""
    chunk: list[bytes] = []
    size = 2
    for item in items:
        encoded = orjson.dumps(item)
        if chunk and size + len(encoded) + 1 > MAX_PAYLOAD:
            yield "[" + b",".join(chunk).decode() + "]"
            chunk, size = [], 2
        chunk.append(encoded)
        size += len(encoded) + 1
    if chunk:
        yield "[" + b",".join(chunk).decode() + "]"


@dataclass
class _Held:
    """What one batch of this process emitted, held until its own notification is heard."""

    seq: int  # the batch's number in its notifications (``"s"``)
    items: list[Any]  # its committed jobs' outbox items, in commit order
    committed: asyncio.Future[bool]  # whether the commit returned


class PostgresStore(Store):
    """The board's data in a PostgreSQL database that several board processes may share."""

    def __init__(self, url: str, *, readers: int = 4) -> None:
        super().__init__()
        self.url = url
        self.where = redacted(url)
        self.readers = max(1, readers)
        #: This process's name in its notifications: it skips its own.
        self.origin = f"{os.getpid()}-{time.monotonic_ns()}"
        self._writer: PostgresConnection | None = None
        self._pool: asyncio.Queue[PostgresConnection] = asyncio.Queue()
        self._all: list[PostgresConnection] = []
        self._listener: asyncio.Task[None] | None = None
        self._taker: asyncio.Task[None] | None = None
        self._arrived: asyncio.Queue[list[dict[str, Any]]] = asyncio.Queue(ARRIVED)
        #: The highest message id any notification told of, this process's own included: they
        #: arrive in commit order and ids commit in order, so every message up to it was told.
        #: (A stray notification may move it past them: a gap reads from the hub's head when
        #: that is lower, services.remote.)
        self._heard = 0
        self._held: collections.deque[_Held] = collections.deque()  # oldest first
        self._seq = 0  # the last batch number given
        self._told = 0  # the last own batch published where its notification came
        self._taking = False  # the taker is handing items on

    # -- lifecycle -------------------------------------------------------------

    async def open(self) -> None:
        try:
            self._writer = await self._connection()
            require_utf8(self._writer.raw, self.where)
            await _require_server(self._writer.raw, self.where)
            try:
                await migrate(self._writer, POSTGRESQL, self.where)
            except StoreError as exc:
                if isinstance(exc.__cause__, psycopg.errors.InsufficientPrivilege):
                    raise StoreError(f"{self.where}: {exc}\n{_own_it(self._writer.raw)}") from exc
                raise
            for _ in range(self.readers):
                self._pool.put_nowait(await self._connection())
            listening = asyncio.get_running_loop().create_future()
            self._listener = asyncio.create_task(self._listen(listening), name="board-listen")
            self._taker = asyncio.create_task(self._take(), name="board-take")
            await listening  # from here on, nothing another process commits is missed
        except BaseException as exc:
            await self.close()
            if isinstance(exc, psycopg.Error):
                raise StoreError(f"{self.where}: cannot open the database: {exc}".rstrip()) from exc
            raise
        self._start_writer()

    async def _connection(self) -> PostgresConnection:
        conn = await _connect(self.url)
        self._all.append(conn)
        return conn

    async def close(self) -> None:
        await self._stop_writer()
        for task in (self._listener, self._taker):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._listener = self._taker = None
        self._held.clear()
        for conn in self._all:
            with contextlib.suppress(psycopg.Error):
                await conn.raw.close()
        self._all.clear()
        self._writer = None

    # -- writes ----------------------------------------------------------------

    async def _job(self, job: Write, conn: PostgresConnection) -> Any:
        """One job, in its caller's context (run as a task in it)."""
        job.start()
        result = await job.fn(conn)
        if job.request is not None:  # the call it runs for is recorded with its effect
            await requests.record(conn, job.request, result)
        return result

    async def _commit(self, batch: list[Write]) -> list[Outcome]:
        """``batch``, and what queues while its lock is awaited, in one transaction: its framing
        costs one round trip per job, two per batch.

        Statements of the framing that take no parameters go together as one simple query
        (several statements, one round trip): the transaction's start with its lock and the
        first job's savepoint; between two jobs, the release of one savepoint and the next
        one's start (a failed job's savepoint is rolled back to, then released alike); the
        notification with the commit. A savepoint is released before the next one is taken,
        so a batch holds one subtransaction at a time, never the hundreds that would make
        every reader's snapshot look up ``pg_subtrans``.

        A batch may take :data:`WRITE_TIMEOUT` (or what a job of it asks, :func:`_allowed`),
        from its begin to its commit.
        """
        assert self._writer is not None
        conn = self._writer
        started = asyncio.get_running_loop().time()
        deadline = asyncio.timeout(_allowed(batch))
        try:
            async with deadline:
                await self._begin(conn, f"BEGIN; {_LOCK}; SAVEPOINT job")
                self._fill(batch)  # what queued while the lock was awaited joins this batch
                deadline.reschedule(started + _allowed(batch))
                return await self._run_jobs(conn, batch)
        except Exception as exc:
            failure: Exception
            if deadline.expired():
                failure = self._overran("a write batch", _allowed(batch))
            else:
                failure = self._unreachable(conn, exc)
            if isinstance(failure, DatabaseUnreachable):
                log.warning("write batch of %d failed: %s", len(batch), failure)
            else:
                log.exception("write batch of %d failed", len(batch))
            await _roll_back(conn)
            await self._revive(conn)
            return [(False, failure)] * len(batch)

    async def _run_jobs(self, conn: PostgresConnection, batch: list[Write]) -> list[Outcome]:
        """Each job of the begun ``batch`` in a savepoint of its own, then the commit."""
        raw = conn.raw
        outcomes: list[Outcome] = []
        for i, job in enumerate(batch):
            if i:
                await _simple(raw, "RELEASE job; SAVEPOINT job")
            try:
                result = await asyncio.create_task(self._job(job, conn), context=job.context)
                if _failed(conn):  # it swallowed the server's refusal: undone like any failure
                    raise StoreError("the database refused the write (a refusal was caught, not raised)")
            except Exception as exc:  # the job's own error goes back to its caller
                await _simple(raw, "ROLLBACK TO job")
                outcomes.append((False, exc))
            else:
                outcomes.append((True, result))
        committed = [job for job, (ok, _) in zip(batch, outcomes, strict=True) if ok]
        notifications, held = self._hold(raw, committed)
        try:
            await _simple(raw, "; ".join([*notifications, "COMMIT"]))
        except BaseException:
            if held is not None:  # if the server committed it, its notification is read back
                held.committed.set_result(False)
                with contextlib.suppress(ValueError):  # unless a take let it go meanwhile
                    self._held.remove(held)
            raise
        if held is not None:
            held.committed.set_result(True)
        return outcomes

    async def _begin(self, conn: PostgresConnection, begin: str) -> None:
        """Begin ``conn``'s transaction with ``begin``, on a new server connection when the
        server dropped its own (restarted, or its network cut) since its last use.

        Only then is it found out, before anything of the transaction ran, so beginning
        again on a new connection changes nothing the caller could see.
        """
        try:
            await _simple(conn.raw, begin)
            return
        except psycopg.OperationalError:
            if not self._lost(conn):
                raise
        await self._revive(conn)
        await _simple(conn.raw, begin)

    def _lost(self, conn: PostgresConnection) -> bool:
        """Whether the server dropped ``conn`` while the store still owns it."""
        return (conn.raw.broken or conn.raw.closed) and conn in self._all

    def _unreachable(self, conn: PostgresConnection, exc: Exception) -> Exception:
        """``exc``, or :class:`DatabaseUnreachable` when it broke a connection the store
        still owns: the server is gone, which callers are told as such, not as a surprise."""
        if self._lost(conn):
            return DatabaseUnreachable(f"{self.where}: {' '.join(str(exc).split())}")
        return exc

    def _overran(self, what: str, seconds: float) -> DatabaseUnreachable:
        """What the caller of ``what``, ended at its deadline, is told: the database does not answer."""
        return DatabaseUnreachable(f"{self.where}: {what} ran past {seconds:g} s")

    async def _revive(self, conn: PostgresConnection) -> None:
        """Give ``conn`` a new server connection when the server dropped its own.

        The new one takes the old one's place in ``conn``, so the pool and the writer keep
        the object they hold. A failed reconnection keeps the broken one: its next use
        fails at once (callers get a retryable error) and tries again. A connection the
        store no longer owns (it was closed, with a read still in flight, or while this
        reconnected) is not revived: nothing would ever close the new one.
        """
        if not self._lost(conn):
            return
        try:
            fresh = await _connect(self.url)
        except psycopg.Error as exc:
            log.warning("cannot reconnect to %s: %s", self.where, exc)
            return
        if conn not in self._all:  # the store closed meanwhile
            with contextlib.suppress(psycopg.Error):
                await fresh.raw.close()
            return
        log.info("reconnected to %s", self.where)
        conn.raw = fresh.raw

    def _hold(
        self, raw: psycopg.AsyncConnection[Any], committed: list[Write]
    ) -> tuple[list[str], _Held | None]:
        """``SELECT pg_notify(...)`` telling every process what ``committed`` emitted, as
        statements to send with the commit (PostgreSQL delivers them once it commits), and
        what they emitted taken out of their outboxes and held, for :meth:`_own` to publish
        where this process hears its notification. Nothing to tell: nothing held, the writer
        publishes the outboxes after the commit as on SQLite."""
        told = [d for job in committed for item in job.outbox if (d := self.describe(item)) is not None]
        if not told:
            return [], None
        seq = self._seq + 1
        statements = [
            sql.SQL("SELECT pg_notify({}, {})").format(CHANNEL, payload).as_string(raw)
            for payload in _payloads([{"o": self.origin, "s": seq, **item} for item in told])
        ]
        self._seq = seq
        held = _Held(seq, [], asyncio.get_running_loop().create_future())
        for job in committed:
            held.items += job.outbox
            job.outbox = []
        if len(self._held) >= MAX_HELD:
            log.warning("%d batches wait for their own notification; publishing the oldest", MAX_HELD)
            self._publish_held(self._held.popleft())
        self._held.append(held)
        return statements, held

    async def published(self) -> None:
        """Wait for this process's own batches held for their notification (:meth:`_own`),
        and for the take that publishes the last of them."""
        while self._held or self._taking:
            await asyncio.sleep(0.005)

    def _publish_held(self, held: _Held) -> None:
        if held.committed.done() and held.committed.result():
            self._publish_all(held.items)

    def _caught_up(self) -> None:
        """Nothing to do: PostgreSQL checkpoints in a process of its own."""

    def announce(self, item: dict[str, Any]) -> None:
        """Send ``item`` to the other processes now, through the writer (in commit order)."""

        async def send(conn: Connection) -> None:
            assert isinstance(conn, PostgresConnection)
            for payload in _payloads([{"o": self.origin, **item}]):
                await conn.execute("SELECT pg_notify(?, ?)", (CHANNEL, payload))

        if self._task is not None:
            task = asyncio.get_running_loop().create_task(self.write(send))
            task.add_done_callback(_log_failure)

    # -- what the other processes committed -----------------------------------

    async def _listen(self, listening: asyncio.Future[None]) -> None:
        """Queue the other processes' notifications for :meth:`_take`, reconnecting on loss,
        and when the server, asked after :data:`LISTEN_QUIET` of silence, does not answer.

        What was notified while the connection was lost never arrives: on listening again a
        ``gap`` item is queued first, for the taker to read what it may have hidden.
        """
        while True:
            try:
                raw = await _plain(self.url, LISTENER)
            except psycopg.Error as exc:
                if not listening.done():
                    listening.set_exception(StoreError(f"{self.where}: cannot listen: {exc}"))
                    return
                log.warning("cannot listen for other board processes (%s); retrying", exc)
                await asyncio.sleep(1)
                continue
            try:
                await raw.execute(f"LISTEN {CHANNEL}")
                if listening.done():
                    await self._arrived.put([{"t": "gap", "after": self._heard, "held": self._seq}])
                else:  # what committed before is read, not heard: the newest of it is the floor
                    cur = await raw.execute("SELECT COALESCE(MAX(id), 0) FROM messages")
                    self._heard = int((await cur.fetchone() or (0,))[0])
                    listening.set_result(None)
                while True:
                    quiet = True
                    async for note in raw.notifies(timeout=LISTEN_QUIET):
                        quiet = False
                        items = self._items(note.payload)
                        if items:
                            await self._arrived.put(items)
                    if quiet:
                        await _answers(raw, LISTEN_ANSWER)
            except Exception as exc:  # not the server's doing: the same, with where it came from
                unexpected = not isinstance(exc, psycopg.Error)
                log.warning("lost the notification connection (%s); reconnecting", exc, exc_info=unexpected)
                await asyncio.sleep(1)
            finally:
                with contextlib.suppress(psycopg.Error):
                    await raw.close()

    def _items(self, payload: str) -> list[dict[str, Any]]:
        """What a notification tells this process (its own items too, for :meth:`_own`). The
        message ids of all its items (``services.remote.describe``) move :attr:`_heard` on."""
        try:
            items = [item for item in orjson.loads(payload) if isinstance(item, dict)]
        except (orjson.JSONDecodeError, TypeError):
            log.warning("ignored a notification that is not a JSON list: %.80r", payload)
            return []
        told = [
            item["id"] for item in items if item.get("t") == "message" and isinstance(item.get("id"), int)
        ]
        self._heard = max([self._heard, *told])
        return [
            item
            for item in items
            if item.get("t") not in ("local", "gap", "behind")  # this process's own kinds
            and (item.get("t") != "message" or isinstance(item.get("id"), int))  # no read finds it
        ]

    async def _take(self) -> None:
        """Hand :attr:`on_remote` what was heard, one payload after another, in commit order.

        The payloads heard while the last call ran go together in the next one (up to
        :data:`MAX_TAKEN` items): a busy writer elsewhere costs a read per call here, not
        a read per message.
        """
        again: list[dict[str, Any]] = []
        tries = 0
        while True:
            items, again = again or await self._arrived.get(), []
            self._taking = True
            while len(items) < MAX_TAKEN and not self._arrived.empty():
                items += self._arrived.get_nowait()
            try:
                items = await self._own(items)
                if self.on_remote is not None:
                    await self.on_remote(items)
                tries = 0
            except Exception:
                tries += 1
                again = self._again(items)
                if tries > RETAKES:  # a database down for minutes, or a row no read gets through
                    log.exception("gave up taking in %d items of other processes", len(items))
                    await self._give_up(again[1:])
                    again, tries = [], 0
                    continue
                log.exception("could not take in %d items of other processes; reading them again", len(items))
                if again:
                    await asyncio.sleep(min(RETAKE_AFTER * 2 ** (tries - 1), RETAKE_AT_MOST))
                else:
                    tries = 0
            finally:
                self._taking = False

    def _again(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A take that failed (the database did not answer its read), to take again: a gap,
        the messages after the one before its first, as after a lost notification connection,
        then all it told besides messages (this process's own batches, signals), in its
        order. Nothing of it was published: a take reads before it publishes."""
        told = list(items)
        for item in items:
            if item.get("t") == "local":
                told += [d for one in item["items"] if (d := self.describe(one)) is not None]
        firsts = [  # an id not a number (a notification never written by a board) is no first
            where if item["t"] == "gap" else where - 1
            for item in told
            if item.get("t") in ("gap", "message")
            and isinstance(where := item.get("after" if item["t"] == "gap" else "id"), int)
        ]
        if not firsts:
            return []
        rest = [item for item in items if item.get("t") not in ("gap", "message")]
        return [{"t": "gap", "after": min(firsts)}, *rest]

    async def _give_up(self, told: list[dict[str, Any]]) -> None:
        """A take given up: what it told besides messages is published (this process's own
        events and signals, the others' signals), none of which needs the read that keeps
        failing; then every waiter reads the messages it could not from the database
        (``behind``). In that order: an own event of the take may come before a message given
        up, and published after ``behind`` it would tell the hub it is at the head again."""
        if self.on_remote is None:
            return
        try:
            await self.on_remote(given_up(told))
        except Exception:
            log.exception("could not publish what %d items given up told besides messages", len(told))

    async def _own(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``items`` with this process's own in their place: a held batch whose notification
        this is becomes ``{"t": "local", "items": [...]}``, published there. Held batches
        before it whose notification never came (a commit that failed) go with it.

        A notification of a batch no longer held (its commit failed as far as this process
        could tell, or it was published past :data:`MAX_HELD`) stays as the other processes'
        do, to be read back. At a ``gap``, the batches committed while this process could not
        hear itself are let go: their messages are among the gap's read (ids above the last
        one heard), and their other items follow it.
        """
        out: list[dict[str, Any]] = []
        for item in items:
            if item.get("t") == "gap":
                out.append(item)
                held_up_to = int(item.get("held", 0))
                rest = [
                    one
                    for held in await self._let_go(held_up_to)
                    for one in held.items
                    if (told := self.describe(one)) is None or told.get("t") != "message"
                ]
                if rest:
                    out.append({"t": "local", "items": rest})
                self._told = max(self._told, held_up_to)  # their notifications, heard late, told
            elif item.get("o") != self.origin:
                out.append(item)
            elif isinstance(seq := item.get("s"), int) and seq > self._told:  # no "s": an announcement
                released = await self._let_go(seq)
                if released:
                    out.append({"t": "local", "items": [one for held in released for one in held.items]})
                if released and released[-1].seq == seq:
                    self._told = seq
                else:  # not held any more: read back as the other processes' are
                    out.append(item)
        return out

    async def _let_go(self, seq: int) -> list[_Held]:
        """The held batches up to ``seq`` whose commit returned, taken out of :attr:`_held`."""
        released = []
        while self._held and self._held[0].seq <= seq:
            held = self._held.popleft()
            if await held.committed:
                released.append(held)
        return released

    async def scrub(self) -> None:
        """Vacuum the tables whose rows redaction rewrites: the dead row versions holding
        the erased text become free space (``docs/scale.md`` says what this does not reach)."""
        raw = await _plain(self.url)
        try:
            await raw.execute("VACUUM kb_revisions")
        finally:
            await raw.close()

    # -- duties ----------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def duty(self, name: str) -> AsyncIterator[bool]:
        """Yes for one process at a time: a session advisory lock, held while inside.

        The lock lives on a connection of its own, so a process that dies mid-duty
        lets it go with its connection. Asked while the server does not answer, the
        answer is no: the callers ask again later, where an error would end their loop.
        The lock also goes when the server drops that connection (a restart, a network
        cut), and another process may take it: the work inside is then cancelled, and
        the block ends as if it had returned, for the caller to ask again.
        """
        raw: psycopg.AsyncConnection[Any] | None = None
        watch: asyncio.Task[None] | None = None
        try:
            mine = False
            try:
                raw = await _plain(self.url)
                cur = await raw.execute("SELECT pg_try_advisory_lock(%s, %s)", (BOARD, LOCKS[name]))
                row = await cur.fetchone()
                mine = bool(row and row[0])
            except psycopg.OperationalError as exc:
                log.warning("could not ask for the %s duty: %s", name, " ".join(str(exc).split()))
            holder = asyncio.current_task()
            if raw is not None and mine and holder is not None:
                watch = asyncio.get_running_loop().create_task(_cancel_when_lost(raw, name, holder))
            try:
                yield mine
            except asyncio.CancelledError:
                if watch is None or not watch.done() or holder is None or holder.uncancel():
                    raise  # cancelled from elsewhere, or besides the lost lock
        finally:
            try:
                if watch is not None:
                    watch.cancel()
                    await asyncio.wait([watch])  # its end; a cancel of this task meanwhile is this task's
            finally:
                if raw is not None:
                    await raw.close()

    # -- reads -----------------------------------------------------------------

    async def read(self, fn: Job[T]) -> T:
        """Run ``fn`` in a read-only, repeatable-read transaction: one consistent snapshot.

        The connection goes back to the pool once the read is over, even when the
        caller stopped waiting (the read runs as a task of its own). Waiting for a free
        connection is bounded as a statement is (:data:`READ_TIMEOUT`): behind reads held by
        a lock, a queue of them would wait a deadline for each read ahead of it.
        """
        try:
            async with asyncio.timeout(READ_TIMEOUT / 1000):
                conn = await self._pool.get()
        except TimeoutError:
            raise DatabaseUnreachable(
                f"{self.where}: no connection to read on within {READ_TIMEOUT / 1000:g} s"
            ) from None
        return await asyncio.shield(asyncio.get_running_loop().create_task(self._read(conn, fn)))

    async def _read(self, conn: PostgresConnection, fn: Job[T]) -> T:
        """``fn`` in its transaction, bounded by the server (each statement) and by the board
        (the whole read, for a server process that hears nothing; :data:`WRITE_TIMEOUT` says
        why)."""
        deadline = asyncio.timeout(READ_TIMEOUT / 1000)
        try:
            async with deadline:
                begin = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
                await self._begin(conn, f"{begin}; SET LOCAL statement_timeout = {int(READ_TIMEOUT)}")
                raw = conn.raw
                try:
                    return await fn(conn)
                finally:
                    with contextlib.suppress(psycopg.Error):
                        await raw.execute("ROLLBACK" if _failed(conn) else "COMMIT")
        except (psycopg.errors.QueryCanceled, TimeoutError) as exc:  # the server's deadline, or the board's
            if isinstance(exc, TimeoutError) and not deadline.expired():  # the read's own
                raise
            raise self._overran("a read", READ_TIMEOUT / 1000) from exc
        except psycopg.Error as exc:  # of any class: the server ends an idle transaction with 25P03
            if (failure := self._unreachable(conn, exc)) is exc:
                raise
            raise failure from exc
        finally:
            await _roll_back(conn)  # a begin that failed halfway
            await self._revive(conn)
            self._pool.put_nowait(conn)


def _allowed(batch: list[Write]) -> float:
    """Seconds ``batch`` may take: :data:`WRITE_TIMEOUT`, or more where a job of it asks."""
    return max(WRITE_TIMEOUT / 1000, *(job.allowed or 0.0 for job in batch))


def given_up(told: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a take given up hands on: what it told besides messages, then ``behind``
    (:meth:`PostgresStore._give_up` says why in that order)."""
    return [*told, {"t": "behind"}]


def _has_rows(cursor: Any) -> bool:
    """Whether the statement answered with rows (none of them, maybe), without ``description``."""
    result = cursor.pgresult
    return result is not None and result.status == psycopg.pq.ExecStatus.TUPLES_OK


async def _answers(raw: psycopg.AsyncConnection[Any], within: float) -> None:
    """Raise as for a lost connection when ``raw``'s server process does not answer in time
    (psycopg's cancel of the unanswered statement adds its own wait of 5 s)."""
    try:
        async with asyncio.timeout(within):
            await raw.execute("SELECT 1")
    except TimeoutError:
        raise psycopg.OperationalError(f"the server did not answer in {within:g} s") from None


def _failed(conn: PostgresConnection) -> bool:
    return conn.raw.info.transaction_status == psycopg.pq.TransactionStatus.INERROR


async def _cancel_when_lost(raw: psycopg.AsyncConnection[Any], name: str, holder: asyncio.Task[Any]) -> None:
    """Wait on a duty's lock connection, which hears nothing, until the server drops it; then
    cancel ``holder``, the task doing the duty, whose lock went with the connection."""
    try:
        async for _ in raw.notifies():
            pass
    except psycopg.Error as exc:
        log.warning("lost the %s duty with its connection (%s)", name, " ".join(str(exc).split()))
    holder.cancel()


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("could not tell the other board processes: %s", task.exception())
