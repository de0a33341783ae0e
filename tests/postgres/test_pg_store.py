"""The PostgreSQL store's own duties: what other processes are told, and a dropped connection."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, cast

import psycopg
import pytest

from board.client import BoardAPIError, BoardClient
from board.server.api.keys import CONTEXT, OUTBOX
from board.server.outbox.dispatch import Dispatcher
from board.server.services import remote
from board.server.store import messages as message_store
from board.server.store import postgres
from board.server.store.dialects import BOARD, LOCKS
from board.server.store.postgres import PostgresStore
from board.server.store.writer import DatabaseUnreachable
from routines.runner import Runner
from tests.support.boardtest import (
    LONG_WAIT,
    WOKEN_WITHIN,
    PgDatabase,
    World,
    database_env,
    db_rows,
    eventually,
    held,
    postgresql_only,
    snapshot,
    start_board,
    stop_board,
)
from tests.support.pgcluster import PgCluster
from tests.support.processes import board_env, command
from tests.support.routines_support import StuckBoard


def database_url(world: World) -> str:
    assert isinstance(world.board.db_path, PgDatabase)
    return world.board.db_path.url


def drop_connections(url: str, database: str | None = None) -> int:
    """End every connection the board holds to ``database`` (the one ``url`` names, by
    default), as a server restart or a network cut would."""
    with psycopg.connect(url, autocommit=True) as admin:
        rows = admin.execute(
            """SELECT pg_terminate_backend(pid) FROM pg_stat_activity
               WHERE datname = coalesce(%s, current_database()) AND application_name = 'bot-board'""",
            (database,),
        ).fetchall()
    return len(rows)


async def listening(url: str) -> tuple[PostgresStore, list[dict[str, Any]]]:
    """A second store on the same database, as another board process would open it."""
    other = PostgresStore(url, readers=1)
    heard: list[dict[str, Any]] = []

    async def arrived(items: list[dict[str, Any]]) -> None:
        heard.extend(items)

    other.on_remote = arrived
    await other.open()
    return other, heard


@postgresql_only
async def test_a_post_is_told_to_the_other_processes_by_id(world: World) -> None:
    other, heard = await listening(database_url(world))
    try:
        posted = await world.bot.post("for everyone " + "x" * 9000, channel="general")
        await eventually(lambda: heard, "the other process told of the post")
        assert [(item["t"], item["id"]) for item in heard] == [("message", posted["id"])]
        assert all(len(repr(item)) < 200 for item in heard)  # ids, never the 9,000-character body
    finally:
        await other.close()


@postgresql_only
@pytest.mark.parametrize("retakes", [postgres.RETAKES, 0], ids=["read-again", "given-up"])
async def test_a_take_whose_read_fails_still_reaches_its_waiters(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, retakes: int
) -> None:
    """B reads back what A committed, and that read fails (the database did not answer it).
    Read again a moment later, or given up once its tries are used: either way a long-poll held
    on B gets the mention, and so does one begun after (given up, from the database: B's hub
    never published it, so no reader may count as at its head). Skipped, it was lost to every
    waiter whose cursor a later message moved past."""
    monkeypatch.setattr(postgres, "RETAKES", retakes)
    b = await start_board(tmp_path / "b", database_url=database_url(world))
    failed: list[list[int]] = []

    async def fails_once(conn: Any, message_ids: list[int]) -> Any:
        if not failed:
            failed.append(message_ids)
            raise psycopg.OperationalError("the database did not answer")
        return await real(conn, message_ids=message_ids)

    real = remote.events_of
    try:
        bot_on_b = b.client(world.bot.token)
        since = int((await bot_on_b.me())["cursor"])
        inbox = asyncio.create_task(bot_on_b.inbox(since=since, wait=LONG_WAIT))
        await held(b)
        monkeypatch.setattr(remote, "events_of", fails_once)
        posted = await world.peer.post("@pb while B cannot read", channel="general")
        mail = await asyncio.wait_for(inbox, WOKEN_WITHIN)
        later = await asyncio.wait_for(bot_on_b.inbox(since=since, wait=LONG_WAIT), WOKEN_WITHIN)
    finally:
        await stop_board(b)
    assert failed == [[posted["id"]]]
    assert [m["id"] for m in mail["messages"]] == [posted["id"]]
    assert [m["id"] for m in later["messages"]] == [posted["id"]]


@postgresql_only
async def test_a_gap_too_large_to_read_back_sends_every_waiter_to_the_database(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B misses more messages than it reads back at once (its listener down while A wrote on):
    it reads none back, and every waiter for messages reads them from the database from its own
    cursor instead: a long-poll answers them, a wake stream ends with ``more`` at its cursor
    and, opened again there, sends them. Memory holds no more ids than it reads back."""
    monkeypatch.setattr(remote, "READ_BACK_AT_MOST", 1)
    b = await start_board(tmp_path / "b", database_url=database_url(world))
    read_back: list[int] = []
    heard_again = asyncio.Event()  # both posts commit before a listener is back
    plain = postgres._plain

    async def listener_gated(url: str, name: str = "bot-board") -> Any:
        if name == postgres.LISTENER:
            await heard_again.wait()
        return await plain(url, name)

    async def counted(conn: Any, message_ids: list[int]) -> Any:
        read_back.extend(message_ids)
        return await real(conn, message_ids=message_ids)

    real = remote.events_of
    monkeypatch.setattr(remote, "events_of", counted)
    monkeypatch.setattr(postgres, "_plain", listener_gated)
    gap_reads: list[int] = []  # how many ids each gap's read held (both boards' listeners are cut)
    ids_after = message_store.ids_after

    async def gap_read(conn: Any, after: int, limit: int) -> list[int]:
        found = await ids_after(conn, after=after, limit=limit)
        gap_reads.append(len(found))
        return found

    monkeypatch.setattr(message_store, "ids_after", gap_read)
    try:
        bot_on_b = b.client(world.bot.token)
        since = int((await bot_on_b.me())["cursor"])
        async with await bot_on_b.wake_stream(since=since, beat=5) as stream:
            inbox = asyncio.create_task(bot_on_b.inbox(since=since, wait=LONG_WAIT))
            await held(b, 2)
            with psycopg.connect(database_url(world), autocommit=True) as admin:
                admin.execute(
                    """SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                       WHERE datname = current_database() AND application_name = %s""",
                    (postgres.LISTENER,),
                )
            posted = [
                (await world.peer.post(f"@pb {n} while B cannot hear", channel="general"))["id"]
                for n in (1, 2, 3)
            ]
            heard_again.set()
            mail = await asyncio.wait_for(inbox, WOKEN_WITHIN)
            async with asyncio.timeout(WOKEN_WITHIN):
                lines = [line async for line in stream]
        async with await bot_on_b.wake_stream(since=lines[-1]["cursor"], beat=5) as again:
            backlog: list[int] = []
            async with asyncio.timeout(WOKEN_WITHIN):
                async for line in again:
                    backlog += [line["message"]["id"]] if "message" in line else []
                    if len(backlog) == len(posted):
                        break
    finally:
        await stop_board(b)
    assert [m["id"] for m in mail["messages"]] == posted
    assert lines == [{"cursor": since, "end": "more"}]
    assert backlog == posted
    assert not set(posted) & set(read_back)
    assert gap_reads and max(gap_reads) <= 2  # the read stops one past what is read back


@postgresql_only
async def test_a_notification_no_board_wrote_stops_no_wake(world: World) -> None:
    """Anyone who may connect can notify the board's channel: what no board process wrote (an
    id that is not a number, a kind only a process makes for itself) is logged and dropped, and
    the process goes on taking in, its own posts too."""
    with psycopg.connect(database_url(world), autocommit=True) as admin:
        stray = [
            {"o": "x", "t": "message", "id": "abc"},
            {"o": "x", "t": "local", "items": [1]},
            {"o": "x", "t": "gap", "held": "x"},
            {"o": "x", "t": "signal", "key": "abc", "id": 1},
            {"o": "x", "t": "signal", "key": ["routines", 0]},
            {"o": "x", "t": "forget", "agent": "pb"},
        ]
        admin.execute("SELECT pg_notify('board', %s)", (json.dumps(stray),))
    since = int((await world.bot.me())["cursor"])
    inbox = asyncio.create_task(world.bot.inbox(since=since, wait=LONG_WAIT))
    await held(world.board)
    posted = await world.peer.post("@pb after the stray notification", channel="general")
    mail = await asyncio.wait_for(inbox, WOKEN_WITHIN)
    assert [m["id"] for m in mail["messages"]] == [posted["id"]]


@postgresql_only
async def test_a_revoked_token_is_dropped_on_the_other_processes_too(world: World) -> None:
    other, heard = await listening(database_url(world))
    try:
        await world.human.call("DELETE", "/api/agents/pb/token")
        await eventually(lambda: [i for i in heard if i["t"] == "forget"], "the other process told to forget")
        [(pb,)] = db_rows(world.board.db_path, "SELECT id FROM agents WHERE handle = 'pb'")
        assert {i["agent"] for i in heard if i["t"] == "forget"} == {pb}
    finally:
        await other.close()


@postgresql_only
async def test_the_board_reconnects_after_its_connections_are_dropped(world: World) -> None:
    url = database_url(world)
    await world.bot.post("before", channel="general")
    assert drop_connections(url) >= 3  # the writer, the readers and the listener
    # a connection found dropped as its transaction begins, before anything ran, is replaced
    # and the transaction begun again: no call fails
    posted = await world.bot.post("after", channel="general")
    for _ in range(8):
        listed = await world.human.messages(workspace="proj", channel="general")
        assert posted["id"] in [m["id"] for m in listed["messages"]]
    # the other processes hear of it again: the listener is back too
    other, heard = await listening(url)
    try:
        wait = asyncio.create_task(world.peer.inbox(wait=LONG_WAIT))
        await asyncio.sleep(0)
        mention = await world.bot.post("@pb2 still there?", channel="general")
        assert [m["id"] for m in (await asyncio.wait_for(wait, WOKEN_WITHIN))["messages"]] == [mention["id"]]
        await eventually(lambda: [i for i in heard if i.get("id") == mention["id"]], "the mention told")
    finally:
        await other.close()


def allow_connections(url: str, allowed: bool) -> None:
    """Let connections into the board's database or refuse them all, as a server that is down
    would; refusing also ends the board's open ones."""
    name = str(psycopg.conninfo.conninfo_to_dict(url)["dbname"])
    with psycopg.connect(psycopg.conninfo.make_conninfo(url, dbname="postgres"), autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS {str(allowed).lower()}')
    if not allowed:
        drop_connections(psycopg.conninfo.make_conninfo(url, dbname="postgres"), name)


@postgresql_only
async def test_the_first_calls_after_the_database_is_back_succeed(world: World) -> None:
    url = database_url(world)
    await world.bot.post("before", channel="general")
    allow_connections(url, False)
    try:
        calls: list[Awaitable[Any]] = [
            world.human.messages(workspace="proj", channel="general") for _ in range(8)
        ]
        for call in [*calls, world.bot.post("while down", channel="general")]:
            # every read connection, and the writer, fails while it is down, saying so
            with pytest.raises(BoardAPIError) as down:
                await call
            assert (down.value.code, down.value.retryable) == ("UNAVAILABLE", True)
            assert down.value.message == "The database does not answer; retry in a moment."
    finally:
        allow_connections(url, True)
    # no call fails once it is back
    posted = await world.bot.post("after", channel="general")
    for _ in range(8):
        listed = await world.human.messages(workspace="proj", channel="general")
        assert posted["id"] in [m["id"] for m in listed["messages"]]


async def test_a_database_not_in_utf8_is_refused_before_it_is_migrated(pg_cluster: PgCluster) -> None:
    from board.server.store.writer import StoreError

    url = pg_cluster.fresh_database(encoding="SQL_ASCII")
    with pytest.raises(StoreError, match="encoding is SQL_ASCII; the board needs UTF8"):
        await PostgresStore(url).open()
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone() == (0,)


async def test_a_server_older_than_the_oldest_the_board_runs_on_is_refused_before_migrating(
    pg_cluster: PgCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    from board.server.store.writer import StoreError

    monkeypatch.setattr(postgres, "OLDEST_SERVER", 990000)  # this one is older than a 99
    url = pg_cluster.fresh_database()
    with pytest.raises(
        StoreError, match=r"this PostgreSQL server is version \d+; the board needs 99 or newer"
    ):
        await PostgresStore(url).open()
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone() == (0,)


async def test_a_server_without_icu_is_refused_before_the_database_is_migrated(pg_cluster: PgCluster) -> None:
    """The search's words are ICU's letters and digits (migration 0033): a server built
    without ICU has no ``und-x-icu`` collation, as this database is made to have none."""
    from board.server.store.writer import StoreError

    url = pg_cluster.fresh_database()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute('DROP COLLATION "und-x-icu"')
    with pytest.raises(StoreError, match=r"no ICU collations \(it was built without ICU\)"):
        await PostgresStore(url).open()
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone() == (0,)


@pytest.mark.parametrize("bad", ["mysql://board@db/board", "sqlite:///board.db"])
async def test_a_url_that_is_not_postgresql_is_refused(bad: str, tmp_path: Any) -> None:
    from board.server.settings import Settings
    from board.server.store.stores import open_store
    from board.server.store.writer import StoreError

    with pytest.raises(StoreError, match="postgresql://") as refused:
        open_store(Settings(db=str(tmp_path / "b.db"), database_url=bad))
    # it may have come from the flag, the variable or the file: each is named
    assert "--database-url, BOARD_DATABASE_URL or database_url in board.toml" in str(refused.value)


async def test_an_unreachable_database_is_one_clear_error_without_its_password(tmp_path: Any) -> None:
    from board.server.settings import Settings
    from board.server.store.stores import open_store
    from board.server.store.writer import StoreError

    url = "postgresql://board:hunter2@127.0.0.1:1/board?connect_timeout=2"
    store = open_store(Settings(db=str(tmp_path / "b.db"), database_url=url))
    with pytest.raises(StoreError, match="cannot open the database") as err:
        await store.open()
    assert "hunter2" not in str(err.value) and "board:***@127.0.0.1:1" in str(err.value)


@postgresql_only
async def test_backups_through_the_board_are_refused_on_postgresql_and_change_nothing(world: World) -> None:
    """The board copies only its own SQLite file; on PostgreSQL it says to use pg_dump."""
    before = snapshot(world.board.db_path)
    with pytest.raises(BoardAPIError) as err:
        await world.human.request("POST", "/api/admin/backup")
    assert (err.value.status, err.value.code, err.value.retryable) == (503, "UNAVAILABLE", False)
    assert "pg_dump" in err.value.message
    done = subprocess.run(
        command("backup", str(world.board.home / "copy.db")),
        env=board_env(**database_env(world.board)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and "pg_dump" in done.stderr, done.stderr
    (world.board.home / "old.db").write_bytes(b"")
    restored = subprocess.run(
        command("restore", str(world.board.home / "old.db")),
        env=board_env(**database_env(world.board)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert restored.returncode != 0 and "restore it with pg_restore" in restored.stderr, restored.stderr
    assert not (world.board.home / "copy.db").exists() and not (world.board.home / "backups").exists()
    assert snapshot(world.board.db_path) == before  # not even an audit row


def board_connections(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as admin:
        row = admin.execute(
            """SELECT count(*) FROM pg_stat_activity
               WHERE datname = current_database() AND application_name = 'bot-board'"""
        ).fetchone()
    assert row is not None
    return int(row[0])


async def settled_connections(url: str, to: int) -> int:
    """The board's connections once they come down to ``to``, or after 10 s: a closed
    connection's server process is listed until it has exited, a few ms after the close."""
    deadline = time.monotonic() + 10
    while (count := board_connections(url)) != to and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return count


@postgresql_only
async def test_a_read_after_close_opens_no_connection_that_nothing_would_close(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = database_url(world)
    before = board_connections(url)
    real_connect, made = postgres._connect, []

    async def recorded(to: str) -> Any:
        made.append(await real_connect(to))
        return made[-1]

    monkeypatch.setattr(postgres, "_connect", recorded)
    store = PostgresStore(url, readers=1)
    await store.open()
    await store.close()
    opened = len(made)

    async def one(conn: Any) -> Any:
        return await (await conn.execute("SELECT 1")).fetchone()

    with pytest.raises(psycopg.Error):
        await store.read(one)
    assert len(made) == opened  # the read opened none
    assert all(conn.raw.closed for conn in made)
    assert await settled_connections(url, before) == before


@postgresql_only
async def test_a_store_closed_while_a_read_reconnects_leaves_no_connection_open(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read that found its server connection gone reconnects; if the store closed meanwhile,
    the new connection was kept by a store that would never close it again."""
    url = database_url(world)
    store = PostgresStore(url, readers=1)
    await store.open()
    real_connect, connecting, go_on = postgres._connect, asyncio.Event(), asyncio.Event()
    made: list[Any] = []

    async def held_for_the_read(to: str) -> Any:
        task = asyncio.current_task()  # the read runs as a task of its own; others reconnect at once
        if task is None or getattr(task.get_coro(), "__qualname__", "") != "PostgresStore._read":
            return await real_connect(to)
        connecting.set()
        await go_on.wait()
        made.append(await real_connect(to))
        return made[-1]

    async def one(conn: Any) -> Any:
        return await (await conn.execute("SELECT 1")).fetchone()

    monkeypatch.setattr(postgres, "_connect", held_for_the_read)
    assert drop_connections(url) > 0  # as a server restart would
    reading = asyncio.ensure_future(store.read(one))
    await asyncio.wait_for(connecting.wait(), 10)
    await store.close()
    go_on.set()
    with pytest.raises(psycopg.Error):
        await reading
    [fresh] = made
    assert fresh.raw.closed  # closed by the store, not left to a store that is gone


@postgresql_only
async def test_a_process_waiting_for_a_duty_keeps_waiting_through_a_database_outage(world: World) -> None:
    """A second process asks for the ``notify`` duty every so often; asked while the server is
    down, the answer is "not yours", not an error that would end its dispatcher for good."""
    url = database_url(world)
    ctx = world.board.app[CONTEXT]
    waiting = Dispatcher(ctx)
    waiting.duty_retry = 0.05
    allow_connections(url, False)  # ends the board's own connections too, its duty's among them
    try:
        async with ctx.db.duty("routines") as mine:
            assert mine is False
        task = asyncio.create_task(waiting.run())
        await asyncio.sleep(0.5)
        assert not task.done(), task
    finally:
        allow_connections(url, True)
    try:
        # the holder's lock went with its connection: the one still waiting takes over
        await eventually(lambda: waiting.dispatching, "the waiting dispatcher takes the duty")
    finally:
        waiting.stop()
        await asyncio.wait_for(task, 10)


@postgresql_only
async def test_a_duty_whose_lock_went_with_its_connection_ends_and_is_asked_for_again(world: World) -> None:
    """A server restart ends the connection holding a duty's lock, and with it the lock, which
    another process may then take: the holder stops the duty's work, or two would do it."""
    url = database_url(world)
    ctx = world.board.app[CONTEXT]

    async def hold() -> str:
        async with ctx.db.duty("routines") as mine:
            assert mine
            drop_connections(url)
            await asyncio.sleep(LONG_WAIT)
            return "kept on working without the lock"
        return "stopped"

    assert await asyncio.wait_for(hold(), WOKEN_WITHIN) == "stopped"
    async with ctx.db.duty("routines") as mine:
        assert mine  # nobody else took it meanwhile: asked again, it is this process's
    # the board's dispatcher lost its lock too, and takes it again
    await eventually(lambda: LOCKS["notify"] in held_duties(url), "the dispatcher holds its duty again")
    await eventually(lambda: world.board.app[OUTBOX].dispatching, "the dispatcher sends again")


@postgresql_only
async def test_a_runner_whose_duty_is_lost_ends_its_checks_under_way_with_it(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    """The routines runner under its duty, a check APScheduler fired waiting on the board, when
    the server drops the lock's connection: the check ends with the runner, before the block
    does and the process asks again, not beside the runner of whichever process took it."""
    board = StuckBoard()
    ctx = world.board.app[CONTEXT]

    async def hold() -> str:
        async with ctx.db.duty("routines") as mine:
            assert mine
            await Runner(cast(BoardClient, board), check_every=0.05).run()
        return "ended" if board.ended else "a check still under way"

    holder = asyncio.create_task(hold())
    await asyncio.wait_for(board.under_way.wait(), WOKEN_WITHIN)
    drop_connections(database_url(world))
    assert await asyncio.wait_for(holder, WOKEN_WITHIN) == "ended"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text  # no job "failed"


@postgresql_only
async def test_a_stop_as_a_duty_ends_is_not_lost(world: World) -> None:
    """The block ends by waiting for its lock connection's watcher to end: a cancel of the
    holder that came then (the board stopping) was taken for the watcher's, and swallowed,
    so the board's sweep went on to its next round instead of stopping."""
    ctx = world.board.app[CONTEXT]

    async def hold() -> str:
        async with ctx.db.duty("routines") as mine:
            assert mine
            asyncio.get_running_loop().call_soon(holder.cancel)  # lands as the block ends
        await asyncio.sleep(LONG_WAIT)
        return "went on after the stop"

    holder = asyncio.create_task(hold())
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(holder, WOKEN_WITHIN)
    assert LOCKS["routines"] not in held_duties(database_url(world))  # the lock went with it


def held_duties(url: str) -> set[int]:
    """The duties whose advisory locks a board process holds on the database at ``url``."""
    with psycopg.connect(url, autocommit=True) as admin:
        rows = admin.execute(
            """SELECT objid FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = %s
               AND database = (SELECT oid FROM pg_database WHERE datname = current_database())""",
            (BOARD,),
        ).fetchall()
    return {int(r[0]) for r in rows}


async def test_a_role_that_cannot_create_in_the_database_is_told_to_own_it(pg_cluster: PgCluster) -> None:
    """PostgreSQL 15 gives no one but the owner CREATE in a new database's public schema: a
    database made without ``-O`` stops the first migration, and the error says what to run."""
    from board.server.store.writer import StoreError

    url = pg_cluster.fresh_database()
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("CREATE ROLE board_not_owner LOGIN")
    try:
        with pytest.raises(StoreError) as refused:
            await PostgresStore(psycopg.conninfo.make_conninfo(url, user="board_not_owner")).open()
        message = str(refused.value)
        assert "permission denied" in message and "board_not_owner" in message, message
        assert "ALTER DATABASE" in message and "OWNER TO board_not_owner" in message, message
    finally:
        pg_cluster.drop_database(url)
        with psycopg.connect(pg_cluster.url, autocommit=True) as admin:
            admin.execute("DROP ROLE board_not_owner")


async def test_every_connection_finds_a_silent_server_out_and_a_url_setting_wins(
    pg_cluster: PgCluster,
) -> None:
    """A network cut answers nothing: TCP keepalives find out a connection that only waits (the
    listener's, a duty's) in about a minute, the system's default being two hours; one awaiting
    an answer gives up after 30 s of data unacknowledged, where TCP would try for some fifteen
    minutes, and connecting after 10 s. The writer's and the readers' transactions are ended by
    the server after a minute idle: a process frozen mid-batch lets go of the write lock. The
    server keeps alive a connection that only waits alike, so a duty's lock goes with a dead
    host's session within a minute, not the server's default two hours."""
    url = pg_cluster.fresh_database()
    own = url + ("&" if "?" in url else "?") + "keepalives_idle=7"
    for given, idle in ((url, "30"), (own, "7")):
        plain = await postgres._plain(given)
        board = (await postgres._connect(given)).raw
        try:
            for raw in (plain, board):
                said = raw.info.get_parameters()
                assert [said[k] for k in ("keepalives_idle", "keepalives_interval", "keepalives_count")] == [
                    idle,
                    "10",
                    "3",
                ]
                assert (said["tcp_user_timeout"], said["connect_timeout"]) == ("30000", "10")
            shown = await (await board.execute("SHOW idle_in_transaction_session_timeout")).fetchone()
            assert shown is not None and shown[0] == "1min"
            shown = await (await plain.execute("SHOW idle_in_transaction_session_timeout")).fetchone()
            assert shown is not None and shown[0] == "0"  # a duty's lock is held outside any transaction
            # ... and the server lets go of it when this host goes silent, not two hours later
            server_side = []
            for setting in ("tcp_keepalives_idle", "tcp_keepalives_interval", "tcp_keepalives_count"):
                shown = await (await plain.execute(f"SHOW {setting}")).fetchone()
                server_side.append(shown[0] if shown is not None else None)
            shown = await (await plain.execute("SHOW tcp_user_timeout")).fetchone()
            assert server_side == ["30", "10", "3"] and shown is not None and shown[0] == "30000"
        finally:
            await plain.close()
            await board.close()


async def test_a_url_s_own_server_options_keep_the_idle_limit_and_may_set_it(
    pg_cluster: PgCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The idle-in-transaction limit travels in the connection's ``options``: a URL (or
    ``PGOPTIONS``) giving options of its own keeps them and the limit, and one that sets the
    limit itself has its value."""
    url = pg_cluster.fresh_database()

    async def shown(given: str) -> list[str]:
        board = (await postgres._connect(given)).raw
        try:
            names = ("idle_in_transaction_session_timeout", "statement_timeout")
            rows = [await (await board.execute(f"SHOW {name}")).fetchone() for name in names]
            return [str(row[0]) if row else "" for row in rows]
        finally:
            await board.close()

    own = psycopg.conninfo.make_conninfo(url, options="-c statement_timeout=4000")
    assert await shown(own) == ["1min", "4s"]
    mine = psycopg.conninfo.make_conninfo(url, options="-c idle_in_transaction_session_timeout=5000")
    assert await shown(mine) == ["5s", "0"]
    monkeypatch.setenv("PGOPTIONS", "-c statement_timeout=3000")
    assert await shown(url) == ["1min", "3s"]
    assert await shown(own) == ["1min", "4s"]  # libpq reads PGOPTIONS only where a URL sets none


@postgresql_only
async def test_a_read_held_behind_a_lock_is_unavailable_in_time_and_the_next_one_runs(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read waiting on a lock (a migration rewriting the table, an operator's LOCK TABLE)
    waited as long as the lock was held, its request and a reader connection with it. It
    is now 503 past the read deadline, and reads run again once the lock is gone."""
    monkeypatch.setattr(postgres, "READ_TIMEOUT", 300)
    await world.bot.post("before the lock", channel="lobby")
    with psycopg.connect(database_url(world)) as locker:
        locker.execute("LOCK TABLE messages IN ACCESS EXCLUSIVE MODE")
        started = time.monotonic()
        with pytest.raises(BoardAPIError) as refused:
            await world.bot.messages(channel="lobby", workspace="proj")
        assert refused.value.code == "UNAVAILABLE" and refused.value.status == 503
        assert time.monotonic() - started < 10
        locker.rollback()
    listed = await world.bot.messages(channel="lobby", workspace="proj")
    assert [m["body"] for m in listed["messages"]][-1] == "before the lock"


async def test_reads_queued_behind_reads_held_by_a_lock_wait_one_deadline_not_one_each(
    pg_cluster: PgCluster, pg_template: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With its one reader held by a lock, ten reads queued for it waited a deadline for each
    read ahead of them (five seconds for the last): the wait for a connection is bounded too."""
    monkeypatch.setattr(postgres, "READ_TIMEOUT", 500)
    url = pg_cluster.fresh_database(like=pg_template)
    store = PostgresStore(url, readers=1)
    await store.open()

    async def count(conn: Any) -> Any:
        return await (await conn.execute("SELECT count(*) FROM messages")).fetchone()

    try:
        with psycopg.connect(url) as locker:
            locker.execute("LOCK TABLE messages IN ACCESS EXCLUSIVE MODE")
            started = time.monotonic()
            answers = await asyncio.gather(*(store.read(count) for _ in range(10)), return_exceptions=True)
            waited = time.monotonic() - started
            locker.rollback()
        assert all(isinstance(answer, DatabaseUnreachable) for answer in answers), answers
        assert waited < 3, waited  # two deadlines at most: the pool's, then the statement's
        assert (await store.read(count))[0] >= 0  # the reader serves again once the lock is gone
    finally:
        await store.close()
    pg_cluster.drop_database(url)


@postgresql_only
async def test_a_read_the_server_ends_for_sitting_idle_is_unavailable_and_the_next_one_runs(
    world: World,
) -> None:
    """The server ends a transaction idle past ``idle_in_transaction_session_timeout`` with
    SQLSTATE 25P03, which psycopg raises as an InternalError, not an OperationalError: the
    read's caller got it raw (500, "Internal error") instead of 503, and the next read on
    that connection failed too until the store found it broken."""
    url = psycopg.conninfo.make_conninfo(
        database_url(world), options="-c idle_in_transaction_session_timeout=200"
    )
    store = PostgresStore(url, readers=1)
    await store.open()
    try:

        async def dawdles(conn: Any) -> Any:
            await conn.execute("SELECT 1")
            await asyncio.sleep(1.0)  # the server ends the session meanwhile
            return await (await conn.execute("SELECT 2")).fetchone()

        with pytest.raises(DatabaseUnreachable):
            await store.read(dawdles)

        async def quick(conn: Any) -> Any:
            return await (await conn.execute("SELECT 3")).fetchone()

        row = await store.read(quick)
        assert row is not None and row[0] == 3
    finally:
        await store.close()


@postgresql_only
async def test_a_write_behind_a_held_write_lock_is_unavailable_in_time_changes_nothing_and_the_next_one_runs(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process's batch held up with the write lock (its process frozen, its server
    process stopped) held every write of this one for as long: the batch is now 503 past
    the write deadline, with nothing of it written, and writes run again once the lock is free."""
    monkeypatch.setattr(postgres, "WRITE_TIMEOUT", 300)
    await world.bot.post("before the lock", channel="lobby")
    with psycopg.connect(database_url(world)) as locker:
        locker.execute(f"SELECT pg_advisory_xact_lock({BOARD}, {LOCKS['writes']})")
        started = time.monotonic()
        with pytest.raises(BoardAPIError) as refused:
            await world.bot.post("behind the lock", channel="lobby")
        assert refused.value.code == "UNAVAILABLE" and refused.value.status == 503
        assert time.monotonic() - started < 10
        locker.rollback()
    await world.bot.post("after the lock", channel="lobby")
    listed = await world.bot.messages(channel="lobby", workspace="proj")
    bodies = [m["body"] for m in listed["messages"]]
    assert {"before the lock", "after the lock"} <= set(bodies) and "behind the lock" not in bodies


def backend_pid(conn: Any) -> int:
    return int(conn.raw.info.backend_pid)


async def test_a_stopped_server_process_holds_a_write_or_a_read_a_deadline_not_forever(
    pg_cluster: PgCluster, pg_template: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server process stopped while its connection stays up (``kill -STOP``) hears neither
    a statement's timeout nor a cancel, and a write or read on it waited for ever. The board
    now ends it: 503 within a few seconds of the deadline, nothing written, and once the
    process runs again the next write and read succeed, on new connections."""
    monkeypatch.setattr(postgres, "WRITE_TIMEOUT", 300)
    monkeypatch.setattr(postgres, "READ_TIMEOUT", 300)
    url = pg_cluster.fresh_database(like=pg_template)
    store = PostgresStore(url, readers=1)
    await store.open()

    async def note(body: str) -> Any:
        async def write(conn: Any) -> Any:
            return await conn.execute(
                "INSERT INTO workspaces (slug, name, created_at) VALUES (?, ?, '2026-12-07T00:00:00Z')",
                (body, body),
            )

        return await store.write(write)

    async def notes(conn: Any) -> list[str]:
        rows = await (await conn.execute("SELECT slug FROM workspaces WHERE slug LIKE 'note-%'")).fetchall()
        return sorted(row[0] for row in rows)

    try:
        assert store._writer is not None
        writer = backend_pid(store._writer)
        (reader,) = [backend_pid(conn) for conn in store._all if conn is not store._writer]
        stopped = [writer, reader]
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            answers = await asyncio.gather(note("note-lost"), store.read(notes), return_exceptions=True)
            waited = time.monotonic() - started
        finally:
            for pid in stopped:
                os.kill(pid, signal.SIGCONT)
        assert all(isinstance(a, DatabaseUnreachable) and "ran past" in str(a) for a in answers), answers
        assert waited < 20, waited  # the deadline, then psycopg's wait for its cancel (5 s)
        await note("note-kept")
        assert await store.read(notes) == ["note-kept"]
        assert store._writer is not None and backend_pid(store._writer) != writer
    finally:
        await store.close()
    pg_cluster.drop_database(url)


@postgresql_only
async def test_a_stopped_listener_is_found_out_and_its_process_wakes_again(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B's listener's server process stopped while its connection stays up (``kill -STOP``):
    keepalives still pass and nothing is heard, not even B's own notifications, so B's own
    posts waited for ever to be published and no long-poll held on B woke. A listener that
    hears nothing for a while asks its server for an answer, and one that gets none in time
    listens again on a new connection, with a gap: the mention wakes its bot, once."""
    monkeypatch.setattr(postgres, "LISTEN_QUIET", 1.0)
    monkeypatch.setattr(postgres, "LISTEN_ANSWER", 3.0)  # a loaded machine's SELECT 1 answers in time
    url = database_url(world)
    others = listener_pids(url)
    b = await start_board(tmp_path / "b", database_url=url)
    try:
        (listener,) = set(listener_pids(url)) - set(others)
        bot_on_b, peer_on_b = b.client(world.bot.token), b.client(world.peer.token)
        since = int((await bot_on_b.me())["cursor"])
        wait = asyncio.create_task(bot_on_b.inbox(since=since, wait=LONG_WAIT))
        await held(b)
        os.kill(listener, signal.SIGSTOP)
        try:
            started = time.monotonic()
            mention = await peer_on_b.post("@pb are you there?", channel="general")
            mail = await asyncio.wait_for(wait, WOKEN_WITHIN)
            woken = time.monotonic() - started
            # a new listener beside the stopped one, whose server process still lists it
            await eventually(lambda: set(listener_pids(url)) - {*others, listener}, "B listening again")
        finally:
            os.kill(listener, signal.SIGCONT)
        assert [m["id"] for m in mail["messages"]] == [mention["id"]]
        # the quiet second, the answer's 3 s, psycopg's 5 s wait for its cancel, a second's pause
        assert woken < 20, woken
        again = asyncio.create_task(bot_on_b.inbox(since=mention["id"], wait=LONG_WAIT))
        await held(b)
        second = await peer_on_b.post("@pb and now?", channel="general")
        assert [m["id"] for m in (await asyncio.wait_for(again, WOKEN_WITHIN))["messages"]] == [second["id"]]
    finally:
        await stop_board(b)


def listener_pids(url: str) -> list[int]:
    """The server processes of the board's notification connections on ``url``'s database."""
    with psycopg.connect(url, autocommit=True) as admin:
        rows = admin.execute(
            """SELECT pid FROM pg_stat_activity
               WHERE datname = current_database() AND application_name = %s""",
            (postgres.LISTENER,),
        ).fetchall()
    return sorted(int(row[0]) for row in rows)


@postgresql_only
async def test_a_write_known_to_be_long_has_the_time_it_asks_for_and_its_batch_with_it(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deleting a whole workspace is one transaction that may take a minute on a large one:
    held to a post's deadline it could never be done. It asks for its own (``allowed``), and
    a job that asks for more gives its whole batch more; every other write keeps its deadline.
    Each is held past the deadline by another process's batch holding the write lock."""
    await world.human.archive_workspace("proj")
    monkeypatch.setattr(postgres, "WRITE_TIMEOUT", 200)  # ms

    async def held_up(call: Awaitable[Any]) -> Any:
        async with await psycopg.AsyncConnection.connect(database_url(world)) as locker:
            await locker.execute(f"SELECT pg_advisory_xact_lock({BOARD}, {LOCKS['writes']})")
            task = asyncio.ensure_future(call)
            await asyncio.sleep(0.5)  # past the deadline
            await locker.rollback()
            return await task

    with pytest.raises(BoardAPIError) as refused:
        await held_up(world.human.create_workspace("another"))
    assert refused.value.code == "UNAVAILABLE"
    deleted = await held_up(world.human.delete_workspace("proj", "proj"))
    assert deleted["deleted"] == "proj"

    store = world.board.app[CONTEXT].db

    async def slept(conn: Any) -> Any:
        return await (await conn.execute("SELECT 'slept'")).fetchone()

    together: Any = await held_up(  # one batch: both queued before the writer runs
        asyncio.gather(store.write(slept, allowed=10.0), store.write(slept), return_exceptions=True)
    )
    assert [row[0] for row in together] == ["slept", "slept"], together
    with pytest.raises(DatabaseUnreachable, match=r"a write batch ran past 0\.2 s"):
        await held_up(store.write(slept))
