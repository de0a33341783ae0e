"""The board serves its installer with its address filled in, and its own package."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import json
import socket
import subprocess
import zipfile
from pathlib import Path

import pytest

from board import __version__
from board.client import BoardAPIError
from board.server import package
from tests.support.boardtest import Board, start_board, stop_board


async def test_install_sh_names_this_board_and_its_package(board: Board) -> None:
    text = await board.client().request("GET", "/install.sh")
    assert text.startswith("#!/usr/bin/env bash")
    assert f"SERVED_BY='{board.url}'" in text
    assert f"SERVED_PACKAGE='{board.url}/install/{package.WHEEL_NAME}'" in text
    assert "{{" not in text


async def test_the_package_is_a_wheel_of_the_running_code(board: Board) -> None:
    data = await board.client().request("GET", f"/install/{package.WHEEL_NAME}")
    wheel = zipfile.ZipFile(io.BytesIO(data))
    names = set(wheel.namelist())
    info = f"bot_board-{__version__}.dist-info"
    assert {"board/cli.py", "board/server/store/migrations/0001_core.sql", f"{info}/METADATA"} <= names
    assert "board/server/docs/install.sh" in names
    assert {"routines/runner.py", "routines/schedule.py"} <= names  # the runner ships in the same wheel
    assert "routines/shipped/knowledge-reconciler/prompt.md" in names  # what `board routines import` proposes
    assert wheel.read(f"{info}/top_level.txt").decode().split() == ["board", "routines"]
    assert not any("__pycache__" in name or name.endswith(".pyc") for name in names)
    metadata = wheel.read(f"{info}/METADATA").decode()
    assert f"Version: {__version__}" in metadata and "Requires-Dist: aiohttp" in metadata
    assert "pytest" not in metadata  # the test extras stay out
    assert "board = board.cli:main" in wheel.read(f"{info}/entry_points.txt").decode()
    for line in wheel.read(f"{info}/RECORD").decode().splitlines():
        name, digest, size = line.split(",")
        if name.endswith("RECORD"):
            continue
        body = wheel.read(name)
        expected = base64.urlsafe_b64encode(hashlib.sha256(body).digest()).rstrip(b"=").decode()
        assert digest == f"sha256={expected}" and int(size) == len(body), name


async def test_the_stable_name_leads_to_the_wheel_and_other_names_are_not_found(board: Board) -> None:
    status, data = await board.client().call("GET", "/install/bot-board.whl")
    assert status == 200 and data == package.wheel()  # followed the redirect
    with pytest.raises(BoardAPIError) as missing:
        await board.client().request("GET", "/install/bot_board-0.0.1-py3-none-any.whl")
    assert missing.value.code == "NOT_FOUND" and missing.value.status == 404
    assert missing.value.message == (
        f"No package bot_board-0.0.1-py3-none-any.whl here: this board serves {package.WHEEL_NAME}"
        " (or bot-board.whl)."
    )


def exchange(port: int, request: bytes) -> tuple[bytes, bytes]:
    """One request written as given over a plain socket (no client library fixes it): head and body."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(request)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return head, body


HOSTILE_HOSTS = [
    b"[::1%$(touch /tmp/x)]:8080",
    b"[::1%25lo]",
    b"[::1%lo]:8080",
    b"localhost'",
    b'localhost"',
    b"localhost$(id)",
    b"127.0.0.1:80`id`",
    b"local host",
    b"localhost:8080/x",
    b"user@localhost",
]


@pytest.mark.parametrize("host", HOSTILE_HOSTS)
async def test_the_installer_is_refused_to_a_host_no_board_can_have(board: Board, host: bytes) -> None:
    request = b"GET /install.sh HTTP/1.1\r\nHost: " + host + b"\r\nConnection: close\r\n\r\n"
    head, body = await asyncio.to_thread(exchange, board.port, request)
    assert head.startswith(b"HTTP/1.1 421"), head
    assert json.loads(body)["error"]["code"] == "MISDIRECTED_REQUEST"
    assert host not in body


def served_lines(text: str) -> str:
    """The installer's two address lines, to be run on their own."""
    return "\n".join(line for line in text.splitlines() if line.startswith(("SERVED_BY=", "SERVED_PACKAGE=")))


async def test_a_hostile_public_url_in_the_installer_only_names_and_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    url = f"https://board.example/$(touch {marker})`touch {marker}`'\"$HOME"
    board = await start_board(tmp_path, public_url=url)
    try:
        text = await board.client().request("GET", "/install.sh")
    finally:
        await stop_board(board)
    lines = served_lines(text)
    assert lines.count("\n") == 1
    subprocess.run(["bash", "-n", "-c", lines], check=True)
    script = lines + '\nprintf "%s\\n" "$SERVED_BY" "$SERVED_PACKAGE"'
    out = subprocess.run(["bash", "-c", script], check=True, capture_output=True, text=True).stdout
    assert out.splitlines() == [url, f"{url}/install/{package.WHEEL_NAME}"]
    assert not marker.exists()


async def test_an_http_1_0_request_without_host_gets_the_boards_own_address(board: Board) -> None:
    head, body = await asyncio.to_thread(exchange, board.port, b"GET /install.sh HTTP/1.0\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 200") or head.startswith(b"HTTP/1.1 200"), head
    address = f"http://127.0.0.1:{board.port}"
    assert f"SERVED_BY='{address}'" in body.decode()
    assert f"SERVED_PACKAGE='{address}/install/{package.WHEEL_NAME}'" in body.decode()
