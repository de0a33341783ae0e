"""What a fleet costs when it idles: board CPU and RSS with W long-pollers and B browsers held.

W bots (1,000 by default), split over client processes, each hold
``GET /api/inbox?wait=60`` and poll again when it answers. Once the board holds
all W, the board process's CPU seconds and RSS are read (psutil) over an idle
window. Then B browser tabs (1,000 by default) open the pages' live stream
(``GET /events``, Server-Sent Events) beside them, and the same figures are read
over a second window. The tabs are one signed-in human's, so the board runs with
``BOARD_MAX_WAITS`` above B (a human holds eight streams and long-polls by
default). Last a soak posts steadily while both are held (``--rate`` posts/s in a
channel of the tabs' workspace, so every post reaches every tab; one in ten
mentions a waiter, which wakes and polls again) and samples RSS, whose drift
from the soak's first sample must stay within ±10 %.
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

from .common import BoardProcess, board_process, progress, report
from .fleet import Fleet, make_fleet
from .pages import sign_in

QUICK = ["--waiters", "1000", "--browsers", "1000", "--seconds", "20", "--soak", "30"]
TINY = ["--waiters", "3", "--browsers", "3", "--seconds", "1", "--soak", "1", "--procs", "1"]
WORKSPACE = "bench"


async def _hold(
    url: str, tokens: list[str], cookies: dict[str, str], tabs: int, stop: Any, last: Any
) -> tuple[int, int]:
    """Long-poll each token's inbox and hold ``tabs`` live streams until ``stop``.

    After ``stop`` the tabs read on until each has seen message ``last`` (the soak's
    final post), for at most 30 s. Returns how many long-poll answers and how many
    stream messages came back.
    """
    answers = 0
    messages = 0
    seen = [0] * tabs  # the highest message id each tab has had
    async with aiohttp.ClientSession(
        url,
        connector=aiohttp.TCPConnector(limit=0),
        cookies=cookies,
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=30),
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

        async def tab(i: int) -> None:
            nonlocal messages
            async with http.get("/events", params={"workspace": WORKSPACE}) as resp:
                if resp.status != 200:
                    raise RuntimeError(f"/events: {resp.status} {await resp.text()}")
                # Whole events only (up to the last blank line), counted in bulk: a client
                # parsing 1,000 streams line by line is slower than the board that writes them.
                pending = b""
                async for chunk in resp.content.iter_any():
                    events, _, pending = (pending + chunk).rpartition(b"\n\n")
                    if b"event: released" in events:
                        raise RuntimeError("the board released a tab: BOARD_MAX_WAITS is too low")
                    messages += events.count(b"\nevent: message\n")
                    block = b"\n" + events
                    at = block.rfind(b"\nid: ")  # the last event's id line
                    if at >= 0:
                        seen[i] = int(block[at + 5 : block.index(b"\n", at + 1)])

        tasks = [asyncio.create_task(one(t)) for t in tokens]
        tasks += [asyncio.create_task(tab(i)) for i in range(tabs)]
        while not stop.is_set():
            await asyncio.sleep(0.2)
            failed = [t for t in tasks if t.done() and not t.cancelled() and t.exception()]
            if failed:
                raise failed[0].exception()  # type: ignore[misc]
        deadline = time.monotonic() + 30
        while min(seen, default=last.value) < last.value and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return answers, messages


def _holder(
    url: str, tokens: list[str], cookies: dict[str, str], tabs: int, stop: Any, last: Any, queue: Any
) -> None:
    try:
        queue.put(asyncio.run(_hold(url, tokens, cookies, tabs, stop, last)))
    except Exception as exc:  # the parent waits on the queue: tell it, rather than hang it
        queue.put(repr(exc))
        raise


def _held(url: str) -> int:
    import urllib.request

    with urllib.request.urlopen(url + "/metrics") as resp:
        for line in resp.read().decode().splitlines():
            if line.startswith("board_longpolls_open "):
                return int(float(line.split()[1]))
    return -1


async def _post_steadily(
    url: str, human: str, handles: list[str], rate: float, seconds: float
) -> tuple[int, int]:
    """Post at ``rate`` for ``seconds``: how many posts, and the last one's id."""
    rng = random.Random(3)
    posted = last = 0
    async with aiohttp.ClientSession(url, headers={"Authorization": f"Bearer {human}"}) as http:
        started = time.monotonic()
        while (elapsed := time.monotonic() - started) < seconds:
            mention = f"@{rng.choice(handles)} " if posted % 10 == 0 else ""
            body = {"workspace": WORKSPACE, "channel": "chatter", "body": f"{mention}note {posted}"}
            async with http.post("/api/messages", json=body) as resp:
                resp.raise_for_status()
                last = (await resp.json())["id"]
            posted += 1
            await asyncio.sleep(max(0.0, posted / rate - elapsed))
    return posted, last


async def _tab_cookies(board: BoardProcess) -> dict[str, str]:
    """The session cookie of the fleet's human, signed in as a browser is."""
    jar = aiohttp.CookieJar(unsafe=True)
    async with aiohttp.ClientSession(board.url, cookie_jar=jar) as http:
        await sign_in(http, board)
    return {m.key: m.value for m in jar}


def _until_held(board: BoardProcess, count: int, what: str) -> None:
    deadline = time.monotonic() + 120
    while _held(board.url) < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the board holds {_held(board.url)} of {count} {what}")
        time.sleep(0.1)


def _cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def _idle_window(board_ps: psutil.Process, seconds: float) -> tuple[float, int]:
    """The board's CPU (% of one core) over ``seconds`` of quiet, and its RSS after."""
    cpu = _cpu_seconds(board_ps)
    time.sleep(seconds)
    return 100 * (_cpu_seconds(board_ps) - cpu) / seconds, board_ps.memory_info().rss


def _soak(
    board: BoardProcess, fleet: Fleet, board_ps: psutil.Process, rate: float, soak: float
) -> tuple[int, int, list[int]]:
    """Post steadily for ``soak`` seconds, sampling the board's RSS: (posts, last id, samples)."""
    samples: list[int] = []

    async def soak_run() -> tuple[int, int]:
        over = asyncio.Event()

        async def post() -> tuple[int, int]:
            try:
                return await _post_steadily(board.url, fleet.human, [h for h, _ in fleet.bots], rate, soak)
            finally:
                over.set()

        async def sample() -> None:
            while not over.is_set():
                samples.append(board_ps.memory_info().rss)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(over.wait(), max(0.5, soak / 20))

        outcome, _ = await asyncio.gather(post(), sample())
        return outcome

    posted, last = asyncio.run(soak_run())
    samples.append(board_ps.memory_info().rss)
    return posted, last, samples


def run(waiters: int, browsers: int, seconds: float, soak: float, rate: float, procs: int) -> dict[str, Any]:
    with board_process(BOARD_MAX_WAITS=str(browsers + 8)) as board:
        fleet = asyncio.run(make_fleet(board, waiters, WORKSPACE))
        cookies = asyncio.run(_tab_cookies(board))
        board_ps = psutil.Process(board.proc.pid)
        rss_before = board_ps.memory_info().rss
        tokens = [t for _, t in fleet.bots]
        ctx = mp.get_context("spawn")
        stop, last, queue = ctx.Event(), ctx.Value("q", 0), ctx.Queue()
        groups = [tokens[i::procs] for i in range(procs) if tokens[i::procs]]
        holders = [ctx.Process(target=_holder, args=(board.url, g, {}, 0, stop, last, queue)) for g in groups]
        for h in holders:
            h.start()
        _until_held(board, waiters, "long-polls")
        progress(f"idle: {waiters} long-polls held; measuring {seconds:g} s")
        cpu_polls, rss_polls = _idle_window(board_ps, seconds)
        tabs = [len(range(i, browsers, procs)) for i in range(procs) if i < browsers]
        streams = [
            ctx.Process(target=_holder, args=(board.url, [], cookies, n, stop, last, queue)) for n in tabs
        ]
        for h in streams:
            h.start()
        _until_held(board, waiters + browsers, "long-polls and live streams")
        progress(f"idle: {waiters} long-polls and {browsers} live streams held; measuring {seconds:g} s")
        cpu_both, rss_both = _idle_window(board_ps, seconds)
        progress(f"soak: posting {rate:g}/s for {soak:g} s")
        cpu = _cpu_seconds(board_ps)
        posted, last.value, samples = _soak(board, fleet, board_ps, rate, soak)
        cpu_soak = 100 * (_cpu_seconds(board_ps) - cpu) / soak
        held_at_end = _held(board.url)
        stop.set()
        outcomes = [queue.get() for _ in (*holders, *streams)]
        for h in (*holders, *streams):
            h.join()
        failed = [o for o in outcomes if isinstance(o, str)]
        if failed:
            raise RuntimeError(f"a client process failed: {failed[0]}")
    mb = 1024 * 1024
    return {
        "waiters": waiters,
        "browsers": browsers,
        "idle_s": seconds,
        "cpu_pct_of_core": round(cpu_polls, 2),
        "rss_empty_mb": round(rss_before / mb, 1),
        "rss_idle_mb": round(rss_polls / mb, 1),
        "cpu_pct_with_browsers": round(cpu_both, 2),
        "rss_with_browsers_mb": round(rss_both / mb, 1),
        "soak_s": soak,
        "posted": posted,
        "posts_per_s": round(posted / soak, 1),
        "cpu_pct_soak": round(cpu_soak, 1),
        "answers": sum(a for a, _ in outcomes),
        "stream_messages": sum(m for _, m in outcomes),
        "held_at_end": held_at_end,
        "rss_soak_start_mb": round(samples[0] / mb, 1),
        "rss_soak_end_mb": round(samples[-1] / mb, 1),
        "rss_soak_max_mb": round(max(samples) / mb, 1),
        "rss_drift_pct": round(100 * (samples[-1] - samples[0]) / samples[0], 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench idle")
    parser.add_argument("--waiters", type=int, nargs="+", default=[1000])
    parser.add_argument("--browsers", type=int, default=1000, help="live streams held beside the long-polls")
    parser.add_argument("--seconds", type=float, default=60.0, help="idle window")
    parser.add_argument("--soak", type=float, default=600.0, help="seconds of steady posting")
    parser.add_argument("--rate", type=float, default=20.0, help="posts per second during the soak")
    parser.add_argument("--procs", type=int, default=2)
    args = parser.parse_args(argv)
    rows = [run(w, args.browsers, args.seconds, args.soak, args.rate, args.procs) for w in args.waiters]
    report("idle", rows)


if __name__ == "__main__":
    main()
