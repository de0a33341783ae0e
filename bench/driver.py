"""What one PostgreSQL statement costs the client, by driver: the ceiling on a post's CPU there.

A post on PostgreSQL costs the board about 1.6 times its CPU on SQLite, most of it the
driver's work for each statement (docs/scale.md, "Capacity, measured"). This times the
writer's commonest statement, an insert returning its id, one after another on one
connection over loopback in one transaction, as the writer awaits a batch's: through the
board's own connection (``store/postgres.py``: its placeholders, one cursor, rows loaded by
position), through psycopg's raw cursor alone, and through asyncpg when it is installed (it
is not a dependency of the board: ``pip install asyncpg`` to measure it). Per statement: the
client's CPU, the database server's (every process of the cluster) and the elapsed time,
the median of ``--rounds`` rounds, each client in turn within a round.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from board.server.store.postgres import _connect, placeholders

from .common import cpu_seconds, postgres_cluster, progress, report, server_pid

QUICK: list[str] = []
TINY = ["--statements", "20", "--rounds", "1"]

INSERT = "INSERT INTO probe (body, n) VALUES (?, ?) RETURNING id"


@dataclass
class Client:
    """One driver's connection: a statement by its number, plain SQL, and how to close it."""

    one: Callable[[int], Awaitable[Any]]
    plain: Callable[[str], Awaitable[Any]]
    close: Callable[[], Awaitable[None]]


async def _board(url: str) -> Client:
    conn = await _connect(url)

    async def one(i: int) -> Any:
        return await (await conn.execute(INSERT, ("probe", i))).fetchone()

    return Client(one, conn.executescript, conn.raw.close)


async def _psycopg(url: str) -> Client:
    conn = await _connect(url)
    cursor = conn.raw.cursor()
    sql = placeholders(INSERT)

    async def one(i: int) -> Any:
        await cursor.execute(sql, ("probe", i))
        return await cursor.fetchall()

    return Client(one, conn.executescript, conn.raw.close)


async def _asyncpg(url: str) -> Client:
    import asyncpg  # type: ignore[import-not-found]  # measured when installed, not a dependency

    conn = await asyncpg.connect(url)
    sql = placeholders(INSERT)

    async def one(i: int) -> Any:
        return await conn.fetchrow(sql, "probe", i)

    return Client(one, conn.execute, conn.close)


CLIENTS: dict[str, Callable[[str], Awaitable[Client]]] = {
    "board": _board,
    "psycopg": _psycopg,
    "asyncpg": _asyncpg,
}


async def _round(url: str, db_pid: int, client: str, statements: int) -> dict[str, float]:
    conn = await CLIENTS[client](url)
    try:
        await conn.plain("BEGIN")  # in one transaction, as the writer's batch runs its jobs
        for i in range(min(statements, 200)):  # warm: psycopg prepares a statement on its fifth run
            await conn.one(i)
        db_before, before, started = cpu_seconds([db_pid]), time.process_time(), time.perf_counter()
        for i in range(statements):
            await conn.one(i)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - before
        db_after = cpu_seconds([db_pid])
        await conn.plain("COMMIT")
    finally:
        await conn.close()
    db = sum(db_after.values()) - sum(db_before.get(pid, 0.0) for pid in db_after)
    micro = 1e6 / statements
    return {"client_cpu_us": cpu * micro, "db_cpu_us": db * micro, "elapsed_us": elapsed * micro}


async def _measure(
    url: str, db_pid: int, clients: list[str], statements: int, rounds: int
) -> list[dict[str, Any]]:
    conn = await _connect(url)
    await conn.executescript(
        "CREATE TABLE probe (id BIGSERIAL PRIMARY KEY, body TEXT NOT NULL, n BIGINT NOT NULL)"
    )
    await conn.raw.close()
    runs: dict[str, list[dict[str, float]]] = {client: [] for client in clients}
    for r in range(rounds):
        progress(f"round {r + 1} of {rounds}")
        for client in clients:
            runs[client].append(await _round(url, db_pid, client, statements))
    return [
        {
            "client": client,
            "statements": statements,
            **{key: round(statistics.median(run[key] for run in runs[client]), 1) for key in runs[client][0]},
        }
        for client in clients
    ]


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench driver", description=__doc__)
    parser.add_argument("--statements", type=int, default=10000, help="statements a round, per client")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    clients = [c for c in CLIENTS if c != "asyncpg" or importlib.util.find_spec("asyncpg") is not None]
    if "asyncpg" not in clients:
        progress("asyncpg is not installed: measuring the board's connection and psycopg only")
    with postgres_cluster() as cluster:
        rows = asyncio.run(
            _measure(cluster.fresh_database(), server_pid(cluster), clients, args.statements, args.rounds)
        )
    board = rows[0]["client_cpu_us"] or float("nan")  # a tiny run may take less than a clock tick
    report(
        "driver",
        rows,
        **{f"{row['client']}_vs_board_cpu": round(row["client_cpu_us"] / board, 2) for row in rows[1:]},
    )
