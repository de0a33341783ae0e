"""Bad input gets a clear error in the one JSON shape, and changes nothing."""

from __future__ import annotations

import io
from collections.abc import Awaitable
from typing import Any

import aiohttp
import pytest

from board.client import BoardAPIError
from tests.support.boardtest import World, snapshot
from tests.support.refusals import refused


async def raw(
    world: World,
    method: str,
    path: str,
    *,
    data: bytes | io.BytesIO | None = None,
    token: str | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    hdrs = {"Content-Type": "application/json", **(headers or {})}
    if token:
        hdrs["Authorization"] = f"Bearer {token}"
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, world.board.url + path, data=data, headers=hdrs) as resp,
    ):
        assert resp.content_type == "application/json", await resp.text()
        return resp.status, await resp.json()


def assert_error_shape(body: Any, code: str) -> None:
    assert set(body) == {"error"}
    error = body["error"]
    assert set(error) == {"code", "message", "retryable", "details"}
    assert error["code"] == code
    assert isinstance(error["message"], str) and error["message"]
    assert "Traceback" not in error["message"]


def post(world: World, **body: Any) -> Awaitable[Any]:
    """The bot posts ``body`` as a message, unchecked by the client."""
    return world.bot.request("POST", "/api/messages", json=body)


async def test_malformed_json_is_invalid_argument_and_writes_nothing(world: World) -> None:
    before = snapshot(world.board.db_path)
    status, body = await raw(
        world, "POST", "/api/messages", data=b'{"channel": "lobby", "body": ', token=world.bot.token
    )
    assert status == 422
    assert_error_shape(body, "INVALID_ARGUMENT")
    assert "JSON" in body["error"]["message"]
    assert snapshot(world.board.db_path) == before


async def test_unknown_field_is_named_in_the_error(world: World) -> None:
    error = await refused(
        post(world, channel="lobby", body="x", colour="red"),
        "INVALID_ARGUMENT",
        unchanged=world.board,
    )
    assert "colour" in error.message and error.details["field"] == "colour"


async def test_wrong_types_are_refused(world: World) -> None:
    await refused(post(world, channel="lobby", body=12), "INVALID_ARGUMENT", unchanged=world.board)
    await refused(
        post(world, channel="lobby", body="x", tags="a,b"), "INVALID_ARGUMENT", unchanged=world.board
    )
    await refused(post(world, reply_to=True, body="x"), "INVALID_ARGUMENT", unchanged=world.board)
    await refused(post(world, channel="lobby", body="x", meta=[1]), "INVALID_ARGUMENT", unchanged=world.board)


async def test_limits_answer_limit_exceeded(world: World) -> None:
    await refused(post(world, channel="lobby", body="x" * 16_001), "LIMIT_EXCEEDED", unchanged=world.board)
    await refused(
        post(world, channel="lobby", body="x", tags=[f"t{i}" for i in range(11)]),
        "LIMIT_EXCEEDED",
        unchanged=world.board,
    )
    await refused(
        post(world, channel="lobby", body="x", tags=["t" * 33]),
        "LIMIT_EXCEEDED",
        unchanged=world.board,
    )
    await refused(
        post(world, channel="lobby", body="x", meta={"k": "v" * 9000}),
        "LIMIT_EXCEEDED",
        unchanged=world.board,
    )
    await world.bot.post("y" * 16_000, channel="lobby")  # the limit itself is allowed


async def test_oversized_request_body(world: World) -> None:
    before = snapshot(world.board.db_path)
    status, body = await raw(
        world,
        "POST",
        "/api/messages",
        token=world.bot.token,
        data=io.BytesIO(b'{"channel":"lobby","body":"' + b"x" * (1024 * 1024 + 10) + b'"}'),
    )
    assert status == 413
    assert_error_shape(body, "LIMIT_EXCEEDED")
    assert snapshot(world.board.db_path) == before


async def test_control_characters_and_bad_slugs(world: World) -> None:
    await refused(post(world, channel="lobby", body="bell\x07"), "INVALID_ARGUMENT", unchanged=world.board)
    await refused(post(world, channel="Lobby!", body="x"), "INVALID_ARGUMENT", unchanged=world.board)
    await refused(post(world, channel="../etc", body="x"), "INVALID_ARGUMENT", unchanged=world.board)
    # A new channel's slug starts with a letter or digit: /c/.. is no address a browser keeps.
    for slug in ("..", "-rf", ".hidden"):
        await refused(post(world, channel=slug, body="x"), "INVALID_ARGUMENT", unchanged=world.board)
        await refused(world.bot.create_channel(slug), "INVALID_ARGUMENT", unchanged=world.board)
    await world.bot.post("tab\tand\nnewline", channel="lobby")


async def test_huge_limit_wait_and_negative_cursors(world: World) -> None:
    for params in (
        {"limit": 10_000},
        {"wait": 3600},
        {"since": -1},
        {"limit": 0},
        {"since": "abc"},
        {"before": 0},
        {"view": "everything"},
        {"nonsense": 1},
    ):
        with pytest.raises(BoardAPIError) as caught:
            await world.bot.messages(**params)
        assert caught.value.code == "INVALID_ARGUMENT", params


async def test_integers_beyond_64_bits_are_refused(world: World) -> None:
    await refused(post(world, reply_to=2**70, body="x"), "INVALID_ARGUMENT", unchanged=world.board)
    with pytest.raises(BoardAPIError) as caught:
        await world.bot.messages(since=2**64)
    assert caught.value.code == "INVALID_ARGUMENT"


async def test_unknown_ids_are_not_found(world: World) -> None:
    for path in ("/api/messages/999999", "/api/threads/999999"):
        status, body = await raw(world, "GET", path, token=world.bot.token)
        assert status == 404
        assert_error_shape(body, "NOT_FOUND")
    await refused(post(world, reply_to=999_999, body="x"), "NOT_FOUND", unchanged=world.board)


async def test_unknown_route_and_method(world: World) -> None:
    status, body = await raw(world, "GET", "/api/nothing-here", token=world.bot.token)
    assert status == 404
    assert_error_shape(body, "NOT_FOUND")
    status, body = await raw(world, "PUT", "/api/me", token=world.bot.token)
    assert status == 422
    assert_error_shape(body, "INVALID_ARGUMENT")


async def test_mentions_of_unknown_handles_do_not_count(world: World) -> None:
    posted = await world.human.post("ping @nobody-here and @ob and @pb", channel="lobby", workspace="proj")
    assert posted["mentions"] == ["pb"]  # ob is in another workspace
    assert (await world.other.inbox())["messages"] == []


async def test_no_credential_and_bad_credential(world: World) -> None:
    status, body = await raw(world, "GET", "/api/me")
    assert status == 401
    assert_error_shape(body, "UNAUTHENTICATED")
    status, body = await raw(world, "GET", "/api/me", token="bb_not-a-token")
    assert status == 401
    assert_error_shape(body, "UNAUTHENTICATED")


async def test_a_refusal_names_a_query_parameter_so_and_a_bound_of_one_is_no_plural(world: World) -> None:
    """A query's names are mostly no nouns ("The since must ...", "The q must ..."): a refusal
    calls each a parameter; a body's field still reads "The body"."""
    error = await refused(world.human.search(""), "INVALID_ARGUMENT", unchanged=world.board)
    assert error.message == "The parameter q must have at least 1 character."
    assert error.details["field"] == "q"
    status, body = await raw(world, "GET", "/api/threads/1?since=-1", token=world.bot.token)
    assert status == 422 and body["error"]["details"]["field"] == "since"
    assert body["error"]["message"] == "The parameter since must be at least 0."
    status, body = await raw(world, "GET", "/api/knowledge?as_of=yesterday", token=world.bot.token)
    assert status == 422 and body["error"]["details"]["field"] == "as_of"
    assert body["error"]["message"].startswith("The parameter as_of is not an RFC 3339 time")
    # A time a service checks after the parse is a parameter too: not "The from must be ...".
    status, body = await raw(world, "GET", "/api/audit?from=yesterday", token=world.human.token)
    assert status == 422 and body["error"]["details"]["field"] == "from"
    assert body["error"]["message"] == "The parameter from must be an RFC 3339 time."
    status, body = await raw(
        world, "POST", "/api/messages", data=b'{"channel": "lobby", "body": 1}', token=world.bot.token
    )
    assert status == 422 and body["error"]["message"] == "The body must be a string."


async def test_a_time_past_the_calendars_ends_is_refused_not_failed(world: World) -> None:
    """An offset may carry a time of year 1 or 9999 past the calendar's end once in UTC: it is
    no time the board can store, refused as any other, not an internal error."""
    for given in ("0001-01-01T00:00:00%2B01:00", "9999-12-31T23:59:59-01:00"):
        status, body = await raw(world, "GET", f"/api/audit?from={given}", token=world.human.token)
        assert status == 422 and body["error"]["message"] == "The parameter from must be an RFC 3339 time."
        status, body = await raw(world, "GET", f"/api/knowledge?as_of={given}", token=world.bot.token)
        assert status == 422 and body["error"]["details"]["field"] == "as_of", body
