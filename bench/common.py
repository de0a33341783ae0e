"""What every scenario needs: a real board process on a fresh database, and figures."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(url: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"board at {url} did not start")


@dataclass
class BoardProcess:
    url: str
    db: str
    proc: subprocess.Popen[bytes]

    def admin(self, *args: str) -> str:
        """Run a `board admin ...` command on this board's database; its last line."""
        out = subprocess.run(
            [sys.executable, "-m", "board.cli", "admin", *args, "--db", self.db],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        return out.strip().splitlines()[-1]


@contextlib.contextmanager
def board_process(**env: str) -> Iterator[BoardProcess]:
    """A `board serve` subprocess on a fresh database in a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        db = str(Path(tmp) / "board.db")
        port = free_port()
        settings = {
            "BOARD_WRITE_RATE": "1000000",
            "BOARD_WRITE_BURST": "1000000",
            "BOARD_LOG_LEVEL": "WARNING",
            **env,
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "board.cli", "serve", "--db", db, "--port", str(port)],
            env={**os.environ, **settings},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        board = BoardProcess(f"http://127.0.0.1:{port}", db, proc)
        try:
            wait_healthy(board.url)
            yield board
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50/p99/max in milliseconds."""
    if not samples:
        return {"p50_ms": float("nan"), "p99_ms": float("nan"), "max_ms": float("nan")}
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p99_ms": round(p99 * 1000, 2),
        "max_ms": round(ordered[-1] * 1000, 2),
    }


def report(scenario: str, rows: list[dict[str, Any]]) -> None:
    """One JSON line on stdout, a table on stderr, and a results file."""
    record = {
        "scenario": scenario,
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cpus": os.cpu_count(),
        "rows": rows,
    }
    print(json.dumps(record))
    keys = list(rows[0]) if rows else []
    print("  ".join(f"{k:>12}" for k in keys), file=sys.stderr)
    for row in rows:
        print("  ".join(f"{row[k]!s:>12}" for k in keys), file=sys.stderr)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{record['at'].replace(':', '')}-{scenario}.json").write_text(json.dumps(record) + "\n")
