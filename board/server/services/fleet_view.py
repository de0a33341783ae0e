"""A keeper's stored report read back into known fields, each of its type or None.

A report is checked when it arrives, but what the fleet shows was written by
whichever keeper version reported last, and a bot assigned a moment ago has no
report at all. Readers (the API, the pages) get every field named here, always:
a value of the wrong type, or one never reported, is None ("unknown"), and
nothing else of the report goes out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..clock import parse_time


class Stamp(str):
    """A field holding an ISO time: a string that does not parse is unknown too."""


BOT_FIELDS: dict[str, type] = {
    "pid": int,
    "started_at": Stamp,
    "cpu_percent": float,
    "rss": int,
    "restarts": int,
    "last_exit_code": int,
    "backoff_s": float,
    "error": str,
}
CHILD_FIELDS: dict[str, type] = {"pid": int, "cpu_percent": float, "rss": int, "started_at": Stamp}
WAKE_FIELDS: dict[str, type] = {"at": Stamp, "duration_s": float, "cost_usd": float, "outcome": str}
USAGE_FIELDS: dict[str, type] = {"total": int, "used": int, "percent": float}
WORKTREE_FIELDS: dict[str, type] = {
    "thread": int,
    "branch": str,
    "path": str,
    "state": str,
    "age_s": float,
    "disk_bytes": int,
    "uncommitted": int,
}
MAX_UNCOMMITTED_PATHS = 5
WORKTREE_STATES = ("live", "kept")
MAX_WORKTREES = 50
MACHINE_FIELDS: dict[str, type] = {
    "os": str,
    "cpus": int,
    "keeper_version": str,
    "uptime_s": float,
    "clock_skew_s": float,
}
MAX_LINES = 50
MAX_LINE = 2000


@dataclass(frozen=True)
class Badge:
    """How a state shows: its word, and its tone (the colour class ``tone-<tone>`` in app.css)."""

    word: str
    tone: str


#: Every state a fleet bot shows as, in words and a colour. A state another part of the
#: board decides (``held``: its daily budget spent) is this one line and the line that sets it.
BADGES: dict[str, Badge] = {
    "running": Badge("running", "ok"),
    "waking": Badge("waking", "busy"),
    "starting": Badge("starting", "busy"),
    "backoff": Badge("restarting soon", "warn"),
    "held": Badge("held", "warn"),
    "stopped": Badge("stopped", "off"),
    "crashed": Badge("crashed", "bad"),
    "misconfigured": Badge("misconfigured", "bad"),
    "offline": Badge("machine offline", "off"),
    "unknown": Badge("not reported", "off"),
}
#: States with a bot daemon up, or about to be: the ones a stop order acts on.
UP = ("running", "waking", "starting", "backoff")
#: The words of an order its keeper has not carried out yet.
PENDING = {"start": "starting…", "stop": "stopping…", "restart": "restarting…"}
#: How a wake ended, in words, on a bot's card and its page (the outcome of POST /api/wakes); any
#: other word shows as it is (the card leaves ``ok`` out: it names only a wake that went wrong).
WAKE_OUTCOMES = {"failed": "failed", "timeout": "timed out", "error": "the harness did not start"}


def shown_state(state: str, machine_status: str) -> str:
    """What the page shows of a bot: its keeper's word, unless the machine is not reporting."""
    if machine_status == "stale":
        return "offline"  # what its keeper last said may no longer be true
    return state if state in BADGES else "unknown"


def pending(shown: str, desired: str, order: str | None) -> str | None:
    """The order on its way: one its keeper has not acknowledged, or a desired state not yet reached."""
    if shown == "offline":
        return None  # nothing happens until its keeper reports again
    if order is not None:
        return order
    if shown == "stopped" and desired == "running":
        return "start"
    if shown in UP and desired == "stopped":
        return "stop"
    return None


def shown_presence(presence: str, shown: str) -> str:
    """Presence that agrees with the state: a bot with no daemon up is never ``active``."""
    return "recent" if presence == "active" and shown not in UP else presence


def decode(raw: Any) -> dict[str, Any]:
    """A JSON object column as a dict; anything else (unreadable, not an object) as empty."""
    try:
        value = json.loads(raw) if isinstance(raw, str | bytes) else raw
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _value(raw: Any, kind: type) -> Any:
    if kind is Stamp:
        try:
            parse_time(raw)
        except (AttributeError, TypeError, ValueError):
            return None
        return raw
    if kind is float and isinstance(raw, int | float) and not isinstance(raw, bool):
        return float(raw)
    if kind is int and isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if kind is str and isinstance(raw, str):
        return raw
    return None


def _fields(raw: Any, fields: dict[str, type]) -> dict[str, Any]:
    source = raw if isinstance(raw, dict) else {}
    return {name: _value(source.get(name), kind) for name, kind in fields.items()}


def _nested(raw: Any, fields: dict[str, type]) -> dict[str, Any] | None:
    return _fields(raw, fields) if isinstance(raw, dict) else None


def _lines(raw: Any) -> list[str]:
    if not isinstance(raw, list):
        return []
    return [line[:MAX_LINE] for line in raw[-MAX_LINES:] if isinstance(line, str)]


def _wake(raw: Any) -> dict[str, Any] | None:
    wake = _nested(raw, WAKE_FIELDS)
    if wake is not None:
        ids = raw.get("trigger_ids")
        wake["trigger_ids"] = [i for i in ids if _value(i, int) is not None] if isinstance(ids, list) else []
    return wake


def _worktrees(raw: Any) -> list[dict[str, Any]]:
    """A bot's reported worktrees: only those naming a thread, one each, a state not known as None."""
    found: dict[int, dict[str, Any]] = {}
    for item in raw[:MAX_WORKTREES] if isinstance(raw, list) else []:
        worktree = _nested(item, WORKTREE_FIELDS)
        if worktree is None or worktree["thread"] is None or worktree["thread"] < 1:
            continue
        if worktree["state"] not in WORKTREE_STATES:
            worktree["state"] = None
        paths = item.get("uncommitted_paths")
        worktree["uncommitted_paths"] = [
            p
            for p in (paths if isinstance(paths, list) else [])[:MAX_UNCOMMITTED_PATHS]
            if isinstance(p, str)
        ]
        found.setdefault(worktree["thread"], worktree)
    return list(found.values())


def bot_status(raw: Any) -> dict[str, Any]:
    """What a keeper last said of one bot; every field present, None where unknown."""
    status = decode(raw)
    worktrees = _worktrees(status.get("worktrees"))
    return {
        **_fields(status, BOT_FIELDS),
        "harness": _nested(status.get("harness"), CHILD_FIELDS),
        "last_wake": _wake(status.get("last_wake")),
        "log_tail": _lines(status.get("log_tail")),
        "worktrees": worktrees,
        "worktrees_disk_bytes": sum(w["disk_bytes"] or 0 for w in worktrees),
    }


def machine_report(raw: Any) -> dict[str, Any]:
    """What a keeper last said of its machine; every field present, None where unknown."""
    report = decode(raw)
    load = report.get("load")
    return {
        **_fields(report, MACHINE_FIELDS),
        "load": [float(x) for x in load if _value(x, float) is not None] if isinstance(load, list) else [],
        "memory": _fields(report.get("memory"), USAGE_FIELDS),
        "disk": _fields(report.get("disk"), USAGE_FIELDS),
        "keeper": _fields(report.get("keeper"), {"pid": int, "cpu_s": float, "rss": int}),
    }
