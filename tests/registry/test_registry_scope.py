"""Every registry route answers each role as ``scope_registry.REGISTRY_DECISIONS`` says."""

from __future__ import annotations

from typing import Any

import aiohttp

from board.client import BoardClient
from board.server.api import registry as registry_routes
from tests.support.boardtest import World, snapshot
from tests.support.scope_registry import REGISTRY_DECISIONS, ROLES

PREFIXES = ("/api/skills", "/api/profiles", "/api/bots/")


def registered(world: World) -> set[tuple[str, str]]:
    """The registry routes of the running app, as (method, path template)."""
    found = set()
    for route in world.board.app.router.routes():
        path = route.resource.canonical if route.resource is not None else ""
        if route.method != "HEAD" and path.startswith(PREFIXES):
            found.add((route.method, path))
    return found


def representative(method: str, path: str, role: str, trigger: int) -> tuple[str, Any, Any]:
    """The concrete path, body and query of the call each role makes on a route."""
    tag = role.replace("_", "-")
    concrete = path.format(name="review" if "skills" in path else "proj-dev", handle="pb")
    body: dict[str, Any] | None = None
    query: dict[str, str] | None = None
    if (method, path) == ("POST", "/api/skills"):
        body = {"name": f"skill-{tag}", "text": "Do it well.\n"}
    elif (method, path) == ("PUT", "/api/skills/{name}"):
        body = {"description": f"touched by {role}"}
    elif (method, path) == ("POST", "/api/profiles"):
        body = {"name": f"profile-{tag}", "workspace": "proj", "harness": "codex"}
    elif (method, path) == ("PUT", "/api/profiles/{name}"):
        body = {"model": f"model-{tag}"}
    elif path == "/api/bots/{handle}/prompt":
        query = {"trigger": str(trigger)}
    return concrete, body, query


async def status(client: BoardClient, method: str, path: str, body: Any, query: Any) -> int:
    headers = {"Authorization": f"Bearer {client.token}"} if client.token else {}
    async with (
        aiohttp.ClientSession() as http,
        http.request(method, client.base_url + path, json=body, params=query, headers=headers) as resp,
    ):
        await resp.read()
        return resp.status


async def test_every_registry_route_has_a_decision(world: World) -> None:
    declared = {(r.method, r.path) for r in registry_routes.ROUTES}
    assert registered(world) == set(REGISTRY_DECISIONS) == declared
    for decision in REGISTRY_DECISIONS.values():
        assert set(decision) == set(ROLES)


async def test_every_role_gets_the_decided_answer(world: World) -> None:
    await world.human.create_skill("review", "Review it.\n")
    await world.human.create_profile("proj-dev", "proj", "claude", skills=["review"], bots=["pb"])
    trigger = (await world.human.post("@pb hello", channel="builds", workspace="proj"))["id"]
    callers = {
        "human": world.human,
        "bot": world.bot,
        "admin_bot": world.admin_bot,
        "other_bot": world.other,
        "anon": world.anon,
    }
    wrong = []
    for method, path in sorted(registered(world)):
        decision = REGISTRY_DECISIONS[(method, path)]
        for role in ("anon", "other_bot", "bot", "admin_bot", "human"):
            concrete, body, query = representative(method, path, role, trigger)
            before = snapshot(world.board.db_path)
            got = await status(callers[role], method, concrete, body, query)
            if got != decision[role]:
                wrong.append(f"{method} {path} as {role}: {got}, decided {decision[role]}")
            if got >= 400:
                assert snapshot(world.board.db_path) == before, f"{method} {path} as {role} wrote"
    assert not wrong, "\n".join(wrong)
