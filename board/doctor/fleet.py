"""The checks of what the board knows: its keepers' reports, its bots, clocks, the routines runner.

They read through the service layer (``fleet.operator_fleet``,
``routines.runner_status``) on a store opened read-only, as the fleet page
shows it: a keeper is stale after 3 of its intervals (plus 2 s), a bot's
reason is the last line of what its daemon printed, cut to 200 characters.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from routines.runner import LONG_POLL_SECONDS

from ..server.clock import parse_time
from ..server.services import fleet as fleet_service
from ..server.services import routines as routine_service
from ..server.services.auth import PRESENCE_WRITE_EVERY
from ..server.services.context import Context
from ..server.settings import Settings
from ..server.store.stores import open_store
from ..shown import escaped_controls, last_line
from .check import Check, Status, ago

#: Seconds a keeper's clock may be off the board's: schedules, claims and stale
#: machines are all judged on the board's clock.
CLOCK_SKEW_S = 5.0
#: A live runner calls at every check (30 s) and every long-poll (50 s), and its
#: call is recorded at most every 30 s: older than two polls and that, it is not running.
RUNNER_SILENT_S = 2 * LONG_POLL_SECONDS + PRESENCE_WRITE_EVERY
UP = ("starting", "running", "waking")
KEEPER_FIX = (
    "on {name}: keeper status, then keeper run (or systemctl --user restart keeper); "
    "its log is keeper.log in its state folder"
)


def _since(stamp: str | None, now: datetime) -> float | None:
    return None if stamp is None else (now - parse_time(stamp)).total_seconds()


def _wanted(machine: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in machine["bots"] if b["desired"] == "running"]


def keepers(machines: Sequence[dict[str, Any]], now: datetime, version: str) -> list[Check]:
    """Each enrolled keeper's last report: online, stale or never; its version."""
    if not machines:
        return [Check("keepers", "ok", "no machine enrolled")]
    found = []
    for m in machines:
        name = f"keeper {m['name']}"
        fix = KEEPER_FIX.format(name=m["name"])
        status: Status = "fail" if _wanted(m) else "warn"  # a keeper with no bot to run needs nobody yet
        if m["status"] == "never":
            found.append(Check(name, status, f"enrolled {m['enrolled_at']} but never reported", fix))
            continue
        age = ago(_since(m["last_report_at"], now) or 0.0)
        said = f"last report {age} ago (every {m['interval_s']:g} s)"
        if m["status"] == "stale":
            found.append(Check(name, status, f"{said}: stale after 3 intervals", fix))
        elif m["keeper_version"] not in (None, version):
            found.append(
                Check(
                    name,
                    "warn",
                    f"{said}; keeper version {m['keeper_version']}, the board's {version}",
                    f"upgrade it on {m['name']}: install.sh upgrade",
                )
            )
        else:
            found.append(Check(name, "ok", f"{said}, keeper {m['keeper_version']}"))
    return found


def clocks(machines: Sequence[dict[str, Any]]) -> list[Check]:
    """How far each keeper's clock was from the board's at its last report."""
    found = []
    for m in machines:
        if m["status"] == "never":
            continue
        name = f"clock {m['name']}"
        skew = m["clock_skew_s"]
        if skew is None:
            found.append(
                Check(name, "warn", "its keeper does not send its time", f"upgrade the keeper on {m['name']}")
            )
        elif abs(skew) > CLOCK_SKEW_S:
            way = "ahead of" if skew > 0 else "behind"
            found.append(
                Check(
                    name,
                    "fail",
                    f"{abs(skew):.1f} s {way} the board's (more than {CLOCK_SKEW_S:g} s)",
                    f"keep both clocks on NTP (timedatectl set-ntp true), on {m['name']} "
                    "and on the board's machine",
                )
            )
        else:
            found.append(Check(name, "ok", f"{skew:+.1f} s from the board's"))
    return found


def _bot(bot: dict[str, Any], machine: dict[str, Any]) -> Check | None:
    """One bot that should run: None when it does, else why not and what to do."""
    handle, state = bot["handle"], bot["state"]
    name = f"bot {handle} on {machine['name']}"
    if machine["status"] != "online":
        said = f"{state}, as its keeper last said" if bot["reported_at"] else "never reported"
        return Check(
            name, "fail", f"{said}: the keeper is not reporting", KEEPER_FIX.format(name=machine["name"])
        )
    if state in UP:
        return None
    exit_code = f" (exit {bot['last_exit_code']})" if bot["last_exit_code"] is not None else ""
    reason = escaped_controls(last_line(bot["error"]), keep="") or f"exited{exit_code}"
    if state == "misconfigured":
        return Check(
            name,
            "fail",
            f"misconfigured: {reason}",
            f"fix its profile {bot['profile']} on /fleet/profiles/{bot['profile']}, "
            f"then start it on /fleet or with board fleet start {handle}",
        )
    if state == "crashed":
        return Check(
            name,
            "fail",
            f"crashed: {reason}",
            f"read its log on /fleet/bots/{handle}, fix the cause, then board fleet start {handle}",
        )
    if state == "backoff":
        return Check(
            name,
            "warn",
            f"restarting after a crash: {reason}",
            f"if it keeps crashing, read its log on /fleet/bots/{handle}",
        )
    return Check(
        name,
        "warn",
        f"{state if bot['reported_at'] else 'not reported yet'}, should be running: "
        "its keeper has not started it yet",
        f"if it stays so, read the keeper's log on {machine['name']} (keeper.log)",
    )


def bots(machines: Sequence[dict[str, Any]]) -> list[Check]:
    """One line per bot that should run and does not; one line for all the others."""
    wanted = [(b, m) for m in machines for b in _wanted(m)]
    found = [c for c in (_bot(b, m) for b, m in wanted) if c is not None]
    up = len(wanted) - len(found)
    return [*found, Check("bots", "ok", f"{up} of {len(wanted)} that should run are running")]


def runner(status: dict[str, Any], now: datetime) -> Check:
    """The routines runner's last call to the board; it matters once a routine is approved."""
    active = status["active"]
    silent = _since(status["last_call_at"], now)
    routines = f"{len(active)} active routine(s)"
    if silent is not None and silent <= RUNNER_SILENT_S:
        return Check("routines runner", "ok", f"last called the board {ago(silent)} ago; {routines}")
    said = "never called the board" if silent is None else f"last called the board {ago(silent)} ago"
    return Check(
        "routines runner",
        "fail" if active else "warn",
        f"{said}; {routines}" + (f" will not run: {', '.join(active[:5])}" if active else ""),
        "run the board with its runner (board ctl restart runs board serve --routines), "
        "or run one: board routines run",
    )


async def checks(settings: Settings, version: str) -> list[Check]:
    """Every check of what the board knows, from its database opened read-only."""
    store = open_store(settings, readers=1, read_only=True)
    await store.open()
    try:
        ctx = Context(db=store, settings=settings)
        machines = await fleet_service.operator_fleet(ctx)
        runner_status = await routine_service.runner_status(ctx)
        now = ctx.clock.now()
    finally:
        await store.close()
    return [
        *keepers(machines, now, version),
        *clocks(machines),
        *bots(machines),
        runner(runner_status, now),
    ]
