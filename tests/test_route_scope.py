"""Walk the application's route table: every route has a decision for every role.

Each route gets a representative call on a freshly populated board, made by a
human, a bot of the workspace, an admin bot, a bot of another workspace, the
keeper of a machine, the keeper of another machine, the routines runner and an
anonymous caller, in
the order of ROLE_ORDER (refusals first, so a success does not change what a
later role sees unless the row says so). A route added to the app without a row
here fails ``test_every_route_has_a_decision``.

Keepers can do nothing but the fleet calls: unless a row says otherwise, a
keeper gets FORBIDDEN where anonymous callers get UNAUTHENTICATED, and what
anyone gets on a public route. ``test_keeper_refused_outside_the_fleet`` walks
every route of the app, the ones decided elsewhere too.

The runner (token ``br_``) holds the board's own agent but reads routines and
steps their runs, nothing else: every route's runner decision is
:func:`runner_decision`, and ``test_runner_refused_outside_its_runs`` walks
every route (API, ``/mcp``, fleet, installer, pages) with its token.

A route of one role (``Route(role=...)``, e.g. humans only) is not restated
here: its row names what the role's callers get, and every other role's
FORBIDDEN (UNAUTHENTICATED without a token) is read from the route table
(:func:`with_role`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from board.client import BoardAPIError, BoardClient
from board.server import package
from board.server.api import table
from board.server.services import auth
from tests.support.boardtest import Board, World, populate, snapshot, start_board, stop_board
from tests.support.fleettest import Keeper, keeper_with_bots
from tests.support.scope_knowledge import KNOWLEDGE_DECISIONS
from tests.support.scope_pages import PAGE_DECISIONS
from tests.support.scope_registry import REGISTRY_DECISIONS
from tests.support.scope_routines import ROUTINE_DECISIONS

ROLE_ORDER = ("anon", "runner", "other_keeper", "keeper", "other_bot", "admin_bot", "bot", "human")
KEEPERS = ("keeper", "other_keeper")
OK = {200, 201}


@dataclass
class Case:
    """One representative call of a route and what each role gets."""

    expect: dict[str, int | set[int]]
    path: dict[str, str] = field(default_factory=dict)  # path parameter -> placeholder key
    body: Callable[[str, dict[str, Any]], Any] | None = None
    params: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    prepare: Callable[[World, dict[str, Any]], Awaitable[None]] | None = None


def everyone(status: int | set[int], anon: int = 401) -> dict[str, int | set[int]]:
    return {"human": status, "bot": status, "admin_bot": status, "other_bot": status, "anon": anon}


def scoped(status: int | set[int] = 200) -> dict[str, int | set[int]]:
    """Visible to the workspace's bot, admin bots and humans; NOT_FOUND to another workspace."""
    return {"human": status, "bot": status, "admin_bot": status, "other_bot": 404, "anon": 401}


MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
Expect = dict[str, int | set[int]]
HUMAN: Expect = {"human": OK}  # the route's role refuses everyone else (with_role)
HUMANS_ON_PROJ: Expect = {"human": OK, "bot": 403, "admin_bot": 403, "other_bot": 404, "anon": 401}


async def a_destination(world: World, facts: dict[str, Any]) -> None:
    made = await world.human.create_destination("phone", "ntfy", url="http://127.0.0.1:9/topic")
    facts["destination"] = made["id"]


async def claim_by_bot(world: World, facts: dict[str, Any]) -> None:
    await world.bot.claim(facts["root"])


async def kept_by_bot(world: World, facts: dict[str, Any]) -> None:
    await world.bot.set_worktree(facts["root"], state="kept", branch="bot/pb/t1", base="main", ahead=1)


async def two_for_each_bot(world: World, facts: dict[str, Any]) -> None:
    """A backlog past ``limit=1`` for every bot: its wake stream ends (``end: more``) and so answers."""
    for handle, workspace in (("pb", "proj"), ("ab", "admin"), ("ob", "other")):
        for n in range(2):
            await world.human.post(f"@{handle} {n}", channel="general", workspace=workspace)


async def archived_workspace(world: World, facts: dict[str, Any]) -> None:
    await world.human.create_workspace("gone")
    await world.human.archive_workspace("gone")


async def intake_source(world: World, facts: dict[str, Any]) -> None:
    mapping = {"repository": "acme/app", "workspace": "proj", "channel": "issues"}
    source = {"forge": "github", "secret": "a webhook secret of length", "mappings": [mapping]}
    await world.human.request("PUT", "/api/intake/sources/gh", json=source)


def wake_body(role: str, facts: dict[str, Any]) -> Any:
    return {
        "harness": "claude",
        "started_at": "2026-11-30T04:00:00Z",
        "outcome": "ok",
        "trigger_ids": [facts["root"]],  # a message of proj: another workspace's bot may not name it
    }


CASES: dict[tuple[str, str], Case] = {
    ("GET", "/healthz"): Case(everyone(200, anon=200)),
    ("GET", "/api"): Case(everyone(200)),
    ("GET", "/api/openapi.json"): Case(everyone(200, anon=200)),
    ("GET", "/llms.txt"): Case(everyone(200, anon=200)),
    ("GET", "/agents.md"): Case(everyone(200, anon=200)),
    ("GET", "/admin.md"): Case(everyone(200, anon=200)),
    ("GET", "/metrics"): Case(everyone(200, anon=200)),  # loopback may read metrics
    ("GET", "/install.sh"): Case(everyone(200, anon=200)),
    ("GET", "/install/{name}"): Case(everyone(200, anon=200), path={"name": "wheel"}),
    ("POST", "/api/agents"): Case(
        everyone(201, anon=201),
        body=lambda role, f: {"handle": f"new-{role}", "invite": f["invite"]},
    ),
    ("GET", "/api/me"): Case(everyone(200)),
    ("POST", "/api/me/rotate"): Case(everyone(200)),
    ("GET", "/api/agents"): Case(everyone(200)),
    ("GET", "/api/agents/{handle}"): Case(scoped(), path={"handle": "bot_handle"}),
    ("POST", "/api/invites"): Case(HUMAN, body=lambda r, f: {"workspace": "proj"}),
    ("DELETE", "/api/agents/{handle}/token"): Case(HUMAN, path={"handle": "peer_handle"}),
    # A human sets any bot's budget; the bot itself is refused by the route's role.
    ("PUT", "/api/agents/{handle}/budget"): Case(
        HUMAN, path={"handle": "bot_handle"}, body=lambda r, f: {"budget_wakes": 5}
    ),
    ("GET", "/api/workspaces"): Case(
        {"human": 200, "admin_bot": 200, "bot": 403, "other_bot": 403, "anon": 401}
    ),
    ("POST", "/api/workspaces"): Case(HUMAN, body=lambda r, f: {"slug": "fresh"}),
    ("GET", "/api/workspaces/{slug}"): Case(scoped(), path={"slug": "proj"}),
    ("PATCH", "/api/workspaces/{slug}"): Case(
        HUMANS_ON_PROJ, path={"slug": "proj"}, body=lambda r, f: {"name": "Renamed"}
    ),
    ("POST", "/api/workspaces/{slug}/archive"): Case(HUMANS_ON_PROJ, path={"slug": "proj"}),
    ("DELETE", "/api/workspaces/{slug}"): Case(
        {"human": 200, "bot": 404, "admin_bot": 403, "other_bot": 404, "anon": 401},
        path={"slug": "gone"},
        body=lambda r, f: {"confirm": "gone"},
        prepare=archived_workspace,
    ),
    ("PUT", "/api/workspaces/{slug}/bots"): Case(
        HUMANS_ON_PROJ, path={"slug": "proj"}, body=lambda r, f: {"bots": ["pb", "pb2", "fb"]}
    ),
    ("GET", "/api/channels"): Case(scoped(), params={"workspace": "proj"}),
    ("POST", "/api/channels"): Case(
        scoped(201), body=lambda role, f: {"slug": f"c-{role}", "workspace": "proj"}
    ),
    ("PATCH", "/api/channels/{slug}"): Case(
        scoped(), path={"slug": "lobby"}, body=lambda r, f: {"topic": "t", "workspace": "proj"}
    ),
    ("GET", "/api/conversations"): Case(everyone(200)),
    ("POST", "/api/conversations"): Case(
        scoped(OK), body=lambda r, f: {"participants": ["pb2"], "workspace": "proj"}
    ),
    ("POST", "/api/messages"): Case(
        scoped(201), body=lambda r, f: {"channel": "lobby", "workspace": "proj", "body": "hi"}
    ),
    ("GET", "/api/messages"): Case(scoped(), params={"workspace": "proj"}),
    ("GET", "/api/messages/{id}"): Case(scoped(), path={"id": "root"}),
    ("GET", "/api/threads/{id}"): Case(scoped(), path={"id": "root"}),
    ("GET", "/api/inbox"): Case(everyone(200)),
    ("GET", "/api/inbox/threads"): Case(everyone(200)),
    # Only the bot has the root in its inbox: a thread with nothing of it in yours is not found.
    ("POST", "/api/inbox/mark"): Case(
        {"human": 404, "bot": 200, "admin_bot": 404, "other_bot": 404, "anon": 401},
        body=lambda r, f: {"thread_id": f["root"], "state": "seen"},
    ),
    ("GET", "/api/notifications"): Case(HUMAN),
    ("PUT", "/api/notifications"): Case(HUMAN, body=lambda r, f: {"dm": False}),
    ("GET", "/api/destinations"): Case(HUMAN),
    ("POST", "/api/destinations"): Case(
        {"human": 201}, body=lambda r, f: {"name": r, "kind": "ntfy", "url": "http://127.0.0.1:9/t"}
    ),
    ("GET", "/api/destinations/{id}"): Case(HUMAN, path={"id": "destination"}, prepare=a_destination),
    ("PATCH", "/api/destinations/{id}"): Case(
        HUMAN, path={"id": "destination"}, body=lambda r, f: {"name": "n"}, prepare=a_destination
    ),
    ("DELETE", "/api/destinations/{id}"): Case(HUMAN, path={"id": "destination"}, prepare=a_destination),
    ("PUT", "/api/destinations/{id}/kinds"): Case(
        HUMAN, path={"id": "destination"}, body=lambda r, f: {"kinds": ["dm"]}, prepare=a_destination
    ),
    ("POST", "/api/destinations/{id}/test"): Case(
        {"human": 201}, path={"id": "destination"}, prepare=a_destination
    ),
    ("GET", "/api/destinations/{id}/notifications"): Case(
        HUMAN, path={"id": "destination"}, prepare=a_destination
    ),
    ("PUT", "/api/quiet-hours"): Case(HUMAN, body=lambda r, f: {"start": "22:00", "end": "07:00"}),
    ("DELETE", "/api/quiet-hours"): Case(HUMAN),
    ("GET", "/api/search"): Case(everyone(200), params={"q": "hello"}),
    ("POST", "/api/preview"): Case(HUMAN, body=lambda r, f: {"body": "**hi** @pb"}),
    ("POST", "/api/receipts"): Case(
        {"human": 404, "bot": 200, "admin_bot": 404, "other_bot": 404, "anon": 401},
        body=lambda r, f: {"message_ids": [f["root"]], "state": "seen"},
    ),
    ("POST", "/api/threads/{id}/claim"): Case(
        {"human": 409, "bot": 409, "admin_bot": 201, "other_bot": 404, "anon": 401},
        path={"id": "root"},
        body=lambda r, f: {},
    ),
    ("POST", "/api/threads/{id}/release"): Case(
        {"human": 422, "bot": 200, "admin_bot": 403, "other_bot": 404, "anon": 401},
        path={"id": "root"},
        body=lambda r, f: {},
        prepare=claim_by_bot,
    ),
    ("POST", "/api/threads/{id}/handoff"): Case(
        {"human": 200, "bot": 200, "admin_bot": 403, "other_bot": 404, "anon": 401},
        path={"id": "root"},
        body=lambda r, f: {"to": "pb2"},
        prepare=claim_by_bot,
    ),
    ("POST", "/api/threads/{id}/done"): Case(
        {"human": 200, "bot": 200, "admin_bot": 403, "other_bot": 404, "anon": 401},
        path={"id": "root"},
        body=lambda r, f: {"summary": "ok"},
        prepare=claim_by_bot,
    ),
    # A bot's record of its worktree for a thread: a bot that reads the thread (HUMAN: the role's 403).
    ("PUT", "/api/threads/{id}/worktree"): Case(
        {"bot": 200, "admin_bot": 200, "other_bot": 404},
        path={"id": "root"},
        body=lambda r, f: {
            "state": "live",
            "branch": f"bot/{r}/t1",
            "base": "main",
            "path": "/srv/r.worktrees/x",
        },
    ),
    ("GET", "/api/claims"): Case(everyone(200)),
    ("POST", "/api/wakes"): Case({"bot": 201, "admin_bot": 201, "other_bot": 404}, body=wake_body),
    ("GET", "/api/wakes"): Case(everyone(200)),
    ("GET", "/api/costs"): Case(scoped(), params={"workspace": "proj"}),  # a bot of other: NOT_FOUND
    ("GET", "/api/wake"): Case({"bot": 200, "admin_bot": 200, "other_bot": 200}),
    ("GET", "/api/wake/stream"): Case(
        {"bot": 200, "admin_bot": 200, "other_bot": 200},
        params={"since": "0", "limit": "1"},
        prepare=two_for_each_bot,
    ),
    ("GET", "/api/audit"): Case(HUMAN),
    # The fleet: humans steer it, each keeper speaks for its own machine only.
    ("POST", "/api/fleet/enroll-codes"): Case(HUMAN, body=lambda r, f: {"machine_name": f"m-{r}"}),
    ("POST", "/api/fleet/enroll"): Case(
        {**everyone(201, anon=201), "keeper": 201, "other_keeper": 201},
        body=lambda role, f: {"code": f["codes"][role], "hostname": role},
    ),
    ("POST", "/api/fleet/report"): Case(
        {"keeper": 200, "other_keeper": 200}, body=lambda r, f: {"interval": 5}
    ),
    ("GET", "/api/fleet"): Case({"human": 200}),
    ("POST", "/api/fleet/bots"): Case(
        HUMAN,
        body=lambda role, f: {"machine": "box1", "profile": "proj-dev", "handle": f"fleet-{role}"},
    ),
    **{
        ("POST", f"/api/fleet/bots/{{handle}}/{kind}"): Case(HUMAN, path={"handle": "fleet_bot"})
        for kind in ("start", "stop", "restart")
    },
    ("DELETE", "/api/fleet/bots/{handle}"): Case(HUMAN, path={"handle": "fleet_bot"}),
    # A human's call reaches the service: fb's keeper reported no kept worktree for the thread.
    ("POST", "/api/fleet/bots/{handle}/worktrees/{id}/remove"): Case(
        {"human": 404}, path={"handle": "fleet_bot", "id": "root"}
    ),
    # A kept worktree's folder gone: only the bot itself (pb's record, kept) or its keeper says so;
    # pb is on no machine, so both keepers get NOT_FOUND.
    ("POST", "/api/fleet/bots/{handle}/worktrees/{id}/gone"): Case(
        {
            "human": 403,
            "bot": 200,
            "admin_bot": 403,
            "other_bot": 403,
            "keeper": 404,
            "other_keeper": 404,
            "anon": 401,
        },
        path={"handle": "bot_handle", "id": "root"},
        prepare=kept_by_bot,
    ),
    ("DELETE", "/api/fleet/machines/{name}"): Case(HUMAN, path={"name": "box1"}),  # with fb on it
    ("POST", "/api/fleet/bots/{handle}/token"): Case(
        {"keeper": 201, "other_keeper": 404}, path={"handle": "fleet_bot"}
    ),
    ("POST", "/api/admin/backup"): Case(HUMAN),
    # A forge's webhook: no token opens it, whoever holds one; the signature of the body under
    # the source's secret is its one credential (the signed calls: tests/intake/).
    ("POST", "/api/intake/{source}"): Case(
        {**everyone(401, anon=401), "keeper": 401, "other_keeper": 401, "runner": 401},
        path={"source": "gh"},
        body=lambda r, f: {"action": "opened", "issue": {"number": 1}},
        prepare=intake_source,
    ),
    ("GET", "/api/intake/sources"): Case(HUMAN),
    ("PUT", "/api/intake/sources/{name}"): Case(
        HUMAN,
        path={"name": "gh"},
        body=lambda r, f: {
            "forge": "github",
            "secret": "a webhook secret of length",
            "mappings": [{"repository": "acme/app", "workspace": "proj", "channel": "issues", "bot": "pb"}],
        },
    ),
    ("DELETE", "/api/intake/sources/{name}"): Case(HUMAN, path={"name": "gh"}, prepare=intake_source),
    ("GET", "/api/intake/deliveries"): Case(HUMAN),
    # MCP over streamable HTTP: a tool list for any token; what each tool may reach is the
    # route's own decision, proved through the tools in test_mcp.py.
    ("POST", "/mcp"): Case(
        everyone(200),
        body=lambda r, f: {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        headers=MCP_HEADERS,
    ),
    ("GET", "/mcp"): Case(everyone(405), headers=MCP_HEADERS),
    ("DELETE", "/mcp"): Case(everyone(405), headers=MCP_HEADERS),
}


def decided_elsewhere() -> set[tuple[str, str]]:
    """Routes whose per-role decisions live beside their concept's own walk of the table."""
    return {*KNOWLEDGE_DECISIONS, *REGISTRY_DECISIONS, *ROUTINE_DECISIONS, *PAGE_DECISIONS}


def registered_routes(board_app: Any) -> set[tuple[str, str]]:
    return {
        (route.method, route.resource.canonical)
        for route in board_app.router.routes()
        if route.method != "HEAD"
    }


async def test_every_route_has_a_decision(board: Board) -> None:
    decided = set(CASES) | decided_elsewhere()
    missing = registered_routes(board.app) - decided
    assert not missing, f"routes without a scope decision: {sorted(missing)}"
    stale = decided - registered_routes(board.app)
    assert not stale, f"decisions for routes that no longer exist: {sorted(stale)}"
    undecided = [key for key in sorted(registered_routes(board.app)) if runner_decision(key) is None]
    assert not undecided, f"routes open to the runner without a decision for it: {undecided}"


def _explicit_runner_decisions() -> dict[tuple[str, str], int | set[int]]:
    found: dict[tuple[str, str], int | set[int]] = {
        key: case.expect["runner"] for key, case in CASES.items() if "runner" in case.expect
    }
    found.update({key: decision["runner"] for key, decision in ROUTINE_DECISIONS.items()})
    return found


#: The runner's decision on a public route or a page: what a caller without a token gets.
AS_ANYONE = "as anyone"


def runner_decision(key: tuple[str, str]) -> int | set[int] | str | None:
    """What the runner's token gets on a route; None for a route opened to it without a decision.

    A route the table opens to the runner (``runner=True``) must say what the runner
    gets there; every other route refuses it (FORBIDDEN), but for the public ones
    (what anyone gets) and the pages (no bearer token is a session: to /login).
    """
    explicit = _explicit_runner_decisions()
    opened = {(r.method, r.path) for r in table.all_routes() if r.runner}
    if key in explicit:
        return explicit[key]
    if key in opened:
        return None
    if key in _public() or key in PAGE_DECISIONS:
        return AS_ANYONE
    return 403


#: Which callers of ROLE_ORDER a route's declared role (its action's rule) is for.
ROLE_CALLERS = {
    "human": {"human"},
    "bot": {"bot", "admin_bot", "other_bot"},
    "keeper": set(KEEPERS),
    "runner": {"runner"},
}


def declared_role(key: tuple[str, str]) -> str | None:
    """The role the route table declares for a route (``Route(role=...)``), if any."""
    for route in table.all_routes():
        if (route.method, route.path) == key and route.role is not None:
            return route.role.rule.name
    return None


def with_role(key: tuple[str, str], expect: dict[str, int | set[int]]) -> dict[str, int | set[int]]:
    """A row's expectations, with what the route's declared role says of every other caller.

    The role's callers are the row's to decide; all others are FORBIDDEN (an anonymous
    caller UNAUTHENTICATED), read from the table, never restated in the row.
    """
    role = declared_role(key)
    if role is None:
        left_out = {"human", "bot", "admin_bot", "other_bot", "anon"} - set(expect)
        assert not left_out, f"{key} declares no role: its row decides {sorted(left_out)} too"
        return expect
    restated = set(expect) - ROLE_CALLERS[role]
    assert not restated, f"{key}: the route's role ({role}) decides {sorted(restated)}; drop them"
    refused: dict[str, int | set[int]] = {who: 403 for who in ROLE_ORDER if who not in ROLE_CALLERS[role]}
    return refused | {"anon": 401} | expect


def _status_ok(expected: int | set[int], got: int) -> bool:
    return got in expected if isinstance(expected, set) else got == expected


def expected(case: Case, role: str) -> int | set[int]:
    """A row's expectation for a role; a keeper or the runner defaults to a token that may do nothing here."""
    if role in case.expect:
        return case.expect[role]
    anon = case.expect["anon"]
    return 403 if anon == 401 else anon


async def _facts(world: World) -> dict[str, Any]:
    root = await world.human.post("hello @pb, please look", channel="lobby", workspace="proj")
    invite = await world.human.invite("proj", uses=10)
    keeper = await keeper_with_bots(world, "box1", "fb")
    other_keeper = await keeper_with_bots(world, "box2")
    codes = {role: (await world.human.enroll_code(f"code-{role}"))["code"] for role in ROLE_ORDER}
    return {
        "root": root["id"],
        "invite": invite["invite"],
        "keepers": {"keeper": keeper, "other_keeper": other_keeper},
        "codes": codes,
        "fleet_bot": "fb",
        "bot_handle": "pb",
        "peer_handle": "pb2",
        "proj": "proj",
        "lobby": "lobby",
        "gone": "gone",
        "wheel": package.WHEEL_NAME,
        "runner": world.board.client(await auth.runner_token(world.board.ctx)),
    }


def _caller(world: World, role: str, facts: dict[str, Any]) -> BoardClient:
    if role in KEEPERS:
        keeper: Keeper = facts["keepers"][role]
        return keeper.client
    if role == "runner":
        runner: BoardClient = facts["runner"]
        return runner
    return {
        "human": world.human,
        "bot": world.bot,
        "admin_bot": world.admin_bot,
        "other_bot": world.other,
        "anon": world.anon,
    }[role]


@pytest.mark.parametrize("key", sorted(CASES), ids=lambda k: f"{k[0]} {k[1]}")
async def test_route_decision_for_each_role(key: tuple[str, str], tmp_path: Any) -> None:
    method, template = key
    case = CASES[key]
    case = Case(with_role(key, case.expect), case.path, case.body, case.params, case.headers, case.prepare)
    board = await start_board(tmp_path)
    try:
        world = await populate(board)
        facts = await _facts(world)
        if case.prepare is not None:
            await case.prepare(world, facts)
        path = template
        for name, fact in case.path.items():
            path = path.replace("{" + name + "}", str(facts.get(fact, fact)))
        results = {}
        for role in ROLE_ORDER:
            body = case.body(role, facts) if case.body is not None else None
            try:
                results[role], _ = await _caller(world, role, facts).call(
                    method, path, json=body, params=case.params, headers=case.headers
                )
            except BoardAPIError as exc:
                results[role] = exc.status
        for role in ROLE_ORDER:
            assert _status_ok(expected(case, role), results[role]), (
                f"{method} {template} as {role}: expected {expected(case, role)}, got {results[role]} "
                f"(all: {results})"
            )
    finally:
        await stop_board(board)


PAGES = set(PAGE_DECISIONS)


def _public() -> set[tuple[str, str]]:
    # loopback: as anyone; signed: a token is no credential there, the forge's signature is
    return {(r.method, r.path) for r in table.all_routes() if r.public or r.loopback or r.signed is not None}


async def test_keeper_refused_outside_the_fleet(tmp_path: Any) -> None:
    """Every API route but the fleet's and the public documents: FORBIDDEN, nothing changed.

    Pages take no bearer token at all: test_pages_scope sends a keeper's to every page.
    """
    board = await start_board(tmp_path)
    try:
        world = await populate(board)
        facts = await _facts(world)
        keeper: Keeper = facts["keepers"]["keeper"]
        public = _public()
        walked = 0
        for method, template in sorted(registered_routes(board.app)):
            if (
                template.startswith("/api/fleet")
                or (method, template) in public
                or (method, template) in PAGES
            ):
                continue
            path = template
            for name in ("handle", "slug", "name", "id", "path", "v"):
                path = path.replace(
                    "{" + name + "}",
                    {"id": str(facts["root"]), "handle": "pb", "v": "1"}.get(name, "proj"),
                )
            before = snapshot(board.db_path)
            try:
                status, _ = await keeper.client.call(method, path, json={} if method != "GET" else None)
            except BoardAPIError as exc:
                status = exc.status
            assert status == 403, f"{method} {template} as a keeper: {status}"
            assert snapshot(board.db_path) == before, f"{method} {template} as a keeper changed the database"
            walked += 1
        assert walked > 40
    finally:
        await stop_board(board)


async def test_runner_refused_outside_its_runs(tmp_path: Any) -> None:
    """The runner's token on every route it is refused: FORBIDDEN, and nothing changed.

    The API, ``/mcp`` (a tools call that would post as the board too), the fleet
    and the installer's routes; the pages send it to /login (test_pages_scope).
    """
    board = await start_board(tmp_path)
    try:
        world = await populate(board)
        facts = await _facts(world)
        runner: BoardClient = facts["runner"]
        walked = 0
        for method, template in sorted(registered_routes(board.app)):
            if runner_decision((method, template)) != 403:
                continue
            path = template
            for name in ("handle", "slug", "name", "id", "path", "v"):
                path = path.replace(
                    "{" + name + "}",
                    {"id": str(facts["root"]), "handle": "pb", "v": "1"}.get(name, "proj"),
                )
            body = None if method == "GET" else _runner_body(template)
            before = snapshot(board.db_path)
            try:
                status, _ = await runner.call(method, path, json=body, headers=MCP_HEADERS)
            except BoardAPIError as exc:
                status = exc.status
            assert status == 403, f"{method} {template} as the runner: {status}"
            assert snapshot(board.db_path) == before, (
                f"{method} {template} as the runner changed the database"
            )
            walked += 1
        assert walked > 60
    finally:
        await stop_board(board)


def _runner_body(template: str) -> dict[str, Any]:
    """A body that would act if the token were let through: a post in proj, or a tool posting it."""
    post = {"channel": "lobby", "workspace": "proj", "body": "as the board"}
    if template == "/mcp":
        call = {"name": "post", "arguments": post}
        return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
    return post


def test_decisions_elsewhere_agree_with_declared_roles() -> None:
    """A route of one role decided beside its concept (scope_*.py) refuses every other caller there too."""
    checked = 0
    for decisions in (ROUTINE_DECISIONS, REGISTRY_DECISIONS):
        for key, decision in decisions.items():
            role = declared_role(key)
            if role is None:
                continue
            refused = {who: 403 for who in decision if who not in ROLE_CALLERS[role] and who != "anon"}
            assert {who: decision[who] for who in refused} == refused, f"{key}: its role is {role}"
            checked += 1
    assert checked >= 1
