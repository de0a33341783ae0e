"""Mention → harness process started, through a real board and a real ``bot run``.

``python -m bench wake_latency [-n 200]`` (or ``python -m bench.wake_latency``)
starts ``board serve`` on a scratch database and a bot daemon running the fake
claude (tests/fakes), then posts N mentions one after another, each once the
previous turn is over. For each it measures, on this machine's wall clock:

- ``spawn``: from just before the POST is sent to the daemon seeing the
  harness process exist (its ``turn_started`` log line, written from
  ``on_start``);
- ``start``: from the same moment to the time the fake harness recorded when
  its own code began to run (the Python interpreter's start-up included, as a
  real CLI's start-up would be).

The target (80-performance.md) is p99 ≤ 250 ms for mention → harness started.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from board.client import BoardClient

from .common import board_process, percentiles, report
from .daemons import jsonl, start_daemon, until
from .fleet import make_fleet

QUICK = ["-n", "50"]
TINY = ["-n", "3"]


def _cursor(state: Path) -> int:
    try:
        return int(json.loads(state.read_text())["cursor"])
    except (FileNotFoundError, ValueError, KeyError):
        return 0


def _at(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


async def measure(url: str, human: str, handle: str, token: str, work: Path, n: int) -> dict[str, Any]:
    bot = start_daemon(url, handle, token, work, [{"do": "ok", "text": "pong"}], ["--harness", "claude"])
    fake, log, state = bot.fake, bot.log, bot.state
    spawn: list[float] = []
    start: list[float] = []
    try:
        await bot.started()
        async with BoardClient(url, human) as client:
            for i in range(n):
                sent = time.time()
                posted = await client.post(f"@{handle} ping {i}", channel="lobby", workspace="bench")
                mid = int(posted["id"])
                call = await until(lambda i=i: jsonl(fake / "calls.jsonl")[i:], f"harness call {i}")
                if call[0]["BOARD_WAKE_IDS"] != str(mid):
                    raise SystemExit(f"bench: turn {i} covered {call[0]['BOARD_WAKE_IDS']}, not {mid}")
                began = await until(
                    lambda i=i: [e for e in jsonl(log) if e["event"] == "turn_started"][i:], f"turn {i}"
                )
                spawn.append(_at(began[0]["at"]) - sent)
                start.append(float(call[0]["time"]) - sent)
                await until(lambda mid=mid: _cursor(state) >= mid, f"turn {i} to end")
                await asyncio.sleep(0.05)
    finally:
        await bot.stop()
    return {
        "mentions": n,
        "harness": "claude (fake)",
        **{f"spawn_{k}": v for k, v in percentiles(spawn).items()},
        **{f"start_{k}": v for k, v in percentiles(start).items()},
        "target_p99_ms": 250,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench wake_latency", description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=200, help="mentions to post, one after another (≥ 100)")
    args = parser.parse_args(argv)
    with board_process() as board, tempfile.TemporaryDirectory(prefix="bench-bot-") as tmp:
        fleet = asyncio.run(make_fleet(board, 1))
        handle, token = fleet.bots[0]
        row = asyncio.run(measure(board.url, fleet.human, handle, token, Path(tmp), args.n))
    report("wake_latency", [row])


if __name__ == "__main__":
    main()
