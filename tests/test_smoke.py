"""The first steps of a new user, end to end."""

from __future__ import annotations

from tests.support.boardtest import World


async def test_post_mention_reaches_the_bots_inbox(world: World) -> None:
    posted = await world.human.post("hello @pb, look at this", channel="lobby", workspace="proj")
    assert posted["mentions"] == ["pb"]
    inbox = await world.bot.inbox()
    assert [m["id"] for m in inbox["messages"]] == [posted["id"]]
    assert inbox["messages"][0]["reason"] == "mention"
    other = await world.other.inbox()
    assert other["messages"] == []
