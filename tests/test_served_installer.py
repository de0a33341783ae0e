"""The board serves its installer with its address filled in, and its own package."""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile

import pytest
from boardtest import Board

from board import __version__
from board.client import BoardAPIError
from board.server import package


async def test_install_sh_names_this_board_and_its_package(board: Board) -> None:
    text = await board.client().request("GET", "/install.sh")
    assert text.startswith("#!/usr/bin/env bash")
    assert f'SERVED_BY="{board.url}"' in text
    assert f'SERVED_PACKAGE="{board.url}/install/{package.WHEEL_NAME}"' in text
    assert "{{" not in text


async def test_the_package_is_a_wheel_of_the_running_code(board: Board) -> None:
    data = await board.client().request("GET", f"/install/{package.WHEEL_NAME}")
    wheel = zipfile.ZipFile(io.BytesIO(data))
    names = set(wheel.namelist())
    info = f"bot_board-{__version__}.dist-info"
    assert {"board/cli.py", "board/server/store/migrations/0001_core.sql", f"{info}/METADATA"} <= names
    assert "board/server/docs/install.sh" in names
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
    assert missing.value.code == "NOT_FOUND" and package.WHEEL_NAME in missing.value.message
