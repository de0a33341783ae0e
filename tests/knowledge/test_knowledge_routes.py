"""Walk the app's routes: every knowledge route has a decision for every role, and keeps it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest

from board.server.api.table import all_routes
from tests.support.kb_support import Board, World, populate, start_board, stop_board
from tests.support.scope_knowledge import (
    KNOWLEDGE_CASES,
    KNOWLEDGE_DECISIONS,
    ROLE_ORDER,
    ROUTE_TEMPLATES,
    canonical,
)


def knowledge_routes(board: Board) -> set[tuple[str, str]]:
    return {
        (route.method, route.resource.canonical)
        for route in board.app.router.routes()
        if route.resource is not None and "knowledge" in route.resource.canonical and route.method != "HEAD"
    }


async def test_every_knowledge_route_has_a_decision(board: Board) -> None:
    registered = knowledge_routes(board)
    assert registered, "no knowledge routes are registered"
    assert registered == set(KNOWLEDGE_DECISIONS) == set(KNOWLEDGE_CASES)
    templates = {(r.method, r.path) for r in all_routes() if "knowledge" in r.path}
    assert templates == {(method, template) for (method, _), template in ROUTE_TEMPLATES.items()}
    assert {(m, canonical(t)) for m, t in templates} == registered


def _token(world: World, role: str) -> str | None:
    return {
        "human": world.human,
        "bot": world.bot,
        "admin_bot": world.admin_bot,
        "other_bot": world.other,
        "anon": world.anon,
    }[role].token


@pytest.mark.parametrize("key", sorted(KNOWLEDGE_CASES), ids=lambda k: f"{k[0]} {k[1]}")
async def test_each_role_gets_its_decision(key: tuple[str, str], tmp_path: Path) -> None:
    method, template = key
    case = KNOWLEDGE_CASES[key]
    board = await start_board(tmp_path)
    try:
        world = await populate(board)
        facts: dict[str, Any] = {}
        if case.prepare is not None:
            await case.prepare(world, facts)
        url = template
        for name, value in case.path.items():
            url = url.replace("{" + name + "}", str(facts.get(value, value)))
        results: dict[str, tuple[int, str]] = {}
        async with aiohttp.ClientSession() as http:
            for role in ROLE_ORDER:
                token = _token(world, role)
                headers = {"Authorization": f"Bearer {token}"} if token else {}
                body = case.body(role, facts) if case.body is not None else None
                async with http.request(
                    method, board.url + url, json=body, params=case.params, headers=headers
                ) as resp:
                    results[role] = (resp.status, await resp.text())
        for role in ROLE_ORDER:
            status, text = results[role]
            assert status == case.expect[role], f"{method} {template} as {role}: {status} {text[:300]}"
    finally:
        await stop_board(board)


async def test_the_openapi_document_lists_the_knowledge_routes(board: Board) -> None:
    spec = await board.client().request("GET", "/api/openapi.json")
    documented = {
        (m.upper(), path) for path, ops in spec["paths"].items() for m in ops if "knowledge" in path
    }
    assert documented == set(KNOWLEDGE_CASES)
    get = spec["paths"]["/api/knowledge/{path}"]["get"]
    assert {"name": "path", "in": "path", "required": True, "schema": {"type": "string"}} in get["parameters"]
    diff = spec["paths"]["/api/workspaces/{slug}/knowledge/{path}/diff"]["get"]
    assert {p["name"] for p in diff["parameters"]} == {"slug", "path", "workspace", "from", "to"}
    put = spec["paths"]["/api/knowledge/{path}"]["put"]["requestBody"]["content"]["application/json"][
        "schema"
    ]
    assert put["required"] == ["body", "base_revision", "reason"] and put["additionalProperties"] is False
    assert (
        "PATCH_FAILED"
        in spec["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]["enum"]
    )
    ids = [op["operationId"] for ops in spec["paths"].values() for op in ops.values()]
    assert len(ids) == len(set(ids))
