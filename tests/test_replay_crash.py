"""A retry after the board died between a write's commit and its answer has no second effect."""

from __future__ import annotations

import signal
import sqlite3
from pathlib import Path

import pytest
from processes import add_human, board_env, kill, serve, wait_healthy

from board.client import BoardAPIError, BoardClient

BODY = "posted once, answered never"


def _count(db: Path, body: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT count(*) FROM messages WHERE body = ?", (body,)).fetchone()[0])
    finally:
        conn.close()


async def test_a_retry_after_kill_9_between_commit_and_answer_is_not_applied_again(tmp_path: Path) -> None:
    db = tmp_path / "board.db"
    token = add_human(db, "alice")
    served = serve(db, env=board_env(BOARD_TEST_SIGKILL="after-commit:post-1"))
    try:
        wait_healthy(served)
        async with BoardClient(served.url, token, timeout=10) as client:
            # Another request id is untouched by the crash point.
            await client.post("before", channel="lobby", workspace="admin", request_id="post-0")
            with pytest.raises(BoardAPIError) as dropped:
                await client.post(BODY, channel="lobby", workspace="admin", request_id="post-1")
            assert dropped.value.status == 0, dropped.value  # the connection dropped: no answer
        assert served.proc.wait(timeout=20) == -signal.SIGKILL
    finally:
        kill(served.proc)
    assert _count(db, BODY) == 1, "the effect was committed before the kill"

    served = serve(db)
    try:
        wait_healthy(served)
        async with BoardClient(served.url, token, timeout=10) as client:
            with pytest.raises(BoardAPIError) as retried:
                await client.post(BODY, channel="lobby", workspace="admin", request_id="post-1")
            assert (retried.value.status, retried.value.code) == (409, "REQUEST_ID_REUSE")
            assert retried.value.details == {"applied": True}
            # A different call under the same id is still refused as a reuse, without the flag.
            with pytest.raises(BoardAPIError) as reused:
                await client.post("other", channel="lobby", workspace="admin", request_id="post-1")
            assert (reused.value.code, reused.value.details) == ("REQUEST_ID_REUSE", {})
            # A call answered before the kill replays its first answer.
            again = await client.post("before", channel="lobby", workspace="admin", request_id="post-0")
            assert again["body"] == "before"
    finally:
        kill(served.proc)
    assert _count(db, BODY) == 1
    assert _count(db, "before") == 1
