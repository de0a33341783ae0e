"""Logs are JSON lines with a request id, and never carry tokens or message bodies."""

from __future__ import annotations

import json
import logging

import pytest

from board.server.logs import JsonFormatter
from tests.support.boardtest import World


async def test_one_json_line_per_request_without_secrets(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="board")
    status, _ = await world.bot.call(
        "POST", "/api/messages", json={"channel": "lobby", "body": "the secret is swordfish"}
    )
    assert status == 201
    lines = [JsonFormatter().format(r) for r in caplog.records if r.name == "board.access"]
    entries = [json.loads(line) for line in lines]
    post = [e for e in entries if e["route"] == "/api/messages" and e["method"] == "POST"]
    assert len(post) == 1 and post[0]["status"] == 201 and len(post[0]["request_id"]) == 12
    assert world.bot.token is not None
    for line in lines:
        assert "swordfish" not in line and world.bot.token not in line
