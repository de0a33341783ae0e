"""What a notification out of band costs a post: posts that enqueue one beside posts that do not.

One board, one run: the human ``bencher`` has a webhook destination (taking mentions) served
by a receiver in this process, which checks nothing and answers 200; the human ``quietly``
has none. A bot posts, one post at a time, alternately ``@bencher ...`` (the post's write also
enqueues a notification, which the dispatcher sends after the commit) and the same text
mentioning ``@quietly``: the same mention and inbox row, and the same look for destinations,
which finds none. The difference is the notification alone. ``vs_plain_p50`` and
``vs_plain_p99`` are the notifying posts' figures over the plain ones' (target: at most 1.05).
``delivered`` counts the notifications the receiver got by the end (every notifying post's).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

import aiohttp
from aiohttp import web

from .common import board_process, percentiles, progress, report
from .fleet import make_fleet

QUICK = ["-n", "300"]
TINY = ["-n", "10"]
WARMUP = 20


async def _receiver() -> tuple[web.AppRunner, str, list[bytes]]:
    got: list[bytes] = []

    async def take(request: web.Request) -> web.Response:
        got.append(await request.read())
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/hook", take)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return runner, f"http://127.0.0.1:{port}/hook", got


async def _run(url: str, human: str, bot: str, n: int) -> dict[str, Any]:
    runner, hook, got = await _receiver()
    as_human = {"Authorization": f"Bearer {human}"}
    as_bot = {"Authorization": f"Bearer {bot}"}
    samples: dict[str, list[float]] = {"notifying": [], "plain": []}
    try:
        async with aiohttp.ClientSession(url) as http:
            body = {"name": "hook", "kind": "webhook", "url": hook, "secret": "bench-signing-secret"}
            async with http.post("/api/destinations", json=body, headers=as_human) as resp:
                resp.raise_for_status()
                destination = (await resp.json())["id"]
            kinds = {"kinds": ["mention"]}
            async with http.put(
                f"/api/destinations/{destination}/kinds", json=kinds, headers=as_human
            ) as resp:
                resp.raise_for_status()

            async def post(text: str) -> float:
                started = time.perf_counter()
                message = {"body": text, "channel": "lobby", "workspace": "bench"}
                async with http.post("/api/messages", json=message, headers=as_bot) as resp:
                    resp.raise_for_status()
                    await resp.read()
                return time.perf_counter() - started

            for i in range(WARMUP):
                await post(f"@bencher warm {i:05d}")
                await post(f"@quietly warm {i:05d}")
            progress(f"{n} posts of each, interleaved")
            for i in range(n):
                samples["notifying"].append(await post(f"@bencher item {i:05d}"))
                samples["plain"].append(await post(f"@quietly item {i:05d}"))
            deadline = time.monotonic() + 30
            while len(got) < WARMUP + n and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
    finally:
        await runner.cleanup()
    figures = {name: percentiles(values) for name, values in samples.items()}
    return {"figures": figures, "delivered": len(got) - WARMUP}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench notify")
    parser.add_argument("-n", type=int, default=1000, help="posts of each kind")
    args = parser.parse_args(argv)
    with board_process(BOARD_NOTIFY_ALLOW_LOCAL="1") as board:  # its receiver is on loopback
        fleet = asyncio.run(make_fleet(board, 1))
        board.admin("user", "add", "quietly")
        measured = asyncio.run(_run(board.url, fleet.human, fleet.bots[0][1], args.n))
    figures = measured["figures"]
    rows = [{"posts": name, "n": args.n, **figure} for name, figure in figures.items()]
    notifying, plain = figures["notifying"], figures["plain"]
    report(
        "notify",
        rows,
        vs_plain_p50=round(notifying["p50_ms"] / max(plain["p50_ms"], 1e-3), 3),
        vs_plain_p99=round(notifying["p99_ms"] / max(plain["p99_ms"], 1e-3), 3),
        delivered=measured["delivered"],
    )


if __name__ == "__main__":
    main()
