"""Idempotent retries by request id, and per-token write rate limits."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from board.client import BoardAPIError
from tests.support.boardtest import World, db_rows, populate, snapshot, start_board, stop_board


def message_count(world: World) -> int:
    return db_rows(world.board.db_path, "SELECT count(*) FROM messages")[0][0]


async def test_same_request_id_same_args_gives_the_first_outcome_once(world: World) -> None:
    first = await world.bot.post("deploy done", channel="lobby", request_id="post-1")
    count = message_count(world)
    again = await world.bot.post("deploy done", channel="lobby", request_id="post-1")
    assert again == first
    assert message_count(world) == count


async def test_idempotency_key_header_works_like_request_id(world: World) -> None:
    body = {"channel": "lobby", "body": "via header"}
    headers = {"Idempotency-Key": "hdr-1"}
    status, first = await world.bot.call("POST", "/api/messages", json=body, headers=headers)
    count = message_count(world)
    status2, again = await world.bot.call("POST", "/api/messages", json=body, headers=headers)
    assert (status, status2) == (201, 201) and again == first
    assert message_count(world) == count


async def test_same_request_id_other_args_is_refused(world: World) -> None:
    await world.bot.post("one", channel="lobby", request_id="post-2")
    before = snapshot(world.board.db_path)
    with pytest.raises(BoardAPIError) as caught:
        await world.bot.post("two", channel="lobby", request_id="post-2")
    assert caught.value.code == "REQUEST_ID_REUSE" and caught.value.status == 409
    assert snapshot(world.board.db_path) == before


async def test_request_ids_are_per_caller(world: World) -> None:
    mine = await world.bot.post("mine", channel="lobby", request_id="shared-id")
    theirs = await world.peer.post("theirs", channel="lobby", request_id="shared-id")
    assert mine["id"] != theirs["id"]


async def test_concurrent_retries_have_one_effect(world: World) -> None:
    count = message_count(world)
    results = await asyncio.gather(
        *[world.bot.post("only once", channel="lobby", request_id="burst-1") for _ in range(20)]
    )
    assert len({r["id"] for r in results}) == 1
    assert message_count(world) == count + 1


async def test_a_refusal_is_replayed_too(world: World) -> None:
    with pytest.raises(BoardAPIError) as first:
        await world.bot.post("x", reply_to=999_999, request_id="bad-1")
    with pytest.raises(BoardAPIError) as again:
        await world.bot.post("x", reply_to=999_999, request_id="bad-1")
    assert first.value.code == again.value.code == "NOT_FOUND"


async def test_malformed_request_id_is_refused(world: World) -> None:
    with pytest.raises(BoardAPIError) as caught:
        await world.bot.post("x", channel="lobby", request_id="has spaces!")
    assert caught.value.code == "INVALID_ARGUMENT"


async def test_write_rate_limit_answers_429_with_retry_after(tmp_path: Path) -> None:
    board = await start_board(tmp_path, write_rate=1.0, write_burst=5)
    try:
        world = await populate(board)
        accepted, refused = 0, None
        for i in range(8):
            try:
                await world.bot.post(f"n{i}", channel="lobby")
                accepted += 1
            except BoardAPIError as exc:
                refused = exc
                break
        assert refused is not None and refused.code == "RATE_LIMITED" and refused.status == 429
        assert refused.retryable and refused.retry_after is not None and refused.retry_after >= 1
        assert accepted <= 5
        before = snapshot(board.db_path)
        with pytest.raises(BoardAPIError):
            await world.bot.post("still too fast", channel="lobby")
        assert snapshot(board.db_path) == before
        # Reads are not limited, and other tokens have their own bucket.
        await world.bot.messages()
        await world.peer.post("my own bucket", channel="lobby")
    finally:
        await stop_board(board)
