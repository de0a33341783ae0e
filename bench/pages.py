"""The human's pages at scale: `/`, `/c/{slug}` and `/t/{id}` at 10^5 messages, and SSE fan-out.

A bot fills one channel with ``--messages`` messages (one in ten a reply in a
thread of the last root) over the API; a human signs in with the one-time
link `board admin user link` prints. Each page is timed twice: from the client
on loopback (``client_*``, with the round trip) and by the board itself (its
``Server-Timing`` header, from the request's arrival to its answer: server time).
Fan-out: ``--browsers`` SSE readers hold ``/events``; each post is timed from
its send to its arrival at the last reader.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

import aiohttp

from .common import BoardProcess, board_process, percentiles, report
from .fleet import make_fleet

QUICK = ["--messages", "10000", "--rounds", "100", "--posts", "30"]
TINY = ["--messages", "20", "--rounds", "3", "--browsers", "2", "--posts", "2"]
WORKSPACE = "bench"
CHANNEL = "big"


async def _fill(board: BoardProcess, token: str, total: int, concurrency: int = 32) -> tuple[int, int]:
    """Post ``total`` messages in #big; the id of a thread root with replies, and the last root."""
    headers = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession(board.url, connector=aiohttp.TCPConnector(limit=0)) as http:

        async def post(body: dict[str, Any]) -> int:
            async with http.post("/api/messages", json=body, headers=headers) as resp:
                if resp.status != 201:
                    raise RuntimeError(f"post failed: {resp.status} {await resp.text()}")
                return int((await resp.json())["id"])

        thread = await post({"channel": CHANNEL, "body": "the thread everyone replies to"})
        done = 1
        while done < total:
            batch = min(concurrency, total - done)
            await asyncio.gather(
                *[
                    post({"reply_to": thread, "body": f"reply {done + i}"})
                    if (done + i) % 10 == 0
                    else post({"channel": CHANNEL, "body": f"message {done + i} with some **markdown**"})
                    for i in range(batch)
                ]
            )
            done += batch
        return thread, done


async def sign_in(http: aiohttp.ClientSession, board: BoardProcess) -> None:
    """Sign the fleet's human in on ``http`` (its cookie jar keeps the session)."""
    link = board.admin("user", "link", "bencher", "--board", board.url)
    token = link.split("token=", 1)[1]
    async with http.post("/login", data={"token": token}, allow_redirects=False) as resp:
        if resp.status != 303:
            raise RuntimeError(f"sign-in failed: {resp.status}")


def _server_seconds(resp: aiohttp.ClientResponse) -> float:
    """The board's own time for an answer, from its ``Server-Timing: app;dur=<ms>`` header."""
    return float(resp.headers["Server-Timing"].split("dur=", 1)[1]) / 1000


async def _time_pages(
    http: aiohttp.ClientSession, paths: dict[str, str], rounds: int
) -> list[dict[str, Any]]:
    rows = []
    for name, path in paths.items():
        samples, server = [], []
        for _ in range(rounds):
            started = time.monotonic()
            async with http.get(path) as resp:
                await resp.read()
                if resp.status != 200:
                    raise RuntimeError(f"{path}: {resp.status}")
                # / answers with a redirect to the default channel: both answers count.
                server.append(sum(_server_seconds(r) for r in (*resp.history, resp)))
            samples.append(time.monotonic() - started)
        client = {f"client_{k}": v for k, v in percentiles(samples).items()}
        rows.append({"what": name, "n": rounds, **percentiles(server), **client})
    return rows


async def _fan_out(
    board: BoardProcess, cookies: Any, token: str, browsers: int, posts: int
) -> dict[str, Any]:
    arrivals: dict[int, list[float]] = {}
    ready = asyncio.Event()
    opened = 0

    async def reader(http: aiohttp.ClientSession) -> None:
        nonlocal opened
        async with http.get(f"/events?workspace={WORKSPACE}") as resp:
            await resp.content.readline()  # ": open"
            opened += 1
            if opened == browsers:
                ready.set()
            async for raw in resp.content:
                line = raw.decode()
                if line.startswith("id: "):
                    arrivals.setdefault(int(line[4:]), []).append(time.monotonic())

    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(board.url, cookies=cookies, connector=connector) as http:
        tasks = [asyncio.create_task(reader(http)) for _ in range(browsers)]
        await asyncio.wait_for(ready.wait(), 60)
        samples = []
        headers = {"Authorization": f"Bearer {token}"}
        for i in range(posts):
            sent = time.monotonic()
            async with http.post(
                "/api/messages", json={"channel": "live", "body": f"live {i}"}, headers=headers
            ) as resp:
                message_id = int((await resp.json())["id"])
            deadline = time.monotonic() + 10
            while len(arrivals.get(message_id, [])) < browsers and time.monotonic() < deadline:
                await asyncio.sleep(0.001)
            got = arrivals.get(message_id, [])
            if len(got) < browsers:
                raise RuntimeError(f"message {message_id} reached {len(got)} of {browsers} browsers")
            samples.append(max(got) - sent)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    # Post to the last browser is end to end: there is no server-only share to quote.
    timed = {f"client_{k}": v for k, v in percentiles(samples).items()}
    return {
        "what": f"sse fan-out to {browsers}",
        "n": posts,
        "p50_ms": "-",
        "p99_ms": "-",
        "max_ms": "-",
        **timed,
    }


async def run(messages: int, rounds: int, browsers: int, posts: int) -> list[dict[str, Any]]:
    # The readers are one human's tabs, which hold eight streams by default (BOARD_MAX_WAITS).
    with board_process(BOARD_MAX_WAITS=str(browsers + 8)) as board:
        fleet = await make_fleet(board, 1, WORKSPACE)
        token = fleet.bots[0][1]
        started = time.monotonic()
        thread, total = await _fill(board, token, messages)
        fill_s = time.monotonic() - started
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(board.url, cookie_jar=jar) as http:
            await sign_in(http, board)
            rows = await _time_pages(
                http,
                {
                    "/": f"/?workspace={WORKSPACE}",
                    "/c/{slug}": f"/c/{CHANNEL}?workspace={WORKSPACE}",
                    "/t/{id}": f"/t/{thread}",
                },
                rounds,
            )
            cookies = {m.key: m.value for m in jar}
        rows.append(await _fan_out(board, cookies, token, browsers, posts))
        for row in rows:
            row["messages"] = total
            row["fill_s"] = round(fill_s, 1)
        return rows


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench pages")
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=200, help="Loads of each page.")
    parser.add_argument("--browsers", type=int, default=100, help="SSE readers for the fan-out.")
    parser.add_argument("--posts", type=int, default=100, help="Posts timed in the fan-out.")
    args = parser.parse_args(argv)
    report("pages", asyncio.run(run(args.messages, args.rounds, args.browsers, args.posts)))
