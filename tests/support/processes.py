"""Real ``board`` processes for end-to-end tests: start, wait, stop (always the whole group).

Each process runs this checkout's code (``python -m board.cli`` with PYTHONPATH set
to the checkout root) in a session of its own, so stopping it kills everything it
started.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from board.client import BoardClient
from tests.support.boardtest import eventually

ROOT = Path(__file__).resolve().parents[2]
SUITE_BIN = Path(sys.executable).parent  # .venv/bin when run by scripts/test.sh


def use_suite_python() -> None:
    """Put the suite's own interpreter first on PATH, for every child the suite starts.

    ``bin/bot`` and the fake harnesses start with ``#!/usr/bin/env python3``: without
    this, they would run under whatever python3 the machine has, with its packages.
    """
    os.environ["PATH"] = os.pathsep.join([str(SUITE_BIN), os.environ.get("PATH", "")])


def board_env(**extra: str) -> dict[str, str]:
    """The environment of a child: no BOARD_* from the caller, this checkout on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOARD_")}
    env["PYTHONPATH"] = str(ROOT)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "board.cli", *args]


def add_human(db: Path, handle: str, env: dict[str, str] | None = None) -> str:
    """Create a human with the operator's CLI and return its API token (the last line printed)."""
    env = env or board_env()
    subprocess.run(
        command("admin", "user", "add", handle, "--db", str(db)), env=env, check=True, capture_output=True
    )
    printed = subprocess.run(
        command("admin", "token", handle, "--db", str(db)),
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return printed.strip().splitlines()[-1]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Served:
    """A ``board serve`` process and where its output goes."""

    proc: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def serve(db: Path, *args: str, port: int | None = None, env: dict[str, str] | None = None) -> Served:
    port = port or free_port()
    log = db.parent / f"serve-{port}-{time.monotonic_ns()}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command("serve", "--db", str(db), "--port", str(port), *args),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env or board_env(),
            start_new_session=True,
        )
    return Served(proc, port, log)


def health(port: int, timeout: float = 2.0) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=timeout) as resp:
        return dict(json.loads(resp.read()))


def wait_healthy(served: Served, timeout: float = 20.0) -> dict[str, Any]:
    """Poll /healthz until it answers; fail with the process's output if it exits first."""
    deadline = time.monotonic() + timeout
    while True:
        if served.proc.poll() is not None:
            raise AssertionError(f"board exited with {served.proc.returncode}:\n{served.output()}")
        try:
            return health(served.port)
        except OSError:
            if time.monotonic() > deadline:
                raise AssertionError(f"board did not answer in {timeout} s:\n{served.output()}") from None
            time.sleep(0.05)


async def longpolls_open(url: str) -> int:
    """The board's own count of the long-polls it holds (the /metrics gauge)."""
    async with BoardClient(url) as anon:
        text = await anon.request("GET", "/metrics")
    gauge = next(line for line in text.splitlines() if line.startswith("board_longpolls_open "))
    return int(gauge.split()[1])


async def longpolls(url: str, count: int, timeout: float = 15.0) -> None:
    """Wait until the board at ``url`` holds exactly ``count`` long-polls."""

    async def reached() -> bool:
        return await longpolls_open(url) == count

    await eventually(reached, f"{count} long-poll(s) held by {url}", timeout, interval=0.02)


def wait_for_output(served: Served, text: str, timeout: float = 20.0) -> str:
    deadline = time.monotonic() + timeout
    while text not in (out := served.output()):
        if served.proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{text!r} never appeared:\n{out}")
        time.sleep(0.02)
    return out


def kill(proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> int:
    """Send ``sig`` to the process's whole group and reap it; returns its exit status."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
    try:
        return proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        return proc.wait(timeout=20)


#: A board for fuzzers: write limits lifted, long-polls cut to a second.
FUZZ_ENV = {"BOARD_WRITE_RATE": "100000", "BOARD_WRITE_BURST": "100000", "BOARD_MAX_WAIT": "1"}


@contextlib.contextmanager
def fuzzed_board(db: Path) -> Iterator[tuple[Served, str, dict[str, str]]]:
    """``board serve`` for a fuzzer, with a human's token and the environment it runs in.

    On leaving, the process is stopped and its log must hold no unhandled error.
    """
    env = board_env(**FUZZ_ENV)
    token = add_human(db, "alice", env)
    served = serve(db, env=env)
    try:
        wait_healthy(served)
        yield served, token, env
    finally:
        kill(served.proc)
    assert "unhandled error" not in served.output()


def ended(pid: int) -> bool:
    """Whether ``pid`` has stopped running: gone, or a zombie its parent (often init, for an
    orphan) has not reaped yet, which ``psutil.pid_exists`` still counts."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
