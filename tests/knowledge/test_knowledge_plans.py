"""Reading the current documents never scans history: every query the reads make uses an index."""

from __future__ import annotations

import re
import sqlite3
from typing import Any

import aiosqlite

from board.server.store import knowledge as store
from board.server.store.jsoncolumns import readable_json
from board.server.store.search import Terms
from tests.support.boardtest import sqlite_only
from tests.support.kb_support import World, db_rows

PLAN = Terms((("plan", False),))


class Recorder:
    """A connection that remembers each statement it runs."""

    dialect = "sqlite"

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn
        self.statements: list[tuple[str, tuple[Any, ...]]] = []

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        self.statements.append((sql, tuple(params)))
        return self.conn.execute(sql, params)

    def execute_fetchall(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        self.statements.append((sql, tuple(params)))
        return self.conn.execute_fetchall(sql, params)


@sqlite_only  # SQLite's EXPLAIN QUERY PLAN; PostgreSQL's plans follow its statistics
async def test_list_get_and_search_use_indexes_only(world: World) -> None:
    for n in range(30):
        await world.bot.put_document("busy.md", f"# Busy\n\nversion {n} of the plan\n", n, "r")
    for n in range(10):
        await world.bot.put_document(f"doc{n}.md", f"# Doc {n}\n\nplan {n}\n", 0, "r")
    await world.bot.dispute("busy.md", "hm")
    db = world.board.db_file
    workspace_id = db_rows(db, "SELECT id FROM workspaces WHERE slug = 'proj'")[0][0]
    flt = store.ListFilter(prefix="d", status="settled", expired=False, now="2030-01-01T00:00:00Z")
    async with aiosqlite.connect(db) as raw:
        raw.row_factory = sqlite3.Row
        await raw.create_function("readable_json", 5, readable_json)  # as every board connection has
        conn = Recorder(raw)
        await store.list_current(conn, workspace_id, flt, after="", limit=21)  # type: ignore[arg-type]
        await store.search(conn, workspace_id, PLAN, flt, limit=21, offset=0)  # type: ignore[arg-type]
        doc = await store.document_by_path(conn, workspace_id, "BUSY.md")  # type: ignore[arg-type]
        assert doc is not None
        await store.revision_by_id(conn, doc["current_id"])  # type: ignore[arg-type]
        await store.revision_by_number(conn, doc["document_id"], 3)  # type: ignore[arg-type]
        await store.open_disputes(conn, doc["document_id"])  # type: ignore[arg-type]
        await store.last_resolved_dispute(conn, doc["document_id"])  # type: ignore[arg-type]
        await store.history(conn, doc["document_id"], None, 21)  # type: ignore[arg-type]
        await store.newest_accepted(conn, doc["document_id"])  # type: ignore[arg-type]
        await store.newest_proposed(conn, workspace_id, doc["document_id"], 0)  # type: ignore[arg-type]
        await store.current_by_paths(conn, workspace_id, ["busy.md", "doc1.md"])  # type: ignore[arg-type]
        await store.search_ranked(conn, workspace_id, PLAN, [doc["document_id"]], 20)  # type: ignore[arg-type]
        plans = []
        for sql, params in conn.statements:
            async with raw.execute(f"EXPLAIN QUERY PLAN {sql}", params) as cur:
                plans.append((sql, [row[3] for row in await cur.fetchall()]))
    assert len(plans) == 12
    for sql, plan in plans:
        scans = [
            step for step in plan if re.match(r"SCAN (r|d|kb_revisions|kb_documents|kb_disputes)\b", step)
        ]
        assert not scans, f"{scans} in the plan of:\n{sql}\n{plan}"
        if "MATCH" in sql:  # a search is driven by the index, never by walking the documents
            assert plan[0].startswith("SCAN kb_fts VIRTUAL TABLE"), plan
            assert "USE TEMP B-TREE FOR ORDER BY" not in plan, plan  # the index returns rows by rank
