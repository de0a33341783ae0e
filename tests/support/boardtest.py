"""Test support: a real board on loopback with a real database file, and its callers.

``world`` is a populated board: a human, two project workspaces and the admin
workspace, each with a bot registered through a real invite, and a client per
caller. Tests talk to it over HTTP through ``board.client`` like any daemon, and
every answer they get is checked against the OpenAPI document (``contract.py``).
"""

from __future__ import annotations

import asyncio
import inspect
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, overload

import psycopg
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from board.client import BoardClient
from board.server.api.gate import SERVER_ARGS
from board.server.api.keys import CONTEXT
from board.server.api.serving import BoardRunner
from board.server.app import create_app
from board.server.clock import Clock, ManualClock
from board.server.services import auth
from board.server.services.context import Context
from board.server.settings import Settings
from board.server.store.postgres import PostgresStore, placeholders
from tests.support.contract import CheckedClient
from tests.support.pgcluster import PgCluster, wanted_stores

T = TypeVar("T")


@dataclass(frozen=True)
class PgDatabase:
    """Where a board on PostgreSQL keeps its data, for the tests that read it directly."""

    url: str


#: What a test reads a board's database through: its SQLite file, or its PostgreSQL database.
Where = Path | PgDatabase


@dataclass(frozen=True)
class StoreChoice:
    """The store a test's board runs on: the ``store`` fixture's parameter."""

    name: str
    cluster: PgCluster | None = None
    template: str | None = None  # a migrated database each test's database is copied from

    def overrides(self) -> dict[str, Any]:
        if self.cluster is None:
            return {}
        return {"database_url": self.cluster.fresh_database(like=self.template)}


SQLITE = StoreChoice("sqlite")


@pytest.fixture(scope="session")
def pg_template(pg_cluster: PgCluster) -> str:
    """A database migrated once: each test's board gets a copy instead of migrating its own."""
    url = pg_cluster.fresh_database()

    async def migrate() -> None:
        store = PostgresStore(url, readers=1)
        await store.open()
        await store.close()

    # Its own loop, in a thread of its own: a test's loop may already run in this one.
    failed: list[BaseException] = []
    worker = threading.Thread(target=lambda: _capture(failed, lambda: asyncio.run(migrate())))
    worker.start()
    worker.join()
    if failed:
        raise failed[0]
    return url


def _capture(failed: list[BaseException], fn: Callable[[], Any]) -> None:
    try:
        fn()
    except BaseException as exc:
        failed.append(exc)


@pytest.fixture(params=wanted_stores())
def store(request: pytest.FixtureRequest) -> StoreChoice:
    """Each test that takes it runs once per store BOARD_TEST_STORES names."""
    if request.param == "postgresql":
        return StoreChoice(
            "postgresql", request.getfixturevalue("pg_cluster"), request.getfixturevalue("pg_template")
        )
    return SQLITE


@dataclass
class Board:
    """A running board: its address, its app, and helpers to make callers."""

    server: TestServer
    app: web.Application
    db_path: Where
    home: Path  # the test's folder: the SQLite file, logs, anything else on disk
    clients: list[BoardClient] = field(default_factory=list)

    @property
    def url(self) -> str:
        return str(self.server.make_url("")).rstrip("/")

    @property
    def ctx(self) -> Context:
        return self.app[CONTEXT]

    @property
    def port(self) -> int:
        port = self.server.port
        assert port is not None, "the board is not listening"
        return port

    @property
    def db_file(self) -> Path:
        """The SQLite file, for a test that reads it as a file (marked sqlite_only)."""
        assert isinstance(self.db_path, Path), "a SQLite-only test ran on PostgreSQL"
        return self.db_path

    def client(self, token: str | None = None) -> BoardClient:
        client = CheckedClient(self.url, token)
        self.clients.append(client)
        return client

    async def human(self, handle: str) -> BoardClient:
        await auth.add_human(self.ctx, handle)
        return self.client(await auth.human_token(self.ctx, handle))

    async def bot(self, handle: str, workspace: str) -> BoardClient:
        invite = await auth.create_invite(self.ctx, None, auth.InviteRequest(workspace=workspace))
        registered = await self.client().register(handle, invite["invite"])
        return self.client(registered["token"])


class BoardTestServer(TestServer):
    """A test server on loopback with the runner of `board serve` (its slow-request deadlines)."""

    def __init__(self, app: web.Application, header_timeout: float) -> None:
        super().__init__(app, host="127.0.0.1")
        self._header_timeout = header_timeout

    async def _make_runner(self, **kwargs: Any) -> BoardRunner:
        return BoardRunner(self.app, header_timeout=self._header_timeout, **kwargs)


async def start_board(
    tmp_path: Path, *, clock: Clock | None = None, store: StoreChoice = SQLITE, **overrides: Any
) -> Board:
    db_path = tmp_path / "board.db"
    # The tests' notification receivers listen on loopback, which a board refuses by default.
    settings = Settings(db=str(db_path), **{"notify_allow_local": 1, **store.overrides(), **overrides})
    app = create_app(settings, clock=clock)
    server = BoardTestServer(app, settings.header_timeout)
    # As `board serve` runs; TestServer sets handler_cancellation itself (and only takes it once).
    await server.start_server(**{k: v for k, v in SERVER_ARGS.items() if k != "handler_cancellation"})
    where: Where = PgDatabase(settings.database_url) if settings.database_url else db_path
    return Board(server, app, where, tmp_path)


async def stop_board(board: Board) -> None:
    for client in board.clients:
        await client.close()
    await board.server.close()


@pytest.fixture
async def board(tmp_path: Path, store: StoreChoice) -> AsyncIterator[Board]:
    b = await start_board(tmp_path, store=store)
    yield b
    await stop_board(b)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def clocked_board(tmp_path: Path, clock: ManualClock, store: StoreChoice) -> AsyncIterator[Board]:
    b = await start_board(tmp_path, clock=clock, store=store)
    yield b
    await stop_board(b)


@dataclass
class World:
    """Callers of every role on one populated board."""

    board: Board
    human: BoardClient  # alice
    bot: BoardClient  # pb, in workspace proj
    peer: BoardClient  # pb2, in proj too
    other: BoardClient  # ob, in workspace other
    admin_bot: BoardClient  # ab, in admin
    anon: BoardClient


async def populate(b: Board) -> World:
    human = await b.human("alice")
    await human.create_workspace("proj", "Project")
    await human.create_workspace("other", "Other project")
    world = World(
        board=b,
        human=human,
        bot=await b.bot("pb", "proj"),
        peer=await b.bot("pb2", "proj"),
        other=await b.bot("ob", "other"),
        admin_bot=await b.bot("ab", "admin"),
        anon=b.client(),
    )
    return world


@pytest.fixture
async def world(board: Board) -> World:
    return await populate(board)


@pytest.fixture
async def clocked_world(clocked_board: Board) -> World:
    return await populate(clocked_board)


@overload
async def eventually(
    probe: Callable[[], Awaitable[T | None]], what: str, timeout: float = ..., interval: float = ...
) -> T: ...


@overload
async def eventually(
    probe: Callable[[], T | None], what: str, timeout: float = ..., interval: float = ...
) -> T: ...


async def eventually(
    probe: Callable[[], Awaitable[T | None] | T | None],
    what: str,
    timeout: float = 15.0,
    interval: float = 0.05,
) -> T:
    """probe() (sync or async) until it is truthy; the test fails naming what after timeout."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = probe()
        if inspect.isawaitable(last):
            last = await last
        if last:
            return last
        await asyncio.sleep(interval)
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what} (last: {last!r})")


#: A long-poll a test expects to be woken asks for the longest wait (BOARD_MAX_WAIT's
#: default), and is awaited for half of it: answered by then, it was the awaited commit
#: that woke it, not the wait running out. No tighter figure holds on a loaded machine.
LONG_WAIT = 60
WOKEN_WITHIN = LONG_WAIT / 2


async def held(board: Board, count: int = 1, owner: int | None = None, timeout: float = 15.0) -> None:
    """Wait until the board's hub holds exactly ``count`` long-polls (of ``owner``, if given).

    A long-poll subscribes before it reads, so from then on every matching commit
    reaches it: this is the moment a test may post and expect the wake.
    """
    hub = board.ctx.hub
    await eventually(
        lambda: (hub.waiting if owner is None else hub.held(owner)) == count,
        f"{count} long-poll(s) held by the board" + (f" for agent {owner}" if owner is not None else ""),
        timeout,
        interval=0.005,
    )


def database_env(board: Board) -> dict[str, str]:
    """The environment that points ``board`` commands at this board's database."""
    if isinstance(board.db_path, PgDatabase):
        return {"BOARD_DATABASE_URL": board.db_path.url}
    return {"BOARD_DB": str(board.db_path)}


#: For a test of what only PostgreSQL does (skipped when BOARD_TEST_STORES leaves it out).
postgresql_only = pytest.mark.parametrize("store", ["postgresql"], indirect=True)

#: For a test about the SQLite file itself (its bytes, its lock, its WAL): runs on SQLite only.
sqlite_only = pytest.mark.parametrize("store", ["sqlite"], indirect=True)


def db_rows(where: Where, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Read the database directly, as a second process would (``?`` placeholders on both stores)."""
    if isinstance(where, PgDatabase):
        with psycopg.connect(where.url, autocommit=True, cursor_factory=psycopg.RawCursor) as conn:
            cur = conn.execute(placeholders(sql), params or None)
            return [tuple(row) for row in cur.fetchall()] if cur.description else []
    lite = sqlite3.connect(f"file:{where}?mode=ro", uri=True)
    try:
        return lite.execute(sql, params).fetchall()
    finally:
        lite.close()


#: What either store's driver raises when SQL is refused (a constraint, a trigger, a bad statement).
DB_ERRORS: tuple[type[Exception], ...] = (sqlite3.DatabaseError, psycopg.Error)
INTEGRITY_ERRORS: tuple[type[Exception], ...] = (sqlite3.IntegrityError, psycopg.IntegrityError)


def db_execute(where: Where, sql: str, params: tuple[Any, ...] = ()) -> int:
    """One statement straight into the database, as another program would; its row count."""
    if isinstance(where, PgDatabase):
        with psycopg.connect(where.url, autocommit=True, cursor_factory=psycopg.RawCursor) as conn:
            return conn.execute(placeholders(sql), params or None).rowcount
    lite = sqlite3.connect(where, isolation_level=None, timeout=5)
    try:
        return lite.execute(sql, params).rowcount
    finally:
        lite.close()


def snapshot(where: Where) -> dict[str, int]:
    """Row counts of every table: compared before and after a refused call."""
    if isinstance(where, PgDatabase):
        listed = "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
    else:
        listed = (
            "SELECT name FROM sqlite_master WHERE type = 'table' "
            "AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '%fts%'"
        )
    tables = [r[0] for r in db_rows(where, listed)]
    return {t: db_rows(where, f"SELECT count(*) FROM {t}")[0][0] for t in tables}


@pytest.fixture(autouse=True)
def _no_outbound_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests talk to loopback only."""
    import socket

    real_connect = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> Any:
        if isinstance(address, tuple) and self.family in (socket.AF_INET, socket.AF_INET6):
            host = address[0]
            if host not in ("127.0.0.1", "::1", "localhost") and not host.startswith("127."):
                raise RuntimeError(f"test tried to reach {host}: tests stay on loopback")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
