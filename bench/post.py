"""POST /api/messages throughput and latency with C concurrent posters, per store and process count.

The posters run in separate processes (``--procs``, default 2), each with its
own event loop and connection pool; every poster has its own bot token. The
bare aiohttp echo (``bench.baseline``) is driven alike in the same run, and
each row gives the board's posts/s as a fraction of it.

The SQLite board (one process) is always measured: it is the reference.
``--store postgresql`` adds a board on PostgreSQL (a throwaway cluster, see
``common.postgres_cluster``) for each count in ``--processes``: that many
``board serve`` processes on one database, the posters spread evenly over their
ports. With two or more, ``cross_process_wake`` times a long-poll held on one
process woken by a post on another, ``--wakes`` times, one post after another.

Each row also gives the CPU a post over the run: of the board's processes
(``board_cpu_ms``) and of every process of the PostgreSQL server (``db_cpu_ms``),
and its posts/s as a fraction of the SQLite board's at the same concurrency
(``vs_sqlite``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from collections.abc import Iterator
from typing import Any

import aiohttp

from .baseline import echo_rows
from .common import (
    BoardProcess,
    board_processes,
    cpu_seconds,
    percentiles,
    postgres_cluster,
    progress,
    report,
    server_pid,
)
from .fleet import make_fleet
from .posters import drive

QUICK = ["--concurrency", "1", "128", "--seconds", "3", "--wakes", "20"]
TINY = ["--concurrency", "2", "--seconds", "0.5", "--procs", "1", "--wakes", "3"]
STORES = ("sqlite", "postgresql")


async def _longpolls_open(http: aiohttp.ClientSession, url: str) -> int:
    async with http.get(url + "/metrics") as resp:
        text = await resp.text()
    gauge = next(line for line in text.splitlines() if line.startswith("board_longpolls_open "))
    return int(gauge.split()[1])


async def cross_process_wakes(boards: list[BoardProcess], n: int) -> dict[str, Any]:
    """A long-poll on the second process, a post on the first: post sent → long-poll answered."""
    fleet = await make_fleet(boards[0], 1)
    auth = {"Authorization": f"Bearer {fleet.bots[0][1]}"}
    poster, waiter = boards[0].url, boards[1].url
    samples = []
    async with aiohttp.ClientSession(headers=auth) as http:
        async with http.post(poster + "/api/messages", json={"channel": "wake", "body": "first"}) as resp:
            since = (await resp.json())["id"]
        for i in range(n):
            query = {"channel": "wake", "since": str(since), "wait": "60"}
            held = asyncio.create_task(http.get(waiter + "/api/messages", params=query))
            while await _longpolls_open(http, waiter) < 1:  # subscribed: the post will wake it
                await asyncio.sleep(0.002)
            sent = time.monotonic()
            async with http.post(
                poster + "/api/messages", json={"channel": "wake", "body": f"wake {i}"}
            ) as resp:
                since = (await resp.json())["id"]
            async with await held as answer:
                ids = [m["id"] for m in (await answer.json())["messages"]]
            samples.append(time.monotonic() - sent)
            if ids != [since]:
                raise SystemExit(f"bench: the long-poll on {waiter} answered {ids}, not [{since}]")
    return {"wakes": n, **percentiles(samples)}


def ms_a_post(before: dict[int, float], after: dict[int, float], posts: int) -> float:
    """Milliseconds of CPU a post between two :func:`cpu_seconds` (a process new since counts whole)."""
    return round(1000 * sum(t - before.get(pid, 0.0) for pid, t in after.items()) / max(posts, 1), 3)


@contextlib.contextmanager
def boards_on(store: str, processes: int, cluster: Any) -> Iterator[list[BoardProcess]]:
    """``processes`` boards on a fresh database of ``store``."""
    url = cluster.fresh_database() if store == "postgresql" else ""
    try:
        with board_processes(processes, database_url=url) as boards:
            yield boards
    finally:
        if url:
            cluster.drop_database(url)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench post")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 128])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--procs", type=int, default=2, help="client processes driving the posters")
    parser.add_argument("--store", nargs="+", choices=STORES, default=["sqlite"])
    parser.add_argument("--processes", type=int, nargs="+", default=[1], help="board processes on PostgreSQL")
    parser.add_argument("--wakes", type=int, default=100, help="cross-process wakes timed")
    args = parser.parse_args(argv)

    boards = [("sqlite", 1)] + [("postgresql", k) for k in args.processes if "postgresql" in args.store]
    echo = echo_rows(args.concurrency, args.seconds, args.procs)
    rows = []
    summary: dict[str, Any] = {}
    with postgres_cluster() if len(boards) > 1 else contextlib.nullcontext() as cluster:
        # Every board at one concurrency before the next: the machine's load drifts, and the
        # rows compared with each other are measured close together.
        for c in args.concurrency:
            for store, processes in boards:
                label = store if store == "sqlite" else f"{store} x{processes}"
                with boards_on(store, processes, cluster) as served:
                    fleet = asyncio.run(make_fleet(served[0], c))
                    tokens = [t for _, t in fleet.bots]
                    progress(f"post, {label}, {c} posters")
                    board_pids = [b.proc.pid for b in served]
                    db_pids = [server_pid(cluster)] if store == "postgresql" else []
                    board_cpu, db_cpu = cpu_seconds(board_pids), cpu_seconds(db_pids)
                    row = drive([b.url for b in served], tokens, args.seconds, args.procs)
                    board_ms = ms_a_post(board_cpu, cpu_seconds(board_pids), row["posts"])
                    db_ms = ms_a_post(db_cpu, cpu_seconds(db_pids), row["posts"]) if db_pids else None
                if store == "sqlite":
                    sqlite_rate = row["posts_per_s"]
                rows.append(
                    {
                        "board": label,
                        "store": store,
                        "processes": processes,
                        "concurrency": c,
                        **row,
                        "board_cpu_ms": board_ms,
                        "db_cpu_ms": db_ms,
                        "vs_sqlite": round(row["posts_per_s"] / max(sqlite_rate, 1e-9), 3),
                        "echo_posts_per_s": echo[c]["posts_per_s"],
                        "echo_p99_ms": echo[c]["p99_ms"],
                        "vs_echo": round(row["posts_per_s"] / max(echo[c]["posts_per_s"], 1e-9), 3),
                    }
                )
        waker = max(processes for _, processes in boards)
        if waker > 1 and args.wakes:
            with boards_on("postgresql", waker, cluster) as served:
                progress(f"cross-process wake, postgresql x{waker}, {args.wakes} posts")
                summary["cross_process_wake"] = asyncio.run(cross_process_wakes(served, args.wakes))
    report("post", rows, **summary)


if __name__ == "__main__":
    main()
