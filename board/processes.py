"""Processes the board's programs start and stop: who a pid is, and ending a process group.

The keeper, the bot daemon and ``board ctl`` each start processes in a session
(and so a process group) of their own, record them, and later find and stop
them. A pid alone does not name a process (the kernel hands it out again once
it is free), so a process is known by its pid *and* its start time; a group is
ended with SIGTERM, a bounded wait, then SIGKILL.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time

import psutil

# Linux computes a start time as boot time + ticks since boot, and reads the boot
# time (whole seconds) afresh from /proc/stat at each call, as the wall clock now
# minus the uptime: after the clock is adjusted, the same process reads back one
# second apart. 1.5 s takes that step and float rounding; for another process to
# hold the same pid within it, the kernel would have to hand out every pid there is
# in that second and a half.
SAME_PROCESS_SLACK = 1.5

KILL_WAIT = 5.0  # seconds to wait for a group to go after SIGKILL; the kernel needs far less


def start_time(pid: int) -> float | None:
    """When ``pid`` started (epoch seconds), or None when there is no such process."""
    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.Error, ValueError):
        return None


def same_process(pid: int, started: float | None) -> bool:
    """Whether ``pid`` is still the process that started at ``started`` (and not a zombie)."""
    if started is None:
        return False
    try:
        proc = psutil.Process(pid)
        if abs(proc.create_time() - float(started)) > SAME_PROCESS_SLACK:
            return False
        return proc.status() != psutil.STATUS_ZOMBIE
    except (psutil.Error, ValueError):
        return False


def signal_group(pgid: int, sig: int) -> None:
    """Signal a process group that may already be gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def group_alive(pgid: int) -> bool:
    """Whether any process of the group is still running (zombies do not count).

    Zombies matter where PID 1 does not reap orphans (some containers): they
    answer signals but run nothing, and waiting for them would never end.
    """
    try:
        entries = os.listdir("/proc")
    except OSError:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) >= 3 and int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


async def _gone(pgid: int, wait: float, poll: float) -> bool:
    deadline = time.monotonic() + wait
    while group_alive(pgid):
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(poll)
    return True


async def end_group(pgid: int, grace: float, poll: float = 0.05) -> bool:
    """SIGTERM the group, wait up to ``grace`` for it to go, then SIGKILL what is left.

    True when it went on SIGTERM (or was already gone), False when it had to be
    killed. Waits at most ``grace`` + ``KILL_WAIT`` seconds in all.
    """
    if not group_alive(pgid):
        return True
    signal_group(pgid, signal.SIGTERM)
    if await _gone(pgid, grace, poll):
        return True
    signal_group(pgid, signal.SIGKILL)
    await _gone(pgid, KILL_WAIT, poll)
    return False
