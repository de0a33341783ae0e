"""Search in one workspace of a bigger board: the most common word against a rare one.

For each size (10^4 and 10^6 messages by default) a fresh board holds a workspace
``small`` of a tenth of the messages, written first, and a workspace ``crowd`` of
the rest, written after: the worst case for a search that ranks the whole board's
newest matches, since every match in ``crowd`` is newer than any in ``small``.
Probes ask ``small`` and ``crowd`` for the vocabulary's most common word (in
nearly every message) and for a rare one (the 80th, in about one message of 40),
one request at a time from a client process, the four probes in turn (``interleaved``:
a ratio of two is then measured under the same load). ``common_vs_rare_p50`` is the
common word's p50 over the rare word's in ``small``.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import aiohttp

from . import bulk, reads
from .common import BoardProcess, board_process, progress, report
from .fleet import make_fleet

QUICK = ["--messages", "10000", "100000", "-n", "100"]
TINY = ["--messages", "300", "-n", "5"]
COMMON, RARE = bulk.WORDS[0], bulk.WORDS[79]


async def _workspace(board: BoardProcess, human: str, slug: str) -> list[str]:
    """A workspace with one channel and two bots; their handles."""
    auth = {"Authorization": f"Bearer {human}"}
    async with aiohttp.ClientSession(board.url, headers=auth) as http:
        for path, body in (
            ("/api/workspaces", {"slug": slug}),
            ("/api/channels", {"workspace": slug, "slug": "c0"}),
        ):
            async with http.post(path, json=body) as resp:
                resp.raise_for_status()
        async with http.post("/api/invites", json={"workspace": slug, "uses": 2}) as resp:
            invite = (await resp.json())["invite"]
        handles = [f"{slug}{i}" for i in range(2)]
        for handle in handles:
            async with http.post("/api/agents", json={"handle": handle, "invite": invite}) as resp:
                resp.raise_for_status()
    return handles


def one_size(messages: int, n: int) -> dict[str, Any]:
    with board_process() as board:
        fleet = asyncio.run(make_fleet(board, 1))
        small = asyncio.run(_workspace(board, fleet.human, "small"))
        crowd = asyncio.run(_workspace(board, fleet.human, "crowd"))
        with board.stopped():
            bulk.load_messages(board.db, "small", ["c0"], small, messages // 10)
            bulk.load_messages(board.db, "crowd", ["c0"], crowd, messages - messages // 10, seed=2)
        progress(f"search at {messages:,} messages")
        probes = {
            f"{workspace}_{name}": [("/api/search", {"workspace": workspace, "q": word, "limit": 20})]
            for workspace in ("small", "crowd")
            for name, word in (("common", COMMON), ("rare", RARE))
        }
        figures = reads.measure(board.url, fleet.human, probes, n, interleaved=True)
    row: dict[str, Any] = {"messages": messages, "small_messages": messages // 10}
    for name, figure in figures.items():
        row[f"{name}_p50_ms"] = figure["p50_ms"]
        row[f"{name}_p99_ms"] = figure["p99_ms"]
    row["common_vs_rare_p50"] = round(
        figures["small_common"]["p50_ms"] / max(figures["small_rare"]["p50_ms"], 1e-3), 2
    )
    return row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench search")
    parser.add_argument("--messages", type=int, nargs="+", default=[10_000, 1_000_000])
    parser.add_argument("-n", type=int, default=300, help="timed requests per probe")
    args = parser.parse_args(argv)
    report("search", [one_size(m, args.n) for m in args.messages])


if __name__ == "__main__":
    main()
