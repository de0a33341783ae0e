"""Real ``bot run`` daemons driven by the strict fake harnesses of tests/fakes, for benches.

Only the model is faked: each daemon is the real program, on the real board over
loopback, starting a fake CLI process per turn that answers as its script says
and reports usage by the fakes' model (tests/fakes/README.md, "Usage").
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from board.processes import end_group

ROOT = Path(__file__).resolve().parent.parent
FAKES_BIN = ROOT / "tests" / "fakes" / "bin"


def jsonl(path: Path) -> list[dict[str, Any]]:
    """The complete lines of a JSON-lines file its writer may be appending to (the last may be torn)."""
    if not path.exists():
        return []
    written = path.read_text().rpartition("\n")[0]
    return [json.loads(line) for line in written.split("\n") if line.strip()]


async def until(probe: Callable[[], Any], what: str, timeout: float = 30.0, poll: float = 0.002) -> Any:
    """``probe()`` once it is truthy; exit the bench if it stays falsy past ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        await asyncio.sleep(poll)
    raise SystemExit(f"bench: timed out waiting for {what}")


@dataclass
class Daemon:
    """One ``bot run`` process: its work folder holds the fake's script and calls, its state and log."""

    handle: str
    work: Path
    proc: subprocess.Popen[bytes]

    @property
    def fake(self) -> Path:
        return self.work / "fake"

    @property
    def log(self) -> Path:
        return self.work / "state" / self.handle / "bot.log"

    @property
    def state(self) -> Path:
        return self.work / "state" / self.handle / "state.json"

    def calls(self) -> list[dict[str, Any]]:
        """Every harness call the fake recorded, in order."""
        return jsonl(self.fake / "calls.jsonl")

    async def started(self) -> Daemon:
        """Once its log says it reads the board (and a moment for its long-poll to open)."""
        try:
            await until(
                lambda: any(e["event"] == "started" for e in jsonl(self.log)), f"{self.handle} to start"
            )
        except SystemExit:
            sys.stderr.write((self.work / "bot.err").read_text()[-2000:])  # why it did not start
            raise
        await asyncio.sleep(0.5)
        return self

    async def stop(self) -> None:
        """Its process group ended: SIGTERM, a bounded wait for the turn in hand, then SIGKILL."""
        await end_group(self.proc.pid, grace=20)
        self.proc.wait()


def start_daemon(
    url: str,
    handle: str,
    token: str,
    work: Path,
    script: list[dict[str, Any]],
    args: list[str],
    repo: Path | None = None,
) -> Daemon:
    """``bot run --handle HANDLE --board URL --repo REPO ARGS`` with the fakes first on PATH
    (REPO: an empty WORK/repo unless given)."""
    (work / "fake").mkdir(parents=True)
    (work / "fake" / "script.json").write_text(json.dumps(script))
    if repo is None:
        repo = work / "repo"
        repo.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("BOT_", "BOARD_"))},
        "PYTHONPATH": str(ROOT),
        "PATH": f"{FAKES_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(work),
        "FAKE_HARNESS_DIR": str(work / "fake"),
        "BOT_STATE_DIR": str(work / "state"),
        "BOARD_TOKEN": token,
        "BOT_JITTER": "0",
        # The scratch folder is disposable: claude (the fake, as the real one) runs unattended as root.
        "IS_SANDBOX": "1",
    }
    argv = ["bot", "run", "--handle", handle, "--board", url, "--repo", str(repo), *args]
    with (work / "bot.err").open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "board", *argv],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )
    return Daemon(handle, work, proc)
