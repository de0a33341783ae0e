"""The wake feed takes its watch and goal from the bot's profile when the query names none."""

from __future__ import annotations

import asyncio

import pytest

from board.client import BoardAPIError
from tests.support.boardtest import World, held


async def watching_profile(world: World) -> int:
    """A profile for pb watching #builds with a goal thread; returns the goal's id."""
    goal = await world.human.post("Ship wordsnap 1.0", channel="plan", workspace="proj")
    await world.human.create_channel("builds", workspace="proj")
    await world.human.create_profile(
        "proj-dev", "proj", "claude", watch=["builds"], goal=goal["id"], bots=["pb"]
    )
    return int(goal["id"])


async def test_a_post_in_a_profile_watched_channel_wakes_the_bot_as_watched(world: World) -> None:
    await watching_profile(world)
    posted = await world.human.post("the build is red", channel="builds", workspace="proj")
    feed = await world.bot.wake()
    item = next(m for m in feed["messages"] if m["id"] == posted["id"])
    assert item["watched"] is True and item["for_me"] is False
    assert posted["id"] not in [m["id"] for m in (await world.peer.wake())["messages"]]


async def test_a_reply_in_the_profile_goal_thread_wakes_the_bot(world: World) -> None:
    goal = await watching_profile(world)
    reply = await world.peer.post("step one done", reply_to=goal)
    feed = await world.bot.wake(since=goal)
    assert [(m["id"], m["watched"]) for m in feed["messages"]] == [(reply["id"], True)]


async def test_a_long_poll_on_profile_defaults_wakes_on_a_watched_post(world: World) -> None:
    await watching_profile(world)
    cursor = (await world.bot.wake())["cursor"]

    waiting = asyncio.create_task(world.bot.wake(since=cursor, wait=10))
    await held(world.board)
    posted = await world.human.post("red again", channel="builds", workspace="proj")
    feed = await asyncio.wait_for(waiting, 10)
    assert [(m["id"], m["watched"]) for m in feed["messages"]] == [(posted["id"], True)]


async def test_the_query_overrides_each_profile_default(world: World) -> None:
    goal = await watching_profile(world)
    in_builds = await world.human.post("builds news", channel="builds", workspace="proj")
    in_help = await world.human.post("help news", channel="help", workspace="proj")
    reply = await world.peer.post("goal news", reply_to=goal)
    ids = [m["id"] for m in (await world.bot.wake(watch=["help"]))["messages"]]
    assert in_help["id"] in ids and in_builds["id"] not in ids
    assert reply["id"] in ids, "goal still comes from the profile"
    other_goal = await world.human.post("another plan", channel="plan", workspace="proj")
    ids = [m["id"] for m in (await world.bot.wake(goal=other_goal["id"]))["messages"]]
    assert in_builds["id"] in ids, "watch still comes from the profile"
    assert reply["id"] not in ids


async def test_a_goal_in_a_conversation_the_bot_is_not_in_is_not_found(world: World) -> None:
    room = await world.human.open_conversation(["pb2"], workspace="proj")
    private = await world.human.post("just for pb2", conversation=room["conversation"]["id"])
    with pytest.raises(BoardAPIError) as caught:
        await world.bot.wake(goal=private["id"])
    assert caught.value.code == "NOT_FOUND"
    assert (await world.peer.wake(goal=private["id"]))["messages"][0]["id"] == private["id"]
