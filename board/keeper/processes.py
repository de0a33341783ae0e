"""The bot daemons' processes: start one in its own session, find it again, stop its group.

A bot daemon runs in a session (and so a process group) of its own, so the
keeper can stop it with everything it started, and so it outlives the keeper:
restarting the keeper leaves the bots running. A harness the daemon runs sits
in yet another group; stopping a bot signals that group too.

A process is known by its pid *and* its start time (``board.processes``): a pid
the kernel has handed to another process since is not mistaken for the bot.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from .. import __file__ as _package_file
from .. import __version__
from ..launcher.config import state_root
from ..launcher.daemon import PID_FILE, running_pid
from ..processes import same_process, signal_group, start_time
from .config import STATE_FILE, keeper_dir


@dataclass
class Daemon:
    """One bot daemon's process, started by this keeper (``popen``) or adopted (no exit code)."""

    pid: int
    started: float  # the process's start time (epoch seconds)
    popen: subprocess.Popen[bytes] | None = None
    proc: psutil.Process | None = field(default=None, repr=False)
    children: dict[int, psutil.Process] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        with contextlib.suppress(psutil.Error):
            self.proc = psutil.Process(self.pid)

    def exited(self) -> tuple[bool, int | None]:
        """(True, exit code or None when not known) once the process is gone."""
        if self.popen is not None:
            code = self.popen.poll()
            return (code is not None, code)
        return (not same_process(self.pid, self.started), None)

    def harness(self) -> psutil.Process | None:
        """The daemon's child running a harness turn, if one runs now."""
        if self.proc is None:
            return None
        try:
            kids = self.proc.children()
        except psutil.Error:
            return None
        alive = {k.pid for k in kids}
        for pid in list(self.children):
            if pid not in alive:
                del self.children[pid]
        for kid in kids:
            self.children.setdefault(kid.pid, kid)
        return self.children[kids[0].pid] if kids else None


def installed_code() -> str:
    """Which code a daemon started now runs: the version, and when the package was written
    (``install.sh upgrade`` reinstalls a changed checkout under the same version)."""
    return f"{__version__}@{os.stat(_package_file).st_mtime_ns}"


def spawn(
    handle: str,
    profile: str,
    board: str,
    *,
    environ: Mapping[str, str],
    cwd: Path,
    output: Path,
) -> Daemon:
    """``bot run --handle H --profile P --board URL`` in a session of its own; no token on the line."""
    cwd.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "board", "bot", "run", "--handle", handle, "--profile", profile]
    argv += ["--board", board]
    with output.open("ab") as out:
        popen = subprocess.Popen(
            argv,
            cwd=cwd,
            env=dict(environ),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )
    return Daemon(popen.pid, start_time(popen.pid) or time.time(), popen=popen)


def find(bot_dir: Path, pid: int | None, started: float | None) -> Daemon | None:
    """The daemon recorded as (pid, start time), or whichever one holds the bot's pid lock now."""
    if pid and started and same_process(pid, started):
        return Daemon(pid, started)
    holder = running_pid(bot_dir / PID_FILE)
    if holder and holder > 0:
        began = start_time(holder)
        if began is not None:
            return Daemon(holder, began)
    return None


def profile_of(daemon: Daemon) -> str | None:
    """The profile a running daemon was started with ("" for none), from its command line or
    its ``BOT_PROFILE``; ``None`` when its process cannot be read."""
    if daemon.proc is None:
        return None
    try:
        argv = daemon.proc.cmdline()
        environ = daemon.proc.environ()
    except psutil.Error:
        return None
    for i, arg in enumerate(argv):
        if arg == "--profile" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--profile="):
            return arg.removeprefix("--profile=")
    return environ.get("BOT_PROFILE", "")


def _members(daemon: Daemon) -> list[psutil.Process]:
    """The daemon and everything it runs now (harnesses and their children)."""
    if daemon.proc is None:
        return []
    members = [daemon.proc]
    with contextlib.suppress(psutil.Error):
        members += daemon.proc.children(recursive=True)
    return members


def _groups(members: list[psutil.Process]) -> list[int]:
    """Their process groups, the daemon's own first; never the keeper's."""
    groups: list[int] = []
    for proc in members:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            group = os.getpgid(proc.pid)
            if group > 1 and group != os.getpgrp() and group not in groups:
                groups.append(group)
    return groups


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


async def stop(daemon: Daemon, grace: float, poll: float = 0.05) -> int | None:
    """SIGTERM the daemon's group; after ``grace``, SIGKILL every group it had. Its exit code."""
    members = _members(daemon)
    groups = _groups(members)
    if not groups:
        return daemon.exited()[1]
    signal_group(groups[0], signal.SIGTERM)  # the daemon lets a running turn finish, within its own grace
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and not daemon.exited()[0]:
        await asyncio.sleep(poll)
    members += [m for m in _members(daemon) if m not in members]
    for group in _groups(members) or groups:  # whatever is left, harness groups included
        signal_group(group, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (not daemon.exited()[0] or any(map(_running, members))):
        await asyncio.sleep(poll)
    return daemon.exited()[1]


def of_this_machine(environ: Mapping[str, str]) -> list[Daemon]:
    """Every bot daemon of this machine: each the keeper recorded starting (one takes its
    bot's lock a moment after it starts), and each holding a bot's lock (one run by hand)."""
    root = state_root(environ)
    try:
        recorded = json.loads((keeper_dir(environ) / STATE_FILE).read_text()).get("bots", {})
    except (FileNotFoundError, ValueError):
        recorded = {}
    found = [find(root / handle, bot.get("pid"), bot.get("started")) for handle, bot in recorded.items()]
    found += [find(lock.parent, None, None) for lock in sorted(root.glob(f"*/{PID_FILE}"))]
    unique = {d.pid: d for d in found if d is not None}
    return list(unique.values())


async def stop_all(environ: Mapping[str, str], grace: float = 10) -> str:
    """Stop every bot daemon of this machine with its harnesses (uninstall): what was stopped."""
    daemons = of_this_machine(environ)
    harnesses = sum(len(_members(d)) - 1 for d in daemons)
    groups = sum(len(_groups(_members(d))) for d in daemons)
    await asyncio.gather(*(stop(d, grace) for d in daemons))
    pids = ", ".join(str(d.pid) for d in daemons)
    return (
        f"stopped {len(daemons)} bot daemon(s)"
        + (f" (pid {pids})" if pids else "")
        + f" with {harnesses} harness process(es) in {groups} process group(s)"
    )
