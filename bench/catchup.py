"""Catching up on a big board: inbox, channel list with unread counts, channel reads, thread, search.

For each size (10^4, 10^5, 10^6 messages by default) a fresh board is filled
through the bulk path (``bench.bulk``) and read one request at a time from a
client process. ``search`` asks for one word of the vocabulary, each as likely.
``channel`` is ``GET /api/messages?channel=...&limit=50``; its
exact response bytes are then served from memory by the bare aiohttp handler
(``bench.baseline``) and timed the same way: ``vs_bytes_p50`` is the board's
read as a multiple of that, and ``vs_bytes_cpu`` the same for the server's CPU
time per read (every read's ``*_cpu_ms``: the board's CPU a request, which
docs/scale.md's capacity model adds up). The record's ``growth`` is each read's p99 at the
largest size over its p99 at the smallest.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

import aiohttp

from . import bulk, reads
from .baseline import baseline_process
from .common import (
    BoardProcess,
    board_process,
    board_processes,
    postgres_cluster,
    progress,
    report,
    server_pid,
)
from .fleet import Fleet, make_fleet

QUICK = ["--messages", "10000", "100000", "-n", "200"]
TINY = ["--messages", "300", "-n", "5"]
CHANNELS = [f"c{i}" for i in range(10)]


async def _channels(board: BoardProcess, fleet: Fleet) -> None:
    async with aiohttp.ClientSession(board.url, headers={"Authorization": f"Bearer {fleet.human}"}) as http:
        for slug in CHANNELS:
            async with http.post("/api/channels", json={"workspace": "bench", "slug": slug}) as resp:
                resp.raise_for_status()


def probes(loaded: bulk.Loaded, rng: random.Random) -> dict[str, list[reads.Request]]:
    since = [rng.randint(loaded.first_id, loaded.last_id) for _ in range(50)]
    words = [rng.choice(bulk.WORDS) for _ in range(50)]  # a specific thing, as a search usually is
    channel = {"workspace": "bench", "channel": "c0", "limit": 50}
    return {
        "inbox": [("/api/inbox", {"since": s, "limit": 50}) for s in since],
        "channels": [("/api/channels", {"workspace": "bench", "since": max(0, loaded.last_id - 1000)})],
        "channel": [("/api/messages", channel)],
        "channel_compact": [("/api/messages", channel | {"view": "compact"})],
        "thread": [(f"/api/threads/{loaded.busy_root}", {"limit": 50})],
        "search": [("/api/search", {"workspace": "bench", "q": w, "limit": 20}) for w in words],
    }


def one_size(messages: int, n: int, cluster: Any = None) -> dict[str, Any]:
    """The reads at one size; on PostgreSQL (``cluster``) the loaded file is moved there first
    with `board migrate-to`, as an operator moves a board, and a board served on the copy."""
    with board_process() as board:
        fleet = asyncio.run(make_fleet(board, 4))
        asyncio.run(_channels(board, fleet))
        with board.stopped():
            loaded = bulk.load_messages(board.db, "bench", CHANNELS, [h for h, _ in fleet.bots], messages)
            if cluster is not None:
                url = cluster.fresh_database()
                try:
                    _migrate(board.db, url)
                    with board_processes(1, database_url=url) as [served]:
                        db_pid = server_pid(cluster)
                        return _measure(served, fleet.bots[0][1], loaded, messages, n, db_pid)
                finally:
                    cluster.drop_database(url)
        return _measure(board, fleet.bots[0][1], loaded, messages, n, None)


def _migrate(db: str, url: str) -> None:
    progress("moving the board to PostgreSQL (board migrate-to)")
    subprocess.run(
        [sys.executable, "-m", "board.cli", "migrate-to", url, "--db", db],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def _measure(
    board: BoardProcess, token: str, loaded: bulk.Loaded, messages: int, n: int, db_pid: int | None
) -> dict[str, Any]:
    store = "sqlite" if db_pid is None else "postgresql"
    progress(f"catchup reads at {messages:,} messages, {store}")
    figures = reads.measure(
        board.url, token, probes(loaded, random.Random(messages)), n, board.proc.pid, db_pid=db_pid
    )
    request = urllib.request.Request(
        board.url + "/api/messages?workspace=bench&channel=c0&limit=50",
        headers={"Authorization": f"Bearer {token}"},
    )
    with urllib.request.urlopen(request) as resp:
        body = resp.read()
    with tempfile.TemporaryDirectory(prefix="bench-bytes-") as tmp:
        path = Path(tmp) / "channel.json"
        path.write_bytes(body)
        with baseline_process(path) as (url, pid):
            progress(f"the same {len(body):,} bytes from memory")
            bare = reads.measure(url, token, {"bytes": [("/api/messages", {"channel": "c0"})]}, n, pid)[
                "bytes"
            ]
    row: dict[str, Any] = {"store": store, "messages": messages}
    for name, figure in figures.items():
        row[f"{name}_p50_ms"] = figure["p50_ms"]
        row[f"{name}_p99_ms"] = figure["p99_ms"]
        row[f"{name}_cpu_ms"] = figure["cpu_ms"]
        if db_pid is not None:
            row[f"{name}_db_cpu_ms"] = figure["db_cpu_ms"]
    row["bytes_p50_ms"] = bare["p50_ms"]
    row["vs_bytes_p50"] = round(figures["channel"]["p50_ms"] / max(bare["p50_ms"], 1e-3), 2)
    row["bytes_cpu_ms"] = bare["cpu_ms"]
    row["vs_bytes_cpu"] = round(figures["channel"]["cpu_ms"] / max(bare["cpu_ms"], 1e-3), 2)
    row["channel_bytes"] = len(body)
    return row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench catchup")
    parser.add_argument("--messages", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("-n", type=int, default=500, help="timed requests per read")
    parser.add_argument(
        "--store",
        nargs="+",
        choices=("sqlite", "postgresql"),
        default=["sqlite"],
        help="postgresql: each size again on a throwaway cluster, moved over from the loaded file",
    )
    args = parser.parse_args(argv)
    rows = [one_size(m, args.n) for m in args.messages] if "sqlite" in args.store else []
    if "postgresql" in args.store:
        with postgres_cluster() as cluster:
            rows += [one_size(m, args.n, cluster) for m in args.messages]
    first, last = rows[0], [r for r in rows if r["store"] == rows[0]["store"]][-1]
    growth = {
        key.removesuffix("_p99_ms"): round(last[key] / max(first[key], 1e-3), 2)
        for key in first
        if key.endswith("_p99_ms")
    }
    report("catchup", rows, growth=growth)


if __name__ == "__main__":
    main()
