"""The board answers only to host names it knows, and its documents name BOARD_PUBLIC_URL."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from board.client import BoardAPIError
from board.server.api.gate import MAX_URL, Hosts
from board.server.app import create_app
from board.server.settings import Settings
from tests.support.boardtest import Board, World, populate, snapshot, start_board, stop_board
from tests.support.processes import board_env, kill, serve, wait_healthy

LOOPBACK = ["localhost", "LocalHost:8080", "127.0.0.1", "127.0.0.1:1", "127.9.8.7:80", "[::1]", "[::1]:8080"]
FOREIGN = ["evil.example", "evil.example:8080", "127.0.0.1.evil.example", "localhost.evil.example", "[::1"]
FOREIGN += ["[::1].evil.example", "[::1]evil.example", "[::1]:x", "[127.0.0.1]:80:80"]


def hosts(**settings: Any) -> Hosts:
    return Hosts.from_settings(Settings(db=":memory:", **settings))


@pytest.mark.parametrize("host", LOOPBACK)
def test_loopback_names_are_always_answered(host: str) -> None:
    for check in (hosts(), hosts(public_url="https://board.example"), hosts(bind="0.0.0.0")):
        assert check.accepts(host)


@pytest.mark.parametrize("host", FOREIGN)
def test_other_names_are_refused(host: str) -> None:
    for check in (hosts(), hosts(public_url="https://board.example"), hosts(bind="0.0.0.0")):
        assert not check.accepts(host)


def test_the_public_url_host_and_the_bind_address_are_answered() -> None:
    public = hosts(public_url="https://Board.Example:8443/", bind="192.168.1.5")
    assert public.accepts("board.example") and public.accepts("BOARD.example.:8443")
    assert public.accepts("192.168.1.5:8080")
    assert not public.accepts("192.168.1.6") and not public.accepts("board.example.org")
    assert public.public_url == "https://Board.Example:8443"


def test_bound_to_every_interface_without_a_public_url_ip_literals_and_this_machine_answer() -> None:
    wildcard = hosts(bind="0.0.0.0")
    assert wildcard.accepts("192.168.1.5:8080") and wildcard.accepts("[fe80::1]:8080")
    assert wildcard.accepts(socket.gethostname()) and wildcard.accepts(f"{socket.gethostname()}.local:80")
    named = hosts(bind="0.0.0.0", public_url="http://board.lan")
    assert named.accepts("board.lan") and not named.accepts("192.168.1.5")


def test_remembered_hosts_are_only_accepted_ones_and_bounded() -> None:
    """The answer for a Host is kept once accepted; refusals are worked out every time."""
    h = hosts()
    for port in range(1, 200):  # more distinct accepted values than are kept
        assert h.accepts(f"127.0.0.1:{port}")
        assert not h.accepts(f"evil{port}.example")
    assert h.accepts("127.0.0.1:1") and h.accepts("127.0.0.1:199")
    assert not h.accepts("evil1.example")


def test_a_request_without_host_is_answered() -> None:
    assert hosts().accepts(None)


@pytest.mark.parametrize("url", ["board.example", "ftp://board.example", "https://", "http://b.example/?q=1"])
def test_a_malformed_public_url_stops_the_board_from_starting(url: str) -> None:
    with pytest.raises(ValueError, match="BOARD_PUBLIC_URL"):
        create_app(Settings(db=":memory:", public_url=url))


async def raw(world: World, method: str, path: str, host: str, token: str | None) -> tuple[int, str]:
    headers = {"Host": host, **({"Authorization": f"Bearer {token}"} if token else {})}
    async with (
        aiohttp.ClientSession() as http,
        http.request(
            method, world.board.url + path, headers=headers, json={"body": "x", "channel": "general"}
        ) as r,
    ):
        return r.status, await r.text()


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/metrics"), ("GET", "/agents.md"), ("GET", "/api"), ("POST", "/api/messages")],
)
async def test_a_foreign_host_is_refused_with_the_json_error_and_changes_nothing(
    world: World, method: str, path: str
) -> None:
    before = snapshot(world.board.db_path)
    status, text = await raw(world, method, path, "rebound.evil.example", world.bot.token)
    assert status == 421
    answer = json.loads(text)
    assert answer["error"]["code"] == "MISDIRECTED_REQUEST"
    assert "evil" not in answer["error"]["message"]
    assert snapshot(world.board.db_path) == before
    status, _ = await raw(world, method, path, f"localhost:{world.board.port}", world.bot.token)
    assert status < 400


@pytest.fixture
async def public_world(tmp_path: Path) -> AsyncIterator[World]:
    board: Board = await start_board(tmp_path, public_url="https://board.example:8443/")
    yield await populate(board)
    await stop_board(board)


async def test_documents_and_prompts_name_the_public_url(public_world: World) -> None:
    url = "https://board.example:8443"
    anon = public_world.anon
    for path in ("/agents.md", "/admin.md", "/llms.txt"):
        text = await anon.request("GET", path)
        assert url in text and public_world.board.url not in text
    assert (await public_world.bot.request("GET", "/api"))["board"] == url
    prompt = await public_world.bot.bot_prompt("pb", [], first=True)
    assert f"This board is at {url}." in prompt["first_turn"]


def raw_request(port: int, target: bytes, host: bytes = b"localhost") -> tuple[bytes, bytes]:
    """One request over a plain socket (no client library trims or refuses it): head and body."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"GET " + target + b" HTTP/1.1\r\nHost: " + host + b"\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return head, body


async def test_a_url_over_8_kib_gets_the_json_error(board: Board) -> None:
    for size in (MAX_URL + 1, 100_000):
        target = b"/api/messages?q=" + b"A" * size
        head, body = await asyncio.to_thread(raw_request, board.port, target)
        assert head.startswith(b"HTTP/1.1 413"), head
        error = json.loads(body)["error"]
        assert error["code"] == "LIMIT_EXCEEDED" and error["details"]["limit"] == MAX_URL
        assert b"AAAA" not in body
    head, body = await asyncio.to_thread(raw_request, board.port, b"/healthz?" + b"a" * (MAX_URL - 20))
    assert head.startswith(b"HTTP/1.1 422"), head  # under the limit: the route's own answer


async def test_a_write_with_a_long_url_is_refused_and_changes_nothing(world: World) -> None:
    before = snapshot(world.board.db_path)
    with pytest.raises(BoardAPIError) as refused:
        await world.bot.request(
            "POST", "/api/messages?" + "x" * MAX_URL, json={"body": "hi", "channel": "general"}
        )
    assert refused.value.status == 413 and refused.value.code == "LIMIT_EXCEEDED"
    assert snapshot(world.board.db_path) == before


def test_board_serve_checks_hosts_and_url_length_and_names_its_public_url(tmp_path: Path) -> None:
    served = serve(tmp_path / "board.db", env=board_env(BOARD_PUBLIC_URL="https://board.example"))
    try:
        wait_healthy(served)
        head, body = raw_request(served.port, b"/healthz?" + b"A" * MAX_URL)
        assert head.startswith(b"HTTP/1.1 413") and json.loads(body)["error"]["code"] == "LIMIT_EXCEEDED"
        head, body = raw_request(served.port, b"/agents.md", host=b"rebound.evil.example")
        assert head.startswith(b"HTTP/1.1 421") and json.loads(body)["error"]["code"] == "MISDIRECTED_REQUEST"
        head, body = raw_request(served.port, b"/agents.md", host=b"board.example")
        assert head.startswith(b"HTTP/1.1 200") and b"This board is at https://board.example." in body
    finally:
        kill(served.proc)
    assert "Error handling request" not in served.output()


def test_board_serve_refuses_a_malformed_public_url(tmp_path: Path) -> None:
    served = serve(tmp_path / "board.db", env=board_env(BOARD_PUBLIC_URL="board.example"))
    assert served.proc.wait(timeout=30) != 0
    assert "BOARD_PUBLIC_URL must be an http(s) URL" in served.output()
    assert "Traceback" not in served.output()


@pytest.mark.parametrize(
    "host",
    ["[::1%lo]", "[::1%25eth0]:80", "[::1%$(touch /tmp/x)]:8080", "[fe80::1%eth0]", "a..b", "-a.b", "a_b"],
)
def test_a_host_no_board_can_have_is_refused_even_bound_everywhere(host: str) -> None:
    for check in (hosts(), hosts(bind="0.0.0.0")):
        assert not check.accepts(host)
