"""Test support: a real board on loopback with a real database file, and its callers.

``world`` is a populated board: a human, two project workspaces and the admin
workspace, each with a bot registered through a real invite, and a client per
caller. Tests talk to it over HTTP through ``board.client`` like any daemon, and
every answer they get is checked against the OpenAPI document (``contract.py``).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from contract import CheckedClient

from board.client import BoardClient
from board.server.api.gate import SERVER_ARGS
from board.server.api.keys import CONTEXT
from board.server.app import create_app
from board.server.clock import Clock, ManualClock
from board.server.services import auth
from board.server.services.context import Context
from board.server.settings import Settings

T = TypeVar("T")


@dataclass
class Board:
    """A running board: its address, its app, and helpers to make callers."""

    server: TestServer
    app: web.Application
    db_path: Path
    clients: list[BoardClient] = field(default_factory=list)

    @property
    def url(self) -> str:
        return str(self.server.make_url("")).rstrip("/")

    @property
    def ctx(self) -> Context:
        return self.app[CONTEXT]

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


async def start_board(tmp_path: Path, *, clock: Clock | None = None, **overrides: Any) -> Board:
    db_path = tmp_path / "board.db"
    settings = Settings(db=str(db_path), **overrides)
    app = create_app(settings, clock=clock)
    server = TestServer(app, host="127.0.0.1")
    # As `board serve` runs; TestServer sets handler_cancellation itself (and only takes it once).
    await server.start_server(**{k: v for k, v in SERVER_ARGS.items() if k != "handler_cancellation"})
    return Board(server, app, db_path)


async def stop_board(board: Board) -> None:
    for client in board.clients:
        await client.close()
    await board.server.close()


@pytest.fixture
async def board(tmp_path: Path) -> AsyncIterator[Board]:
    b = await start_board(tmp_path)
    yield b
    await stop_board(b)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def clocked_board(tmp_path: Path, clock: ManualClock) -> AsyncIterator[Board]:
    b = await start_board(tmp_path, clock=clock)
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


async def eventually(
    probe: Callable[[], Awaitable[T] | T], what: str, timeout: float = 15.0, interval: float = 0.05
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


def db_rows(path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Read the database file directly, as a second process would."""
    import sqlite3

    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def snapshot(path: Path) -> dict[str, int]:
    """Row counts of every table: compared before and after a refused call."""
    tables = [
        r[0]
        for r in db_rows(
            path,
            "SELECT name FROM sqlite_master WHERE type = 'table' "
            "AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '%fts%'",
        )
    ]
    return {t: db_rows(path, f"SELECT count(*) FROM {t}")[0][0] for t in tables}


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
