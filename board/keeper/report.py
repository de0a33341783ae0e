"""What a report says, measured with psutil: the machine, the keeper, and each bot.

CPU percentages need two readings: each process keeps one ``psutil.Process``
object from report to report (on its :class:`~.processes.Daemon`), so a
figure covers the time since the last report, not an instant.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import time
from pathlib import Path
from typing import Any

import psutil

from .. import __version__
from ..launcher.logs import LOG_FILE, tail
from ..launcher.state import STATE_FILE as BOT_STATE_FILE
from ..processes import start_time
from . import worktrees
from .supervisor import Slot, Supervisor, iso

LINE_CAP = 2000
KEEPER = psutil.Process()


def _usage(total: int, used: int, percent: float) -> dict[str, Any]:
    return {"total": int(total), "used": int(used), "percent": round(float(percent), 1)}


def machine(state_dir: Path) -> dict[str, Any]:
    memory = psutil.virtual_memory()
    disk = psutil.disk_usage(str(state_dir))
    with KEEPER.oneshot():
        times = KEEPER.cpu_times()
        rss = KEEPER.memory_info().rss
    return {
        "hostname": socket.gethostname(),
        "os": platform.platform(),
        "cpus": psutil.cpu_count() or 0,
        "load": [round(x, 2) for x in os.getloadavg()],
        "memory": _usage(memory.total, memory.total - memory.available, memory.percent),
        "disk": _usage(disk.total, disk.used, disk.percent),
        "keeper_version": __version__,
        "uptime_s": round(time.time() - psutil.boot_time(), 1),
        "keeper": {"pid": KEEPER.pid, "cpu_s": round(times.user + times.system, 3), "rss": rss},
        "clock": iso(time.time()),  # the board compares it with its own
    }


def _measure(proc: psutil.Process) -> dict[str, Any]:
    """A process's figures; psutil.NoSuchProcess once it is gone."""
    started = start_time(proc.pid)  # how board.processes knows a process, pid reuse and all
    if started is None:
        raise psutil.NoSuchProcess(proc.pid)
    with proc.oneshot():
        return {
            "pid": proc.pid,
            "cpu_percent": round(proc.cpu_percent(interval=None), 1),
            "rss": proc.memory_info().rss,
            "started_at": iso(started),
        }


def _last_wake(bot_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((bot_dir / BOT_STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    wake = data.get("last_wake") if isinstance(data, dict) else None
    if not isinstance(wake, dict):
        return None
    return {k: wake.get(k) for k in ("at", "duration_s", "cost_usd", "outcome", "trigger_ids")}


def bot(sup: Supervisor, slot: Slot) -> dict[str, Any]:
    bot_dir = sup.bot_dir(slot.handle)
    item: dict[str, Any] = {
        "handle": slot.handle,
        "state": slot.state,
        "restarts": slot.restarts,
        "last_exit_code": slot.last_exit_code,
        "last_wake": _last_wake(bot_dir),
        "log_tail": [line[:LINE_CAP] for line in tail(bot_dir / LOG_FILE, sup.timing.log_lines)],
        "error": slot.error[:LINE_CAP],
        "worktrees": worktrees.report(bot_dir, sup.sizes),
    }
    if slot.state == "backoff":
        item["backoff_s"] = round(max(0.0, slot.next_start - time.monotonic()), 1)
    daemon = slot.daemon
    if daemon is not None and daemon.proc is not None:
        try:
            measured = _measure(daemon.proc)
        except psutil.Error:
            return item
        item.update(measured)
        harness = daemon.harness()
        if harness is not None:
            try:
                item["harness"] = _measure(harness)
            except psutil.Error:
                pass
            else:
                if slot.state == "running":
                    item["state"] = "waking"
    return item


def report(sup: Supervisor) -> dict[str, Any]:
    """The body of ``POST /api/fleet/report``."""
    bots = [bot(sup, slot) for slot in sup.slots.values()]
    sup.sizes.keep_only({w["path"] for b in bots for w in b["worktrees"]})
    return {
        "machine": machine(sup.directory),
        "interval": sup.timing.interval,
        "bots": bots,
        "events": list(sup.journal),
        "acks": list(sup.acks),
    }
