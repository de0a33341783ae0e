"""Messages, threads, conversations, bounded lists, compact views and unread counts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from board.client import BoardAPIError
from tests.support.boardtest import World, snapshot


async def test_thread_roots_carry_reply_summaries(world: World) -> None:
    root = await world.human.post("@pb can you fix the build?", channel="lobby", workspace="proj")
    r1 = await world.bot.post("on it", reply_to=root["id"])
    r2 = await world.peer.post("I saw it too", reply_to=r1["id"])
    assert r2["thread_id"] == root["id"] and r2["reply_to"] == r1["id"]
    thread = await world.bot.thread(root["id"])
    assert [m["id"] for m in thread["messages"]] == [root["id"], r1["id"], r2["id"]]
    assert thread["claim"] == {"state": "open", "holder": None}
    listed = (await world.bot.messages(roots=True))["messages"][0]
    assert listed["id"] == root["id"]
    assert listed["replies"]["count"] == 2 and listed["replies"]["last_id"] == r2["id"]
    assert listed["replies"]["authors"] == ["alice", "pb", "pb2"]
    # the root's author and the earlier replier get the later reply in their inbox
    assert r2["id"] in [m["id"] for m in (await world.bot.inbox())["messages"]]
    assert r2["id"] in [m["id"] for m in (await world.human.inbox())["messages"]]


async def test_reply_naming_another_channel_is_refused(world: World) -> None:
    root = await world.bot.post("root", channel="lobby")
    before = snapshot(world.board.db_path)
    with pytest.raises(BoardAPIError) as caught:
        await world.bot.post("wrong place", reply_to=root["id"], channel="elsewhere")
    assert caught.value.code == "INVALID_ARGUMENT"
    assert snapshot(world.board.db_path) == before


async def test_a_new_root_needs_exactly_one_place(world: World) -> None:
    places: tuple[dict[str, Any], ...] = ({}, {"channel": "lobby", "conversation": 1})
    for kwargs in places:
        with pytest.raises(BoardAPIError) as caught:
            await world.bot.post("where?", **kwargs)
        assert caught.value.code == "INVALID_ARGUMENT"


async def test_channel_is_created_on_first_post(world: World) -> None:
    await world.bot.post("first words", channel="new-room")
    slugs = [c["slug"] for c in (await world.bot.channels())["channels"]]
    assert slugs == ["lobby", "new-room"]


async def test_channels_unread_by_since_and_seen(world: World) -> None:
    a1 = await world.human.post("a1", channel="alpha", workspace="proj")
    await world.human.post("a2", channel="alpha", workspace="proj")
    b1 = await world.human.post("b1", channel="beta", workspace="proj")
    await world.bot.post("mine do not count", channel="beta")
    by_since = {c["slug"]: c["unread"] for c in (await world.bot.channels(since=a1["id"]))["channels"]}
    assert by_since == {"alpha": 1, "beta": 1, "lobby": 0}
    seen = f"alpha:{a1['id']},beta:{b1['id']}"
    by_seen = {c["slug"]: c["unread"] for c in (await world.bot.channels(seen=seen))["channels"]}
    assert by_seen == {"alpha": 1, "beta": 0, "lobby": 0}
    plain = (await world.bot.channels())["channels"]
    assert all("unread" not in c for c in plain)


async def test_conversations_same_participants_same_conversation(world: World) -> None:
    status, first = await world.bot.call(
        "POST", "/api/conversations", json={"participants": ["pb2"], "topic": "pairing"}
    )
    status2, again = await world.peer.call("POST", "/api/conversations", json={"participants": ["pb"]})
    assert (status, status2) == (201, 200)
    assert first["conversation"]["id"] == again["conversation"]["id"]
    assert first["conversation"]["participants"] == ["pb", "pb2"]
    msg = await world.bot.post("hello pair", conversation=first["conversation"]["id"])
    assert msg["kind"] == "conversation"
    inbox = (await world.peer.inbox())["messages"]
    assert inbox[-1]["id"] == msg["id"] and inbox[-1]["reason"] == "conversation"
    listed = (await world.peer.conversations(since=0))["conversations"]
    assert listed[0]["unread"] == 1


async def test_conversation_with_another_workspaces_bot_is_not_found(world: World) -> None:
    before = snapshot(world.board.db_path)
    with pytest.raises(BoardAPIError) as caught:
        await world.bot.open_conversation(["ob"])
    assert caught.value.code == "NOT_FOUND"
    assert snapshot(world.board.db_path) == before


async def test_byte_cap_keeps_the_first_item_and_pages_onward(world: World) -> None:
    ids = [(await world.bot.post("x" * 5000, channel="big"))["id"] for _ in range(6)]
    page = await world.bot.messages(channel="big", since=0, limit=500, max_bytes=100)
    assert [m["id"] for m in page["messages"]] == ids[:1]
    assert page["has_more"] is True and page["next_since"] == ids[0]
    seen, since = [], 0
    while True:
        page = await world.bot.messages(channel="big", since=since, max_bytes=12_000)
        assert len(json.dumps(page["messages"])) <= 12_000 or len(page["messages"]) == 1
        seen += [m["id"] for m in page["messages"]]
        if not page["has_more"]:
            break
        since = page["next_since"]
    assert seen == ids


async def test_server_cap_cannot_be_raised(world: World) -> None:
    for _ in range(8):
        await world.bot.post("y" * 4000, channel="big")
    page = await world.bot.messages(channel="big", limit=500, max_bytes=10_000_000)
    assert len(json.dumps(page["messages"])) <= 24_000 + 5000
    assert page["has_more"] is True and "next_before" in page


async def test_descending_by_default_and_paging_with_before(world: World) -> None:
    ids = [(await world.bot.post(f"n{i}", channel="feed"))["id"] for i in range(5)]
    page = await world.bot.messages(channel="feed", limit=2)
    assert [m["id"] for m in page["messages"]] == [ids[4], ids[3]]
    page = await world.bot.messages(channel="feed", limit=2, before=page["next_before"])
    assert [m["id"] for m in page["messages"]] == [ids[2], ids[1]]
    assert page["cursor"] >= ids[4]


async def test_compact_view_rows(world: World) -> None:
    body = "a long body " * 40
    root = await world.bot.post(body, channel="lobby", tags=["ci"], meta={"pr": 7, "sha": "abc"})
    row = (await world.bot.messages(view="compact"))["messages"][0]
    assert row["id"] == root["id"]
    assert row["preview"] == body[:160] and row["body_chars"] == len(body)
    assert row["meta_keys"] == ["pr", "sha"] and row["tags"] == ["ci"]
    assert row["claim"]["state"] == "open" and "body" not in row and "meta" not in row


async def test_filters_by_author_tag_and_thread(world: World) -> None:
    root = await world.bot.post("root", channel="lobby", tags=["bug"])
    await world.peer.post("reply", reply_to=root["id"])
    await world.peer.post("other", channel="lobby")
    assert [m["author"] for m in (await world.bot.messages(author="pb2"))["messages"]] == ["pb2", "pb2"]
    assert [m["id"] for m in (await world.bot.messages(tag="bug"))["messages"]] == [root["id"]]
    assert len((await world.bot.messages(thread=root["id"]))["messages"]) == 2


async def test_search_ranks_and_highlights(world: World) -> None:
    await world.bot.post("the deploy pipeline failed on staging", channel="lobby")
    best = await world.bot.post("deploy deploy deploy: rollback the deploy", channel="lobby")
    hits = (await world.bot.search("deploy"))["messages"]
    assert hits[0]["id"] == best["id"]
    assert "**deploy**" in hits[0]["snippet"]
    assert (await world.bot.search("deplo*"))["messages"]
    assert (await world.bot.search('"quoted" OR (weird'))["messages"] == []


async def test_get_message_lists_receipts_of_addressees(world: World) -> None:
    msg = await world.human.post("@pb @pb2 please both look", channel="lobby", workspace="proj")
    await world.bot.inbox(ack=True)
    got = await world.human.message(msg["id"])
    receipts = {r["handle"]: r for r in got["receipts"]}
    assert set(receipts) == {"pb", "pb2"}
    assert receipts["pb"]["seen_at"] is not None and receipts["pb2"]["seen_at"] is None


async def test_a_posted_message_is_rendered_as_it_reads_back(world: World) -> None:
    root = await world.human.post("@pb look", channel="lobby", workspace="proj", tags=["t"], meta={"k": 1})
    read = await world.human.message(root["id"])
    assert read.pop("receipts")[0]["handle"] == "pb"
    assert read.pop("delivery")[0]["handle"] == "pb"  # read-side, like receipts: not on the post's answer
    assert root == read
    reply = await world.bot.post("looking", reply_to=root["id"])
    read = await world.human.message(reply["id"])
    read.pop("receipts")
    assert reply == read
