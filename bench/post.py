"""POST /api/messages throughput and latency with C concurrent posters.

The posters run in separate processes (``--procs``, default 2), each with its
own event loop and connection pool; every poster has its own bot token. The
bare aiohttp echo (``bench.baseline``) is driven alike in the same run, and
each row gives the board's posts/s as a fraction of it.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import time
from typing import Any

import aiohttp

from .common import board_process, percentiles, progress, report
from .fleet import make_fleet

QUICK = ["--concurrency", "1", "128", "--seconds", "3"]
TINY = ["--concurrency", "2", "--seconds", "0.5", "--procs", "1"]


async def _posters(url: str, tokens: list[str], seconds: float, path: str) -> tuple[int, list[float]]:
    latencies: list[float] = []
    stop_at = time.monotonic() + seconds
    conn = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(url, connector=conn) as http:

        async def one(token: str, n: int) -> None:
            headers = {"Authorization": f"Bearer {token}"}
            i = 0
            while time.monotonic() < stop_at:
                started = time.monotonic()
                async with http.post(
                    path, json={"channel": f"load{n % 8}", "body": f"message {i}"}, headers=headers
                ) as resp:
                    await resp.read()
                    if resp.status >= 300:
                        raise RuntimeError(f"post failed: {resp.status} {await resp.text()}")
                latencies.append(time.monotonic() - started)
                i += 1

        await asyncio.gather(*[one(t, n) for n, t in enumerate(tokens)])
    return len(latencies), latencies


def _worker(url: str, tokens: list[str], seconds: float, path: str, out: Any) -> None:
    out.put(asyncio.run(_posters(url, tokens, seconds, path)))


def drive(
    url: str, tokens: list[str], seconds: float, procs: int, path: str = "/api/messages"
) -> dict[str, Any]:
    """Run the posters split over ``procs`` processes; throughput and latency figures."""
    queue: Any = mp.get_context("spawn").Queue()
    ctx = mp.get_context("spawn")
    groups = [tokens[i::procs] for i in range(procs) if tokens[i::procs]]
    workers = [ctx.Process(target=_worker, args=(url, g, seconds, path, queue)) for g in groups]
    started = time.monotonic()
    for w in workers:
        w.start()
    results = [queue.get() for _ in workers]
    elapsed = time.monotonic() - started
    for w in workers:
        w.join()
    count = sum(n for n, _ in results)
    latencies = [x for _, lat in results for x in lat]
    return {
        "posts": count,
        "posts_per_s": round(count / seconds, 1),
        **percentiles(latencies),
        "wall_s": round(elapsed, 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench post")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 128])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--procs", type=int, default=2)
    args = parser.parse_args(argv)
    from .baseline import echo_rows  # baseline drives posters with this module's drive()

    echo = echo_rows(args.concurrency, args.seconds, args.procs)
    rows = []
    for c in args.concurrency:
        with board_process() as board:
            fleet = asyncio.run(make_fleet(board, c))
            tokens = [t for _, t in fleet.bots]
            progress(f"post, {c} posters")
            row = drive(board.url, tokens, args.seconds, args.procs)
        rows.append(
            {
                "concurrency": c,
                **row,
                "echo_posts_per_s": echo[c]["posts_per_s"],
                "echo_p99_ms": echo[c]["p99_ms"],
                "vs_echo": round(row["posts_per_s"] / max(echo[c]["posts_per_s"], 1e-9), 3),
            }
        )
    report("post", rows)


if __name__ == "__main__":
    main()
