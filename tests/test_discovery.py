"""The documents without data, the OpenAPI document kept true, health and metrics."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from board import __version__
from board.server import settings
from board.server.api import discovery
from board.server.api.discovery import canonical
from board.server.api.keys import ROUTES
from board.server.api.route import Answer, Call
from board.server.api.routing import endpoint
from board.server.api.table import all_routes
from board.server.errors import Unauthenticated
from board.server.pages import all_pages
from tests.support.boardtest import Board, World
from tests.support.contract import check_answer


def html_routes() -> set[tuple[str, str]]:
    """The routes of the human's pages and their static files, which are not JSON API."""
    return {(r.method, canonical(r.path)) for r in all_pages()} | {("GET", "/static")}


async def test_openapi_lists_every_route_of_the_app(board: Board) -> None:
    spec = await board.client().request("GET", "/api/openapi.json")
    assert spec["openapi"].startswith("3.1")
    documented = {(m.upper(), path) for path, ops in spec["paths"].items() for m in ops}
    registered = {
        (r.method, r.resource.canonical)
        for r in board.app.router.routes()
        if r.resource is not None and r.method != "HEAD"
    }
    registered -= html_routes()  # the pages: docs/pages.md, and tests/pages/test_pages_scope.py
    assert registered - documented == set()
    assert documented - registered == set()


async def test_openapi_bodies_are_strict_and_public_routes_need_no_token(board: Board) -> None:
    spec = await board.client().request("GET", "/api/openapi.json")
    post = spec["paths"]["/api/messages"]["post"]
    schema = post["requestBody"]["content"]["application/json"]["schema"]
    assert schema["additionalProperties"] is False and "body" in schema["required"]
    assert schema["properties"]["body"]["maxLength"] == 16_000
    assert spec["paths"]["/healthz"]["get"]["security"] == []
    assert spec["paths"]["/api/me"]["get"]["security"] == [{"bearer": []}]


async def test_documents_fill_in_the_board_address(board: Board) -> None:
    anon = board.client()
    for path in ("/agents.md", "/admin.md", "/llms.txt"):
        text = await anon.request("GET", path)
        assert board.url in text and "{{" not in text


async def test_healthz_names_the_pid_to_loopback_only(board: Board) -> None:
    assert await board.client().health() == {"ok": True, "version": __version__, "pid": os.getpid()}

    remote = make_mocked_request("GET", "/healthz", app=board.app).clone(remote="192.0.2.7")
    assert await discovery.healthz(Call(remote, board.ctx, None)) == {"ok": True, "version": __version__}


async def test_api_map_lists_routes(world: World) -> None:
    data = await world.bot.request("GET", "/api")
    assert {(r["method"], r["path"]) for r in data["routes"]} == {(r.method, r.path) for r in all_routes()}


async def test_metrics_count_requests_and_writer_batches(world: World) -> None:
    await world.bot.post("counted", channel="lobby")
    text = await world.anon.request("GET", "/metrics")
    assert 'board_requests_total{method="POST",route="/api/messages",status="201"}' in text
    assert "board_writer_batches_total" in text and "board_longpolls_open 0" in text


def test_readme_settings_table_is_the_generated_one() -> None:
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    assert settings.with_table(readme) == readme, (
        "README differs from SETTINGS: run python -m board.server.settings --readme README.md"
    )
    for setting in settings.SETTINGS:
        assert f"| `BOARD_{setting.name.upper()}` |" in readme, setting.name


def test_the_generated_table_follows_a_new_setting() -> None:
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    stale = readme.replace("| `BOARD_PORT` | `port` | `8080` | TCP port to listen on. |\n", "")
    assert stale != readme
    assert settings.with_table(stale) == readme


async def test_metrics_from_beyond_loopback_need_a_token(world: World) -> None:
    app = world.board.app
    route = next(r for r in app[ROUTES] if r.path == "/metrics")
    assert route.loopback and not route.public

    def remote(headers: dict[str, str]) -> web.Request:
        return make_mocked_request("GET", "/metrics", headers=headers, app=app).clone(remote="192.0.2.7")

    with pytest.raises(Unauthenticated):
        await endpoint(route)(remote({}))
    with pytest.raises(Unauthenticated):
        await endpoint(route)(remote({"Authorization": "Bearer bb_not-a-token"}))
    token = world.bot.token
    answer = await endpoint(route)(remote({"Authorization": f"Bearer {token}"}))
    assert isinstance(answer, web.Response) and answer.text is not None
    assert answer.status == 200 and "board_requests_total" in answer.text
    spec = await world.anon.request("GET", "/api/openapi.json")
    assert spec["paths"]["/metrics"]["get"]["security"] == [{"bearer": []}]
    assert spec["paths"]["/metrics"]["get"]["x-loopback-without-token"] is True


async def test_every_route_documents_its_answers(board: Board) -> None:
    spec = await board.client().request("GET", "/api/openapi.json")
    for route in all_routes():
        responses = spec["paths"][canonical(route.path)][route.method.lower()]["responses"]
        assert list(responses) == [*map(str, route.statuses), "default"], (route.method, route.path)
        assert route.status in route.statuses, (route.method, route.path)
        for code, answer in responses.items():
            if code != "default":
                (content,) = answer["content"].values()
                assert content["schema"] == route.answer.schema, (route.method, route.path, code)
    message = spec["components"]["schemas"]["FullMessage"]
    assert {"id", "body", "thread_id", "created_at", "author_kind"} <= set(message["required"])
    lists = spec["paths"]["/api/agents"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert {"agents", "has_more", "cursor"} <= set(lists["required"])


def test_a_route_answering_a_status_its_answer_leaves_out_is_refused() -> None:
    claim = next(r for r in all_routes() if r.path == "/api/threads/{id}/claim")
    assert claim.statuses == (201, 200) and claim.status == 200
    with pytest.raises(ValueError, match="answers 204, not in its answer's statuses"):
        replace(claim, status=204)
    created = replace(claim, status=201, answer=Answer(claim.answer.schema))
    assert created.statuses == (201,)


def test_an_answer_that_leaves_out_a_field_fails_the_contract_check() -> None:
    check_answer("GET", "/healthz", 200, {"ok": True, "version": "1"})
    with pytest.raises(AssertionError, match="Additional properties"):
        check_answer("GET", "/healthz", 200, {"ok": True, "version": "1", "db": "/secret"})
    with pytest.raises(AssertionError, match="cursor"):
        check_answer("GET", "/api/agents", 200, {"agents": [], "has_more": False})
    with pytest.raises(AssertionError, match="documents"):
        check_answer("GET", "/api/agents", 201, {"agents": [], "has_more": False, "cursor": 0})
