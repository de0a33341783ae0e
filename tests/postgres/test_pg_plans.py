"""The lists that name each owner's newest message read it from the owner's index on PostgreSQL.

PostgreSQL plans by its statistics, so the plans are read on a board with messages in it
(analyzed): a busy channel of twenty thousand, and a channel, a conversation and a workspace
with none. For those, a newest-message subquery planned as a backward walk of every id
until one is the owner's (``messages_pkey`` with no condition but ``id IS NOT NULL``)
reads the whole table; each list's plan must reach ``messages`` by a condition instead.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import psycopg
import pytest

from board.server.store import channels as channel_store
from board.server.store import workspaces as workspace_store
from board.server.store.postgres import PostgresConnection, placeholders
from board.server.store.postgres import _connect as connect
from tests.support.pgcluster import PgCluster


class Recorder(PostgresConnection):
    """The store's connection, remembering each statement it runs."""

    def __init__(self, conn: PostgresConnection) -> None:
        super().__init__(conn.raw)
        self.statements: list[tuple[str, tuple[Any, ...]]] = []

    def execute(self, sql: str, params: Any = ()) -> Any:
        self.statements.append((sql, tuple(params)))
        return super().execute(sql, params)


@pytest.fixture
def busy_board(pg_cluster: PgCluster, pg_template: str) -> Iterator[str]:
    url = pg_cluster.fresh_database(like=pg_template)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO workspaces (slug, name, created_at) VALUES ('quiet', 'Q', '2026-01-01T00:00:00Z')"
        )
        conn.execute(
            """INSERT INTO channels (workspace_id, slug, created_at)
               VALUES (1, 'busy', '2026-01-01T00:00:00Z'), (1, 'empty', '2026-01-01T00:00:00Z')"""
        )
        conn.execute(
            """INSERT INTO conversations (workspace_id, member_key, created_at)
               VALUES (1, 'x', '2026-01-01T00:00:00Z')"""
        )
        conn.execute(
            """INSERT INTO messages (workspace_id, channel_id, kind, author_id, body, thread_id, created_at)
               SELECT 1, (SELECT id FROM channels WHERE slug = 'busy'), 'channel',
                      (SELECT id FROM agents WHERE handle = 'board'), 'post ' || n, 0, '2026-01-01T00:00:00Z'
               FROM generate_series(1, 20000) AS n"""
        )
        conn.execute("ANALYZE")
    yield url
    pg_cluster.drop_database(url)


@pytest.fixture
async def recorder(busy_board: str) -> AsyncIterator[Recorder]:
    conn = await connect(busy_board)  # as the store connects: its cursors, its rows
    try:
        yield Recorder(conn)
    finally:
        await conn.raw.close()


def _message_scans(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if plan.get("Relation Name") == "messages":
        yield plan
    for child in plan.get("Plans", []):
        yield from _message_scans(child)


async def test_lists_read_each_owners_newest_message_by_its_index(recorder: Recorder) -> None:
    lists = {
        "channels": await channel_store.list_channels(recorder, 1, "", 101),
        "conversations": await channel_store.list_conversations(recorder, None, 1, 0, 101),
        "workspaces": await workspace_store.list_with_counts(recorder, "", 101),
    }
    # What the lists answer: the busy channel's newest message, none for the empty owners.
    newest = {row["slug"]: row["last_id"] for row in lists["channels"]}
    assert newest["empty"] is None and newest["busy"] is not None
    assert [row["last_id"] for row in lists["conversations"]] == [None]
    assert {row["slug"]: row["last_id"] for row in lists["workspaces"]}["quiet"] is None

    assert len(recorder.statements) == 3
    for sql, params in recorder.statements:
        cur = await recorder.raw.execute("EXPLAIN (FORMAT JSON) " + placeholders(sql), params or None)
        explained = await cur.fetchone()
        assert explained is not None
        plan = explained[0][0]["Plan"]
        scans = list(_message_scans(plan))
        assert scans, sql
        for scan in scans:
            assert scan["Node Type"] != "Seq Scan", (sql, scan)
            walks_every_id = scan.get("Index Name") == "messages_pkey" and scan.get("Index Cond") in (
                None,
                "(id IS NOT NULL)",
            )
            assert not walks_every_id, (sql, scan)
