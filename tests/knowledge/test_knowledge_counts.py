"""Read counts pending when the board stops are written before its database closes."""

from __future__ import annotations

import signal
from pathlib import Path

from board.client import BoardClient
from board.server.clock import ManualClock
from tests.support.boardtest import PgDatabase, StoreChoice, Where
from tests.support.kb_support import db_rows, populate, start_board, stop_board
from tests.support.processes import add_human, board_env, kill, serve, wait_healthy

COUNTS = "SELECT read_count, shown_count, last_read_at IS NOT NULL FROM kb_documents WHERE path = ?"


async def test_the_apps_cleanup_writes_the_pending_counts(tmp_path: Path, store: StoreChoice) -> None:
    board = await start_board(tmp_path, clock=ManualClock(), store=store)  # stands still: nothing is due
    try:
        world = await populate(board)
        await world.bot.put_document("a.md", "# A\n\nalpha words\n", 0, "r")
        await world.bot.put_document("b.md", "# B\n\nbeta words\n", 0, "r")
        await world.bot.document("a.md")
        await world.bot.knowledge()
        await world.peer.pack(q="alpha")
        assert db_rows(board.db_path, COUNTS, ("a.md",)) == [(0, 0, 0)]  # still in memory
    finally:
        await stop_board(board)
    assert db_rows(board.db_path, COUNTS, ("a.md",)) == [(1, 2, 1)]
    assert db_rows(board.db_path, COUNTS, ("b.md",)) == [(0, 1, 0)]


async def test_a_board_stopped_with_sigterm_keeps_the_counts(tmp_path: Path, store: StoreChoice) -> None:
    db = tmp_path / "board.db"
    url = store.overrides().get("database_url")  # the processes run on the store the test runs on
    on_store = {"BOARD_DATABASE_URL": url} if url else {}
    where: Where = PgDatabase(url) if url else db
    token = add_human(db, "al", board_env(**on_store))
    served = serve(db, env=board_env(**on_store))
    try:
        wait_healthy(served)
        async with BoardClient(served.url, token) as human:
            await human.create_workspace("proj", "Project")
            await human.put_document("a.md", "# A\n", 0, "r", workspace="proj")
            await human.document("a.md", workspace="proj")  # one count, noted just now: not due
        assert db_rows(where, COUNTS, ("a.md",)) == [(0, 0, 0)]
        assert kill(served.proc, signal.SIGTERM) == 0, served.output()
    finally:
        kill(served.proc)
    assert db_rows(where, COUNTS, ("a.md",)) == [(1, 0, 1)]
