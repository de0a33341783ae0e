"""Post → long-poll return latency with W idle waiters connected.

``one``: every waiter is a bot long-polling its inbox; each post mentions one of
them, and the latency is from sending the post to that waiter's answer.
``all``: every waiter long-polls one channel; each post lands there, and the
latency is from sending the post to the last waiter's answer (the fan-out).
``stream-one`` and ``stream-all`` are the same with every waiter a bot holding its
wake stream (``GET /api/wake/stream``, as a daemon does): the mention lands in its
inbox, or each holds the channel with ``watch``; the latency ends at the line's arrival.
The bare handler of ``bench.baseline`` (one future per waiter, woken by the post)
is driven the same way with the same waiter count in the same run, once per
``one``/``all``; the streaming modes are held to the same bare figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from typing import Any

import aiohttp
import psutil

from .baseline import baseline_process
from .common import board_process, percentiles, progress, report
from .fleet import make_fleet

MODES = ("one", "all", "stream-one", "stream-all")
QUICK = ["--waiters", "10", "1000", "--posts", "30"]
TINY = ["--waiters", "3", "--posts", "3"]


async def _until(predicate: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("waiters did not settle")
        await asyncio.sleep(0.01)


def _cpu_seconds(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return float(times.user + times.system)


async def run(
    url: str, human: str, bots: list[tuple[str, str]], mode: str, posts: int, pid: int
) -> dict[str, Any]:
    """Latency per post; and the server's CPU per post, from sending it to every waiter held again."""
    server = psutil.Process(pid)
    conn = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(url, connector=conn, timeout=aiohttp.ClientTimeout(total=90)) as http:
        auth = {"Authorization": f"Bearer {human}"}
        async with http.post(
            "/api/messages", json={"workspace": "bench", "channel": "watch", "body": "start"}, headers=auth
        ) as resp:
            cursor = (await resp.json())["id"]
        arrivals: dict[int, list[float]] = {}
        waiting = {"n": 0}
        stop = asyncio.Event()

        async def streamer(token: str) -> None:
            """A daemon's reader: one stream, a line a message, held until the run ends."""
            headers = {"Authorization": f"Bearer {token}"}
            params: dict[str, Any] = {"since": cursor, "view": "compact"}
            if mode == "stream-all":
                params["watch"] = "watch"
            timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
            async with http.get("/api/wake/stream", params=params, headers=headers, timeout=timeout) as resp:
                resp.raise_for_status()
                waiting["n"] += 1
                try:
                    async for raw in resp.content:
                        line = json.loads(raw)
                        if "message" in line:
                            arrivals.setdefault(line["message"]["id"], []).append(time.monotonic())
                finally:
                    waiting["n"] -= 1

        async def waiter(token: str) -> None:
            since = cursor
            headers = {"Authorization": f"Bearer {token}"}
            path, params = ("/api/inbox", {}) if mode == "one" else ("/api/messages", {"channel": "watch"})
            while not stop.is_set():
                waiting["n"] += 1
                try:
                    async with http.get(
                        path,
                        params={**params, "since": since, "wait": 60, "view": "compact"},
                        headers=headers,
                    ) as resp:
                        page = await resp.json()
                finally:
                    waiting["n"] -= 1
                now = time.monotonic()
                for m in page["messages"]:
                    arrivals.setdefault(m["id"], []).append(now)
                    since = max(since, m["id"])

        async def board_holding() -> int:
            async with http.get("/metrics") as resp:
                for line in (await resp.text()).splitlines():
                    if line.startswith("board_longpolls_open "):
                        return int(line.split()[1])
            return -1

        async def settled() -> None:
            """Every waiter is held by the board (not merely sent), so posts never race re-polls."""
            await _until(lambda: waiting["n"] == len(bots))
            deadline = time.monotonic() + 30
            while await board_holding() != len(bots):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the board holds {await board_holding()} of {len(bots)} waiters")
                await asyncio.sleep(0.01)

        streaming = mode.startswith("stream-")
        tasks = [asyncio.create_task((streamer if streaming else waiter)(t)) for _, t in bots]
        await settled()
        latencies = []
        cpu = 0.0
        for i in range(posts):
            body: dict[str, Any] = {"workspace": "bench", "channel": "watch", "body": f"post {i}"}
            if mode in ("one", "stream-one"):
                handle, _ = random.choice(bots)
                body = {"workspace": "bench", "channel": "lobby", "body": f"@{handle} post {i}"}
            cpu_before = _cpu_seconds(server)
            sent = time.monotonic()
            async with http.post("/api/messages", json=body, headers=auth) as resp:
                message_id = (await resp.json())["id"]
            expected = 1 if mode in ("one", "stream-one") else len(bots)
            await _until(lambda mid=message_id, n=expected: len(arrivals.get(mid, ())) >= n)
            latencies.append(max(arrivals[message_id]) - sent)
            await settled()
            cpu += _cpu_seconds(server) - cpu_before
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    cpu_ms = round(1000 * cpu / max(posts, 1), 2)
    return {"mode": mode, "waiters": len(bots), "posts": posts, **percentiles(latencies), "cpu_ms": cpu_ms}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench wake")
    parser.add_argument("--waiters", type=int, nargs="+", default=[10, 1000])
    parser.add_argument("--posts", type=int, default=100)
    args = parser.parse_args(argv)
    rows = []
    for w in args.waiters:
        bare: dict[str, dict[str, Any]] = {}
        for mode in MODES:
            # A fresh board per mode: requests the last mode left held would count as waiters.
            with board_process() as board:
                fleet = asyncio.run(make_fleet(board, w))
                progress(f"wake {mode}, {w} waiters")
                row = asyncio.run(run(board.url, fleet.human, fleet.bots, mode, args.posts, board.proc.pid))
            plain = mode.removeprefix("stream-")
            if plain not in bare:
                with baseline_process() as (url, pid):
                    # The bare handler's tokens are the handles: a post names the waiter it wakes.
                    bots = [(f"b{i}", f"b{i}") for i in range(w)]
                    progress(f"wake {plain}, {w} waiters, bare asyncio wake")
                    bare[plain] = asyncio.run(run(url, "human", bots, plain, args.posts, pid))
            rows.append(
                row
                | {
                    "event_p50_ms": bare[plain]["p50_ms"],
                    "event_p99_ms": bare[plain]["p99_ms"],
                    "vs_event_p99": round(row["p99_ms"] / max(bare[plain]["p99_ms"], 1e-3), 2),
                    "event_cpu_ms": bare[plain]["cpu_ms"],
                    "vs_event_cpu": round(row["cpu_ms"] / max(bare[plain]["cpu_ms"], 1e-3), 2),
                }
            )
    report("wake", rows)


if __name__ == "__main__":
    main()
