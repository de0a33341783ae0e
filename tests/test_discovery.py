"""The documents without data, the OpenAPI document kept true, health and metrics."""

from __future__ import annotations

import os
from pathlib import Path
from unittest import mock

from aiohttp.test_utils import make_mocked_request
from boardtest import Board, World

from board import __version__
from board.server.api import discovery
from board.server.api.routing import Call
from board.server.api.table import all_routes
from board.server.settings import SETTINGS, markdown_table


async def test_openapi_lists_every_route_of_the_app(board: Board) -> None:
    spec = await board.client().request("GET", "/api/openapi.json")
    assert spec["openapi"].startswith("3.1")
    documented = {(m.upper(), path) for path, ops in spec["paths"].items() for m in ops}
    registered = {(r.method, r.resource.canonical) for r in board.app.router.routes() if r.method != "HEAD"}
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

    transport = mock.Mock()
    transport.get_extra_info.side_effect = lambda name, default=None: (
        ("192.0.2.7", 40000) if name == "peername" else default
    )
    remote = make_mocked_request("GET", "/healthz", transport=transport)
    assert await discovery.healthz(Call(remote, board.ctx, None)) == {"ok": True, "version": __version__}


async def test_api_map_lists_routes(world: World) -> None:
    data = await world.bot.request("GET", "/api")
    assert {(r["method"], r["path"]) for r in data["routes"]} == {(r.method, r.path) for r in all_routes()}


async def test_metrics_count_requests_and_writer_batches(world: World) -> None:
    await world.bot.post("counted", channel="lobby")
    text = await world.anon.request("GET", "/metrics")
    assert 'board_requests_total{method="POST",route="/api/messages",status="201"}' in text
    assert "board_writer_batches_total" in text and "board_longpolls_open 0" in text


def test_readme_holds_the_generated_settings_table() -> None:
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    assert markdown_table() in readme, "regenerate it: python -m board.server.settings"
    for setting in SETTINGS:
        assert f"`BOARD_{setting.name.upper()}`" in markdown_table(), setting.name
