"""Bad JSON is refused at the door: nothing is stored that the board cannot read back.

Each case sends a raw body (so it can hold what ``json.dumps`` would not write by
accident), expects INVALID_ARGUMENT naming the field, and checks that no table changed.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from board.server.errors import InvalidArgument
from board.server.jsonvalues import MAX_DEPTH
from board.server.services.messages import MessageQuery
from board.server.validation import parse_query
from tests.support.boardtest import World, snapshot


async def send(
    world: World, token: str | None, method: str, path: str, text: str, **extra: str
) -> tuple[int, Any]:
    """One call with ``text`` as its body (and ``extra`` headers), answered through a strict parser."""
    headers = {"Content-Type": "application/json", **extra}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    url = world.board.url + path
    async with (
        aiohttp.ClientSession() as http,
        http.request(method, url, data=text.encode(), headers=headers) as r,
    ):
        return r.status, json.loads(await r.text(), parse_constant=_refuse)


def _refuse(name: str) -> Any:
    raise AssertionError(f"the board sent {name}, which is not JSON")


def nested(depth: int) -> str:
    return '{"a":' * (depth - 1) + "{}" + "}" * (depth - 1)


HOSTILE_META = {
    "deep": nested(MAX_DEPTH + 1),
    "very deep": nested(970),
    "lone surrogate": '{"a":"\\ud800"}',
    "lone surrogate key": '{"\\udc00":1}',
    "nested surrogate": '{"a":[1,{"b":"x\\udfff"}]}',
    "NaN": '{"a":NaN}',
    "Infinity": '{"a":[-Infinity]}',
    "overflowing number": '{"a":1e400}',
}


@pytest.mark.parametrize("meta", HOSTILE_META.values(), ids=HOSTILE_META.keys())
async def test_hostile_meta_is_refused_and_changes_nothing(world: World, meta: str) -> None:
    before = snapshot(world.board.db_path)
    body = f'{{"body":"hi","channel":"general","meta":{meta}}}'
    status, answer = await send(world, world.bot.token, "POST", "/api/messages", body)
    assert status == 422, answer
    assert answer["error"]["code"] == "INVALID_ARGUMENT"
    # Nesting too deep for the parser itself is refused before any field is known.
    error = answer["error"]
    assert error["details"]["field"] == "meta" if error["details"] else "nests too deeply" in error["message"]
    assert snapshot(world.board.db_path) == before


async def test_meta_at_the_depth_limit_is_stored_and_read_back(world: World) -> None:
    body = f'{{"body":"hi","channel":"general","meta":{nested(MAX_DEPTH)}}}'
    status, posted = await send(world, world.bot.token, "POST", "/api/messages", body)
    assert status == 201, posted
    status, listed = await send(
        world, world.human.token, "GET", "/api/messages?channel=general&workspace=proj", ""
    )
    assert status == 200 and listed["messages"][-1]["meta"] == json.loads(nested(MAX_DEPTH))


STRING_FIELDS = [
    ("POST", "/api/messages", '{"body":"x\\ud800","channel":"general"}', "body"),
    ("POST", "/api/messages", '{"body":"x","channel":"general","tags":["\\udbff"]}', "tags[0]"),
    ("PUT", "/api/knowledge/notes/a.md", '{"body":"\\ud800","base_revision":0,"reason":"r"}', "body"),
    (
        "PUT",
        "/api/knowledge/notes/a.md",
        '{"body":"b","base_revision":0,"reason":"r","sources":[{"note":"\\ud800"}]}',
        "sources[0].note",
    ),
    ("POST", "/api/wakes", '{"harness":"x","started_at":"s","outcome":"ok","error":"\\ud800"}', "error"),
    ("POST", "/api/wakes", '{"harness":"x","started_at":"s","outcome":"ok","cost_usd":NaN}', "cost_usd"),
    ("POST", "/api/skills", '{"name":"sk","text":"\\ud800"}', "text"),
]


@pytest.mark.parametrize(("method", "path", "body", "field"), STRING_FIELDS)
async def test_a_lone_surrogate_or_nan_in_any_field_is_refused(
    world: World, method: str, path: str, body: str, field: str
) -> None:
    before = snapshot(world.board.db_path)
    status, answer = await send(world, world.human.token, method, path, body)
    assert status == 422, answer
    assert answer["error"]["details"]["field"] == field
    assert snapshot(world.board.db_path) == before


async def test_an_unknown_field_with_a_surrogate_is_refused_readably(world: World) -> None:
    status, answer = await send(world, world.bot.token, "POST", "/api/messages", '{"body":"x","\\ud800":1}')
    assert status == 422 and answer["error"]["details"]["field"] == "\ufffd"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/api/messages"),
        ("POST", "/api/receipts"),
        ("PUT", "/api/knowledge/a.md"),
        ("POST", "/api/agents"),
    ],
)
async def test_deep_nesting_anywhere_in_a_body_is_a_4xx(world: World, method: str, path: str) -> None:
    before = snapshot(world.board.db_path)
    for body in ("[" * 100_000 + "]" * 100_000, '{"body":' + nested(5000) + "}", nested(900)):
        status, answer = await send(world, world.bot.token, method, path, body)
        assert status == 422, answer
        assert answer["error"]["code"] == "INVALID_ARGUMENT"
    assert snapshot(world.board.db_path) == before


def test_a_query_parameter_with_a_surrogate_is_refused() -> None:
    with pytest.raises(InvalidArgument) as refused:
        parse_query(MessageQuery, {"channel": "gen\ud800"})
    assert refused.value.details["field"] == "channel"


async def test_a_channel_naming_one_document_twice_is_refused(world: World) -> None:
    """Found by the body fuzzer: the second ref broke a unique key and answered 503."""
    before = snapshot(world.board.db_path)
    body = '{"slug":"docs","workspace":"proj","refs":[{"path":"a.md"},{"path":"a.md","mandatory":true}]}'
    status, answer = await send(world, world.human.token, "POST", "/api/channels", body)
    assert status == 422 and answer["error"]["details"]["field"] == "refs[1]"
    assert snapshot(world.board.db_path) == before


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
async def test_a_body_that_does_not_decode_as_its_content_encoding_is_a_4xx(
    world: World, encoding: str
) -> None:
    before = snapshot(world.board.db_path)
    body = '{"body":"hi","channel":"general"}'
    headers = {"Content-Encoding": encoding}
    status, answer = await send(world, world.bot.token, "POST", "/api/messages", body, **headers)
    assert status == 422, answer
    assert answer["error"]["code"] == "INVALID_ARGUMENT" and encoding in answer["error"]["message"]
    assert snapshot(world.board.db_path) == before
