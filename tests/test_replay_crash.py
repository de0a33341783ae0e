"""A retry after the board died between a write's commit and its answer has no second effect."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from board.client import BoardAPIError, BoardClient
from tests.support.boardtest import PgDatabase, StoreChoice, Where, db_rows
from tests.support.processes import add_human, board_env, kill, serve, wait_healthy

BODY = "posted once, answered never"


def _count(where: Where, body: str) -> int:
    return int(db_rows(where, "SELECT count(*) FROM messages WHERE body = ?", (body,))[0][0])


async def test_a_retry_after_kill_9_between_commit_and_answer_is_not_applied_again(
    tmp_path: Path, store: StoreChoice
) -> None:
    db = tmp_path / "board.db"
    url = store.overrides().get("database_url")  # the processes run on the store the test runs on
    on_store = {"BOARD_DATABASE_URL": url} if url else {}
    where: Where = PgDatabase(url) if url else db
    token = add_human(db, "alice", env=board_env(**on_store))
    served = serve(db, env=board_env(BOARD_TEST_SIGKILL="after-commit:post-1", **on_store))
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
    assert _count(where, BODY) == 1, "the effect was committed before the kill"

    served = serve(db, env=board_env(**on_store))
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
    assert _count(where, BODY) == 1
    assert _count(where, "before") == 1
