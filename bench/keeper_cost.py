"""What the keeper costs: one keeper supervising 5 bot daemons, at its default intervals.

``python -m bench fleet [--bots 5] [--minutes 10] [--quick]`` starts ``board
serve`` on a scratch database, enrolls a machine, starts ``keeper run`` (report
every 10 s, a look at the processes every second: the defaults) and assigns N
bots running the fake claude (tests/fakes). Once every bot runs it measures,
over the window:

- the keeper's own CPU seconds (user + system) and its RSS (sampled every 5 s,
  the largest kept), as a share of one core;
- the board's CPU with the keeper reporting, minus its CPU over a second,
  shorter window with the keeper stopped and the bots still running (their
  idle long-polls): the board's added CPU for the reports.

``--quick`` runs one minute. The targets (40-fleet.md's task): the keeper at most
1 % of one core on average and at most 60 MB RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from board.client import BoardClient
from board.launcher.daemon import PID_FILE, running_pid

from .common import BoardProcess, board_process, report

ROOT = Path(__file__).resolve().parent.parent
FAKES_BIN = ROOT / "tests" / "fakes" / "bin"
RSS_EVERY = 5.0


def _cpu(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return float(times.user + times.system)


def _keeper_env(tmp: Path) -> dict[str, str]:
    (tmp / "home").mkdir(exist_ok=True)
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("BOT_", "BOARD_", "KEEPER_"))},
        "PATH": f"{FAKES_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(ROOT),
        "HOME": str(tmp / "home"),
        "FAKE_HARNESS_DIR": str(tmp / "fake"),
        "KEEPER_STATE_DIR": str(tmp / "keeper"),
        "BOT_STATE_DIR": str(tmp / "bots"),
        # The fake claude, like the real one, refuses to run unattended as root outside a sandbox.
        **({"IS_SANDBOX": "1"} if os.geteuid() == 0 else {}),
    }


async def _until_running(human: BoardClient, count: int, timeout: float = 120.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        machines = (await human.fleet())["machines"]
        pids = [b["pid"] for m in machines for b in m["bots"] if b["state"] == "running" and b.get("pid")]
        if len(pids) == count:
            return pids
        await asyncio.sleep(0.5)
    raise RuntimeError(f"the keeper did not get {count} bots running in {timeout:g} s")


async def _window(seconds: float, procs: dict[str, psutil.Process]) -> dict[str, Any]:
    """CPU seconds of each process over the window, and the keeper's largest RSS."""
    start = {name: _cpu(p) for name, p in procs.items()}
    began = time.monotonic()
    rss = 0
    while (elapsed := time.monotonic() - began) < seconds:
        if "keeper" in procs:
            rss = max(rss, procs["keeper"].memory_info().rss)
        await asyncio.sleep(min(RSS_EVERY, seconds - elapsed))
    elapsed = time.monotonic() - began
    return {"elapsed": elapsed, "rss": rss, **{name: _cpu(p) - start[name] for name, p in procs.items()}}


async def _drive(
    board: BoardProcess, tmp: Path, bots: int, seconds: float, idle_seconds: float
) -> dict[str, Any]:
    board.admin("user", "add", "bencher")
    human = BoardClient(board.url, board.admin("token", "bencher"))
    env = _keeper_env(tmp)
    keeper: subprocess.Popen[bytes] | None = None
    try:
        await human.create_workspace("bench")
        repo = tmp / "repo"
        repo.mkdir()
        await human.create_profile("bench-dev", "bench", "claude", repo=str(repo))
        code = (await human.enroll_code("bench-box"))["code"]
        enroll = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "board.keeper",
            "enroll",
            "--board",
            board.url,
            "--code",
            code,
            env=env,
            stdout=subprocess.DEVNULL,
        )
        if await enroll.wait() != 0:
            raise RuntimeError("keeper enroll failed")
        keeper = subprocess.Popen(
            [sys.executable, "-m", "board.keeper", "run"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for i in range(bots):
            await human.assign_bot("bench-box", "bench-dev", f"kb{i}")
        pids = await _until_running(human, bots)
        await asyncio.sleep(15)  # the bots' start-up is theirs, not the keeper's steady cost
        server = psutil.Process(board.proc.pid)
        with_keeper = await _window(seconds, {"keeper": psutil.Process(keeper.pid), "board": server})
        keeper.send_signal(signal.SIGTERM)
        keeper.wait(timeout=30)
        keeper = None
        without = await _window(idle_seconds, {"board": server})
        alive = sum(psutil.pid_exists(p) for p in pids)
    finally:
        if keeper is not None:
            keeper.kill()
            keeper.wait()
        for pid in _bot_pids(tmp / "bots"):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        await human.close()
    core = with_keeper["elapsed"]
    board_added = with_keeper["board"] / core - without["board"] / without["elapsed"]
    return {
        "bots": bots,
        "seconds": round(core, 1),
        "keeper_cpu_s": round(with_keeper["keeper"], 3),
        "keeper_core_pct": round(100 * with_keeper["keeper"] / core, 3),
        "keeper_rss_mb": round(with_keeper["rss"] / 2**20, 1),
        "board_cpu_s": round(with_keeper["board"], 3),
        "board_idle_cpu_s": round(without["board"], 3),
        "board_added_core_pct": round(100 * board_added, 3),
        "bots_alive_after": alive,
    }


def _bot_pids(bots_dir: Path) -> list[int]:
    found = []
    for bot_dir in bots_dir.iterdir() if bots_dir.is_dir() else []:
        pid = running_pid(bot_dir / PID_FILE)
        if pid and pid > 0:
            found.append(pid)
    return found


QUICK = ["--quick"]
TINY = ["--bots", "1", "--minutes", "0.1"]


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench fleet")
    parser.add_argument("--bots", type=int, default=5)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--quick", action="store_true", help="One minute instead of ten.")
    args = parser.parse_args(argv)
    seconds = 60.0 if args.quick else args.minutes * 60
    idle = min(120.0, seconds / 2)
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp, board_process() as board:
        row = asyncio.run(_drive(board, Path(tmp), args.bots, seconds, idle))
    report("fleet", [row])


if __name__ == "__main__":
    main(sys.argv[1:])
