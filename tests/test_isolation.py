"""Two populated workspaces never see each other's channels, messages, threads, hits or inbox."""

from __future__ import annotations

from typing import Any

import pytest

from board.client import BoardAPIError
from tests.support.boardtest import World
from tests.support.refusals import refused


async def populate_both(world: World) -> dict[str, int]:
    proj = await world.human.post("proj secret pineapple @pb", channel="plans", workspace="proj")
    await world.bot.post("proj reply pineapple", reply_to=proj["id"])
    other = await world.human.post("other secret pineapple @ob", channel="ideas", workspace="other")
    await world.other.post("other reply pineapple", reply_to=other["id"])
    return {"proj": proj["id"], "other": other["id"]}


async def test_each_workspace_sees_only_its_own(world: World) -> None:
    roots = await populate_both(world)
    for client, own, foreign, channel, foreign_channel in (
        (world.bot, "proj", "other", "plans", "ideas"),
        (world.other, "other", "proj", "ideas", "plans"),
    ):
        channels = {c["slug"] for c in (await client.channels())["channels"]}
        assert channel in channels and foreign_channel not in channels
        messages = (await client.messages(limit=100))["messages"]
        assert messages and {m["workspace"] for m in messages} == {own}
        hits = (await client.search("pineapple"))["messages"]
        assert len(hits) == 2 and {m["workspace"] for m in hits} == {own}
        inbox = (await client.inbox())["messages"]
        assert inbox and {m["workspace"] for m in inbox} == {own}
        assert (await client.thread(roots[own]))["messages"]
        for call in (
            client.thread(roots[foreign]),
            client.message(roots[foreign]),
            client.messages(workspace=foreign),
            client.channels(workspace=foreign),
            client.search("pineapple", workspace=foreign),
            client.post("sneaking in", reply_to=roots[foreign]),
            client.post("sneaking in", channel="lobby", workspace=foreign),
            client.messages(thread=roots[foreign]),
        ):
            with pytest.raises(BoardAPIError) as caught:
                await call
            assert caught.value.code == "NOT_FOUND"


async def test_not_found_is_the_same_for_foreign_and_absent(world: World) -> None:
    roots = await populate_both(world)
    with pytest.raises(BoardAPIError) as foreign:
        await world.bot.thread(roots["other"])
    with pytest.raises(BoardAPIError) as absent:
        await world.bot.thread(10_000_000)
    assert (foreign.value.status, foreign.value.code, foreign.value.message, foreign.value.details) == (
        absent.value.status,
        absent.value.code,
        absent.value.message,
        absent.value.details,
    )


async def test_humans_and_admin_bots_see_both(world: World) -> None:
    await populate_both(world)
    hits = (await world.human.search("pineapple"))["messages"]
    assert {m["workspace"] for m in hits} == {"proj", "other"}
    for slug in ("proj", "other"):
        admin_hits = (await world.admin_bot.search("pineapple", workspace=slug))["messages"]
        assert {m["workspace"] for m in admin_hits} == {slug}


async def test_conversations_are_private_to_their_participants(world: World) -> None:
    convo = (await world.bot.open_conversation(["alice"], topic="private"))["conversation"]
    secret = await world.bot.post("private mango", conversation=convo["id"])
    assert (await world.human.inbox())["messages"][-1]["id"] == secret["id"]
    assert [m["id"] for m in (await world.bot.search("mango"))["messages"]] == [secret["id"]]
    assert (await world.peer.search("mango"))["messages"] == []
    assert secret["id"] not in [m["id"] for m in (await world.peer.messages(limit=100))["messages"]]
    with pytest.raises(BoardAPIError) as caught:
        await world.peer.message(secret["id"])
    assert caught.value.code == "NOT_FOUND"
    with pytest.raises(BoardAPIError) as caught:
        await world.peer.post("let me in", conversation=convo["id"])
    assert caught.value.code == "NOT_FOUND"  # as for an absent conversation (docs/api-decisions.md)


async def test_an_admin_bot_reads_a_thread_of_any_workspace_by_its_id(world: World) -> None:
    root = await world.human.post("proj work", channel="lobby", workspace="proj")
    await world.bot.post("a reply", reply_to=root["id"])
    page = await world.admin_bot.messages(thread=root["id"], since=0)
    assert len(page["messages"]) == 2
    assert (await world.admin_bot.messages(thread=root["id"], since=0, workspace="admin"))["messages"] == []


def _shape(exc: BoardAPIError) -> tuple[int, str, str, dict[str, Any]]:
    return exc.status, exc.code, exc.message, exc.details


async def test_naming_a_foreign_bot_in_a_conversation_answers_as_for_an_absent_one(world: World) -> None:
    """Neither the spelling in the answer nor which check answers first tells a foreign handle exists."""
    for participants, workspace in ((["OB"], None), (["pb2", "OB"], None), (["OB"], "nowhere")):
        absent = [("ZZ" if h == "OB" else h) for h in participants]
        status, code, message, details = _shape(
            await refused(world.bot.open_conversation(participants, workspace=workspace), "NOT_FOUND")
        )
        expected = _shape(
            await refused(world.bot.open_conversation(absent, workspace=workspace), "NOT_FOUND")
        )
        assert (status, code, message.replace("OB", "ZZ"), details) == expected
        assert code == "NOT_FOUND"
    assert (await world.bot.conversations())["conversations"] == []
