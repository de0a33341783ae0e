"""The machine's limit for this stack: a bare aiohttp handler doing no work, driven alike.

``post`` against an echo handler and ``wake`` against an ``asyncio.Event``, so the board's
figures can be quoted as a fraction of what aiohttp itself does on this machine in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

from aiohttp import web

from .common import free_port, report, wait_healthy
from .post import drive


def app() -> web.Application:
    waiters: list[asyncio.Future[int]] = []
    counter = {"n": 0}

    async def echo(request: web.Request) -> web.Response:
        body = await request.json()
        counter["n"] += 1
        for fut in waiters:
            if not fut.done():
                fut.set_result(counter["n"])
        waiters.clear()
        return web.json_response({"id": counter["n"], **body}, status=201)

    async def wait(request: web.Request) -> web.Response:
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        waiters.append(fut)
        try:
            got = await asyncio.wait_for(fut, 60)
        except TimeoutError:
            return web.json_response({"messages": []})
        return web.json_response({"messages": [{"id": got}]})

    async def healthz(request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    application = web.Application()
    application.router.add_post("/api/messages", echo)
    application.router.add_get("/api/wait", wait)
    application.router.add_get("/healthz", healthz)
    return application


@contextlib.contextmanager
def baseline_process() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.baseline", "--serve", str(port)], start_new_session=True
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench baseline")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 128])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--procs", type=int, default=2)
    args = parser.parse_args(argv)
    if args.serve:
        web.run_app(app(), host="127.0.0.1", port=args.serve, print=None, access_log=None)
        return
    rows = []
    with baseline_process() as url:
        for c in args.concurrency:
            rows.append({"concurrency": c, **drive(url, ["t"] * c, args.seconds, args.procs)})
    report("baseline", rows)


if __name__ == "__main__":
    main()
