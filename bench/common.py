"""What every scenario needs: a real board process on a fresh database, and figures."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from board.processes import end_group

RESULTS = Path(os.environ.get("BENCH_RESULTS", Path(__file__).parent / "results"))


def progress(message: str) -> None:
    """One line per step on stderr, so a long run shows where it is."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def load_average() -> list[float]:
    """The machine's 1, 5 and 15 minute load: it is shared, so every figure carries it."""
    return [round(x, 2) for x in os.getloadavg()]


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


def serve(db: str, port: int, settings: dict[str, str]) -> subprocess.Popen[bytes]:
    """``board serve`` on ``db`` in a process group of its own."""
    return subprocess.Popen(
        [sys.executable, "-m", "board.cli", "serve", "--db", db, "--port", str(port)],
        env={**os.environ, **settings},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def stop(proc: subprocess.Popen[bytes]) -> None:
    """End the process's group as the board's programs do (SIGTERM, 10 s, SIGKILL), then reap it.

    In a thread of its own: some scenarios stop their board from inside their event loop.
    """
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, end_group(proc.pid, grace=10)).result()
    proc.wait()


@dataclass
class BoardProcess:
    url: str
    db: str
    proc: subprocess.Popen[bytes]
    port: int = 0
    settings: dict[str, str] = field(default_factory=dict)

    def admin(self, *args: str) -> str:
        """Run a `board admin ...` command on this board's database; its last line."""
        out = subprocess.run(
            [sys.executable, "-m", "board.cli", "admin", *args, "--db", self.db],
            env={**os.environ, **self.settings},  # BOARD_DATABASE_URL, on PostgreSQL
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        return out.strip().splitlines()[-1]

    @contextlib.contextmanager
    def stopped(self) -> Iterator[None]:
        """Stop the board, and serve the same file on the same port again afterwards.

        Bulk loads (``bench.bulk``) write the file while no board holds it, so the
        board starts on the loaded data as it would after months of use.
        """
        stop(self.proc)
        try:
            yield
        finally:
            self.proc = serve(self.db, self.port, self.settings)
            wait_healthy(self.url, timeout=120)


@contextlib.contextmanager
def board_process(**env: str) -> Iterator[BoardProcess]:
    """A `board serve` subprocess on a fresh SQLite database in a temporary folder."""
    with board_processes(1, **env) as [board]:
        yield board


@contextlib.contextmanager
def board_processes(count: int, database_url: str = "", **env: str) -> Iterator[list[BoardProcess]]:
    """``count`` `board serve` subprocesses on one fresh database, each on a port of its own.

    Without ``database_url`` the database is a SQLite file in a temporary folder (one
    process only: SQLite's board holds its file's lock); with it, that PostgreSQL database.
    """
    if count > 1 and not database_url:
        raise ValueError("only a PostgreSQL database is served by more than one board process")
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        db = str(Path(tmp) / "board.db")
        settings = {
            "BOARD_WRITE_RATE": "1000000",
            "BOARD_WRITE_BURST": "1000000",
            "BOARD_LOG_LEVEL": "WARNING",
            **({"BOARD_DATABASE_URL": database_url} if database_url else {}),
            **env,
        }
        boards: list[BoardProcess] = []
        try:
            for _ in range(count):  # one after the other: the first one migrates the database
                port = free_port()
                board = BoardProcess(
                    f"http://127.0.0.1:{port}", db, serve(db, port, settings), port, settings
                )
                boards.append(board)
                wait_healthy(board.url)
            yield boards
        finally:
            for board in boards:
                stop(board.proc)


@contextlib.contextmanager
def postgres_cluster() -> Iterator[Any]:
    """A throwaway PostgreSQL cluster: the test suite's own (tests/support/pgcluster.py), imported from there.

    Its ``fresh_database()`` gives each measured board an empty database.
    """
    root = str(Path(__file__).resolve().parent.parent)
    if root not in sys.path:
        sys.path.append(root)
    from tests.support.pgcluster import running_cluster

    with running_cluster() as cluster:
        yield cluster


def server_pid(cluster: Any) -> int:
    """The PostgreSQL server's main process, from its data folder's ``postmaster.pid``."""
    return int((cluster.data / "postmaster.pid").read_text().split()[0])


def cpu_seconds(pids: list[int]) -> dict[int, float]:
    """CPU seconds so far of these processes and of all their children (a server's backends)."""
    spent: dict[int, float] = {}
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            root = psutil.Process(pid)
            for proc in [root, *root.children(recursive=True)]:
                with contextlib.suppress(psutil.NoSuchProcess):
                    times = proc.cpu_times()
                    spent[proc.pid] = times.user + times.system
    return spent


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


def report(scenario: str, rows: list[dict[str, Any]], **summary: Any) -> None:
    """One JSON line on stdout, a table on stderr, and a results file.

    ``summary`` holds figures of the run as a whole (a growth ratio, a verdict).
    """
    record = {
        "scenario": scenario,
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cpus": os.cpu_count(),
        "load": load_average(),
        "rows": rows,
        **summary,
    }
    print(json.dumps(record))
    keys = list(rows[0]) if rows else []
    print("  ".join(f"{k:>12}" for k in keys), file=sys.stderr)
    for row in rows:
        print("  ".join(f"{row.get(k, '')!s:>12}" for k in keys), file=sys.stderr)
    for key, value in summary.items():
        print(f"{key}: {value}", file=sys.stderr)
    print(f"load average: {record['load']}", file=sys.stderr)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{record['at'].replace(':', '')}-{scenario}.json").write_text(json.dumps(record) + "\n")
