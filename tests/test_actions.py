"""Every action of the table walked with each kind of caller: who is refused, with what, and that
a refusal changes nothing, through a route of one role and through its service alone.

The refusals are written out here as the board has always given them: the table
may not change a message without this test saying so.
"""

from __future__ import annotations

import ast
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import make_mocked_request

from board.client import BoardAPIError, BoardClient
from board.server.api.responses import ANY_OBJECT
from board.server.api.route import Answer, Call, Route
from board.server.api.table import all_routes
from board.server.errors import Forbidden
from board.server.pipeline import Answer as Answered
from board.server.pipeline import perform
from board.server.principal import Principal
from board.server.services import (
    actions,
    audit,
    auth,
    backups,
    fleet,
    intake,
    preview,
    routines,
    sessions,
    wakes,
    workspaces,
    worktrees,
)
from board.server.services.context import Context
from tests.support.boardtest import Board, Where, World, db_rows, snapshot
from tests.support.fleettest import keeper_with_bots

SERVER = Path(__file__).resolve().parent.parent / "board" / "server"

HUMAN = Principal(1, "alice", "human")
BOT = Principal(2, "pb", "bot", 10, "proj")
ADMIN_BOT = Principal(3, "ab", "bot", 11, "admin")
KEEPER = Principal(-4, "keeper:box1", "keeper")
RUNNER = Principal(5, "board", "system")
CALLERS = {"human": HUMAN, "bot": BOT, "admin_bot": ADMIN_BOT, "keeper": KEEPER, "runner": RUNNER}

#: A claim held by someone else than every caller above, on thread 7.
FACTS = {"claim": {"state": "claimed", "holder_id": 99, "holder": "pb2"}, "thread": 7}

EVERYONE_BUT = set(CALLERS).difference
ROUTINE = "a routine; bots propose, humans decide."

#: action -> (the callers it allows on FACTS, the refusal everyone else gets).
EXPECTED: dict[str, tuple[set[str], str]] = {
    "invite.create": ({"human"}, "Only a human may invite bots."),
    "bot.revoke_token": ({"human"}, "Only a human may revoke a bot's token."),
    "message.preview": ({"human"}, "Only a human previews messages; a bot posts what it means."),
    "token.manage": ({"human"}, "Only a human manages API tokens here."),
    "password.set": ({"human"}, "Only a human has a password."),
    "notifications": ({"human"}, "Browser notifications are a human's; a bot reads its inbox."),
    "notify.manage": (
        {"human"},
        "Notification destinations are a human's; a bot can neither read nor set one.",
    ),
    "workspace.create": ({"human"}, "Only a human may create workspaces."),
    "workspace.update": ({"human"}, "Only a human may change workspace settings."),
    "workspace.archive": ({"human"}, "Only a human may archive workspaces."),
    "workspace.delete": ({"human"}, "Only a human may delete workspaces."),
    "workspace.set_bots": ({"human"}, "Only a human may change workspace membership."),
    "claim.release": ({"human"}, "Only the holder (pb2) or a human may release this claim."),
    "claim.handoff": ({"human"}, "Only the holder (pb2) or a human may hand off this claim."),
    "claim.close": ({"human"}, "Only the holder (pb2) or a human may close this claim."),
    "thread.close_unclaimed": ({"human"}, "Claim thread 7 before closing it."),
    "wake.feed": ({"bot", "admin_bot"}, "The wake feed is a bot's; humans read /api/inbox."),
    "wake.record": ({"bot", "admin_bot"}, "Wakes are recorded by a bot's launcher, with the bot's token."),
    "thread.worktree": (
        {"bot", "admin_bot"},
        "A thread's worktree is recorded by its bot's daemon, with the bot's token.",
    ),
    "skill.write": (
        {"human", "admin_bot"},
        "Only humans and admin bots write skills; ask one in the admin workspace.",
    ),
    "profile.write": ({"human"}, "Only a human writes profiles."),
    "budget.set": ({"human"}, "Only a human may change or lift a bot's budget."),
    "kb.review": ({"human"}, "Only a human reviews knowledge."),
    "kb.redact": ({"human"}, "Only a human redacts knowledge."),
    "routine.propose": (EVERYONE_BUT({"runner"}), "The runner runs approved routines; it proposes none."),
    "routine.approve": ({"human"}, f"Only a human may approve {ROUTINE}"),
    "routine.reject": ({"human"}, f"Only a human may reject {ROUTINE}"),
    "routine.pause": ({"human"}, f"Only a human may pause {ROUTINE}"),
    "routine.resume": ({"human"}, f"Only a human may resume {ROUTINE}"),
    "routine.run_now": ({"human"}, f"Only a human may run {ROUTINE}"),
    "routine.step_run": (
        {"runner"},
        "Runs are created and finished by the routines runner (board routines run).",
    ),
    "fleet.enroll_code": ({"human"}, "Only a human may add a machine."),
    "fleet.view": ({"human"}, "Only a human may see the fleet."),
    "fleet.assign": ({"human"}, "Only a human may assign bots to machines."),
    "fleet.order": ({"human"}, "Only a human may start, stop or restart bots."),
    "fleet.remove_worktree": ({"human"}, "Only a human may remove a bot's kept worktree."),
    "fleet.unassign": ({"human"}, "Only a human may unassign bots."),
    "fleet.remove_machine": ({"human"}, "Only a human may remove a machine."),
    "fleet.worktree_gone": (
        {"bot", "admin_bot", "keeper"},
        "A worktree's folder is said gone by its bot's daemon or by its keeper.",
    ),
    "fleet.keeper_call": ({"keeper"}, "Only a machine's keeper (a bk_ token) makes this call."),
    "audit.read": ({"human"}, "Only a human may read the audit log."),
    "backup.take": ({"human"}, "Only a human may take a backup."),
    "intake.manage": ({"human"}, "Only a human manages the forge's intake: its secrets and tokens."),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_action_allows_and_refuses_as_it_always_has(name: str) -> None:
    allowed, refusal = EXPECTED[name]
    for who, p in CALLERS.items():
        if who in allowed:
            actions.require(p, name, **FACTS)
            continue
        with pytest.raises(Forbidden) as refused:
            actions.require(p, name, **FACTS)
        assert (refused.value.status, refused.value.code) == (403, "FORBIDDEN")
        assert refused.value.message == refusal, f"{name} as {who}"


def test_every_action_is_walked() -> None:
    assert set(actions.ACTIONS) == set(EXPECTED)


def test_a_claims_holder_may_act_on_it_and_anyone_on_one_that_is_done() -> None:
    held = {"state": "claimed", "holder_id": BOT.agent_id, "holder": "pb"}
    done = {"state": "done", "holder_id": 99, "holder": "pb2"}
    for name in ("claim.release", "claim.handoff", "claim.close"):
        assert actions.allowed(BOT, name, claim=held)
        assert not actions.allowed(ADMIN_BOT, name, claim=held)
        assert actions.allowed(ADMIN_BOT, name, claim=done)  # the service answers it (nothing to do)


def _strings_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def test_every_action_is_asked_for_and_every_ask_is_in_the_table() -> None:
    """No dead row in the table, and no ``require`` naming an action the table lacks."""
    named: set[str] = set()
    for path in SERVER.rglob("*.py"):
        if path.name != "actions.py":
            named |= _strings_in(path)
    assert set(actions.ACTIONS) - named == set()
    for path in SERVER.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("require", "allowed", "only")
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "actions"
            ):
                literal = [a for a in node.args if isinstance(a, ast.Constant)]
                for arg in literal:
                    assert arg.value in actions.ACTIONS, f"{path.name}:{node.lineno}: {arg.value!r}"


def test_a_route_of_one_role_is_never_open_without_a_token() -> None:
    for route in all_routes():
        if route.role is not None:
            assert not route.public and not route.loopback, f"{route.method} {route.path}"
            assert route.role.rule in actions.ROLES


# -- on a live board -------------------------------------------------------------------


async def test_a_route_of_one_role_never_runs_its_handler_for_another_caller(board: Board) -> None:
    """The pipeline enforces a route's role before the handler (and so its service) is called."""
    ran: list[Principal] = []

    async def handler(call: Call) -> Any:
        ran.append(call.p)
        return {}

    route = Route(
        "POST",
        "/api/workspaces",
        handler,
        "x",
        answer=Answer(ANY_OBJECT),
        role=actions.only("workspace.create"),
    )
    request = make_mocked_request("POST", "/api/workspaces", app=board.app)

    class Given:
        def __init__(self, principal: Principal) -> None:
            self.request = request
            self.call = Call(request, board.ctx, principal)

        async def parse(self) -> tuple[Call, None]:
            return self.call, None

    with pytest.raises(Forbidden) as refused:
        await perform(board.ctx, BOT, route, Given(BOT))
    assert refused.value.message == "Only a human may create workspaces."
    assert ran == []
    assert await perform(board.ctx, HUMAN, route, Given(HUMAN)) == Answered(200, {})
    assert ran == [HUMAN]


def contents(where: Where) -> dict[str, list[str]]:
    """Every row of every table (of agents, all but when each was last seen: any call writes it)."""
    found = {}
    for table in snapshot(where):
        columns = "id, handle, kind, workspace_id, description" if table == "agents" else "*"
        found[table] = sorted(repr(row) for row in db_rows(where, f"SELECT {columns} FROM {table}"))
    return found


#: A body each route of one role would act on, were its caller let through.
BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/api/invites"): {"workspace": "proj"},
    ("POST", "/api/workspaces"): {"slug": "fresh"},
    ("POST", "/api/preview"): {"body": "hi"},
    ("POST", "/api/fleet/enroll-codes"): {"machine_name": "box9"},
    ("POST", "/api/fleet/report"): {"interval": 5},
    ("POST", "/api/fleet/bots"): {"machine": "box1", "profile": "proj-dev", "handle": "fb2"},
    ("POST", "/api/wakes"): {"harness": "claude", "started_at": "2026-11-30T04:00:00Z", "outcome": "ok"},
    ("PUT", "/api/agents/{handle}/budget"): {"lift": True},
    ("PUT", "/api/threads/{id}/worktree"): {"state": "waiting"},
    ("PUT", "/api/intake/sources/{name}"): {"forge": "github", "secret": "a webhook secret of length"},
    ("POST", "/api/routines/{name}/runs"): {"version": 1, "scheduled_for": "2026-12-01T04:00:00Z"},
    ("POST", "/api/destinations"): {"name": "hook", "kind": "ntfy", "url": "http://127.0.0.1:9/t"},
    ("PATCH", "/api/destinations/{id}"): {"name": "renamed"},
    ("PUT", "/api/destinations/{id}/kinds"): {"kinds": ["mention"]},
    ("PUT", "/api/quiet-hours"): {"start": "22:00", "end": "07:00"},
}


def _path(template: str) -> str:
    for name, value in {"handle": "fb", "name": "nightly", "id": "1"}.items():
        template = template.replace("{" + name + "}", value)
    return template


async def test_a_route_of_one_role_refuses_every_other_caller_and_changes_nothing(world: World) -> None:
    """Over HTTP each caller outside the route's role is FORBIDDEN with the action's refusal."""
    board = world.board
    keeper = await keeper_with_bots(world, "box1", "fb")
    runner = board.client(await auth.runner_token(board.ctx))
    callers: dict[str, BoardClient] = {
        "human": world.human,
        "bot": world.bot,
        "admin_bot": world.admin_bot,
        "keeper": keeper.client,
        "runner": runner,
    }
    walked = 0
    before = contents(board.db_path)
    for route in all_routes():
        if route.role is None:
            continue
        allowed, refusal = EXPECTED[route.role.name]
        for who, client in callers.items():
            if who in allowed:
                continue
            with pytest.raises(BoardAPIError) as refused:
                body = None if route.method == "GET" else BODIES.get((route.method, route.path), {})
                await client.call(route.method, _path(route.path), json=body)
            assert (refused.value.status, refused.value.code) == (403, "FORBIDDEN"), (route.path, who)
            if who in ("human", "bot", "admin_bot"):  # a keeper's or runner's token is refused sooner
                assert refused.value.message == refusal, f"{route.method} {route.path} as {who}"
            walked += 1
    assert walked >= 17 * 3
    assert contents(board.db_path) == before, "a refused call changed rows"


Service = Callable[[Context, Principal], Awaitable[Any]]

#: The actions the pages and MCP reach without a route of one role in front: their services alone.
SERVICES: dict[str, Service] = {
    "invite.create": lambda ctx, p: auth.create_invite(ctx, p, auth.InviteRequest(workspace="proj")),
    "bot.revoke_token": lambda ctx, p: auth.revoke_bot_token(ctx, p, "pb2"),
    "token.manage": lambda ctx, p: auth.create_own_token(ctx, p, auth.NewToken()),
    "password.set": lambda ctx, p: sessions.set_password(ctx, p, "", "a long new password", "cookie"),
    "workspace.create": lambda ctx, p: workspaces.create(ctx, p, workspaces.NewWorkspace(slug="fresh")),
    "workspace.update": lambda ctx, p: workspaces.patch(ctx, p, "proj", workspaces.WorkspacePatch(name="X")),
    "workspace.archive": lambda ctx, p: workspaces.archive(ctx, p, "proj"),
    "workspace.set_bots": lambda ctx, p: workspaces.set_bots(
        ctx, p, "proj", workspaces.BotMembership(bots=["pb", "pb2", "ob"])
    ),
    "fleet.enroll_code": lambda ctx, p: fleet.create_enroll_code(
        ctx, p, fleet.EnrollCodeRequest(machine_name="box9"), "http://board"
    ),
    "fleet.view": lambda ctx, p: fleet.fleet(ctx, p, fleet.FleetQuery()),
    "fleet.order": lambda ctx, p: fleet.order(ctx, p, "pb", "stop"),
    "fleet.unassign": lambda ctx, p: fleet.unassign(ctx, p, "pb"),
    "fleet.remove_worktree": lambda ctx, p: fleet.remove_worktree(ctx, p, "pb", 1),
    "fleet.remove_machine": lambda ctx, p: fleet.remove_machine(ctx, p, "box1"),
    "fleet.keeper_call": lambda ctx, p: fleet.mint_bot_token(ctx, p, "pb"),
    "fleet.worktree_gone": lambda ctx, p: fleet.worktree_gone(ctx, p, "pb", 1),
    "routine.step_run": lambda ctx, p: routines.start_run(ctx, p, "nightly", 1),
    "audit.read": lambda ctx, p: audit.entries(ctx, p, audit.AuditQuery()),
    "message.preview": lambda ctx, p: preview.preview(ctx, p, preview.PreviewRequest(body="hi")),
    "backup.take": lambda ctx, p: backups.take(ctx, p),
    "intake.manage": lambda ctx, p: intake.list_sources(ctx, p, intake.SourceList()),
    "wake.record": lambda ctx, p: wakes.record_wake(
        ctx, p, wakes.WakeRecord(harness="claude", started_at="2026-11-30T04:00:00Z", outcome="ok")
    ),
    "thread.worktree": lambda ctx, p: worktrees.record(ctx, p, 1, worktrees.WorktreeRecord(state="waiting")),
}


async def test_the_services_refuse_on_their_own_and_change_nothing(board: Board, world: World) -> None:
    """Called as the pages and MCP call them, with no route's role in front: the same refusals."""
    bot = await auth.authenticate(board.ctx, world.bot.token)
    human = await auth.authenticate(board.ctx, world.human.token)
    before = contents(board.db_path)
    for name, service in SERVICES.items():
        allowed, refusal = EXPECTED[name]
        p = human if "human" not in allowed else bot
        with pytest.raises(Forbidden) as refused:
            await service(board.ctx, p)
        assert refused.value.message == refusal, name
    assert contents(board.db_path) == before, "a refused call changed rows"
