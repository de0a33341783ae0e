"""What a process takes in of the notifications on PostgreSQL when a part of it fails: a read
back that does not get through, a commit the server refuses, a listener hit by the unexpected.

Two stores on one fresh database stand for two board processes; ``on_remote`` stands for the
service that reads the messages back (``services.remote.take_in``), failing where a test says.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import psycopg
import pytest

from board.server.store import postgres
from board.server.store.connection import Connection
from board.server.store.postgres import PostgresStore
from board.server.store.writer import emit
from tests.support.boardtest import eventually
from tests.support.pgcluster import PgCluster

Taken = list[list[dict[str, Any]]]


@pytest.fixture
async def database(pg_cluster: PgCluster) -> AsyncIterator[str]:
    url = pg_cluster.fresh_database()
    yield url
    pg_cluster.drop_database(url)


async def opened(url: str, on_remote: Callable[[list[dict[str, Any]]], Any] | None = None) -> PostgresStore:
    """A store whose outbox items are the notifications themselves (dicts, as ``describe``
    makes them of events), taking in with ``on_remote``."""
    store = PostgresStore(url, readers=1)
    store.describe = lambda item: item if isinstance(item, dict) else None
    store.on_remote = on_remote
    await store.open()
    return store


def emitting(*items: dict[str, Any]) -> Callable[[Connection], Any]:
    async def job(conn: Connection) -> None:
        for item in items:
            emit(item)

    return job


def kinds(taken: Taken) -> list[list[str]]:
    return [[str(item["t"]) for item in items] for items in taken]


async def test_a_failed_take_keeps_this_process_s_own_signal_for_the_next(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A's read of B's message fails, and fails again once A's own batch (a signal) has come
    in behind it: the next take reads the messages again and publishes A's signal with them.
    Dropped with the failed take, a page or a keeper waiting on it on A was never told."""
    monkeypatch.setattr(postgres, "RETAKE_AFTER", 0.01)
    signal = {"t": "signal", "key": ["routines", 0], "id": 7}
    taken = await failing_takes(database, failures=2, own=signal)
    assert kinds(taken) == [["message"], ["gap", "local"], ["gap", "local"]]
    assert taken[2] == [{"t": "gap", "after": 40}, {"t": "local", "items": [signal]}]


async def test_a_take_given_up_still_publishes_what_it_told_besides_messages(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read that never gets through is given up after its tries: every waiter is sent to read
    the database (``behind``), and this process's own signal taken in with it is published."""
    monkeypatch.setattr(postgres, "RETAKE_AFTER", 0.01)
    monkeypatch.setattr(postgres, "RETAKES", 2)
    signal = {"t": "signal", "key": ["routines", 0], "id": 8}
    taken = await failing_takes(database, failures=3, own=signal)
    assert kinds(taken) == [["message"], ["gap", "local"], ["gap", "local"], ["local", "behind"]]
    assert taken[-1] == [{"t": "local", "items": [signal]}, {"t": "behind"}]


async def failing_takes(url: str, failures: int, own: dict[str, Any]) -> Taken:
    """What A takes in when B commits message 41 and A's first ``failures`` reads fail; A
    commits ``own`` during the first, so that it comes in behind the failed take."""
    taken: Taken = []

    async def take_in(items: list[dict[str, Any]]) -> None:
        taken.append(items)
        if len(taken) == 1:
            await a.write(emitting(own))
            await eventually(lambda: not a._arrived.empty(), "A's own notification, heard")
        if len(taken) <= failures:
            raise psycopg.OperationalError("the database did not answer")

    a = await opened(url, take_in)
    b = await opened(url)
    try:
        await b.write(emitting({"t": "message", "id": 41}))
        await eventually(lambda: len(taken) > failures, "A's take after the failed ones")
        await a.published()
    finally:
        await a.close()
        await b.close()
    return taken


async def test_a_commit_the_server_refuses_leaves_nothing_held(database: str) -> None:
    """A batch whose commit fails (a deferred constraint, checked at COMMIT) is no longer held
    for its notification: waiting for what this process published returns."""
    with psycopg.connect(database, autocommit=True) as admin:
        admin.execute("CREATE TABLE parent (id int PRIMARY KEY)")
        admin.execute("CREATE TABLE child (parent int REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)")
    a = await opened(database)
    try:

        async def orphan(conn: Connection) -> None:
            await conn.execute("INSERT INTO child (parent) VALUES (1)")
            emit({"t": "signal", "key": ["routines", 0], "id": 9})

        with pytest.raises(psycopg.errors.ForeignKeyViolation):
            await a.write(orphan)
        await asyncio.wait_for(a.published(), 5)
    finally:
        await a.close()


async def test_the_listener_outlives_an_error_of_its_own(
    database: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """An error that is not the server's in the listener (here, reading a notification) is
    logged with where it came from; the listener connects again, and goes on hearing."""
    taken: Taken = []

    async def take_in(items: list[dict[str, Any]]) -> None:
        taken.append(items)

    a = await opened(database, take_in)
    b = await opened(database)
    real, broken = a._items, list[str]()

    def items_once(payload: str) -> list[dict[str, Any]]:
        if not broken:
            broken.append(payload)
            raise RuntimeError("a bug")
        return real(payload)

    monkeypatch.setattr(a, "_items", items_once)
    try:
        with caplog.at_level(logging.WARNING, logger=postgres.__name__):
            await b.write(emitting({"t": "message", "id": 61}))
            await eventually(lambda: broken, "the listener's error")
            await eventually(lambda: taken, "A listening again")
            await b.write(emitting({"t": "message", "id": 62}))
            await eventually(lambda: 62 in [i.get("id") for items in taken for i in items], "B's next")
    finally:
        await a.close()
        await b.close()
    assert taken[0] == [{"t": "gap", "after": 0, "held": 0}]  # what it missed is read back
    assert any(r.exc_info and "a bug" in str(r.exc_info[1]) for r in caplog.records)
