"""A slow or oversized request costs the board a bounded time and gets the JSON envelope, never an echo."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from board.server.api.gate import MAX_LINE, MAX_URL
from tests.support.boardtest import World, populate, snapshot, start_board, stop_board

HEADER_TIMEOUT = 0.5
BODY_TIMEOUT = 1.0


@pytest.fixture
async def hasty(tmp_path: Path) -> AsyncIterator[World]:
    board = await start_board(tmp_path, header_timeout=HEADER_TIMEOUT, body_timeout=BODY_TIMEOUT)
    yield await populate(board)
    await stop_board(board)


def closed_after(port: int, parts: list[bytes], pause: float) -> tuple[float, bytes]:
    """Send ``parts`` ``pause`` seconds apart; the seconds until the board closed, and what it said."""
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=15) as s:
        said = b""
        for part in parts:
            try:
                s.sendall(part)
            except OSError:
                break
            s.settimeout(pause)
            try:
                chunk = s.recv(65536)
                said += chunk
                if not chunk:
                    return time.monotonic() - start, said
            except TimeoutError:
                continue
            except OSError:
                return time.monotonic() - start, said
        s.settimeout(15)
        while chunk := s.recv(65536):
            said += chunk
    return time.monotonic() - start, said


async def test_half_a_request_line_is_closed_within_the_header_timeout(hasty: World) -> None:
    elapsed, said = await asyncio.to_thread(closed_after, hasty.board.port, [b"GET /heal"], 0.1)
    assert elapsed < HEADER_TIMEOUT + 2 and said == b""


async def test_a_trickled_head_is_closed_within_the_header_timeout(hasty: World) -> None:
    head = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n" + b"X-Slow: " + b"a" * 100
    parts = [head[i : i + 2] for i in range(0, len(head), 2)]
    elapsed, said = await asyncio.to_thread(closed_after, hasty.board.port, parts, 0.05)
    assert elapsed < HEADER_TIMEOUT + 2 and said == b""


async def test_a_trickled_body_is_closed_within_the_body_timeout_and_writes_nothing(hasty: World) -> None:
    before = snapshot(hasty.board.db_path)
    body = json.dumps({"channel": "general", "body": "slow " * 40}).encode()
    head = (
        b"POST /api/messages HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        + f"Authorization: Bearer {hasty.bot.token}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
    )
    parts = [head] + [body[i : i + 1] for i in range(len(body))]
    elapsed, said = await asyncio.to_thread(closed_after, hasty.board.port, parts, 0.1)
    assert elapsed < BODY_TIMEOUT + 2 and b"201" not in said
    assert snapshot(hasty.board.db_path) == before
    assert (await hasty.bot.request("GET", "/healthz"))["ok"]  # the board itself is fine


async def test_a_chunked_body_whose_end_never_comes_is_closed_within_the_body_timeout(hasty: World) -> None:
    """Its data came whole, its last chunk never does: a body not yet ended keeps its deadline
    (only one that came whole with its headers is read without one)."""
    before = snapshot(hasty.board.db_path)
    body = json.dumps({"channel": "general", "body": "chunked"}).encode()
    head = (
        b"POST /api/messages HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        + f"Authorization: Bearer {hasty.bot.token}\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
    )
    chunk = f"{len(body):x}\r\n".encode() + body + b"\r\n"
    elapsed, said = await asyncio.to_thread(closed_after, hasty.board.port, [head + chunk], 0.1)
    assert elapsed < BODY_TIMEOUT + 2 and b"201" not in said
    assert snapshot(hasty.board.db_path) == before
    # the same body, ended: answered
    ended = head.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n") + chunk + b"0\r\n\r\n"
    assert b" 201 " in (await asyncio.to_thread(closed_after, hasty.board.port, [ended], 0.5))[1]


async def test_a_request_within_the_deadlines_is_answered_on_a_kept_alive_connection(hasty: World) -> None:
    for _ in range(3):
        assert (await hasty.bot.request("GET", "/healthz"))["ok"]
        await asyncio.sleep(HEADER_TIMEOUT * 2)  # idle between requests is not a slow head


def exchange(port: int, request: bytes) -> tuple[bytes, bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(request)
        data = b""
        try:
            while chunk := s.recv(65536):
                data += chunk
        except ConnectionResetError:
            pass
    head, _, body = data.partition(b"\r\n\r\n")
    return head, body


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET /healthz?" + b"Q" * (MAX_LINE + 10) + b" HTTP/1.1\r\nHost: localhost\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"Q" * 9000 + b"\r\n\r\n",
    ],
    ids=["request-line", "header"],
)
async def test_an_oversized_request_line_or_header_gets_the_json_error_without_an_echo(
    hasty: World, request_bytes: bytes
) -> None:
    head, body = await asyncio.to_thread(exchange, hasty.board.port, request_bytes)
    assert b" 413 " in head.split(b"\r\n")[0], head[:200]  # HTTP/1.0: the version was never read
    assert b"application/json" in head
    error = json.loads(body)["error"]
    assert error["code"] == "LIMIT_EXCEEDED" and set(error) == {"code", "message", "retryable", "details"}
    assert f"a URL takes at most {MAX_URL:,} bytes" in error["message"]  # the gate's limit, not the parser's
    assert b"QQQQ" not in body


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"\x16\x03\x01 nonsense\r\n\r\n",
        # Brotli without a decoder installed (the suite installs none): the parser refuses it too.
        b"POST /api/messages HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"Content-Encoding: br\r\nContent-Length: 8\r\n\r\nnonsense",
    ],
    ids=["not-http", "brotli"],
)
async def test_bytes_that_are_not_http_get_the_json_error(hasty: World, request_bytes: bytes) -> None:
    head, body = await asyncio.to_thread(exchange, hasty.board.port, request_bytes)
    assert b" 422 " in head.split(b"\r\n")[0], head[:200]
    assert json.loads(body)["error"]["code"] == "INVALID_ARGUMENT"
    assert b"nonsense" not in body
