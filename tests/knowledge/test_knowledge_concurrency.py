"""Compare-and-set under contention: no update is ever lost."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from board.client import BoardAPIError, BoardClient
from board.server.errors import VersionConflict
from board.server.services import auth, scope
from board.server.services.knowledge import documents
from board.server.store import knowledge as knowledge_store
from board.server.store.connection import Connection
from board.server.store.rows import all_rows
from tests.support.kb_support import World

WRITERS = 16
CYCLES = 50


async def append_lines(client: BoardClient, name: str, path: str) -> int:
    """Read, append one unique line, write on top of what was read; on a conflict, read again."""
    conflicts = 0
    for i in range(CYCLES):
        attempt = 0
        while True:
            doc = await client.document(path)
            body = doc["body"] + f"{name} line {i}\n"
            try:
                await client.put_document(path, body, doc["latest_revision"], f"{name} {i}")
                break
            except BoardAPIError as exc:
                if exc.code == "VERSION_CONFLICT":
                    conflicts += 1
                    attempt += 1
                    await asyncio.sleep(random.uniform(0, 0.02 * min(attempt, 10)))  # jittered backoff
                elif exc.code == "RATE_LIMITED":
                    await asyncio.sleep(exc.retry_after or 1.0)
                else:
                    raise
    return conflicts


@pytest.mark.timeout(360)  # 18 s alone, 103 s beside three other workers: collisions grow with load
async def test_sixteen_writers_lose_no_update(world: World) -> None:
    await world.bot.put_document("log.md", "# Log\n", 0, "start")
    writers = [await world.board.bot(f"writer{n:02d}", "proj") for n in range(WRITERS)]
    conflicts = await asyncio.gather(
        *(append_lines(client, f"w{n:02d}", "log.md") for n, client in enumerate(writers))
    )
    doc = await world.bot.document("log.md")
    lines = doc["body"].splitlines()[1:]
    assert len(lines) == WRITERS * CYCLES
    assert sorted(lines) == sorted(f"w{n:02d} line {i}" for n in range(WRITERS) for i in range(CYCLES))
    for n in range(WRITERS):  # each writer's lines are in its own order
        mine = [line for line in lines if line.startswith(f"w{n:02d} ")]
        assert mine == [f"w{n:02d} line {i}" for i in range(CYCLES)]
    assert doc["latest_revision"] == WRITERS * CYCLES + 1
    history = await world.bot.document_history("log.md", limit=1, view="compact")
    assert history["revisions"][0]["revision"] == WRITERS * CYCLES + 1
    assert sum(conflicts) > 0, "the writers never collided; the test proved nothing"


#: What the other writer's revision copies of the first (the rest are the table's defaults).
COPIED = [
    "document_id",
    "workspace_id",
    "kind",
    "status",
    "body",
    "title",
    "excerpt",
    "bytes",
    "author_id",
    "author",
    "author_kind",
    "reason",
    "sources",
    "recorded_at",
]


async def test_a_revision_number_taken_between_the_read_and_the_write_is_a_version_conflict(
    world: World,
) -> None:
    """The compare-and-set read found revision 1 latest; another writer's revision 2 lands
    before this one's insert. The insert's refusal must answer VERSION_CONFLICT: on PostgreSQL a
    refused statement aborts the transaction, where the conflict's own read then failed."""
    await world.bot.put_document("race.md", "# Race\n", 0, "start")
    ctx = world.board.ctx
    p = await auth.authenticate(ctx, world.bot.token)
    change = documents.Change(kind="write", base_revision=1, reason="mine", body="# Race\nmine\n")

    async def write_after_another(conn: Connection) -> Any:
        workspace = await scope.resolve(conn, p, "proj")
        doc = await knowledge_store.document_by_path(conn, workspace["id"], "race.md")
        assert doc is not None
        (first,) = await all_rows(
            conn, f"SELECT {', '.join(COPIED)} FROM kb_revisions WHERE document_id = ?", (doc["document_id"],)
        )
        theirs = {name: first[name] for name in COPIED} | {"revision": 2, "base_revision": 1}
        assert await knowledge_store.insert_revision(conn, theirs) is not None  # the other writer's
        return await documents.append(conn, ctx, p, workspace, "race.md", change)

    with pytest.raises(VersionConflict) as caught:
        await ctx.db.write(write_after_another)
    assert caught.value.details["current_revision"] == 2 and caught.value.details["base_revision"] == 1
    doc = await world.bot.document("race.md")
    assert doc["latest_revision"] == 1 and doc["body"] == "# Race\n"  # the job's savepoint undid both
