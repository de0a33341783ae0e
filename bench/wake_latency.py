"""Mention → harness process started, for a real board and a real ``bot run``.

``python -m bench.wake_latency [-n 200]`` starts ``board serve`` on a scratch
database, a bot daemon running the fake claude (tests/fakes), and posts N
mentions one after another, each after the previous turn is recorded. For
each it measures, on one clock (this machine's wall clock):

- ``spawn``: from just before the POST is sent to the moment the daemon saw
  the harness process exist (its ``turn_started`` log line, written from
  ``on_start``);
- ``start``: from the same moment to the time the fake harness recorded when
  its own code began to run (this includes the Python interpreter's start-up,
  as a real CLI's start-up would be included).

It prints one JSON line: ``{"n", "spawn_p50_ms", "spawn_p99_ms", "start_p50_ms",
"start_p99_ms", ...}``. The target (80-performance.md) is p99 ≤ 250 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from board.client import BoardClient

ROOT = Path(__file__).resolve().parent.parent
FAKES_BIN = ROOT / "tests" / "fakes" / "bin"
HANDLE = "bench-bot"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def board_cmd(*args: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "board", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def fake_calls(fake_dir: Path) -> list[dict[str, Any]]:
    path = fake_dir / "calls.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def started_events(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [r for r in rows if r["event"] == "turn_started"]


async def until(probe: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        await asyncio.sleep(0.002)
    raise SystemExit(f"bench: timed out waiting for {what}")


async def measure(n: int, work: Path) -> dict[str, Any]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    db = work / "board.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BOT_", "BOARD_"))}
    env["PYTHONPATH"] = str(ROOT)
    board_cmd("admin", "user", "add", "alice", "--db", str(db), env=env)
    human_token = board_cmd("admin", "token", "alice", "--db", str(db), env=env).strip().splitlines()[-1]
    server = subprocess.Popen(
        [sys.executable, "-m", "board", "serve", "--db", str(db), "--port", str(port)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=(work / "board.err").open("wb"),
    )
    bot: subprocess.Popen[bytes] | None = None
    human = BoardClient(url, human_token)
    try:
        await until(lambda: _healthy(human), 20, "the board to start")
        await human.create_workspace("bench", "Bench")
        invite = await human.invite("bench")
        async with BoardClient(url) as anon:
            registered = await anon.register(HANDLE, invite["invite"])
        fake_dir = work / "fake"
        fake_dir.mkdir()
        (fake_dir / "script.json").write_text(json.dumps([{"do": "ok", "text": "pong"}]))
        repo = work / "repo"
        repo.mkdir()
        state = work / "state"
        bot_env = {
            **env,
            "PATH": f"{FAKES_BIN}{os.pathsep}{env.get('PATH', '')}",
            "HOME": str(work),
            "FAKE_HARNESS_DIR": str(fake_dir),
            "BOT_STATE_DIR": str(state),
            "BOARD_TOKEN": registered["token"],
            "BOT_JITTER": "0",
        }
        bot = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "board",
                "bot",
                "run",
                "--handle",
                HANDLE,
                "--harness",
                "claude",
                "--board",
                url,
                "--repo",
                str(repo),
            ],
            env=bot_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=(work / "bot.err").open("wb"),
        )
        log = state / HANDLE / "bot.log"
        await until(lambda: log.exists() and '"started"' in log.read_text(), 20, "the bot to start")
        await asyncio.sleep(0.5)  # its long-poll is open

        spawn: list[float] = []
        start: list[float] = []
        for i in range(n):
            sent = time.time()
            message = await human.post(f"@{HANDLE} ping {i}", channel="lobby", workspace="bench")
            mid = int(message["id"])
            call = await until(lambda i=i: _call(fake_dir, i), 30, f"harness call {i}")
            assert call["BOARD_WAKE_IDS"] == str(mid), call["BOARD_WAKE_IDS"]
            event = await until(lambda i=i: _event(log, i), 30, f"turn {i} in the log")
            spawn.append((_at(event["at"]) - sent) * 1000)
            start.append((float(call["time"]) - sent) * 1000)
            await until(lambda mid=mid: _handled(state / HANDLE / "state.json", mid), 30, f"turn {i} to end")
            await asyncio.sleep(0.05)
        return {
            "bench": "wake_latency",
            "n": n,
            "harness": "claude (fake)",
            "spawn_p50_ms": round(percentile(spawn, 0.5), 1),
            "spawn_p99_ms": round(percentile(spawn, 0.99), 1),
            "start_p50_ms": round(percentile(start, 0.5), 1),
            "start_p99_ms": round(percentile(start, 0.99), 1),
            "start_max_ms": round(max(start), 1),
            "target_p99_ms": 250,
        }
    finally:
        await human.close()
        for proc in (bot, server):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


async def _healthy(client: BoardClient) -> bool:
    try:
        await client.health()
    except Exception:
        return False
    return True


def _call(fake_dir: Path, i: int) -> dict[str, Any] | None:
    calls = fake_calls(fake_dir)
    return calls[i] if len(calls) > i else None


def _event(log: Path, i: int) -> dict[str, Any] | None:
    events = started_events(log)
    return events[i] if len(events) > i else None


def _at(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _handled(state: Path, mid: int) -> bool:
    """The daemon moved its cursor past mid: the wake is recorded and receipts sent."""
    try:
        return int(json.loads(state.read_text())["cursor"]) >= mid
    except (FileNotFoundError, ValueError, KeyError):
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=200, help="mentions to post (at least 100 for a p99)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-wake-") as tmp:
        result = asyncio.run(measure(args.n, Path(tmp)))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
