"""A retry after the board died between a write's commit and its answer gets its first answer."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import aiohttp
import pytest

from board.client import BoardAPIError, BoardClient
from tests.support.boardtest import PgDatabase, StoreChoice, Where, db_rows
from tests.support.processes import add_human, board_env, kill, serve, wait_healthy

BODY = "posted once, answered never"


def _count(where: Where, body: str) -> int:
    return int(db_rows(where, "SELECT count(*) FROM messages WHERE body = ?", (body,))[0][0])


async def _post(url: str, token: str, body: str, rid: str) -> tuple[int, str | None, bytes]:
    """POST /api/messages as sent over the wire: the status, the replay header, the body's bytes."""
    sent = {"channel": "lobby", "workspace": "admin", "body": body, "request_id": rid}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{url}/api/messages", json=sent, headers={"Authorization": f"Bearer {token}"}) as answer,
    ):
        return answer.status, answer.headers.get("Idempotent-Replay"), await answer.read()


async def test_a_retry_after_kill_9_between_commit_and_answer_gets_the_first_answer(
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
        # The retry gets the answer the killed board never sent: status and body, kept in the
        # transaction of the post itself, and says it is a replay.
        status, replay, first = await _post(served.url, token, BODY, "post-1")
        assert (status, replay) == (201, "true"), first
        message = json.loads(first)
        (row,) = db_rows(where, "SELECT id FROM messages WHERE body = ?", (BODY,))
        assert (message["id"], message["body"], message["author"], message["channel"]) == (
            row[0],
            BODY,
            "alice",
            "lobby",
        )
        assert await _post(served.url, token, BODY, "post-1") == (201, "true", first)  # and again
        async with BoardClient(served.url, token, timeout=10) as client:
            # A different call under the same id is still refused as a reuse.
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
