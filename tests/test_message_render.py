"""One message, one shape: what a post answers is what every read of it shows.

Posting renders the message from what it wrote; the reads render stored rows. Both
go through one function, so the answer to a post, the live event a long-poll wakes
with, and the message read back by list, get, thread, inbox and search are equal,
key for key and in the same order, for values chosen to trip an encoder up.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from board.client import BoardClient
from tests.support.boardtest import World

#: Values that survive only a faithful round trip: escapes, separators JSON allows but
#: JavaScript does not, markup, right-to-left text, huge and negative-zero numbers,
#: unsorted and empty keys, and nesting close to the board's depth limit.
HOSTILE_BODY = (
    'hostileword <script>alert("x")</script> \\u0000 \u2028\u2029 \u202eevil\u202c 🧨 e\u0301 @pb @PB2\r\nend'
)
DEEP: Any = "bottom"
for _ in range(25):
    DEEP = {"d": DEEP}
HOSTILE_META: dict[str, Any] = {
    "z": [1, 2.5, -0.0, 1e308, 2**63, -(2**63), None, True, False],
    "": "",
    'quo"te\\': {"<": "</script><!--", "\u2028": "🧨"},
    "a": DEEP,
}
HOSTILE_TAGS = ["ops:db/2", "x.y_z-1", "ops:db/2"]

#: What a read adds to the message object for its own purpose.
READ_EXTRAS = ("receipts", "reason", "snippet", "delivery")  # read-side fields a post does not answer


def plain(item: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in item.items() if key not in READ_EXTRAS}


def encoded(item: dict[str, Any]) -> str:
    """The object as a client sees it on the wire: key order and number forms included."""
    return json.dumps(plain(item), ensure_ascii=False)


def only(items: list[dict[str, Any]], message_id: int) -> dict[str, Any]:
    found = [m for m in items if m["id"] == message_id]
    assert len(found) == 1, f"message {message_id} not read back once: {[m['id'] for m in items]}"
    return found[0]


async def reads(client: BoardClient, message: dict[str, Any], workspace: str) -> dict[str, dict[str, Any]]:
    """The message as each read shows it to ``client``."""
    message_id = message["id"]
    listed = await client.messages(workspace=workspace, since=message_id - 1)
    inbox = await client.inbox(since=message_id - 1)
    thread = await client.thread(message["thread_id"], since=message_id - 1)
    found = await client.search("hostileword", workspace=workspace)
    return {
        "list": only(listed["messages"], message_id),
        "get": await client.message(message_id),
        "thread": only(thread["messages"], message_id),
        "inbox": only(inbox["messages"], message_id),
        "search": only(found["messages"], message_id),
    }


async def live(client: BoardClient, since: int) -> asyncio.Task[dict[str, Any]]:
    """A long-poll of ``client``'s inbox, waiting before the post it will wake with."""
    task = asyncio.create_task(client.inbox(since=since, wait=20))
    await asyncio.sleep(0.3)  # held by the board: the post below wakes it
    assert not task.done(), "the inbox answered before anything was posted"
    return task


async def check_same(posted: dict[str, Any], seen: dict[str, dict[str, Any]]) -> None:
    for read, item in seen.items():
        assert plain(item) == posted, f"{read} shows the message otherwise than the post answered"
        assert encoded(item) == encoded(posted), f"{read} encodes the message otherwise"


async def test_a_posted_root_reads_back_as_posted(world: World) -> None:
    head = (await world.bot.inbox())["cursor"]
    woken = await live(world.bot, head)
    posted = await world.human.post(
        HOSTILE_BODY, channel="lobby", workspace="proj", tags=HOSTILE_TAGS, meta=HOSTILE_META
    )
    assert posted["meta"] == HOSTILE_META and posted["tags"] == HOSTILE_TAGS
    assert posted["mentions"] == ["pb", "pb2"] and "replies" in posted and "claim" in posted
    event = only((await woken)["messages"], posted["id"])
    seen = await reads(world.bot, posted, "proj")
    await check_same(posted, {"long-poll": event} | seen)


async def test_a_posted_reply_in_a_conversation_reads_back_as_posted(world: World) -> None:
    conversation = (await world.bot.open_conversation(["alice"], topic="hostile"))["conversation"]
    root = await world.human.post("hostileword opens", conversation=conversation["id"])
    head = (await world.human.inbox())["cursor"]
    woken = await live(world.human, head)
    posted = await world.bot.post(HOSTILE_BODY, reply_to=root["id"], tags=HOSTILE_TAGS, meta=HOSTILE_META)
    assert posted["conversation"] == conversation["id"] and posted["channel"] is None
    assert "replies" not in posted and "claim" not in posted
    event = only((await woken)["messages"], posted["id"])
    seen = await reads(world.human, posted, "proj")
    await check_same(posted, {"long-poll": event} | seen)
