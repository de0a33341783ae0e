"""What a fleet costs when it idles: board CPU and RSS with W long-pollers held.

W bots (1,000 by default), split over client processes, each hold
``GET /api/inbox?wait=60`` and poll again when it answers. Once the board holds
all W, the board process's CPU seconds and RSS are read (psutil) over an idle
window; then a soak posts steadily (``--rate`` posts/s, one in ten mentioning a
waiter, which wakes and polls again) and samples RSS, whose drift from the
soak's first sample must stay within ±10 %.

Connected SSE browsers are not measured: this board serves no event stream yet.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing as mp
import random
import time
from typing import Any

import aiohttp
import psutil

from .common import board_process, progress, report
from .fleet import make_fleet

QUICK = ["--waiters", "1000", "--seconds", "20", "--soak", "30"]
TINY = ["--waiters", "3", "--seconds", "1", "--soak", "1", "--procs", "1"]


async def _hold(url: str, tokens: list[str], stop: Any) -> int:
    """Long-poll each token's inbox until ``stop``; how many answers came back."""
    answers = 0
    async with aiohttp.ClientSession(
        url, connector=aiohttp.TCPConnector(limit=0), timeout=aiohttp.ClientTimeout(total=120)
    ) as http:

        async def one(token: str) -> None:
            nonlocal answers
            since = 0
            headers = {"Authorization": f"Bearer {token}"}
            while not stop.is_set():
                params: dict[str, int | str] = {"since": since, "wait": 60, "view": "compact"}
                async with http.get("/api/inbox", params=params, headers=headers) as resp:
                    page = await resp.json()
                answers += 1
                since = max([since, *(m["id"] for m in page["messages"])])

        tasks = [asyncio.create_task(one(t)) for t in tokens]
        while not stop.is_set():
            await asyncio.sleep(0.2)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return answers


def _holder(url: str, tokens: list[str], stop: Any, queue: Any) -> None:
    queue.put(asyncio.run(_hold(url, tokens, stop)))


def _held(url: str) -> int:
    import urllib.request

    with urllib.request.urlopen(url + "/metrics") as resp:
        for line in resp.read().decode().splitlines():
            if line.startswith("board_longpolls_open "):
                return int(float(line.split()[1]))
    return -1


async def _post_steadily(url: str, human: str, handles: list[str], rate: float, seconds: float) -> int:
    rng = random.Random(3)
    posted = 0
    async with aiohttp.ClientSession(url, headers={"Authorization": f"Bearer {human}"}) as http:
        started = time.monotonic()
        while (elapsed := time.monotonic() - started) < seconds:
            mention = f"@{rng.choice(handles)} " if posted % 10 == 0 else ""
            body = {"workspace": "bench", "channel": "chatter", "body": f"{mention}note {posted}"}
            async with http.post("/api/messages", json=body) as resp:
                resp.raise_for_status()
            posted += 1
            await asyncio.sleep(max(0.0, posted / rate - elapsed))
    return posted


def run(waiters: int, seconds: float, soak: float, rate: float, procs: int) -> dict[str, Any]:
    with board_process() as board:
        fleet = asyncio.run(make_fleet(board, waiters))
        board_ps = psutil.Process(board.proc.pid)
        rss_before = board_ps.memory_info().rss
        tokens = [t for _, t in fleet.bots]
        ctx = mp.get_context("spawn")
        stop, queue = ctx.Event(), ctx.Queue()
        groups = [tokens[i::procs] for i in range(procs) if tokens[i::procs]]
        holders = [ctx.Process(target=_holder, args=(board.url, g, stop, queue)) for g in groups]
        for h in holders:
            h.start()
        deadline = time.monotonic() + 120
        while _held(board.url) < waiters:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the board holds {_held(board.url)} of {waiters} long-polls")
            time.sleep(0.1)
        progress(f"idle: {waiters} long-polls held; measuring {seconds:g} s")
        cpu = board_ps.cpu_times()
        time.sleep(seconds)
        cpu_after = board_ps.cpu_times()
        idle_cpu = (cpu_after.user + cpu_after.system) - (cpu.user + cpu.system)
        rss_idle = board_ps.memory_info().rss
        progress(f"soak: posting {rate:g}/s for {soak:g} s")
        samples: list[int] = []

        async def soak_run() -> int:
            over = asyncio.Event()

            async def post() -> int:
                try:
                    return await _post_steadily(
                        board.url, fleet.human, [h for h, _ in fleet.bots], rate, soak
                    )
                finally:
                    over.set()

            async def sample() -> None:
                while not over.is_set():
                    samples.append(board_ps.memory_info().rss)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(over.wait(), max(0.5, soak / 20))

            posted, _ = await asyncio.gather(post(), sample())
            return posted

        posted = asyncio.run(soak_run())
        samples.append(board_ps.memory_info().rss)
        held_at_end = _held(board.url)
        stop.set()
        answers = sum(queue.get() for _ in holders)
        for h in holders:
            h.join()
    mb = 1024 * 1024
    return {
        "waiters": waiters,
        "idle_s": seconds,
        "cpu_pct_of_core": round(100 * idle_cpu / seconds, 2),
        "rss_empty_mb": round(rss_before / mb, 1),
        "rss_idle_mb": round(rss_idle / mb, 1),
        "soak_s": soak,
        "posted": posted,
        "answers": answers,
        "held_at_end": held_at_end,
        "rss_soak_start_mb": round(samples[0] / mb, 1),
        "rss_soak_end_mb": round(samples[-1] / mb, 1),
        "rss_soak_max_mb": round(max(samples) / mb, 1),
        "rss_drift_pct": round(100 * (samples[-1] - samples[0]) / samples[0], 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench idle")
    parser.add_argument("--waiters", type=int, nargs="+", default=[1000])
    parser.add_argument("--seconds", type=float, default=60.0, help="idle window")
    parser.add_argument("--soak", type=float, default=600.0, help="seconds of steady posting")
    parser.add_argument("--rate", type=float, default=20.0, help="posts per second during the soak")
    parser.add_argument("--procs", type=int, default=2)
    args = parser.parse_args(argv)
    rows = [run(w, args.seconds, args.soak, args.rate, args.procs) for w in args.waiters]
    report("idle", rows, sse="not measured: the board serves no event stream yet")


if __name__ == "__main__":
    main()
