"""Every list of messages the API offers uses an index: none walks the messages table.

The lists are the store's own queries (channel, conversation, thread, author, tag,
workspace, the inbox, search, thread summaries, the channel list with its unread
counts, the conversation and workspace lists with their newest message), recorded as
they run on a migrated database and each one's plan read back with EXPLAIN QUERY PLAN.
A plan that scans ``messages`` fails. (PostgreSQL's plans follow its statistics:
tests/postgres/test_pg_plans.py reads them on a board with messages in it.)
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from board.server.store import channels as channel_store
from board.server.store import messages as store
from board.server.store import workspaces as workspace_store
from board.server.store.connection import Connection, SqliteConnection
from board.server.store.db import Database
from board.server.store.messages import MessageFilter
from board.server.store.search import Terms


class Recorder(SqliteConnection):
    """The store's connection, remembering each statement it runs."""

    def __init__(self, conn: SqliteConnection) -> None:
        super().__init__(conn.raw)
        self.statements: list[tuple[str, tuple[Any, ...]]] = []

    def execute(self, sql: str, params: Any = ()) -> Any:
        self.statements.append((sql, tuple(params)))
        return super().execute(sql, params)

    async def execute_fetchall(self, sql: str, params: Any = ()) -> list[Any]:
        self.statements.append((sql, tuple(params)))
        return await super().execute_fetchall(sql, params)


FILTERS = [
    MessageFilter(workspace_ids=[1], viewer_id=2, channel_id=1),
    MessageFilter(workspace_ids=[1], viewer_id=2, channel_id=1, before=500),
    MessageFilter(workspace_ids=[1], viewer_id=2, channel_id=1, since=500),
    MessageFilter(workspace_ids=[1], viewer_id=2),
    MessageFilter(workspace_ids=[1, 2], viewer_id=2, since=10),
    MessageFilter(conversation_id=1),
    MessageFilter(thread_id=1),
    MessageFilter(thread_id=1, since=3),
    MessageFilter(workspace_ids=[1], author_id=2),
    MessageFilter(workspace_ids=[1], tag="plan"),
    MessageFilter(workspace_ids=[1], channel_id=1, roots=True),
    # the wake feed's watched channel and goal thread (store.messages.WatchFilter.sources)
    MessageFilter(channel_id=1, since=3, not_author_id=2, without_tags=("loop-held",)),
    MessageFilter(thread_id=1, since=3, not_author_id=2, without_tags=("loop-held",)),
]


async def test_every_message_list_uses_an_index(tmp_path: Path) -> None:
    db = Database(tmp_path / "plans.db", readers=1)
    await db.open()

    async def lists(conn: Connection) -> list[tuple[str, list[str]]]:
        assert isinstance(conn, SqliteConnection)
        recorder = Recorder(conn)
        for flt in FILTERS:
            for descending in (True, False):
                await store.select(recorder, flt, descending=descending, limit=51)
                await store.select_ids(recorder, flt, descending=descending, limit=51)
        await store.inbox(recorder, store.InboxFilter(agent_id=2, since=0), 51)
        await store.unseen_count(recorder, 2)
        await store.search(
            recorder, Terms((("plan", False),)), MessageFilter(workspace_ids=[1], viewer_id=2), 21, 0
        )
        await store.thread_info(recorder, [1, 2, 3])
        await store.by_ids(recorder, [1, 2, 3])
        await store.max_id(recorder)
        await channel_store.list_channels(recorder, 1, "", 101)
        await channel_store.list_conversations(recorder, None, 1, 0, 101)
        await workspace_store.list_with_counts(recorder, "", 101)
        await channel_store.counts_after(recorder, "channel_id", {1: 10, 2: 0}, 2)
        plans = []
        for sql, params in recorder.statements:
            rows = await conn.execute_fetchall(f"EXPLAIN QUERY PLAN {sql}", params)
            plans.append((sql, [row[3] for row in rows]))
        return plans

    try:
        plans = await db.read(lists)
    finally:
        await db.close()
    assert len(plans) == 4 * len(FILTERS) + 11  # thread_info asks twice: summaries, participants
    for sql, plan in plans:
        scans = [step for step in plan if re.match(r"SCAN (m|messages)\b", step)]
        assert not scans, f"{scans} in the plan of:\n{sql}\n{plan}"
