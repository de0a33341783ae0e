"""C concurrent posters, split over client processes: what ``post`` drives the board with, and
``baseline`` the bare echo, so that the two are measured alike.

The posters run in separate processes, each with its own event loop and connection
pool; every poster has its own token.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import time
from collections.abc import Sequence
from typing import Any

import aiohttp

from .common import percentiles


async def _posters(targets: list[tuple[str, str]], seconds: float, path: str) -> tuple[int, list[float]]:
    """Each (board URL, token) posts until the time is up; the count and every post's latency."""
    latencies: list[float] = []
    stop_at = time.monotonic() + seconds
    conn = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=conn) as http:

        async def one(url: str, token: str, n: int) -> None:
            headers = {"Authorization": f"Bearer {token}"}
            i = 0
            while time.monotonic() < stop_at:
                started = time.monotonic()
                async with http.post(
                    url + path, json={"channel": f"load{n % 8}", "body": f"message {i}"}, headers=headers
                ) as resp:
                    await resp.read()
                    if resp.status >= 300:
                        raise RuntimeError(f"post failed: {resp.status} {await resp.text()}")
                latencies.append(time.monotonic() - started)
                i += 1

        await asyncio.gather(*[one(url, t, n) for n, (url, t) in enumerate(targets)])
    return len(latencies), latencies


def _worker(targets: list[tuple[str, str]], seconds: float, path: str, out: Any) -> None:
    out.put(asyncio.run(_posters(targets, seconds, path)))


def drive(
    urls: Sequence[str], tokens: list[str], seconds: float, procs: int, path: str = "/api/messages"
) -> dict[str, Any]:
    """Run the posters split over ``procs`` processes and over ``urls``; throughput and latency."""
    ctx = mp.get_context("spawn")
    queue: Any = ctx.Queue()
    # Poster i goes to client process i % procs and to board (i // procs) % len(urls):
    # every client process drives every board, each board gets its share of the posters.
    targets = [(urls[(i // procs) % len(urls)], t) for i, t in enumerate(tokens)]
    groups = [targets[i::procs] for i in range(procs) if targets[i::procs]]
    workers = [ctx.Process(target=_worker, args=(g, seconds, path, queue)) for g in groups]
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
