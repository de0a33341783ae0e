"""The store: numbered migrations, one writer with group commit, readers, the lock file."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import sqlite3
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from board.server.store import schema
from board.server.store.connection import Connection, JobSuspended
from board.server.store.db import FOLD_AFTER, Database
from board.server.store.dialects import SQLITE
from board.server.store.schema import Migration, migrations, schema_version
from board.server.store.writer import StoreError, emit
from tests.support.boardtest import eventually
from tests.support.damage import mangle_schema


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def plain(path: Path, sql: str) -> list[tuple[Any, ...]]:
    """Run SQL on the file with the sqlite3 module, as another program would."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


async def scalar(db: Database, sql: str) -> object:
    async def read(conn: Connection) -> object:
        async with conn.execute(sql) as cur:
            row = await cur.fetchone()
        return row[0]

    return await db.read(read)


def insert(value: str) -> Callable[[Connection], Awaitable[int]]:
    async def job(conn: Connection) -> int:
        return await conn.insert("INSERT INTO t (v) VALUES (?)", (value,))

    return job


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = Database(tmp_path / "store.db")
    await database.open()
    await database.write(lambda conn: conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT UNIQUE)"))
    yield database
    await database.close()


# -- migrations ----------------------------------------------------------------------


def applied(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("applying migration")]


async def test_migrations_apply_once_and_record_the_version(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="board.server.store.schema")
    path = tmp_path / "board.db"
    shipped = [m.name for m in migrations()]
    assert len(shipped) >= 2

    first = Database(path)
    await first.open()
    try:
        assert await scalar(first, "PRAGMA user_version") == schema_version()
        assert await scalar(first, "SELECT count(*) FROM workspaces WHERE slug = 'admin'") == 1
        assert await scalar(first, "PRAGMA journal_mode") == "wal"
    finally:
        await first.close()
    assert applied(caplog) == [f"applying migration {name}" for name in shipped]

    caplog.clear()
    again = Database(path)
    await again.open()
    try:
        assert await scalar(again, "PRAGMA user_version") == schema_version()
        assert await scalar(again, "SELECT count(*) FROM workspaces WHERE slug = 'admin'") == 1
    finally:
        await again.close()
    assert applied(caplog) == []


async def test_an_older_database_gets_only_the_missing_migrations(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="board.server.store.schema")
    path = tmp_path / "board.db"
    first = migrations()[0]
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(f"{SQLITE.render(first.source)}\nPRAGMA user_version = {first.number};")
    conn.close()

    database = Database(path)
    await database.open()
    try:
        assert await scalar(database, "PRAGMA user_version") == schema_version()
        assert await scalar(database, "SELECT count(*) FROM sqlite_master WHERE name = 'claims'") == 1
    finally:
        await database.close()
    assert applied(caplog) == [
        f"applying migration {m.name}" for m in migrations() if m.number > first.number
    ]


async def test_a_failing_migration_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "board.db"
    database = Database(path)
    await database.open()
    await database.close()
    known = schema_version()

    broken = Migration(
        known + 1, f"{known + 1:04d}_broken.sql", "CREATE TABLE half (x);\nINSERT INTO nowhere VALUES (1);"
    )
    shipped = migrations()
    monkeypatch.setattr(schema, "migrations", lambda: (*shipped, broken))

    with pytest.raises(StoreError, match="broken"):
        await Database(path).open()
    assert plain(path, "PRAGMA user_version") == [(known,)]
    assert plain(path, "SELECT count(*) FROM sqlite_master WHERE name = 'half'") == [(0,)]


@pytest.mark.parametrize("journal", ["wal", "delete"])
async def test_a_newer_database_refuses_to_open_and_is_left_alone(tmp_path: Path, journal: str) -> None:
    path = tmp_path / "board.db"
    if journal == "wal":  # written by a newer board
        database = Database(path)
        await database.open()
        await database.close()
    else:  # copied from elsewhere, never opened by a board
        plain(path, "CREATE TABLE future (x)")
    newer = schema_version() + 7
    plain(path, f"PRAGMA user_version = {newer}")
    before = file_digest(path)
    files_before = sorted(p.name for p in tmp_path.iterdir())

    with pytest.raises(StoreError) as refused:
        await Database(path, exclusive=True).open()
    message = str(refused.value)
    assert str(newer) in message and str(schema_version()) in message
    assert "upgrade" in message

    assert file_digest(path) == before
    assert plain(path, "PRAGMA user_version") == [(newer,)]
    leftovers = sorted(p.name for p in tmp_path.iterdir())
    assert [name for name in leftovers if name not in files_before and not name.endswith(".lock")] == []


# -- the writer ------------------------------------------------------------------------


async def test_concurrent_writes_commit_in_groups(db: Database) -> None:
    batches, writes = db.stats.batches, db.stats.writes
    ids = await asyncio.gather(*(db.write(insert(f"v{i}")) for i in range(200)))

    assert len(set(ids)) == 200
    assert db.stats.writes - writes == 200
    assert db.stats.batches - batches < 200
    assert db.stats.largest_batch > 1
    assert await scalar(db, "SELECT count(*) FROM t") == 200


async def test_an_idle_writer_has_the_log_folded_before_a_commit_must(db: Database, tmp_path: Path) -> None:
    """Once :data:`FOLD_AFTER` batches are in the write-ahead log and the writer is idle, a
    connection of its own folds the log into the file (db.py), so the next commit starts it
    over: it never grows to the 1,000 pages at which SQLite folds it inside a commit."""
    wal = tmp_path / "store.db-wal"
    written, sizes = 0, []
    for i in range(30 * FOLD_AFTER):
        value = f"{i:05d}" + "x" * 6000  # some pages each, in the table and in its index
        await db.write(insert(value))
        written += 2 * len(value)
        await eventually(lambda: db.stats.folds == db.stats.batches // FOLD_AFTER, "an idle writer's fold")
        sizes.append(wal.stat().st_size)  # the file keeps its length when the log starts over

    assert db.stats.folds >= 30
    assert written > 1000 * 4096  # more than SQLite lets the log hold before folding it itself
    assert max(sizes) == sizes[FOLD_AFTER]  # never more room than the first fold's batches took


async def test_a_fold_that_fails_is_logged_and_writes_go_on(
    db: Database, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The fold is upkeep: when its connection cannot fold (here it is closed under it), the
    board says so in its log, counts no fold, tries again at the next idle moment, and every
    write still commits (SQLite's own fold inside a commit still bounds the log)."""
    caplog.set_level(logging.WARNING, logger="board.server.store.db")
    folder = db._folder
    assert folder is not None and folder.conn is not None
    await folder.call(folder.conn.raw.close)  # on the connection's own thread

    def failures() -> list[logging.LogRecord]:
        return [r for r in caplog.records if "folding the write-ahead log failed" in r.getMessage()]

    for i in range(2 * FOLD_AFTER):
        assert isinstance(await db.write(insert(f"v{i:03d}")), int)
        if db.stats.batches % FOLD_AFTER == 0:
            await eventually(lambda: len(failures()) == db.stats.batches // FOLD_AFTER, "the fold's failure")

    assert db.stats.folds == 0
    assert len(failures()) == 2  # once each time FOLD_AFTER more batches were in the log
    assert "closed database" in failures()[0].getMessage()
    assert await db.read(_values) == sorted(f"v{i:03d}" for i in range(2 * FOLD_AFTER))


async def test_a_failing_write_does_not_undo_its_neighbours(db: Database) -> None:
    await db.write(insert("taken"))
    # A job runs in the writer's thread: it holds the writer by blocking that thread.
    gate, entered = threading.Event(), threading.Event()

    async def hold(conn: Connection) -> str:
        entered.set()
        gate.wait()
        return "held"

    async def half_then_fail(conn: Connection) -> None:
        await conn.execute("INSERT INTO t (v) VALUES ('half')")
        raise ValueError("changed my mind")

    batches = db.stats.batches
    holder = asyncio.create_task(db.write(hold))
    await eventually(entered.is_set, "the writer to be inside the holder's batch")
    jobs = [
        asyncio.create_task(db.write(insert("before"))),
        asyncio.create_task(db.write(insert("taken"))),  # UNIQUE violation
        asyncio.create_task(db.write(half_then_fail)),
        asyncio.create_task(db.write(insert("after"))),
    ]
    await eventually(lambda: db.queue_depth == len(jobs), "the jobs to queue behind the holder")
    gate.set()
    assert await holder == "held"
    results = await asyncio.gather(*jobs, return_exceptions=True)

    assert db.stats.batches - batches == 2, "the four jobs waited together and shared one transaction"
    assert isinstance(results[0], int) and isinstance(results[3], int)
    assert isinstance(results[1], sqlite3.IntegrityError)
    assert isinstance(results[2], ValueError) and str(results[2]) == "changed my mind"
    values = await db.read(lambda conn: _values(conn))
    assert values == ["after", "before", "taken"]


async def _values(conn: Connection) -> list[str]:
    async with conn.execute("SELECT v FROM t ORDER BY v") as cur:
        return [row[0] for row in await cur.fetchall()]


async def test_the_outbox_is_published_in_commit_order_and_only_for_committed_writes(db: Database) -> None:
    published: list[object] = []
    db.publish = published.append

    def emitting(*items: str, then_fail: bool = False) -> Callable[[Connection], Awaitable[None]]:
        async def write(conn: Connection) -> None:
            for item in items:
                emit(item)
            if then_fail:
                raise RuntimeError("no")

        return write

    results = await asyncio.gather(
        db.write(emitting("a1", "a2")),
        db.write(emitting("lost", then_fail=True)),
        db.write(emitting("b")),
        return_exceptions=True,
    )
    assert isinstance(results[1], RuntimeError)
    assert published == ["a1", "a2", "b"], "the failed write's outbox is dropped with it"
    with pytest.raises(LookupError):
        emit("outside any write")


async def test_readers_see_only_committed_data(db: Database) -> None:
    inside, gate = threading.Event(), threading.Event()

    async def slow(conn: Connection) -> None:
        await conn.execute("INSERT INTO t (v) VALUES ('pending')")
        inside.set()
        gate.wait()

    writing = asyncio.create_task(db.write(slow))
    await eventually(inside.is_set, "the write to be inside its transaction")
    # The write is done but not committed: readers neither see it nor wait for it.
    assert await asyncio.wait_for(scalar(db, "SELECT count(*) FROM t"), 2) == 0
    gate.set()
    await writing
    assert await scalar(db, "SELECT count(*) FROM t") == 1


async def test_a_cancelled_read_leaves_its_connection_usable(tmp_path: Path) -> None:
    database = Database(tmp_path / "one-reader.db", readers=1)
    await database.open()
    try:
        for _ in range(5):
            task = asyncio.create_task(scalar(database, "SELECT count(*) FROM workspaces"))
            await asyncio.sleep(0)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await database.write(
                lambda conn: conn.execute(
                    "INSERT INTO workspaces (slug, name, created_at) VALUES (hex(randomblob(4)), 'x', 'x')"
                )
            )
            # The one reader is not stuck in an old transaction: it sees the new row.
            expected = await scalar(database, "SELECT count(*) FROM workspaces")
            assert expected == int(plain(database.path, "SELECT count(*) FROM workspaces")[0][0])
    finally:
        await database.close()


async def test_a_write_after_close_is_refused(tmp_path: Path) -> None:
    database = Database(tmp_path / "closed.db")
    await database.open()
    await database.close()
    with pytest.raises(StoreError, match="not open"):
        await database.write(insert("x"))


async def test_a_read_only_store_reads_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "board.db"
    database = Database(path)
    await database.open()
    await database.write(lambda conn: conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)"))
    await database.write(insert("kept"))
    await database.close()
    with sqlite3.connect(path) as raw:
        raw.execute("PRAGMA user_version = 3")  # older than the code: a writable store would migrate it
    before = hashlib.sha256(path.read_bytes()).hexdigest()

    reader = Database(path, readers=1, read_only=True)
    await reader.open()
    try:
        rows = await reader.read(lambda conn: conn.execute_fetchall("SELECT v FROM t"))
        assert [tuple(r) for r in rows] == [("kept",)]
        with pytest.raises(StoreError, match="not open"):
            await reader.write(insert("refused"))
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            await reader.read(insert("refused"))
    finally:
        await reader.close()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before

    missing = tmp_path / "absent.db"
    with pytest.raises(StoreError, match="unable to open"):
        await Database(missing, read_only=True).open()
    assert not missing.exists()  # not created


# -- the lock file ------------------------------------------------------------------


async def test_exclusive_twice_on_one_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "board.db"
    first = Database(path, exclusive=True)
    await first.open()
    try:
        with pytest.raises(StoreError) as refused:
            await Database(path, exclusive=True).open()
        assert f"{path}.lock" in str(refused.value)
        assert "another board" in str(refused.value)
    finally:
        await first.close()

    # Once the first lets go, the file can be served again.
    second = Database(path, exclusive=True)
    await second.open()
    await second.close()


async def test_writes_waiting_when_the_database_closes_fail_instead_of_hanging(tmp_path: Path) -> None:
    database = Database(tmp_path / "closing.db")
    await database.open()
    await database.write(lambda conn: conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT UNIQUE)"))
    started, gate = threading.Event(), threading.Event()

    async def long(conn: Connection) -> None:
        await conn.execute("INSERT INTO t (v) VALUES ('long')")
        started.set()
        gate.wait()

    running = asyncio.create_task(database.write(long))
    await eventually(started.is_set, "the write to start")
    queued = asyncio.create_task(database.write(insert("queued")))
    await eventually(lambda: database.queue_depth == 1, "the write to queue")
    closing = asyncio.create_task(database.close())

    for task in (running, queued):
        with pytest.raises(StoreError, match="closed"):
            await asyncio.wait_for(task, 5)
    gate.set()  # the job ends in the writer's thread, after its callers were told it failed
    await asyncio.wait_for(closing, 5)
    assert plain(database.path, "SELECT count(*) FROM t") == [(0,)], "so its batch is not committed"


async def test_a_job_that_awaits_anything_but_its_connection_is_refused_and_undone(db: Database) -> None:
    async def wanders(conn: Connection) -> None:
        await conn.execute("INSERT INTO t (v) VALUES ('wandered')")
        await asyncio.sleep(0)

    results = await asyncio.gather(
        db.write(insert("before")), db.write(wanders), db.write(insert("after")), return_exceptions=True
    )
    assert isinstance(results[1], JobSuspended)
    assert isinstance(results[0], int) and isinstance(results[2], int)
    assert await db.read(lambda conn: _values(conn)) == ["after", "before"]

    async def reads_then_wanders(conn: Connection) -> None:
        await conn.execute("SELECT 1")
        await asyncio.sleep(0)

    with pytest.raises(JobSuspended):
        await db.read(reads_then_wanders)
    assert await db.read(lambda conn: _values(conn)) == ["after", "before"], "the reader is usable again"


async def test_a_file_that_is_not_a_database_is_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "board.db"
    path.write_bytes(b"this is not a database, it is a shopping list\n" * 100)
    before = file_digest(path)
    with pytest.raises(StoreError) as refused:
        await Database(path).open()
    assert str(path) in str(refused.value)
    assert file_digest(path) == before


async def test_a_database_whose_schema_is_damaged_is_refused_clearly(tmp_path: Path) -> None:
    """SQLite quotes the damaged schema's bytes in its error: the refusal still says it."""
    path = tmp_path / "board.db"
    db = Database(path)
    await db.open()
    await db.close()
    mangle_schema(path)
    before = file_digest(path)
    with pytest.raises(StoreError) as refused:
        await Database(path).open()
    assert str(refused.value) == (
        f"{path}: cannot open the database: malformed database schema (\ufffdA\ufffd) - incomplete input."
    )
    assert file_digest(path) == before
