"""What the wakes cost, and what the board adds to save them: session rotation and the loop guard.

``python -m bench economy [--turns 50] [--rotate 10] [--hops 10] [--posts 400] [--pairs 4]``
starts ``board serve`` on a scratch database and measures, in one run:

- ``rotation``: two real ``bot run`` daemons with the fake claude (tests/fakes), each
  mentioned once per turn in a thread of its own, ``--turns`` turns, one after the other
  turn by turn. One runs a profile with ``rotate_after_turns = --rotate``, the other
  resumes one session for ever. Tokens per turn are the fakes' usage model as the
  wakes record it: a resumed turn reads the whole session so far back from the cache.
- ``loop``: two real daemons whose every answer mentions the other, started by one
  human mention, in a workspace with ``loop_hops = --hops``: the wakes spent before the
  guard stops them (without it they never stop).
- ``guard``: the board's time per bot post with the guard on (``loop_hops = 10``) and
  off (``0``), side by side: a workspace of each, ``--pairs`` pairs of bots in each
  answering each other in threads a human restarts every 8 posts (so the guard checks
  every post in full and holds none), all posting at once; p50/p99 and the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from board.client import BoardClient

from .common import BoardProcess, board_process, percentiles, progress, report
from .daemons import Daemon, start_daemon
from .fleet import make_fleet

QUICK = ["--turns", "20", "--rotate", "5", "--posts", "200"]
TINY = ["--turns", "3", "--rotate", "2", "--hops", "3", "--posts", "16", "--pairs", "1"]
REPLY = {"do": "reply", "text": "done, next please"}
ROUND = 8  # bot posts per thread before a human writes again: below any loop_hops measured here
GUARDED, OPEN = 10, 0  # loop_hops of the two sides of ``guard``; 0 turns the guard off


async def _wakes(human: BoardClient, bot: str) -> list[dict[str, Any]]:
    return list((await human.wakes(bot=bot, limit=500))["wakes"])


async def _stopped(daemons: list[Daemon]) -> None:
    await asyncio.gather(*(d.stop() for d in daemons))


def _tokens(mode: str, wakes: list[dict[str, Any]]) -> dict[str, Any]:
    """One row of ``rotation``: what the turns of one bot read, wrote and cost."""
    reads = [int(w["cache_read_tokens"] or 0) for w in wakes]
    inputs = [int(w["input_tokens"] or 0) for w in wakes]
    return {
        "mode": mode,
        "turns": len(wakes),
        "sessions": len({w["session_id"] for w in wakes}),
        "rotated_turns": sum(1 for w in wakes if w["rotated"]),
        "cache_read_per_turn": round(sum(reads) / max(1, len(reads))),
        "cache_read_peak": max(reads, default=0),
        "cache_read_last": reads[-1] if reads else 0,
        "input_per_turn": round(sum(inputs) / max(1, len(inputs))),
        "prompt_tokens": sum(int(w["cache_write_tokens"] or 0) for w in wakes),
        "cost_usd": round(sum(float(w["cost_usd"] or 0) for w in wakes), 4),
    }


async def rotation(
    board: BoardProcess, human_token: str, bots: list[tuple[str, str]], work: Path, turns: int, rotate: int
) -> tuple[list[dict[str, Any]], dict[str, list[int]]]:
    """Rows for the rotated and the never-rotated bot, and each one's cache read turn by turn."""
    (rotated, rotated_token), (kept, kept_token) = bots
    async with BoardClient(board.url, human_token) as human:
        await human.create_profile(
            "economy-rotated", "bench", "claude", rotate_after_turns=rotate, bots=[rotated]
        )
        daemons = [
            start_daemon(
                board.url, rotated, rotated_token, work / rotated, [REPLY], ["--profile", "economy-rotated"]
            ),
            start_daemon(board.url, kept, kept_token, work / kept, [REPLY], ["--harness", "claude"]),
        ]
        try:
            await asyncio.gather(*(d.started() for d in daemons))
            roots: dict[str, int] = {}
            for n in range(1, turns + 1):
                for handle in (rotated, kept):
                    text = f"@{handle} step {n}: carry on"
                    if handle in roots:
                        await human.post(text, reply_to=roots[handle])
                    else:
                        roots[handle] = int(
                            (await human.post(text, channel="lobby", workspace="bench"))["id"]
                        )
                for handle in (rotated, kept):
                    found: list[dict[str, Any]] = []
                    deadline = time.monotonic() + 60
                    while len(found) < n and time.monotonic() < deadline:
                        await asyncio.sleep(0.05)
                        found = await _wakes(human, handle)
                    if len(found) < n:
                        raise SystemExit(f"bench: {handle} recorded {len(found)} wakes of {n}")
                if n % 10 == 0:
                    progress(f"rotation: {n} of {turns} turns")
        finally:
            await _stopped(daemons)
        by_mode = {"rotated": await _wakes(human, rotated), "never": await _wakes(human, kept)}
    rows = [_tokens(mode, wakes) for mode, wakes in by_mode.items()]
    series = {mode: [int(w["cache_read_tokens"] or 0) for w in wakes] for mode, wakes in by_mode.items()}
    return rows, series


async def loop(
    board: BoardProcess, human_token: str, bots: list[tuple[str, str]], work: Path, hops: int
) -> dict[str, Any]:
    """Two daemons told to answer each other: the wakes and tokens spent until the guard stops them."""
    (first, first_token), (second, second_token) = bots
    async with BoardClient(board.url, human_token) as human:
        await human.patch_workspace("bench", loop_hops=hops)
        daemons = [
            start_daemon(
                board.url,
                me,
                token,
                work / me,
                [{"do": "reply", "text": f"@{other} your turn"}],
                ["--harness", "claude"],
            )
            for me, token, other in ((first, first_token, second), (second, second_token, first))
        ]
        try:
            await asyncio.gather(*(d.started() for d in daemons))
            started = time.monotonic()
            root = await human.post(f"@{first} start the relay", channel="lobby", workspace="bench")
            count, last_change = 0, time.monotonic()
            # Settled: 3 s with no new wake (a turn's reply is posted before its wake record).
            while time.monotonic() - last_change < 3:
                if time.monotonic() - started > 120:
                    raise SystemExit(f"bench: the relay never stopped ({count} wakes and counting)")
                await asyncio.sleep(0.1)
                wakes = await _wakes(human, first) + await _wakes(human, second)
                if len(wakes) != count:
                    count, last_change = len(wakes), time.monotonic()
        finally:
            await _stopped(daemons)
        thread = await human.thread(int(root["id"]), limit=200)
    messages = thread["messages"]
    return {
        "loop_hops": hops,
        "wakes": len(wakes),
        "bot_replies": sum(1 for m in messages if m["author"] in (first, second)),
        "held": sum(1 for m in messages if "loop-held" in m["tags"]),
        "paused": thread["paused"],
        "notices": sum(1 for m in messages if "loop-paused" in m["tags"]),
        "cache_read_tokens": sum(int(w["cache_read_tokens"] or 0) for w in wakes),
        "cost_usd": round(sum(float(w["cost_usd"] or 0) for w in wakes), 4),
        "seconds": round(last_change - started, 1),
    }


async def _pair(
    url: str,
    human: str,
    workspace: str,
    x: tuple[str, str],
    y: tuple[str, str],
    posts: int,
    samples: list[float],
) -> None:
    """Two bots answer each other, ROUND posts a thread, each thread begun by a human mentioning both."""
    async with BoardClient(url, human) as h, BoardClient(url, x[1]) as bx, BoardClient(url, y[1]) as by:
        sent, round_no = 0, 0
        while sent < posts:
            root = await h.post(f"@{x[0]} @{y[0]} round {round_no}", channel="lobby", workspace=workspace)
            round_no += 1
            for turn in range(min(ROUND, posts - sent)):
                client, other = (bx, y[0]) if turn % 2 == 0 else (by, x[0])
                began = time.monotonic()
                await client.post(f"@{other} over to you ({turn})", reply_to=int(root["id"]))
                samples.append(time.monotonic() - began)
                sent += 1


async def guard(board: BoardProcess, human_token: str, posts: int, pairs: int) -> dict[str, Any]:
    """Bot post latency in a guarded and an unguarded workspace, driven alike at the same time."""
    sides = {"guarded": GUARDED, "open": OPEN}
    bots: dict[str, list[tuple[str, str]]] = {}
    async with BoardClient(board.url, human_token) as human:
        for slug, hops in sides.items():
            await human.create_workspace(slug)
            await human.patch_workspace(slug, loop_hops=hops)
            invite = (await human.invite(slug, uses=2 * pairs))["invite"]
            bots[slug] = []
            for i in range(2 * pairs):
                async with BoardClient(board.url) as anonymous:
                    joined = await anonymous.register(f"{slug}{i}", invite)
                bots[slug].append((f"{slug}{i}", str(joined["token"])))
    warm: dict[str, list[float]] = {slug: [] for slug in sides}
    samples: dict[str, list[float]] = {slug: [] for slug in sides}
    for into, count in ((warm, ROUND), (samples, posts // pairs)):  # one round each to warm up, then measured
        await asyncio.gather(
            *(
                _pair(
                    board.url, human_token, slug, bots[slug][2 * i], bots[slug][2 * i + 1], count, into[slug]
                )
                for i in range(pairs)
                for slug in sides
            )
        )
    rows = {slug: percentiles(found) for slug, found in samples.items()}
    on, off = rows["guarded"], rows["open"]
    return {
        "posts_each": len(samples["guarded"]),
        "pairs": pairs,
        **{f"guarded_{k}": v for k, v in on.items()},
        **{f"open_{k}": v for k, v in off.items()},
        "added_p50_ms": round(on["p50_ms"] - off["p50_ms"], 2),
        "vs_open_p50": round(on["p50_ms"] / off["p50_ms"], 3),
        "vs_open_p99": round(on["p99_ms"] / off["p99_ms"], 3),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench economy", description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50, help="turns of the rotation thread, per bot")
    parser.add_argument("--rotate", type=int, default=10, help="the rotated profile's rotate_after_turns")
    parser.add_argument("--hops", type=int, default=10, help="loop_hops of the two-bot loop's workspace")
    parser.add_argument("--posts", type=int, default=400, help="bot posts measured on each side of the guard")
    parser.add_argument("--pairs", type=int, default=4, help="pairs of bots posting at once on each side")
    args = parser.parse_args(argv)
    if not 1 <= args.turns <= 500:
        parser.error("--turns: 1 to 500 (the wakes are read back as one page)")
    with board_process() as board, tempfile.TemporaryDirectory(prefix="bench-economy-") as tmp:
        fleet = asyncio.run(make_fleet(board, 4))
        progress(f"rotation: {args.turns} turns, one bot rotating every {args.rotate}, one never")
        rows, series = asyncio.run(
            rotation(board, fleet.human, fleet.bots[:2], Path(tmp), args.turns, args.rotate)
        )
        progress(f"loop: two bots answering each other, loop_hops {args.hops}")
        looped = asyncio.run(loop(board, fleet.human, fleet.bots[2:], Path(tmp), args.hops))
        progress(
            f"guard: {args.posts} bot posts with loop_hops {GUARDED} and {OPEN}, {args.pairs} pairs each"
        )
        guarded = asyncio.run(guard(board, fleet.human, args.posts, args.pairs))
    never, rotated = rows[1]["cache_read_per_turn"], rows[0]["cache_read_per_turn"]
    report(
        "economy",
        rows,
        method="real bot run daemons, fake claude (tests/fakes usage model)",
        rotate_after_turns=args.rotate,
        rotated_vs_never_cache_read=round(rotated / max(1, never), 3),
        cache_read_by_turn=series,
        loop=looped,
        guard=guarded,
    )


if __name__ == "__main__":
    main()
