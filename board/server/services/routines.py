"""Routines: jobs a bot runs on a schedule, proposed by anyone, made to run by a human only.

A routine's fields live in versions. A proposal is ``pending``; a human approves
it (the approved one before it is ``retired``) or rejects it with a note, and
pauses, resumes or runs it now. The runner (the ``routines`` package, holding the
board's runner token) creates each run on the unique ``(routine, scheduled_for)``,
starts it, which posts the prompt in the routine's thread of ``#routines``
mentioning the bot, and finishes it from what the board saw: the bot closing the
claim it took for the run (``done``, its summary the outcome), a failed wake
(``failed``), or the maximum run time passing (``timed_out``); a run that ends
otherwise than ``done`` releases the claim. The runs of a routine share its thread
and so its claim: one runs at a time, and the next waits until it ended. Every step
is an audit row and a change the runner's long-poll hears. Who sees which
routine is asked of ``scope``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from routines import schedule as schedules

from ..clock import iso, parse_time
from ..errors import InvalidArgument, NameConflict, NotFound, VersionConflict
from ..hub import Signal
from ..principal import Principal
from ..store import identity as identity_store
from ..store import messages as message_store
from ..store import routines as store
from ..store.connection import Connection
from ..store.rows import WorkspaceRow
from ..store.writer import emit
from ..validation import arg
from . import actions, audit, claims, outbound, scope
from .context import Context
from .longpoll import MAX_WAIT
from .posting import board_principal, post_event
from .tokencache import reach_key

NAME_PATTERN = r"[a-z0-9][a-z0-9-]{1,62}"
SLUG_PATTERN = r"[a-z0-9._-]{2,64}"
HANDLE_PATTERN = r"[A-Za-z0-9._-]{2,32}"
CHANNEL = "routines"
CHANGES: tuple[str, int] = ("routines", 0)
#: The fields a version is made of, compared to tell a change from a repeat.
COMPARED = ("schedule", "timezone", "bot", "prompt", "max_run_seconds", "grace_seconds", "quiet_hours")


# -- declared inputs -------------------------------------------------------------------


@dataclass(kw_only=True)
class VersionProposal:
    schedule: str = arg(max_len=100, help="5-field cron, or 'every <N>s|m|h'.")
    timezone: str = arg("UTC", max_len=64, help="IANA time zone of the schedule and quiet hours.")
    bot: str = arg(pattern=HANDLE_PATTERN, help="The bot the run's prompt mentions.")
    prompt: str = arg(max_len=32_000, min_len=1, limit=True, multiline=True)
    max_run_seconds: int = arg(3600, min=60, max=7 * 24 * 3600)
    grace_seconds: int = arg(3600, min=0, max=7 * 24 * 3600, help="How late a missed run may still start.")
    quiet_hours: str | None = arg(None, pattern=schedules.QUIET.pattern, help="'22:00-07:00', local time.")
    why: str = arg("", max_len=2000, multiline=True, help="The proposer's reason, shown beside the diff.")
    dry_run: bool = arg(False, help="Check only: answer 200 with the version it would be, write nothing.")


@dataclass(kw_only=True)
class RoutineProposal(VersionProposal):
    name: str = arg(pattern=NAME_PATTERN)
    workspace: str | None = arg(None, pattern=SLUG_PATTERN)


@dataclass
class Decision:
    note: str = arg("", max_len=2000, multiline=True)


@dataclass
class Rejection:
    note: str = arg(blank=False, max_len=2000, multiline=True, help="Why: kept in the version's history.")


@dataclass
class RoutineList:
    since: int | None = arg(None, min=0, help="Change cursor: answer once something changed after it.")
    wait: int = arg(0, min=0, max=MAX_WAIT)
    workspace: str | None = arg(None, pattern=SLUG_PATTERN)


@dataclass
class RunList:
    before: int | None = arg(None, min=1, help="Run id to continue before (next_before).")
    limit: int = arg(20, min=1, max=500)


@dataclass
class RunRequest:
    version: int = arg(min=1)
    scheduled_for: str = arg(max_len=40)
    state: str = arg("scheduled", choices=("scheduled", "missed"))
    cause: str = arg("schedule", choices=("schedule", "catch-up"))
    outcome: str = arg("", max_len=2000, multiline=True)


@dataclass
class RunEnd:
    state: str = arg(choices=("done", "failed", "timed_out"))
    outcome: str = arg("", max_len=8000, multiline=True)


# -- rendering -------------------------------------------------------------------------


def version_dict(row: Any) -> dict[str, Any]:
    return {
        "version": row["version"],
        "state": row["state"],
        **{name: row[name] for name in COMPARED},
        "why": row["why"],
        "proposed_by": row["proposed_by_handle"],
        "proposed_at": row["proposed_at"],
        "decided_by": row["decided_by_handle"],
        "decided_at": row["decided_at"],
        "note": row["note"],
    }


#: Every state a run is in, and the words a person reads for it on /routines (the API keeps the
#: state itself).
RUN_STATES = {
    "scheduled": "scheduled",
    "running": "running",
    "done": "done",
    "failed": "failed",
    "timed_out": "timed out",
    "missed": "missed",
}

RUN_FIELDS = (
    "id",
    "version",
    "scheduled_for",
    "cause",
    "state",
    "message_id",
    "started_at",
    "ended_at",
    "outcome",
)


def run_dict(row: Any) -> dict[str, Any]:
    return {name: row[name] for name in RUN_FIELDS} | {"wake_cost_usd": row["wake_cost"]}


def _digest(fields: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps([fields[n] for n in COMPARED]).encode()).hexdigest()


def _next_run(routine: Any, approved: dict[str, Any] | None, now: datetime) -> str | None:
    """When the next run starts: its time, or the end of the quiet hours it is due in (it waits)."""
    if approved is None or routine["paused"] or routine["active_since"] is None:
        return None
    parsed = schedules.parse(approved["schedule"], approved["timezone"])
    found = parsed.next_after(now, parse_time(routine["active_since"]))
    if found is None:
        return None
    return iso(schedules.quiet_until(approved["quiet_hours"], parsed.zone, found))


def _summary(
    ctx: Context,
    routine: Any,
    versions: list[Any],
    last: Any | None,
    open_runs: list[Any],
    covered_until: str | None,
) -> dict[str, Any]:
    approved = next((version_dict(v) for v in versions if v["state"] == "approved"), None)
    if approved is not None:
        words = schedules.parse(approved["schedule"], approved["timezone"]).words()
        approved["schedule_words"] = words
    return {
        "name": routine["name"],
        "workspace": routine["workspace"],
        "thread_id": routine["thread_id"],
        "state": "paused" if routine["paused"] else ("active" if approved else "unapproved"),
        "active_since": routine["active_since"],
        "approved": approved,
        "pending": [v["version"] for v in versions if v["state"] == "pending"],
        "next_run": _next_run(routine, approved, ctx.clock.now()),
        "last_run": run_dict(last) if last is not None else None,
        "covered_until": covered_until,
        "open_runs": [run_dict(r) for r in open_runs],
    }


# -- reads -----------------------------------------------------------------------------


async def _visible(conn: Connection, p: Principal, name: str) -> Any:
    return scope.require_routine(p, await store.by_name(conn, name))


async def list_routines(ctx: Context, p: Principal, q: RoutineList) -> dict[str, Any]:
    """Every routine ``p`` sees, with its approved version, next and last run; long-pollable by cursor."""

    async def read(conn: Connection) -> dict[str, Any]:
        ids = scope.routine_workspace_ids(p)
        if q.workspace is not None:
            ids = [(await scope.resolve(conn, p, q.workspace))["id"]]
        rows = await store.select(conn, ids)
        routine_ids = [r["id"] for r in rows]
        versions = await store.versions(conn, routine_ids)
        last = await store.last_runs(conn, routine_ids)
        open_runs = await store.open_runs(conn, routine_ids)
        covered = await store.covered_until(conn, routine_ids)
        items = [
            _summary(
                ctx,
                r,
                [v for v in versions if v["routine_id"] == r["id"]],
                last.get(r["id"]),
                [u for u in open_runs if u["routine_id"] == r["id"]],
                covered.get(r["id"]),
            )
            for r in rows
        ]
        return {"routines": items, "cursor": await store.change_cursor(conn), "has_more": False}

    if q.since is None or not q.wait:
        return await ctx.db.read(read)
    # Counted against its held requests; its credential's change answers it at once.
    waiter = ctx.hub.subscribe([CHANGES, reach_key(p.agent_id)], p.agent_id)
    try:
        page = await ctx.db.read(read)
        if page["cursor"] > q.since:
            return page
        await waiter.wait(min(q.wait, ctx.settings.max_wait))
        return await ctx.db.read(read)
    finally:
        ctx.hub.unsubscribe(waiter)


async def runner_status(ctx: Context) -> dict[str, Any]:
    """When a routines runner last called the board, and how many routines are active.

    Every runner token is the board's own system agent's, so that agent's presence
    (written at most every 30 s on an authenticated call) is the runner's last call;
    a live runner calls at least at every check (30 s) and every long-poll (50 s).
    For the operator's commands on the board's machine (``board doctor``).
    """

    async def read(conn: Connection) -> dict[str, Any]:
        agent = await identity_store.agent_by_handle(conn, "board")
        rows = await store.select(conn, None)
        versions = await store.versions(conn, [r["id"] for r in rows])
        approved = {v["routine_id"] for v in versions if v["state"] == "approved"}
        active = [r["name"] for r in rows if r["id"] in approved and not r["paused"]]
        return {"last_call_at": agent["last_seen_at"] if agent else None, "active": active}

    return await ctx.db.read(read)


async def get_routine(ctx: Context, p: Principal, name: str) -> dict[str, Any]:
    """One routine with every version (the page diffs a pending one against the approved)."""

    async def read(conn: Connection) -> dict[str, Any]:
        routine = await _visible(conn, p, name)
        versions = await store.versions(conn, [routine["id"]])
        ids = [routine["id"]]
        last = (await store.last_runs(conn, ids)).get(routine["id"])
        covered = (await store.covered_until(conn, ids)).get(routine["id"])
        found = _summary(ctx, routine, list(versions), last, await store.open_runs(conn, ids), covered)
        found["versions"] = [version_dict(v) for v in versions]
        return found

    return await ctx.db.read(read)


async def list_runs(ctx: Context, p: Principal, name: str, q: RunList) -> dict[str, Any]:
    """The routine's runs, newest first; an open run says what the board saw of it."""

    async def read(conn: Connection) -> dict[str, Any]:
        routine = await _visible(conn, p, name)
        rows = await store.runs(conn, routine["id"], q.before, q.limit + 1)
        running = await store.running_run(conn, routine["id"])
        items = []
        for row in rows[: q.limit]:
            item = run_dict(row)
            if row["state"] == "running":
                item["seen"] = await _seen(conn, routine, row)
            elif row["state"] == "scheduled" and running is not None:
                item["waits_for"] = running["id"]  # it starts once that run has ended
            elif row["state"] == "scheduled" and row["cause"] != "run-now":
                ends = await _quiet_until(conn, routine, row, ctx.clock.now())
                if ends is not None:
                    item["waits_until"] = iso(ends)
            items.append(item)
        cursor = await store.change_cursor(conn)
        page: dict[str, Any] = {"runs": items, "has_more": len(rows) > q.limit, "cursor": cursor}
        if page["has_more"]:
            page["next_before"] = items[-1]["id"]
        return page

    return await ctx.db.read(read)


async def _quiet_until(conn: Connection, routine: Any, run: Any, now: datetime) -> datetime | None:
    """When the quiet hours a scheduled run waits in end, if it waits in them now."""
    version = await store.version(conn, routine["id"], run["version"])
    if version is None or not version["quiet_hours"]:
        return None
    zone = schedules.parse(version["schedule"], version["timezone"]).zone
    ends = schedules.quiet_until(version["quiet_hours"], zone, now)
    return ends if ends > now else None


async def _seen(conn: Connection, routine: Any, run: Any) -> dict[str, Any]:
    """What tells a running run's end: its own claim closed, or a failed wake."""
    closed = await store.run_done(conn, routine["thread_id"], run["claim_mark"])
    if closed is not None:
        return {"claim": "done", "summary": closed["note"], "by": closed["actor"], "at": closed["at"]}
    failed = await store.failed_wake(conn, run["message_id"]) if run["message_id"] else None
    if failed is not None:
        return {"wake": failed["outcome"], "error": failed["error"] or ""}
    return {}


# -- proposals -------------------------------------------------------------------------


async def _check_fields(conn: Connection, req: VersionProposal, workspace: WorkspaceRow) -> dict[str, Any]:
    try:
        schedules.parse(req.schedule, req.timezone)
    except ValueError as exc:
        raise InvalidArgument(str(exc), field="schedule") from None
    bot = await identity_store.agent_by_handle(conn, req.bot)
    if bot is None or not scope.runs_routine(bot, workspace["id"]):
        raise InvalidArgument(
            f"{req.bot} is not a bot that reads workspace {workspace['slug']}; name one of its bots.",
            field="bot",
        )
    fields = {name: getattr(req, name) for name in (*COMPARED, "why")}
    fields["bot"] = bot["handle"]
    fields["digest"] = _digest(fields)
    return fields


async def _changed(conn: Connection, ctx: Context, routine: Any, what: str) -> None:
    change = await store.add_change(conn, routine["id"], what, ctx.now())
    emit(Signal(CHANGES, change))


async def _root(conn: Connection, routine: Any) -> Any:
    root = await message_store.by_id(conn, routine["thread_id"])
    assert root is not None, "a routine's thread is never deleted"
    return root


def _unwritten(ctx: Context, p: Principal, name: str, number: int, fields: dict[str, Any]) -> dict[str, Any]:
    """What a dry run answers: the version a proposal would make, written nowhere."""
    return {
        "version": number,
        "state": "pending",
        **{k: fields[k] for k in (*COMPARED, "why")},
        "proposed_by": p.handle,
        "proposed_at": ctx.now(),
        "decided_by": None,
        "decided_at": None,
        "note": "",
        "routine": name,
        "proposed": False,
        "dry_run": True,
    }


async def _add_version(
    conn: Connection,
    ctx: Context,
    p: Principal,
    routine: Any,
    workspace: WorkspaceRow,
    fields: dict[str, Any],
    dry_run: bool,
) -> tuple[int, dict[str, Any]]:
    latest = await store.latest_version(conn, routine["id"])
    if latest is not None and latest["digest"] == fields["digest"]:
        return 200, version_dict(latest) | {"routine": routine["name"], "proposed": False}
    if dry_run:
        number = latest["version"] + 1 if latest is not None else 1
        return 200, _unwritten(ctx, p, routine["name"], number, fields)
    number = await store.insert_version(conn, routine["id"], fields, p.agent_id, ctx.now())
    await audit.record(
        conn,
        ctx,
        p,
        "routine.propose",
        f"{routine['name']}@{number}",
        workspace=workspace["slug"],
        reason=fields["why"],
        details={k: fields[k] for k in COMPARED if k != "prompt"},
    )
    await post_event(
        conn,
        ctx,
        workspace,
        f"version {number} of routine {routine['name']} proposed by {p.handle}: {fields['schedule']} "
        f"({fields['timezone']}), bot {fields['bot']}" + (f". Why: {fields['why']}" if fields["why"] else ""),
        parent=await _root(conn, routine),
        author=p,
        meta={"routine": routine["name"], "version": number},
        parse_mentions=False,
        notify=False,
    )
    await outbound.enqueue(
        conn,
        ctx,
        kind="routine",
        event_key=f"routine:{routine['id']}:{number}",
        to=await outbound.everyone(conn),
        subject=f"Routine {routine['name']} version {number} awaits approval",
        text=f"Proposed by {p.handle}: {fields['schedule']} ({fields['timezone']}), bot {fields['bot']}."
        + (f" Why: {fields['why']}" if fields["why"] else ""),
        link=f"/routines#pending-{routine['name']}-{number}",
        actor_id=p.agent_id,
    )
    await _changed(conn, ctx, routine, "propose")
    row = await store.version(conn, routine["id"], number)
    return 201, version_dict(row) | {"routine": routine["name"], "proposed": True}


async def propose(ctx: Context, p: Principal, req: RoutineProposal) -> tuple[int, dict[str, Any]]:
    """A new routine and its first version, ``pending``, with its thread in ``#routines``."""
    actions.require(p, "routine.propose")

    async def write(conn: Connection) -> tuple[int, dict[str, Any]]:
        workspace = await scope.resolve(conn, p, req.workspace)
        scope.require_writable(workspace)
        fields = await _check_fields(conn, req, workspace)
        existing = await store.by_name(conn, req.name)
        if existing is not None:
            scope.require_routine(p, existing)
            raise NameConflict(
                f"Routine {req.name} exists; propose a new version at /api/routines/{req.name}/versions."
            )
        if req.dry_run:
            return 200, _unwritten(ctx, p, req.name, 1, fields)
        root = await post_event(
            conn,
            ctx,
            workspace,
            f"Routine {req.name}: runs and decisions are posted in this thread.",
            channel=CHANNEL,
            author=p,
            meta={"routine": req.name},
            parse_mentions=False,
            notify=False,
        )
        routine_id = await store.insert(conn, req.name, workspace["id"], root.id, ctx.now())
        await audit.record(conn, ctx, p, "routine.create", req.name, workspace=workspace["slug"])
        routine = await store.by_name(conn, req.name)
        assert routine is not None and routine["id"] == routine_id
        return await _add_version(conn, ctx, p, routine, workspace, fields, dry_run=False)

    return await ctx.db.write(write)


async def propose_version(
    ctx: Context, p: Principal, name: str, req: VersionProposal
) -> tuple[int, dict[str, Any]]:
    """A new ``pending`` version; the same fields as the latest version propose nothing (200)."""
    actions.require(p, "routine.propose")

    async def write(conn: Connection) -> tuple[int, dict[str, Any]]:
        routine = await _visible(conn, p, name)
        workspace = await scope.resolve(conn, p, routine["workspace"])
        scope.require_writable(workspace)
        fields = await _check_fields(conn, req, workspace)
        return await _add_version(conn, ctx, p, routine, workspace, fields, req.dry_run)

    return await ctx.db.write(write)


# -- a human's decisions ---------------------------------------------------------------


async def _decided(
    ctx: Context,
    p: Principal,
    name: str,
    deciding: str,
    act: Any,
) -> dict[str, Any]:
    """Run a human's decision ``act(conn, routine, workspace) -> (action, target, note, text)``.

    ``deciding`` names the decision in the table of actions (``routine.approve``, ...).
    """

    async def write(conn: Connection) -> None:
        routine = await _visible(conn, p, name)
        actions.require(p, deciding)
        workspace = await scope.resolve(conn, p, routine["workspace"])
        scope.require_writable(workspace)
        action, target, note, text = await act(conn, routine, workspace)
        await audit.record(conn, ctx, p, action, target, workspace=workspace["slug"], reason=note)
        await post_event(
            conn,
            ctx,
            workspace,
            text + (f": {note}" if note else ""),
            parent=await _root(conn, routine),
            author=p,
            meta={"routine": routine["name"], "action": action},
            parse_mentions=False,
            notify=False,
        )
        await _changed(conn, ctx, routine, action)

    await ctx.db.write(write)
    return await get_routine(ctx, p, name)


async def _pending(conn: Connection, routine: Any, number: int) -> Any:
    row = await store.version(conn, routine["id"], number)
    if row is None:
        raise NotFound("version")
    if row["state"] != "pending":
        raise InvalidArgument(f"Version {number} is {row['state']}; only a pending version is decided.")
    return row


async def approve(ctx: Context, p: Principal, name: str, number: int, req: Decision) -> dict[str, Any]:
    """Approve a pending version: it runs from its next time; the approved one before it retires."""

    async def act(conn: Connection, routine: Any, workspace: WorkspaceRow) -> tuple[str, str, str, str]:
        row = await _pending(conn, routine, number)
        retired = await store.retire_approved(conn, routine["id"])
        await store.decide(conn, row["id"], "approved", p.agent_id, req.note, ctx.now())
        await store.set_active_since(conn, routine["id"], ctx.now())
        retiring = f" (version {retired} retired)" if retired is not None else ""
        text = f"version {number} approved by {p.handle}{retiring}"
        return "routine.approve", f"{name}@{number}", req.note, text

    return await _decided(ctx, p, name, "routine.approve", act)


async def reject(ctx: Context, p: Principal, name: str, number: int, req: Rejection) -> dict[str, Any]:
    async def act(conn: Connection, routine: Any, workspace: WorkspaceRow) -> tuple[str, str, str, str]:
        row = await _pending(conn, routine, number)
        await store.decide(conn, row["id"], "rejected", p.agent_id, req.note, ctx.now())
        return "routine.reject", f"{name}@{number}", req.note, f"version {number} rejected by {p.handle}"

    return await _decided(ctx, p, name, "routine.reject", act)


async def pause(ctx: Context, p: Principal, name: str) -> dict[str, Any]:
    async def act(conn: Connection, routine: Any, workspace: WorkspaceRow) -> tuple[str, str, str, str]:
        if routine["paused"]:
            raise InvalidArgument(f"Routine {name} is paused already.")
        await store.set_paused(conn, routine["id"], True, None)
        return "routine.pause", name, "", f"paused by {p.handle}"

    return await _decided(ctx, p, name, "routine.pause", act)


async def resume(ctx: Context, p: Principal, name: str) -> dict[str, Any]:
    """Resume: the times that passed while paused are not made up."""

    async def act(conn: Connection, routine: Any, workspace: WorkspaceRow) -> tuple[str, str, str, str]:
        if not routine["paused"]:
            raise InvalidArgument(f"Routine {name} is not paused.")
        await store.set_paused(conn, routine["id"], False, ctx.now())
        return "routine.resume", name, "", f"resumed by {p.handle}"

    return await _decided(ctx, p, name, "routine.resume", act)


async def run_now(ctx: Context, p: Principal, name: str) -> tuple[int, dict[str, Any]]:
    """A run of the approved version now; the runner starts it, quiet hours or a pause.

    It waits while another run of the routine runs. A run asked for now that has not
    started yet is the answer to a second ask: that is refused (``NAME_CONFLICT``).
    Asked in the second a run of the routine is for (one that started at once, or one
    from the schedule), it is for the next second: a run is unique by its time.
    """
    made: dict[str, Any] = {}

    async def act(conn: Connection, routine: Any, workspace: WorkspaceRow) -> tuple[str, str, str, str]:
        approved = await _approved(conn, routine)
        asked = [r for r in await store.open_runs(conn, [routine["id"]]) if _waiting_run_now(r)]
        if asked:
            raise NameConflict(
                f"Run {asked[0]['id']} of routine {name}, asked for at {asked[0]['scheduled_for']}, "
                "has not started yet; it runs once, when the run before it has ended.",
                run=run_dict(asked[0]),
            )
        now = ctx.now()
        at = now
        if await store.run_at(conn, routine["id"], at) is not None:
            at = iso(parse_time(now) + timedelta(seconds=1))
        run_id = await store.insert_run(
            conn, routine["id"], approved["version"], at, "run-now", "scheduled", now
        )
        if run_id is None:
            raise NameConflict(f"Routine {name} already has a run for {at}; wait a second.")
        made["id"] = run_id
        return "routine.run_now", f"{name}#{run_id}", "", f"run {run_id} requested by {p.handle}"

    await _decided(ctx, p, name, "routine.run_now", act)
    run = await ctx.db.read(lambda conn: store.run(conn, made["id"]))
    return 201, run_dict(run)


def _waiting_run_now(run: Any) -> bool:
    return bool(run["cause"] == "run-now" and run["state"] == "scheduled")


async def _approved(conn: Connection, routine: Any) -> Any:
    rows = [v for v in await store.versions(conn, [routine["id"]]) if v["state"] == "approved"]
    if not rows:
        raise InvalidArgument(f"Routine {routine['name']} has no approved version; approve one first.")
    return rows[0]


# -- the runner's steps ------------------------------------------------------------------


async def _audit_run(
    conn: Connection,
    ctx: Context,
    p: Principal,
    workspace: WorkspaceRow,
    name: str,
    run_id: int,
    step: str,
    **details: Any,
) -> None:
    """The audit row of a run's step (``routine.run.<step>``), targeting ``<routine>#<run>``."""
    target = f"{name}#{run_id}"
    await audit.record(
        conn, ctx, p, f"routine.run.{step}", target, workspace=workspace["slug"], details=details
    )


async def create_run(ctx: Context, p: Principal, name: str, req: RunRequest) -> tuple[int, dict[str, Any]]:
    """A run of the approved version at ``scheduled_for``; one per time, however many ask."""
    actions.require(p, "routine.step_run")
    try:
        scheduled_for = iso(parse_time(req.scheduled_for))
    except ValueError:
        raise InvalidArgument("scheduled_for is an RFC 3339 time.", field="scheduled_for") from None

    async def write(conn: Connection) -> tuple[int, dict[str, Any]]:
        routine = await _visible(conn, p, name)
        approved = await _approved(conn, routine)
        if approved["version"] != req.version or routine["paused"]:
            why = "paused" if routine["paused"] else f"at version {approved['version']}"
            raise VersionConflict(f"Routine {name} is {why}; reload it and schedule again.")
        existing = await store.run_at(conn, routine["id"], scheduled_for)
        if existing is not None:
            raise NameConflict(f"Run {existing['id']} exists for {scheduled_for}.", run=run_dict(existing))
        run_id = await store.insert_run(
            conn,
            routine["id"],
            req.version,
            scheduled_for,
            req.cause,
            req.state,
            ctx.now(),
            outcome=req.outcome,
        )
        assert run_id is not None, "the writer serializes runs; the check above saw none"
        workspace = await scope.run_workspace(conn, routine)
        await _audit_run(
            conn, ctx, p, workspace, name, run_id, req.state, scheduled_for=scheduled_for, cause=req.cause
        )
        if req.state == "missed":
            await post_event(
                conn,
                ctx,
                workspace,
                f"run {run_id} missed: scheduled for {scheduled_for}"
                + (f"; {req.outcome}" if req.outcome else ""),
                parent=await _root(conn, routine),
                meta={"routine": name, "run_id": run_id, "run": "missed"},
                parse_mentions=False,
                notify=False,
            )
        await _changed(conn, ctx, routine, f"run.{req.state}")
        return 201, run_dict(await store.run(conn, run_id))

    return await ctx.db.write(write)


async def _run_of(conn: Connection, p: Principal, name: str, run_id: int, state: str) -> tuple[Any, Any, Any]:
    routine = await _visible(conn, p, name)
    run = await store.run(conn, run_id)
    if run is None or run["routine_id"] != routine["id"]:
        raise NotFound("run")
    if run["state"] != state:
        raise VersionConflict(f"Run {run_id} is {run['state']}, not {state}.", run=run_dict(run))
    return routine, run, await scope.run_workspace(conn, routine)


def _prompt(routine: Any, version: Any, run: Any, last: Any | None) -> str:
    previous = (
        f"The last finished run was run {last['id']} (scheduled for {last['scheduled_for']}); its outcome:\n"
        f"{last['outcome']}\n\n"
        if last is not None
        else "No earlier run of this routine has finished: there is no previous outcome.\n\n"
    )
    return (
        f"@{version['bot']} run {run['id']} of routine {routine['name']} (version {version['version']}, "
        f"scheduled for {run['scheduled_for']}) in workspace {routine['workspace']}. Claim thread "
        f"{routine['thread_id']}, do the job below, and close the claim with done; your summary is the "
        f"run's outcome. You have {version['max_run_seconds']} seconds.\n\n{previous}{version['prompt']}"
    )


async def start_run(ctx: Context, p: Principal, name: str, run_id: int) -> dict[str, Any]:
    """A scheduled run starts: its prompt is posted in the routine's thread, mentioning the bot.

    The runs of a routine share its thread and so its claim: while one runs, another
    one's start is refused (``VERSION_CONFLICT``, naming the running one) and it waits,
    decided in this write so two runners or board processes cannot both start one.
    """
    actions.require(p, "routine.step_run")

    async def write(conn: Connection) -> dict[str, Any]:
        routine, run, workspace = await _run_of(conn, p, name, run_id, "scheduled")
        scope.require_writable(workspace)
        running = await store.running_run(conn, routine["id"])
        if running is not None:
            raise VersionConflict(
                f"Run {running['id']} of routine {name} is running; run {run_id} waits for it to end.",
                run=run_dict(run),
                running=run_dict(running),
            )
        version = await store.version(conn, routine["id"], run["version"])
        assert version is not None
        mark = await store.claim_mark(conn, routine["thread_id"])
        event = await post_event(
            conn,
            ctx,
            workspace,
            _prompt(routine, version, run, await store.last_outcome(conn, routine["id"])),
            parent=await _root(conn, routine),
            meta={"routine": name, "run_id": run_id, "version": run["version"], "run": "start"},
        )
        await store.start_run(conn, run_id, event.id, mark, ctx.now())
        await _audit_run(conn, ctx, p, workspace, name, run_id, "start")
        await _changed(conn, ctx, routine, "run.start")
        return run_dict(await store.run(conn, run_id))

    return await ctx.db.write(write)


async def finish_run(ctx: Context, p: Principal, name: str, run_id: int, req: RunEnd) -> dict[str, Any]:
    """A running run ends. ``done`` only by the run's own done, whose summary is the outcome;
    any other end releases the claim, so the next run starts on an unclaimed thread."""
    actions.require(p, "routine.step_run")

    async def write(conn: Connection) -> dict[str, Any]:
        routine, run, workspace = await _run_of(conn, p, name, run_id, "running")
        outcome = req.outcome
        if req.state == "done":
            closed = await store.run_done(conn, routine["thread_id"], run["claim_mark"])
            if closed is None:
                raise VersionConflict(
                    f"Run {run_id} has no done of its own: the claim it took is not closed.",
                    run=run_dict(run),
                )
            outcome = closed["note"]
        await store.finish_run(conn, run_id, req.state, outcome, ctx.now())
        await _audit_run(conn, ctx, p, workspace, name, run_id, req.state, outcome=outcome[:500])
        if req.state != "done":
            root = await _root(conn, routine)
            board = await board_principal(conn)
            ended = req.state.replace("_", " ")
            released = await claims.release_by_board(
                conn, ctx, board, root, workspace, f"run {run_id} of routine {name} {ended}"
            )
            await post_event(
                conn,
                ctx,
                workspace,
                f"run {run_id} {ended}"
                + ("; its claim is released" if released else "")
                + (f": {req.outcome}" if req.outcome else ""),
                parent=root,
                meta={"routine": name, "run_id": run_id, "run": req.state},
                parse_mentions=False,
                notify=False,
            )
            await outbound.enqueue(
                conn,
                ctx,
                kind="run_failed",
                event_key=f"run:{run_id}",
                to=await outbound.everyone(conn),
                subject=f"Run {run_id} of routine {name} {ended}",
                text=req.outcome or f"The run {ended}; see the routine's thread.",
                link=f"/t/{root['id']}",
            )
        await _changed(conn, ctx, routine, f"run.{req.state}")
        return run_dict(await store.run(conn, run_id))

    return await ctx.db.write(write)
