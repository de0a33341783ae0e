"""One event woken into many waiters is encoded once per distinct view, never once per waiter.

Encodes are counted by wrapping the JSON encoders: a call counts when the value it is given
holds the message's fields as a plain object (an ``Encoded`` item is spliced in as the bytes
it already has, so it does not count again).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import aiohttp
import orjson
import pytest

from board.client import BoardClient
from board.server.jsonvalues import Encoded
from tests.support.boardtest import World, held
from tests.support.pages_support import Browser, sign_in


def count_encodes(monkeypatch: pytest.MonkeyPatch, body: str) -> list[int]:
    """How many times, from now on, a message whose body is ``body`` is encoded (one counter)."""
    count = [0]

    def holds(value: Any) -> bool:
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, Encoded):
                continue
            if isinstance(item, dict):
                if item.get("author") is not None and body in (item.get("body"), item.get("preview")):
                    return True
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
        return False

    def counting(encoder: Callable[..., Any]) -> Callable[..., Any]:
        def encode(value: Any, *args: Any, **kwargs: Any) -> Any:
            count[0] += holds(value)
            return encoder(value, *args, **kwargs)

        return encode

    monkeypatch.setattr(orjson, "dumps", counting(orjson.dumps))
    monkeypatch.setattr(json, "dumps", counting(json.dumps))
    return count


async def _stream(alice: Browser) -> aiohttp.ClientResponse:
    resp = await alice.http.get(alice.url + "/events?workspace=proj")
    assert (await resp.content.readline()) == b": open\n"
    while (await resp.content.readline()) != b"event: inbox\n":  # the viewer's count comes first
        pass
    await resp.content.readline()  # its data
    return resp


async def _next_message(resp: aiohttp.ClientResponse) -> dict[str, Any]:
    while not (line := (await resp.content.readline()).decode()).startswith("data: "):
        pass
    data: dict[str, Any] = json.loads(line[6:])
    return data


async def test_one_event_is_encoded_once_per_view_for_every_waiter(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = await world.bot.post("the build plan", channel="builds")  # pb takes part in the thread
    cursor = root["id"]
    readers = [await world.board.bot(f"r{i}", "proj") for i in range(8)]
    compact, full = readers[:4], readers[4:]
    alice = await sign_in(world.board)
    tabs = [await _stream(alice), await _stream(alice)]
    waits = [
        *(
            asyncio.create_task(r.messages(channel="builds", since=cursor, wait=30, view="compact"))
            for r in compact
        ),
        *(asyncio.create_task(r.messages(channel="builds", since=cursor, wait=30)) for r in full),
        asyncio.create_task(world.bot.inbox(since=cursor, wait=30, view="compact")),
        asyncio.create_task(world.peer.inbox(since=cursor, wait=30, view="compact")),
    ]
    await held(world.board, len(waits) + len(tabs))
    body = "@pb2 the build is green"
    encodes = count_encodes(monkeypatch, body)
    posted = await world.human.post(body, reply_to=root["id"])
    pages = await asyncio.gather(*waits)
    frames = [await asyncio.wait_for(_next_message(tab), 10) for tab in tabs]

    # Five distinct views (channel compact, channel full, two inbox reasons, the stream's frame)
    # and the poster's own answer, however many waiters there are.
    assert encodes[0] == 5 + 1
    items = [page["messages"] for page in pages]
    assert all([m["id"] for m in got] == [posted["id"]] for got in items)
    for got in items[:4]:
        assert got[0]["preview"] == body and "body" not in got[0] and "reason" not in got[0]
    for got in items[4:8]:
        assert got[0]["body"] == body and "preview" not in got[0] and "reason" not in got[0]
    # Inbox items differ per reader, so they are not shared: each carries its own reason.
    assert items[8][0]["reason"] == "thread" and items[9][0]["reason"] == "mention"
    assert [f["message"]["body"] for f in frames] == [body, body]
    for tab in tabs:
        tab.close()
    await alice.close()


async def test_a_shared_event_still_reaches_only_who_may_read_it(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A conversation's post, under the workspace key every reader of proj waits on."""
    cursor = (await world.bot.me())["cursor"]
    conversation = (await world.bot.open_conversation(["alice"], topic="private"))["conversation"]
    outsiders: list[BoardClient] = [world.peer, await world.board.bot("r0", "proj")]
    member = asyncio.create_task(world.bot.messages(workspace="proj", since=cursor, wait=30))
    shut_out = [asyncio.create_task(o.messages(workspace="proj", since=cursor, wait=30)) for o in outsiders]
    await held(world.board, 1 + len(outsiders))
    body = "only for alice"
    encodes = count_encodes(monkeypatch, body)
    await world.human.post(body, conversation=conversation["id"])
    assert [m["body"] for m in (await member)["messages"]] == [body]
    assert encodes[0] == 1 + 1  # the member's view, the poster's answer
    assert not any(task.done() for task in shut_out)  # the event reached them; the scope check held
    public = await world.human.post("for everyone", channel="lobby", workspace="proj")
    for task in shut_out:
        assert [m["id"] for m in (await task)["messages"]] == [public["id"]]


async def test_one_event_is_encoded_once_per_view_for_every_wake_stream(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Daemons' wake streams watching one channel: one encoding per view, every line spliced from it."""
    cursor = (await world.human.post("the channel exists", channel="builds", workspace="proj"))["id"]
    readers = [await world.board.bot(f"s{i}", "proj") for i in range(6)]
    views = ["compact"] * 3 + ["full"] * 3
    streams = [
        await r.wake_stream(since=cursor, watch=["builds"], view=view, beat=1)
        for r, view in zip(readers, views, strict=True)
    ]
    lines = [aiter(s) for s in streams]
    for line in lines:  # a beat: past its backlog (the readers' arrivals), each stream is live
        while "beat" not in await asyncio.wait_for(anext(line), 10):
            pass
    body = "a build finished"
    encodes = count_encodes(monkeypatch, body)
    posted = await world.human.post(body, channel="builds", workspace="proj")
    got = [await asyncio.wait_for(anext(line), 10) for line in lines]
    assert encodes[0] == 2 + 1  # compact and full, and the poster's own answer
    assert all(g["cursor"] == posted["id"] and g["message"]["id"] == posted["id"] for g in got)
    assert all(g["message"]["preview"] == body and "body" not in g["message"] for g in got[:3])
    assert all(g["message"]["body"] == body and g["message"]["watched"] for g in got[3:])
    for stream in streams:
        stream.close()
