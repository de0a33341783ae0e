"""The fleet: machines, their keepers, and the bots a human assigns to them.

A human issues an enroll code; a machine's keeper trades it for a keeper token
(``bk_``) and from then on reports what runs there. Each report is answered
with the machine's desired state (which bots should run, with which profile)
and the one-shot orders not yet acknowledged. Humans assign bots from a
profile, start, stop, restart and unassign them; a keeper may mint tokens for
its own machine's bots and nothing else. Every order and every state change a
keeper reports is an audit row.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Any

from ..clock import iso, parse_time
from ..errors import Forbidden, InvalidArgument, NameConflict, NotFound, Unauthenticated
from ..hub import Key, Signal
from ..principal import Principal
from ..store import claims as claim_store
from ..store import fleet as store
from ..store import identity as identity_store
from ..store import registry as registry_store
from ..store import workspaces as workspace_store
from ..store import worktrees as worktree_store
from ..store.connection import Connection
from ..store.writer import emit
from ..validation import arg
from . import actions, audit, auth, budgets, fleet_history, fleet_view, outbound, scope, worktrees
from .context import Context
from .paging import Page, bounded_page

MACHINE_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
BOT_STATES = ("starting", "running", "waking", "stopped", "crashed", "backoff", "misconfigured")
ORDER_KINDS = ("start", "stop", "restart")
#: The order that removes a bot's kept worktree (its ``target``: the thread); its keeper checks
#: the path is one its bot kept, inside the bot's ``<repo>.worktrees`` folder (docs/fleet.md).
REMOVE_WORKTREE = "remove_worktree"
#: The hub key of the fleet's changes (reports, enrolments, assignments, orders): the live
#: fleet pages wait on it instead of reading the fleet on a clock.
CHANGES: Key = ("fleet", 0)
STALE_AFTER_INTERVALS = 3
#: Seconds a report may be late beyond those intervals: its own round trip on a
#: busy machine or board, so a short interval does not flicker between states.
STALE_GRACE_S = 2.0
RECENT_ORDERS = 20
#: A keeper's state changes recorded as audit rows, at most, per machine and window;
#: a real keeper's bots change state a few times a minute, even crash-looping.
EVENTS_PER_WINDOW = 120
EVENT_WINDOW_S = 60


def _changed() -> None:
    """Tell the fleet's live pages, once this write commits, that their cards may read otherwise."""
    emit(Signal(CHANGES, 0))


def _require_keeper(p: Principal) -> int:
    """The caller's machine: the fleet's calls a keeper makes speak for its own machine."""
    actions.require(p, "fleet.keeper_call")
    assert p.machine_id is not None  # a keeper's principal names its machine
    return p.machine_id


# -- enrollment ------------------------------------------------------------------------


@dataclass
class EnrollCodeRequest:
    machine_name: str = arg(pattern=MACHINE_NAME, help="1-64 of [A-Za-z0-9._-]; the machine's name.")
    expires_in: int = arg(3600, min=60, max=30 * 86400, help="Seconds until the code expires.")


async def create_enroll_code(
    ctx: Context, p: Principal, req: EnrollCodeRequest, board_url: str
) -> dict[str, Any]:
    """A one-time code a machine's keeper trades for its token."""
    actions.require(p, "fleet.enroll_code")
    code = auth.new_secret("keeper")
    expires_at = iso(ctx.clock.now() + timedelta(seconds=req.expires_in))

    async def write(conn: Connection) -> None:
        await store.insert_code(
            conn, auth.hash_secret(code), req.machine_name, expires_at, p.agent_id, ctx.now()
        )
        await audit.record(
            conn, ctx, p, "fleet.enroll_code", req.machine_name, details={"expires_at": expires_at}
        )

    await ctx.db.write(write)
    return {
        "code": code,
        "machine_name": req.machine_name,
        "expires_at": expires_at,
        "command": f"curl -fsSL {board_url}/install.sh | KEEPER_ENROLL_CODE={code} bash -s -- keeper",
    }


@dataclass
class Enrollment:
    code: str = arg(max_len=128, help="The enroll code a human gave you.")
    hostname: str = arg("", max_len=255)


async def enroll(ctx: Context, req: Enrollment) -> dict[str, Any]:
    """Trade an enroll code for a keeper token; enrolling a machine again replaces its token."""
    token = auth.new_secret("keeper")

    async def write(conn: Connection) -> tuple[int, str]:
        now = ctx.now()
        code = await store.take_code(conn, auth.hash_secret(req.code), now)
        if code is None:
            raise Unauthenticated("Unknown, used or expired enroll code; ask a human for a new one.")
        name = code["machine_name"]
        machine_id = await store.enroll_machine(conn, name, req.hostname, auth.hash_secret(token), now)
        actor = auth.keeper_principal({"id": machine_id, "name": name})
        await audit.record(
            conn, ctx, actor, "fleet.enroll", name, details={"hostname": req.hostname, "code": code["id"]}
        )
        _changed()
        return machine_id, name

    machine_id, name = await ctx.db.write(write)
    ctx.tokens.forget_agent(-machine_id)  # a keeper enrolled before stops at once
    return {"machine": name, "token": token}


# -- the keeper's report ---------------------------------------------------------------


@dataclass
class Usage:
    total: int = arg(0, min=0)
    used: int = arg(0, min=0)
    percent: float = arg(0.0, min=0, max=100)


@dataclass
class KeeperProcess:
    pid: int = arg(0, min=0)
    cpu_s: float = arg(0.0, min=0, help="CPU seconds the keeper has used.")
    rss: int = arg(0, min=0, help="Bytes.")


@dataclass
class MachineReport:
    hostname: str = arg("", max_len=255)
    os: str = arg("", max_len=200)
    cpus: int = arg(0, min=0, max=100_000)
    load: list[float] = arg([], max_items=3, help="1, 5 and 15 minute load averages.")
    memory: Usage = field(default_factory=Usage)
    disk: Usage = field(default_factory=Usage)
    keeper_version: str = arg("", max_len=64)
    uptime_s: float = arg(0.0, min=0, help="Seconds since the machine booted.")
    keeper: KeeperProcess = field(default_factory=KeeperProcess)
    clock: str | None = arg(
        None, max_len=40, time=True, help="The keeper's own time as it sent the report: the board compares."
    )


@dataclass
class ChildProcess:
    pid: int = arg(min=1)
    cpu_percent: float = arg(0.0, min=0)
    rss: int = arg(0, min=0)
    started_at: str | None = arg(None, max_len=40, time=True)


@dataclass
class LastWake:
    """What the bot daemon said of its last wake (its state file, read by the keeper)."""

    at: str | None = arg(None, max_len=40, time=True)
    duration_s: float | None = arg(None, min=0)
    cost_usd: float | None = arg(None, min=0)
    outcome: str | None = arg(None, max_len=40)
    trigger_ids: list[int] | None = arg(None, max_items=100)


@dataclass
class WorktreeReport:
    """A git worktree of a bot (its state file, read by the keeper), with its size on disk."""

    thread: int = arg(min=1)
    state: str = arg(choices=("live", "kept"))
    branch: str = arg("", max_len=200)
    path: str = arg("", max_len=1000)
    age_s: float = arg(0.0, min=0, help="Seconds since the worktree was made.")
    disk_bytes: int | None = arg(None, min=0, help="Its size, measured at most once a minute; null: unknown.")
    uncommitted: int | None = arg(
        None, min=0, help="Uncommitted paths when its daemon kept it; null: not kept, or not known."
    )
    uncommitted_paths: list[str] = arg([], max_items=5, max_len=1000, help="The first few of them.")


@dataclass
class BotReport:
    handle: str = arg(pattern=auth.HANDLE_PATTERN)
    state: str = arg(choices=BOT_STATES)
    pid: int | None = arg(None, min=1)
    started_at: str | None = arg(None, max_len=40, time=True)
    cpu_percent: float | None = arg(None, min=0)
    rss: int | None = arg(None, min=0)
    restarts: int = arg(0, min=0)
    last_exit_code: int | None = arg(None)
    harness: ChildProcess | None = arg(None, help="The harness child, while a turn runs.")
    last_wake: LastWake | None = arg(None, help="When, how long, its cost, its outcome.")
    backoff_s: float | None = arg(None, min=0, help="Seconds until the next start, in backoff.")
    log_tail: list[str] = arg([], max_items=50, max_len=2000)
    error: str = arg("", max_len=2000, multiline=True, help="What the daemon said when it last exited.")
    worktrees: list[WorktreeReport] = arg([], max_items=50, help="Its worktrees per thread, live or kept.")


@dataclass
class KeeperEvent:
    seq: int = arg(min=1, help="The keeper's own sequence: an event is recorded once.")
    at: str = arg(max_len=40, time=True, help="When the keeper saw it (kept in the row's details).")
    handle: str = arg(pattern=auth.HANDLE_PATTERN)
    state: str = arg(choices=(*BOT_STATES, "unassigned"))
    exit_code: int | None = arg(None)
    detail: str = arg("", max_len=500)


@dataclass
class OrderAck:
    id: int = arg(min=1)
    ok: bool = arg(True)
    detail: str = arg("", max_len=500)


@dataclass
class Report:
    machine: MachineReport = field(default_factory=MachineReport)
    interval: float = arg(10.0, min=0.05, max=3600, help="Seconds between this keeper's reports.")
    bots: list[BotReport] = arg([], max_items=500)
    events: list[KeeperEvent] = arg([], max_items=2000, help="State changes since the last report.")
    acks: list[OrderAck] = arg([], max_items=500, help="Orders executed since the last report.")


def _stale_for(machine: Any, now: str) -> float | None:
    """Seconds past the online window, or None while the machine is online."""
    return _silent_for(machine["last_report_at"], machine["interval_s"], now)


def _silent_for(last_report_at: str | None, interval_s: float, now: str) -> float | None:
    if last_report_at is None:
        return None
    age = (parse_time(now) - parse_time(last_report_at)).total_seconds()
    window = STALE_AFTER_INTERVALS * interval_s + STALE_GRACE_S
    return age if age > window else None


def _status(last_report_at: str | None, interval_s: float, now: str) -> str:
    """``never`` reported, ``stale`` (past its window), or ``online``."""
    if last_report_at is None:
        return "never"
    return "stale" if _silent_for(last_report_at, interval_s, now) is not None else "online"


def _event_window(machine: Any, now: str) -> store.EventWindow:
    """The machine's audit window at ``now``: the one still open, or a new one."""
    opened = machine["events_window_at"]
    if opened is not None and (parse_time(now) - parse_time(opened)).total_seconds() < EVENT_WINDOW_S:
        return store.EventWindow(opened, machine["events_in_window"], 0)
    return store.EventWindow(now, 0, 0)


def _clock_skew(ctx: Context, clock: str | None) -> float | None:
    """Seconds the keeper's clock is ahead of the board's (behind: negative), as the report arrives.

    The keeper's time has whole seconds, so the figure is good to about one second,
    which is enough to tell a clock that drifts (``board doctor`` warns beyond 5 s).
    """
    if clock is None:
        return None
    return round((parse_time(clock) - ctx.clock.now()).total_seconds(), 1)


async def report(ctx: Context, p: Principal, req: Report) -> dict[str, Any]:
    """Take a keeper's report; answer the machine's desired state and its open orders."""
    machine_id = _require_keeper(p)
    skew = _clock_skew(ctx, req.machine.clock)  # before the write queue adds its wait

    async def write(conn: Connection) -> dict[str, Any]:
        now = ctx.now()
        machine = await store.machine_by_id(conn, machine_id)
        if machine is None:
            raise NotFound("machine")
        name = machine["name"]
        assigned = {r["handle"].lower(): r for r in await store.bots_of(conn, [machine_id])}
        gap = _stale_for(machine, now)
        if gap is not None:
            await audit.record(conn, ctx, p, "fleet.machine.back", name, details={"silent_s": round(gap, 1)})
        seq = machine["event_seq"]
        window = _event_window(machine, now)
        for event in sorted(req.events, key=lambda e: e.seq):
            if event.seq <= seq:
                continue  # already recorded: a report retried after its answer was lost
            seq = event.seq
            row = assigned.get(event.handle.lower())
            if row is None or window.recorded >= EVENTS_PER_WINDOW:
                window.dropped += 1  # not this machine's bot to speak of, or over the cap
                continue
            window.recorded += 1
            await audit.record(
                conn,
                ctx,
                p,
                "fleet.bot.state",
                event.handle,
                workspace=row["workspace"],
                reason=event.detail,
                details={"machine": name, "state": event.state, "at": event.at, "exit_code": event.exit_code},
            )
        for ack in req.acks:
            order = await store.ack_order(conn, machine_id, ack.id, ack.ok, ack.detail, now)
            if order is not None:
                row = assigned.get(order["handle"].lower())
                if order["kind"] == REMOVE_WORKTREE and ack.ok and order["target"] is not None:
                    await worktree_store.set_state(
                        conn, int(order["target"]), order["handle"], "removed", now
                    )
                await audit.record(
                    conn,
                    ctx,
                    p,
                    "fleet.order.done",
                    order["handle"],
                    workspace=row["workspace"] if row else None,
                    reason=ack.detail,
                    details={
                        "machine": name,
                        "order": ack.id,
                        "kind": order["kind"],
                        "target": order["target"],
                        "ok": ack.ok,
                    },
                )
        for bot in req.bots:
            row = assigned.get(bot.handle.lower())
            if row is not None:
                status = {k: v for k, v in asdict(bot).items() if k not in ("handle", "state")}
                await store.set_status(conn, row["agent_id"], bot.state, status, now)
                if bot.state in BROKEN and row["state"] != bot.state:
                    await _broken(conn, ctx, p, row, bot, now)
                await fleet_history.record(conn, row["agent_id"], bot.cpu_percent, bot.rss, now)
        measured = asdict(req.machine) | {"clock_skew_s": skew}
        await store.store_report(conn, machine_id, measured, req.interval, seq, window, now)
        _changed()
        return {
            "machine": name,
            "bots": [
                {
                    "handle": r["handle"],
                    "workspace": r["workspace"],
                    "profile": r["profile"],
                    "desired": r["desired"],
                }
                for r in assigned.values()
            ],
            "orders": [dict(o) for o in await store.open_orders(conn, machine_id)],
            "event_seq": seq,
        }

    return await ctx.db.write(write)


#: The states a human is told of out of band (``services/outbound.py``: urgent).
BROKEN = ("crashed", "misconfigured")


async def _broken(conn: Connection, ctx: Context, p: Principal, row: Any, bot: BotReport, now: str) -> None:
    """A bot newly crashed or misconfigured: its humans hear of it, once per change of state."""
    detail = bot.error or (f"exit code {bot.last_exit_code}" if bot.last_exit_code is not None else "")
    await outbound.enqueue(
        conn,
        ctx,
        kind="crashed",
        event_key=f"{bot.state}:{row['agent_id']}:{now}",
        to=await outbound.everyone(conn),
        subject=f"Bot {row['handle']} {bot.state} on {row['machine']}",
        text=detail or f"Its keeper reports it {bot.state}; see its log on the fleet page.",
        link=f"/fleet/bots/{row['handle']}",
    )


async def mint_bot_token(ctx: Context, p: Principal, handle: str) -> dict[str, Any]:
    """A new token for a bot assigned to the keeper's machine; its earlier tokens stop."""
    _require_keeper(p)

    async def write(conn: Connection) -> tuple[int, dict[str, Any]]:
        row = scope.require_on_machine(p, await store.bot(conn, handle), "bot")
        await identity_store.revoke_tokens(conn, row["agent_id"], "bot", ctx.now())
        token = auth.new_secret("bot")
        await identity_store.insert_token(conn, row["agent_id"], auth.hash_secret(token), "bot", ctx.now())
        await audit.record(
            conn,
            ctx,
            p,
            "fleet.bot_token",
            row["handle"],
            workspace=row["workspace"],
            details={"machine": row["machine"]},
        )
        return row["agent_id"], {"handle": row["handle"], "workspace": row["workspace"], "token": token}

    agent_id, answer = await ctx.db.write(write)
    ctx.tokens.forget_agent(agent_id)
    return answer


# -- what a human sees and does ---------------------------------------------------------


def _bot_dict(
    row: Any, now: str, claims: list[int], order: str | None = None, hold: budgets.Hold | None = None
) -> dict[str, Any]:
    """A fleet bot as the API and the pages show it; ``order``: the kind of its latest open order,
    ``hold``: its daily budget's hold, which shows a running bot as ``held``."""
    reported = fleet_view.shown_state(
        row["state"], _status(row["machine_reported_at"], row["machine_interval_s"], now)
    )
    shown = "held" if hold is not None and reported == "running" else reported
    pending = fleet_view.pending(reported, row["desired"], order)
    return {
        "handle": row["handle"],
        "workspace": row["workspace"],
        "machine": row["machine"],
        "profile": row["profile"],
        "desired": row["desired"],
        "state": row["state"],
        "shown": shown,
        "shown_words": fleet_view.BADGES[shown].word,
        "hold": hold.which if shown == "held" and hold is not None else None,
        "pending": pending,
        "pending_words": fleet_view.PENDING[pending] if pending else None,
        "presence": fleet_view.shown_presence(auth.presence(row["last_seen_at"], now), reported),
        "claims": claims,
        "reported_at": row["reported_at"],
        "assigned_at": row["assigned_at"],
        "assigned_by": row["assigned_by"],
        **fleet_view.bot_status(row["status"]),
    }


def _machine_dict(row: Any, now: str, bots: list[dict[str, Any]]) -> dict[str, Any]:
    stale_for = _stale_for(row, now)
    status = _status(row["last_report_at"], row["interval_s"], now)
    return {
        "name": row["name"],
        "hostname": row["hostname"],
        "status": status,
        "online": status == "online",
        "stale_for_s": round(stale_for, 1) if stale_for is not None else None,
        "last_report_at": row["last_report_at"],
        "interval_s": row["interval_s"],
        "enrolled_at": row["enrolled_at"],
        "events_dropped": row["events_dropped"],
        **fleet_view.machine_report(row["report"]),
        "bots": bots,
    }


@dataclass
class FleetQuery:
    after: str = arg("", max_len=64, help="Machine name to continue after.")
    limit: int = arg(20, min=1, max=500)
    max_bytes: int | None = arg(None, min=1)


async def _machines(
    conn: Connection, now: str, after: str, limit: int
) -> tuple[list[int], list[dict[str, Any]]]:
    """Up to ``limit`` machines named after ``after``: their ids, and each with its bots and claims."""
    machines = await store.machines(conn, after, limit)
    ids = [m["id"] for m in machines]
    bots = await store.bots_of(conn, ids)
    held: dict[int, list[int]] = {}
    for claim in await claim_store.held_by(conn, [b["agent_id"] for b in bots]):
        held.setdefault(claim["holder_id"], []).append(claim["thread_id"])
    open_orders: dict[tuple[int, str], str] = {}
    removing: dict[tuple[int, str], set[int]] = {}  # the threads whose worktree an open order removes
    for o in await store.pending_orders(conn, ids):
        key = (o["machine_id"], o["handle"].lower())
        if o["kind"] == REMOVE_WORKTREE:
            removing.setdefault(key, set()).add(int(o["target"] or 0))
        else:
            open_orders[key] = o["kind"]  # the latest counts
    by_machine: dict[int, list[dict[str, Any]]] = {i: [] for i in ids}
    for b in bots:
        key = (b["machine_id"], b["handle"].lower())
        hold = await budgets.hold_of(conn, b["agent_id"], now) if b["state"] == "running" else None
        bot = _bot_dict(b, now, held.get(b["agent_id"], []), open_orders.get(key), hold)
        for worktree in bot["worktrees"]:
            worktree["removing"] = worktree["thread"] in removing.get(key, set())
        by_machine[b["machine_id"]].append(bot)
    return ids, [_machine_dict(m, now, by_machine[m["id"]]) for m in machines]


async def fleet(ctx: Context, p: Principal, q: FleetQuery) -> Page:
    """Machines (online or stale, with how long), their bots and states, and the last orders."""
    actions.require(p, "fleet.view")
    now = ctx.now()

    async def read(conn: Connection) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        ids, items = await _machines(conn, now, q.after, q.limit + 1)
        orders = [dict(o) for o in await store.recent_orders(conn, ids, RECENT_ORDERS)]
        return items, orders

    items, orders = await ctx.db.read(read)
    page = bounded_page(ctx, "machines", items, q.limit, q.max_bytes, descending=False, key="name")
    page["orders"] = [o | {"ok": None if o["ok"] is None else bool(o["ok"])} for o in orders]
    return page


#: Machines ``board doctor`` looks at, at most: more than any one board's fleet.
OPERATOR_MACHINES = 1000


async def operator_fleet(ctx: Context) -> list[dict[str, Any]]:
    """Every machine as ``GET /api/fleet`` shows it, for the operator's commands on the board's
    machine (``board doctor``), which hold the database rather than a human's token."""
    now = ctx.now()

    async def read(conn: Connection) -> list[dict[str, Any]]:
        return (await _machines(conn, now, "", OPERATOR_MACHINES))[1]

    return await ctx.db.read(read)


@dataclass
class Assignment:
    machine: str = arg(pattern=MACHINE_NAME)
    profile: str = arg(max_len=64, help="The launch profile: its workspace, harness, repo, watch.")
    handle: str = arg(pattern=auth.HANDLE_PATTERN, help="A new bot, or a bot of the profile's workspace.")
    description: str = arg("", max_len=500)


def harness_label(profile: Any) -> str:
    """The roster's label for a bot launched with this profile (``command`` is ``other``)."""
    label = {"claude": "claude-code", "command": "other"}.get(profile["harness"], profile["harness"])
    return label if label in auth.HARNESS_LABELS else "other"


async def _fleet_bot(conn: Connection, p: Principal, handle: str) -> Any:
    return scope.require_on_machine(p, await store.bot(conn, handle), "bot")


async def assign(ctx: Context, p: Principal, req: Assignment) -> dict[str, Any]:
    """Put a bot on a machine with a profile; its desired state is running."""
    actions.require(p, "fleet.assign")

    async def write(conn: Connection) -> tuple[dict[str, Any], int | None]:
        now = ctx.now()
        machine = await store.machine_by_name(conn, req.machine)
        if machine is None:
            raise NotFound("machine")
        profile = await registry_store.profile(conn, req.profile)
        if profile is None or not scope.visible(p, profile["workspace_id"]):
            raise NotFound("profile")
        workspace = await workspace_store.by_id(conn, profile["workspace_id"])
        assert workspace is not None  # a profile's workspace outlives it
        scope.require_writable(workspace)
        agent = await identity_store.agent_by_handle(conn, req.handle)
        taken_in = None  # a bot the profile takes in: a stream it holds takes the profile's watch
        if agent is None:
            auth.check_handle(req.handle)
            agent_id = await identity_store.insert_agent(
                conn, req.handle, "bot", workspace["id"], req.description, now, harness_label(profile)
            )
        elif agent["kind"] != "bot" or agent["workspace_id"] != workspace["id"]:
            raise NameConflict(
                f"The handle {req.handle!r} is taken outside {workspace['slug']}; pick another."
            )
        else:
            agent_id = agent["id"]
            current = await store.bot(conn, req.handle)
            if current is not None:
                raise NameConflict(
                    f"{req.handle} runs on machine {current['machine']}; unassign it first.",
                    machine=current["machine"],
                )
            other = (await registry_store.profiles_of_bots(conn, [agent_id])).get(agent_id)
            if other is not None and other != profile["name"]:
                raise NameConflict(
                    f"{req.handle} runs with profile {other}; take it out of that profile first.",
                    profile=other,
                )
            taken_in = agent_id if other is None else None
        await registry_store.link_bot(conn, profile["id"], agent_id)
        await store.assign(conn, agent_id, machine["id"], profile["id"], p.handle, now)
        await audit.record(
            conn,
            ctx,
            p,
            "fleet.assign",
            req.handle,
            workspace=workspace["slug"],
            details={"machine": machine["name"], "profile": profile["name"], "new": agent is None},
        )
        _changed()
        return _bot_dict(await store.bot(conn, req.handle), now, []), taken_in

    answer, taken_in = await ctx.db.write(write)
    if taken_in is not None:
        ctx.tokens.forget_agent(taken_in)
    return answer


async def order(ctx: Context, p: Principal, handle: str, kind: str) -> dict[str, Any]:
    """start or restart (desired: running) or stop (desired: stopped), sent as a one-shot order."""
    actions.require(p, "fleet.order")

    async def write(conn: Connection) -> dict[str, Any]:
        now = ctx.now()
        row = await _fleet_bot(conn, p, handle)
        desired = "stopped" if kind == "stop" else "running"
        await store.set_desired(conn, row["agent_id"], desired)
        order_id = await store.insert_order(conn, row["machine_id"], row["handle"], kind, p.handle, now)
        await audit.record(
            conn,
            ctx,
            p,
            f"fleet.{kind}",
            row["handle"],
            workspace=row["workspace"],
            details={"machine": row["machine"], "order": order_id, "desired": desired, "was": row["desired"]},
        )
        _changed()
        bot = _bot_dict(await store.bot(conn, row["handle"]), now, [], kind)
        return bot | {"order": {"id": order_id, "kind": kind}}

    return await ctx.db.write(write)


async def remove_worktree(ctx: Context, p: Principal, handle: str, thread_id: int) -> dict[str, Any]:
    """Order a bot's keeper to remove the worktree its bot kept for a thread (never its branch).

    Only a worktree the bot's last report lists as kept: a live one is its bot's to
    end, and one never reported is NOT_FOUND. Its keeper checks again, on the machine.
    """
    actions.require(p, "fleet.remove_worktree")

    async def write(conn: Connection) -> dict[str, Any]:
        now = ctx.now()
        row = await _fleet_bot(conn, p, handle)
        reported = {w["thread"]: w for w in fleet_view.bot_status(row["status"])["worktrees"]}
        worktree = reported.get(thread_id)
        if worktree is None:
            raise NotFound(f"worktree of {row['handle']} for thread {thread_id}")
        if worktree["state"] != "kept":
            raise InvalidArgument(
                f"{row['handle']}'s worktree for thread {thread_id} is {worktree['state'] or 'not kept'}; "
                "only a kept one is removed here (a live one ends with its claim).",
                field="thread",
            )
        order_id = await store.insert_order(
            conn, row["machine_id"], row["handle"], REMOVE_WORKTREE, p.handle, now, thread_id
        )
        await audit.record(
            conn,
            ctx,
            p,
            "fleet.remove_worktree",
            row["handle"],
            workspace=row["workspace"],
            details={
                "machine": row["machine"],
                "order": order_id,
                "thread": thread_id,
                "path": worktree["path"],
            },
        )
        _changed()
        return {
            "handle": row["handle"],
            "thread": thread_id,
            "order": {"id": order_id, "kind": REMOVE_WORKTREE, "target": thread_id},
        }

    return await ctx.db.write(write)


#: What a record said gone reads: its folder was removed without the board (by hand, most likely).
GONE_DETAIL = "Its folder was removed outside the board; the branch and its commits stay."


async def worktree_gone(ctx: Context, p: Principal, handle: str, thread_id: int) -> dict[str, Any]:
    """A bot's kept worktree whose folder is gone: its record becomes ``removed``, the rest kept.

    Said by the bot's daemon (its own) or the keeper of the machine it is assigned to,
    whichever notices first; a record already removed stays as it is. Not audited: like
    the record itself, it is the machine's report of what is on its disk.
    """
    actions.require(p, "fleet.worktree_gone")

    async def write(conn: Connection) -> dict[str, Any]:
        if p.is_keeper:
            agent_id = scope.require_on_machine(p, await store.bot(conn, handle), "bot")["agent_id"]
        elif handle.lower() == p.handle.lower():
            agent_id = p.agent_id
        else:
            raise Forbidden(f"Only @{handle}'s daemon or its keeper may say its worktree is gone.")
        found = await worktree_store.of_thread(conn, thread_id, agent_id)
        if not found:
            raise NotFound(f"worktree of {handle} for thread {thread_id}")
        record = found[0]
        if record["state"] in ("waiting", "live"):
            raise InvalidArgument(
                f"{record['bot']}'s worktree for thread {thread_id} is {record['state']}; only a kept "
                "one is said gone here (a live one is its daemon's to make again).",
                field="thread",
            )
        if record["state"] == "kept":
            await worktree_store.set_state(conn, thread_id, record["bot"], "removed", ctx.now(), GONE_DETAIL)
            (record,) = await worktree_store.of_thread(conn, thread_id, agent_id)
        return worktrees.record_dict(record)

    return await ctx.db.write(write)


async def _take_off(conn: Connection, ctx: Context, p: Principal, row: Any, reason: str = "") -> None:
    """Take one bot off its machine (its keeper stops it) and revoke its tokens, audited."""
    await store.unassign(conn, row["agent_id"])
    revoked = await identity_store.revoke_tokens(conn, row["agent_id"], "bot", ctx.now())
    await audit.record(
        conn,
        ctx,
        p,
        "fleet.unassign",
        row["handle"],
        workspace=row["workspace"],
        reason=reason,
        details={"machine": row["machine"], "tokens_revoked": revoked},
    )


async def unassign(ctx: Context, p: Principal, handle: str) -> dict[str, Any]:
    """Take a bot off its machine (its keeper stops it) and revoke its tokens."""
    actions.require(p, "fleet.unassign")

    async def write(conn: Connection) -> tuple[int, dict[str, Any]]:
        row = await _fleet_bot(conn, p, handle)
        await _take_off(conn, ctx, p, row)
        _changed()
        return row["agent_id"], {"handle": row["handle"], "machine": row["machine"], "unassigned": True}

    agent_id, answer = await ctx.db.write(write)
    ctx.tokens.forget_agent(agent_id)
    return answer


async def remove_machine(ctx: Context, p: Principal, name: str) -> dict[str, Any]:
    """Forget a machine: its bots are unassigned first (their tokens revoked), then its keeper's token.

    One write, so a removal is whole or nothing. The keeper's next report is refused
    (``UNAUTHENTICATED``) and it stops the bots it ran (docs/fleet.md).
    """
    actions.require(p, "fleet.remove_machine")

    async def write(conn: Connection) -> tuple[int, list[int], dict[str, Any]]:
        machine = await store.machine_by_name(conn, name)
        if machine is None:
            raise NotFound("machine")
        bots = await store.bots_of(conn, [machine["id"]])
        for row in bots:
            await _take_off(conn, ctx, p, row, reason="its machine was removed")
        await store.remove_machine(conn, machine["id"])
        handles = [row["handle"] for row in bots]
        await audit.record(conn, ctx, p, "fleet.machine.remove", machine["name"], details={"bots": handles})
        _changed()
        answer = {"machine": machine["name"], "removed": True, "unassigned": handles}
        return machine["id"], [row["agent_id"] for row in bots], answer

    machine_id, agent_ids, answer = await ctx.db.write(write)
    ctx.tokens.forget_agent(-machine_id)  # its keeper stops at once, as after enrolling again
    for agent_id in agent_ids:
        ctx.tokens.forget_agent(agent_id)
    return answer
