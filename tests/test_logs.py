"""Logs are JSON lines with a request id, and never carry tokens or message bodies."""

from __future__ import annotations

import json
import logging

import pytest

from board.server.logs import JsonFormatter, failed
from board.server.store.writer import DatabaseUnreachable
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


def test_a_loop_s_failure_is_one_line_where_the_database_does_not_answer_else_its_trace(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """While the database is down every pass of the outbox, the sweep and the read counts
    failed with a trace of the same few frames; it is one warning naming the database now.
    Any other failure keeps its trace."""
    log = logging.getLogger("board.test.loop")
    for exc in (DatabaseUnreachable("postgresql://db.example/board: connection refused"), KeyError("x")):
        try:
            raise exc
        except Exception:
            failed(log, "outbox: a pass of %s failed; trying again", "ten")
    down, surprise = caplog.records
    assert down.levelno == logging.WARNING and down.exc_info is None
    assert down.getMessage() == (
        "outbox: a pass of ten failed; trying again (postgresql://db.example/board: connection refused)"
    )
    assert surprise.levelno == logging.ERROR and surprise.exc_info is not None
    assert surprise.getMessage() == "outbox: a pass of ten failed; trying again"
