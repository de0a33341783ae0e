"""The machine's limit for this stack: a bare aiohttp handler doing no work, driven alike.

``post`` against an echo handler, ``wake`` against ``asyncio.Event``-style futures
(one per waiter, woken by the post that names it or, on the channel, all of them),
and reads against fixed bytes held in memory, so the board's figures can be quoted
as a fraction of what aiohttp itself does on this machine in the same run. The
routes answer the same paths as the board, so the scenarios drive both alike.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

from aiohttp import web

from .common import free_port, progress, report, stop, wait_healthy
from .posters import drive

MENTION = re.compile(r"@(\w+)")
QUICK = ["--concurrency", "1", "128", "--seconds", "3"]
TINY = ["--concurrency", "2", "--seconds", "0.5", "--procs", "1"]


def app(read_bytes: bytes = b"{}") -> web.Application:
    waiters: dict[str, list[asyncio.Future[int]]] = defaultdict(list)
    counter = {"n": 0}

    def wake(key: str, message_id: int) -> None:
        for fut in waiters.pop(key, []):
            if not fut.done():
                fut.set_result(message_id)

    async def echo(request: web.Request) -> web.Response:
        body = await request.json()
        counter["n"] += 1
        named = MENTION.findall(str(body.get("body", "")))
        for key in named or ["channel"]:
            wake(key, counter["n"])
        return web.json_response({"id": counter["n"], **body}, status=201)

    async def hold(request: web.Request, key: str) -> web.Response:
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        waiters[key].append(fut)
        try:
            got = await asyncio.wait_for(fut, 60)
        except TimeoutError:
            return web.json_response({"messages": []})
        return web.json_response({"messages": [{"id": got}]})

    async def inbox(request: web.Request) -> web.Response:
        # Baseline tokens are the handles themselves: the post names the waiter it wakes.
        return await hold(request, request.headers["Authorization"].removeprefix("Bearer "))

    async def channel(request: web.Request) -> web.Response:
        if "wait" in request.query:
            return await hold(request, "channel")
        return web.Response(body=read_bytes, content_type="application/json")

    async def metrics(request: web.Request) -> web.Response:
        held = sum(len(futs) for futs in waiters.values())
        return web.Response(text=f"board_longpolls_open {held}\n")

    async def healthz(request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    application = web.Application()
    application.router.add_post("/api/messages", echo)
    application.router.add_get("/api/messages", channel)
    application.router.add_get("/api/inbox", inbox)
    application.router.add_get("/metrics", metrics)
    application.router.add_get("/healthz", healthz)
    return application


@contextlib.contextmanager
def baseline_process(read_bytes: Path | None = None) -> Iterator[tuple[str, int]]:
    """The bare handler in its own process (its URL and pid); ``GET /api/messages`` answers ``read_bytes``."""
    port = free_port()
    argv = [sys.executable, "-m", "bench.baseline", "--serve", str(port)]
    if read_bytes is not None:
        argv += ["--bytes", str(read_bytes)]
    proc = subprocess.Popen(argv, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url)
        yield url, proc.pid
    finally:
        stop(proc)


def echo_rows(concurrency: list[int], seconds: float, procs: int) -> dict[int, dict[str, float]]:
    """The echo's throughput and latency per concurrency, by concurrency."""
    rows = {}
    with baseline_process() as (url, _):
        for c in concurrency:
            progress(f"baseline echo, {c} posters")
            rows[c] = drive([url], ["t"] * c, seconds, procs)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench baseline")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--bytes", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 128])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--procs", type=int, default=2)
    args = parser.parse_args(argv)
    if args.serve:
        body = args.bytes.read_bytes() if args.bytes else b"{}"
        web.run_app(
            app(body), host="127.0.0.1", port=args.serve, print=None, access_log=None, shutdown_timeout=1
        )
        return
    rows = echo_rows(args.concurrency, args.seconds, args.procs)
    report("baseline", [{"concurrency": c, **row} for c, row in rows.items()])


if __name__ == "__main__":
    main()
