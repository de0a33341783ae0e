"""K bots racing to claim one thread: exactly one must win, every round.

Each round posts a fresh thread, then K bots split over client processes send
``POST /api/threads/{id}/claim`` at the same moment (the processes meet at a
barrier first). A round's winners are the answers 201; everyone else must get
CLAIMED. The latency is each claim's own, from send to answer.
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

QUICK = ["--racers", "2", "8", "64", "--rounds", "10"]
TINY = ["--racers", "2", "--rounds", "2", "--procs", "1"]


async def _race(
    url: str, tokens: list[str], threads: list[int], barrier: Any
) -> list[tuple[int, int, float]]:
    """(round, status, seconds) of every claim this process sent."""
    out = []
    async with aiohttp.ClientSession(url, connector=aiohttp.TCPConnector(limit=0)) as http:

        async def claim(token: str, thread: int) -> tuple[int, float]:
            started = time.perf_counter()
            async with http.post(
                f"/api/threads/{thread}/claim", json={}, headers={"Authorization": f"Bearer {token}"}
            ) as resp:
                await resp.read()
                return resp.status, time.perf_counter() - started

        for i, thread in enumerate(threads):
            await asyncio.get_running_loop().run_in_executor(None, barrier.wait)
            for status, seconds in await asyncio.gather(*[claim(t, thread) for t in tokens]):
                out.append((i, status, seconds))
    return out


def _racer(url: str, tokens: list[str], threads: list[int], barrier: Any, queue: Any) -> None:
    queue.put(asyncio.run(_race(url, tokens, threads, barrier)))


async def _threads(url: str, human: str, rounds: int) -> list[int]:
    async with aiohttp.ClientSession(url, headers={"Authorization": f"Bearer {human}"}) as http:
        ids = []
        for i in range(rounds):
            body = {"workspace": "bench", "channel": "work", "body": f"task {i}"}
            async with http.post("/api/messages", json=body) as resp:
                ids.append((await resp.json())["id"])
        return ids


def race(racers: int, rounds: int, procs: int) -> dict[str, Any]:
    with board_process() as board:
        fleet = asyncio.run(make_fleet(board, racers))
        threads = asyncio.run(_threads(board.url, fleet.human, rounds))
        tokens = [t for _, t in fleet.bots]
        groups = [tokens[i::procs] for i in range(procs) if tokens[i::procs]]
        ctx = mp.get_context("spawn")
        barrier, queue = ctx.Barrier(len(groups)), ctx.Queue()
        progress(f"claims, {racers} racers, {rounds} rounds")
        workers = [ctx.Process(target=_racer, args=(board.url, g, threads, barrier, queue)) for g in groups]
        for w in workers:
            w.start()
        results = [item for _ in workers for item in queue.get()]
        for w in workers:
            w.join()
    winners = [sum(1 for r, status, _ in results if r == i and status == 201) for i in range(rounds)]
    refused = sum(1 for _, status, _ in results if status == 409)
    other = sorted({status for _, status, _ in results if status not in (201, 409)})
    return {
        "racers": racers,
        "rounds": rounds,
        "min_winners": min(winners),
        "max_winners": max(winners),
        "refused": refused,
        "other_statuses": other,
        **percentiles([s for _, _, s in results]),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench claims")
    parser.add_argument("--racers", type=int, nargs="+", default=[2, 8, 64])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--procs", type=int, default=2)
    args = parser.parse_args(argv)
    rows = [race(k, args.rounds, args.procs) for k in args.racers]
    exact = all(r["min_winners"] == r["max_winners"] == 1 and not r["other_statuses"] for r in rows)
    report("claims", rows, exactly_one_winner=exact)


if __name__ == "__main__":
    main()
