"""board.processes: a pid is known with its start time, and a process group is ended in bounded time."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from board.processes import KILL_WAIT, SAME_PROCESS_SLACK, end_group, group_alive, same_process, start_time


def _session(tmp_path: Path, script: str) -> subprocess.Popen[bytes]:
    """``sh -c script`` leading a session (and so a process group) of its own."""
    argv = ["sh", "-c", script]
    return subprocess.Popen(argv, cwd=tmp_path, stdin=subprocess.DEVNULL, start_new_session=True)


@pytest.fixture
def sleeper(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    proc = _session(tmp_path, "exec sleep 60")
    yield proc
    proc.kill()
    proc.wait()


def test_a_process_is_known_by_its_start_time_across_a_step_of_the_boot_clock(
    sleeper: subprocess.Popen[bytes],
) -> None:
    began = start_time(sleeper.pid)
    assert began is not None
    assert same_process(sleeper.pid, began)
    # Linux reads the boot time afresh in whole seconds: after a clock adjustment the
    # same process reads back one second off, and must still be recognised.
    assert same_process(sleeper.pid, began + 1.0) and same_process(sleeper.pid, began - 1.0)
    assert 1.0 < SAME_PROCESS_SLACK < 2.0
    assert not same_process(sleeper.pid, began - 100)  # the same pid, another process
    assert not same_process(sleeper.pid, None)


def test_a_process_gone_or_a_zombie_is_not_the_same_process(tmp_path: Path) -> None:
    proc = _session(tmp_path, "exec sleep 60")
    began = start_time(proc.pid)
    proc.kill()
    time.sleep(0.2)  # not reaped yet: a zombie
    try:
        assert not same_process(proc.pid, began)
    finally:
        proc.wait()
    assert not same_process(proc.pid, began)
    assert start_time(proc.pid) is None


async def test_a_group_that_stops_on_sigterm_ends_within_the_grace(sleeper: subprocess.Popen[bytes]) -> None:
    t0 = time.monotonic()
    assert await end_group(sleeper.pid, grace=10.0)
    assert time.monotonic() - t0 < 5.0
    assert not group_alive(sleeper.pid)
    assert sleeper.wait(timeout=5) == -15


async def test_a_group_that_ignores_sigterm_is_killed_after_the_grace_children_included(
    tmp_path: Path,
) -> None:
    # The shell and its background child both ignore SIGTERM (an ignored signal survives exec).
    proc = _session(tmp_path, "trap '' TERM; sleep 60 & echo $! > child; wait")
    try:
        deadline = time.monotonic() + 10
        while not (tmp_path / "child").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        child = int((tmp_path / "child").read_text())
        t0 = time.monotonic()
        assert not await end_group(proc.pid, grace=0.5)
        took = time.monotonic() - t0
        assert 0.5 <= took < 0.5 + KILL_WAIT
        assert not group_alive(proc.pid)
        assert not same_process(child, start_time(child))
        assert proc.wait(timeout=5) == -9
    finally:
        proc.kill()
        proc.wait()


async def test_a_group_already_gone_is_not_signalled(sleeper: subprocess.Popen[bytes]) -> None:
    sleeper.kill()
    sleeper.wait()
    t0 = time.monotonic()
    assert await end_group(sleeper.pid, grace=10.0)
    assert time.monotonic() - t0 < 1.0
