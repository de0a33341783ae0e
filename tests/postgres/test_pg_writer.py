"""The PostgreSQL writer's batch: jobs queued together share one transaction.

A job that fails, whether the server refuses one of its statements or it raises by
itself, before or after its statements, is rolled back to its savepoint, and its
neighbours in the batch commit.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from board.server.store.connection import Connection
from board.server.store.dialects import BOARD, LOCKS
from board.server.store.postgres import PostgresStore
from board.server.store.writer import StoreError
from tests.support.pgcluster import PgCluster


@pytest.fixture
async def store(pg_cluster: PgCluster, pg_template: str) -> AsyncIterator[PostgresStore]:
    url = pg_cluster.fresh_database(like=pg_template)
    opened = PostgresStore(url, readers=1)
    await opened.open()
    try:
        yield opened
    finally:
        await opened.close()
        pg_cluster.drop_database(url)


def channel(slug: str) -> Any:
    async def job(conn: Connection) -> int:
        return await conn.insert(
            "INSERT INTO channels (workspace_id, slug, topic, created_at) VALUES (1, ?, '', 'now')", (slug,)
        )

    return job


async def slugs(store: PostgresStore) -> list[str]:
    async def read(conn: Connection) -> list[str]:
        rows = await conn.execute_fetchall("SELECT slug FROM channels WHERE slug LIKE 'w-%' ORDER BY id")
        return [str(r["slug"]) for r in rows]

    return await store.read(read)


class Refused(Exception):
    pass


async def test_failing_jobs_in_a_batch_are_undone_and_their_neighbours_commit(store: PostgresStore) -> None:
    async def refused_by_the_server(conn: Connection) -> int:
        await channel("w-undone-1")(conn)
        return await channel("w-first")(conn)  # the slug is taken: a unique constraint refuses it

    async def raises_after_writing(conn: Connection) -> None:
        await channel("w-undone-2")(conn)
        raise Refused("after a statement")

    async def raises_before_writing(conn: Connection) -> None:
        raise Refused("before any statement")

    async def writes_nothing(conn: Connection) -> None:
        return None

    jobs = [
        channel("w-first"),
        refused_by_the_server,
        channel("w-second"),
        raises_before_writing,  # right after a job that wrote: its savepoint is that job's
        raises_after_writing,
        raises_before_writing,
        writes_nothing,
        channel("w-third"),
    ]
    # Queued in one turn of the loop: the writer takes them as one batch.
    results = await asyncio.gather(*(store.write(job) for job in jobs), return_exceptions=True)

    assert store.stats.largest_batch == len(jobs)
    assert isinstance(results[1], psycopg.IntegrityError)
    assert all(isinstance(results[i], Refused) for i in (3, 4, 5)) and results[6] is None
    committed = [r for i, r in enumerate(results) if i in (0, 2, 7) and isinstance(r, int)]
    assert len(committed) == 3 and committed == sorted(committed)
    assert await slugs(store) == ["w-first", "w-second", "w-third"]
    # The writer goes on: the next batch commits.
    assert isinstance(await store.write(channel("w-fourth")), int)
    assert await slugs(store) == ["w-first", "w-second", "w-third", "w-fourth"]


@pytest.mark.parametrize("last", [False, True])
async def test_a_job_leaving_its_transaction_failed_fails_alone(store: PostgresStore, last: bool) -> None:
    """A job that swallows the server's refusal returns, its transaction aborted: it fails, its
    savepoint undone, and its neighbours commit. Last in its batch, the COMMIT that followed it
    was answered ROLLBACK, with no error, and every job of the batch was told it committed."""

    async def swallows_a_refusal(conn: Connection) -> None:
        with contextlib.suppress(psycopg.IntegrityError):
            await channel("w-first")(conn)

    jobs = [channel("w-first"), swallows_a_refusal, *([] if last else [channel("w-after")])]
    results = await asyncio.gather(*(store.write(job) for job in jobs), return_exceptions=True)

    assert store.stats.largest_batch == len(jobs)
    assert isinstance(results[0], int) and isinstance(results[1], StoreError)
    assert "a refusal was caught, not raised" in str(results[1])
    assert all(isinstance(r, int) for r in results[2:])
    assert await slugs(store) == ["w-first", *([] if last else ["w-after"])]
    assert isinstance(await store.write(channel("w-next")), int)


async def test_writes_queued_while_the_lock_is_awaited_join_the_waiting_batch(store: PostgresStore) -> None:
    """Another process holding the write lock: what queues meanwhile commits with the batch
    already waiting, one lock later, not in a batch (and a lock) of its own."""
    holder = await psycopg.AsyncConnection.connect(store.url, autocommit=True)
    try:
        await holder.execute("SELECT pg_advisory_lock(%s, %s)", (BOARD, LOCKS["writes"]))
        first = asyncio.create_task(store.write(channel("w-waits")))
        while not await waiting_for_a_lock(holder):  # the batch of one is in, awaiting the lock
            await asyncio.sleep(0.01)
        rest = [asyncio.create_task(store.write(channel(f"w-queued-{i}"))) for i in range(3)]
        await asyncio.sleep(0.05)
        assert not first.done()
        await holder.execute("SELECT pg_advisory_unlock(%s, %s)", (BOARD, LOCKS["writes"]))
        await asyncio.gather(first, *rest)
    finally:
        await holder.close()
    assert (store.stats.batches, store.stats.writes) == (1, 4)
    assert await slugs(store) == ["w-waits", *[f"w-queued-{i}" for i in range(3)]]


async def waiting_for_a_lock(conn: psycopg.AsyncConnection[Any]) -> bool:
    cur = await conn.execute(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database ="
        " (SELECT oid FROM pg_database WHERE datname = current_database())"
    )
    row = await cur.fetchone()
    return bool(row and row[0])
