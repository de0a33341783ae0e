"""What delivery states add to a read: a page of 50 messages each addressed to two bots,
beside a page of 50 alike addressed to nobody, on one board in one run.

The ``addressed`` channel's messages each mention two bots: one whose daemon waits
(it took some, answered some, and has ``--wakes`` wake records, a few naming them),
one nobody waits for (every state is unreachable). The ``plain`` channel holds as
many messages of the same length mentioning nobody: its page runs the delivery
query too, which finds nothing. ``vs_plain`` is the addressed read over the plain
one (p50, and the server's CPU per read); ``thread`` reads a thread whose 50 replies
are addressed likewise.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import aiohttp

from . import reads
from .common import board_process, progress, report
from .fleet import make_fleet

QUICK = ["--wakes", "1000", "-n", "200"]
TINY = ["--wakes", "5", "-n", "5"]
PAGE = 50


async def _fill(url: str, human: str, bots: list[tuple[str, str]], wakes: int) -> int:
    """The two channels and a thread (its root's id); the waiting bot's receipts, replies and wakes."""
    (taker, taker_token), (absent, _) = bots[0], bots[1]
    as_human = {"Authorization": f"Bearer {human}"}
    as_taker = {"Authorization": f"Bearer {taker_token}"}
    async with aiohttp.ClientSession(url) as http:

        async def post(body: str, headers: dict[str, str], **where: Any) -> int:
            async with http.post("/api/messages", json={"body": body, **where}, headers=headers) as resp:
                resp.raise_for_status()
                return int((await resp.json())["id"])

        async def call(path: str, body: dict[str, Any]) -> None:
            async with http.post(path, json=body, headers=as_taker) as resp:
                resp.raise_for_status()

        async with http.get("/api/wake", params={"wait": 1, "since": 10**9}, headers=as_taker) as resp:
            resp.raise_for_status()  # the taker's daemon waits: its states are not unreachable
        root = await post("a thread for both", as_human, channel="addressed", workspace="bench")
        addressed = [
            await post(f"@{taker} @{absent} item {i:04d}", as_human, channel="addressed", workspace="bench")
            for i in range(PAGE)
        ]
        addressed += [
            await post(f"@{taker} @{absent} reply {i:03d}", as_human, reply_to=root) for i in range(PAGE)
        ]
        for i in range(PAGE):
            await post(f"nobody's item {i:04d} padded", as_human, channel="plain", workspace="bench")
        await call("/api/receipts", {"message_ids": addressed[::2], "state": "seen"})
        for message_id in addressed[::4]:
            await post("done", as_taker, reply_to=message_id)
        for i in range(wakes):
            trigger = addressed[(i * 7) % len(addressed)] if i % 10 == 0 else root
            await call(
                "/api/wakes",
                {
                    "harness": "claude",
                    "started_at": "2026-12-01T00:00:00Z",
                    "outcome": "failed" if i % 20 == 0 else "ok",
                    "trigger_ids": [trigger],
                },
            )
        return root


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench delivery")
    parser.add_argument("--wakes", type=int, default=5000, help="wake records of the waiting bot")
    parser.add_argument("-n", type=int, default=500, help="timed requests per read")
    args = parser.parse_args(argv)
    with board_process() as board:
        fleet = asyncio.run(make_fleet(board, 2))
        progress(f"two pages of {PAGE}, a thread, {args.wakes} wakes")
        root = asyncio.run(_fill(board.url, fleet.human, fleet.bots, args.wakes))
        page = {"workspace": "bench", "limit": PAGE}
        probes: dict[str, list[reads.Request]] = {
            "addressed": [("/api/messages", page | {"channel": "addressed"})],
            "plain": [("/api/messages", page | {"channel": "plain"})],
            "thread": [(f"/api/threads/{root}", {"limit": PAGE})],
        }
        figures = reads.measure(board.url, fleet.human, probes, args.n, board.proc.pid)
    row: dict[str, Any] = {"wakes": args.wakes, "page": PAGE}
    for name, figure in figures.items():
        row[f"{name}_p50_ms"] = figure["p50_ms"]
        row[f"{name}_p99_ms"] = figure["p99_ms"]
        row[f"{name}_cpu_ms"] = figure["cpu_ms"]
    row["vs_plain_p50"] = round(figures["addressed"]["p50_ms"] / max(figures["plain"]["p50_ms"], 1e-3), 2)
    row["vs_plain_cpu"] = round(figures["addressed"]["cpu_ms"] / max(figures["plain"]["cpu_ms"], 1e-3), 2)
    report("delivery", [row])


if __name__ == "__main__":
    main()
