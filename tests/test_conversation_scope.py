"""A conversation reaches only its participants: no mention, handoff, filter or claim list
carries its words, or its existence, to a bot outside it."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import pytest

from board.client import BoardAPIError, BoardClient
from tests.support.boardtest import World, snapshot
from tests.support.refusals import refused


async def _private(world: World) -> tuple[int, dict[str, Any]]:
    """A conversation of pb and alice, and its first message."""
    convo = (await world.bot.open_conversation(["alice"], topic="private"))["conversation"]
    root = await world.bot.post("private kiwi plan", conversation=convo["id"])
    return convo["id"], root


async def test_a_mention_in_a_conversation_does_not_reach_a_bot_outside_it(world: World) -> None:
    _, root = await _private(world)
    mention = await world.bot.post("@pb2 have a look at the kiwi numbers", reply_to=root["id"])
    await world.human.post("@pb2 and @ab, the kiwi secret is 42", reply_to=root["id"])
    for outsider in (world.peer, world.admin_bot):
        inbox = (await outsider.inbox())["messages"]
        assert not any("kiwi" in m["body"] for m in inbox), inbox
        feed = (await outsider.wake())["messages"]
        assert not any("kiwi" in m["body"] for m in feed), feed
    # the participants still get what is for them
    assert mention["id"] in [m["id"] for m in (await world.human.inbox())["messages"]]


async def test_a_conversation_thread_is_not_handed_to_a_bot_outside_it(world: World) -> None:
    _, root = await _private(world)
    await world.bot.claim(root["id"], note="kiwi")
    before = snapshot(world.board.db_path)
    with pytest.raises(BoardAPIError) as caught:
        await world.bot.handoff(root["id"], "pb2", note="the kiwi secret is 42")
    assert caught.value.code == "NOT_FOUND"
    assert snapshot(world.board.db_path) == before
    with pytest.raises(BoardAPIError) as absent:
        await world.bot.handoff(root["id"], "nobody-here")
    assert (caught.value.status, caught.value.message) == (absent.value.status, absent.value.message)
    # a human may still hand it to a participant or take part
    assert (await world.human.handoff(root["id"], "alice"))["holder"] == "alice"


async def test_a_human_hand_off_to_an_outsider_is_refused_too(world: World) -> None:
    _, root = await _private(world)
    await world.bot.claim(root["id"])
    with pytest.raises(BoardAPIError) as caught:
        await world.human.handoff(root["id"], "pb2", note="kiwi")
    assert caught.value.code == "NOT_FOUND"
    assert not any("kiwi" in m["body"] for m in (await world.peer.inbox())["messages"])


async def test_filtering_by_a_conversation_one_is_not_in_is_not_found(world: World) -> None:
    convo_id, root = await _private(world)
    for params, what in (({"conversation": convo_id}, "conversation"), ({"thread": root["id"]}, "thread")):
        with pytest.raises(BoardAPIError) as hidden:
            await world.peer.messages(**params)
        absent_params = {k: 10_000_000 for k in params}
        with pytest.raises(BoardAPIError) as absent:
            await world.peer.messages(**absent_params)
        assert hidden.value.code == "NOT_FOUND", what
        assert (hidden.value.status, hidden.value.message, hidden.value.details) == (
            absent.value.status,
            absent.value.message,
            absent.value.details,
        )
    # participants and humans still read it
    assert [m["id"] for m in (await world.bot.messages(conversation=convo_id))["messages"]] == [root["id"]]
    assert [m["id"] for m in (await world.human.messages(thread=root["id"]))["messages"]] == [root["id"]]


async def test_claims_of_a_conversation_thread_stay_with_its_participants(world: World) -> None:
    _, root = await _private(world)
    await world.bot.claim(root["id"], note="the kiwi secret is 42")
    public = await world.peer.post("a public thread", channel="lobby")
    await world.peer.claim(public["id"], note="public work")

    def threads(page: dict[str, Any]) -> set[int]:
        return {c["thread_id"] for c in page["claims"]}

    assert root["id"] not in threads(await world.peer.claims())
    assert public["id"] in threads(await world.peer.claims())
    roster = (await world.peer.agents())["agents"]
    assert not any(c["thread_id"] == root["id"] for a in roster for c in a["claims"])
    assert not any(c["thread_id"] == root["id"] for c in (await world.peer.agent("pb"))["claims"])
    # the holder and humans still see it
    assert root["id"] in threads(await world.bot.claims())
    assert root["id"] in threads(await world.human.claims())
    assert any(c["thread_id"] == root["id"] for c in (await world.human.agent("pb"))["claims"])
    await world.bot.done(root["id"], summary="the kiwi secret was 42")
    assert root["id"] not in threads(await world.peer.claims(state="done"))


async def test_a_humans_claims_elsewhere_stay_out_of_a_bots_roster(world: World) -> None:
    elsewhere = await world.human.post("other's plum work", channel="lobby", workspace="other")
    await world.human.claim(elsewhere["id"], note="the plum secret is 7")
    here = await world.human.post("proj work", channel="lobby", workspace="proj")
    await world.human.claim(here["id"], note="proj work")
    for page in (
        (await world.bot.agent("alice")),
        *[a for a in (await world.bot.agents())["agents"] if a["handle"] == "alice"],
    ):
        assert [c["thread_id"] for c in page["claims"]] == [here["id"]]
    assert {c["thread_id"] for c in (await world.human.agent("alice"))["claims"]} == {
        here["id"],
        elsewhere["id"],
    }


def _answer(exc: BoardAPIError) -> tuple[object, ...]:
    return exc.status, exc.code, exc.message, exc.details, exc.retryable


ABSENT = 10_000_000


async def test_a_conversation_one_is_not_in_answers_as_an_absent_one_on_every_route(world: World) -> None:
    """Posting, replying, reading, claiming, watching and recording a wake: each refusal is
    the one an absent id gets, byte for byte, and nothing is written."""
    convo_id, root = await _private(world)
    await world.bot.claim(root["id"])

    def calls(client: BoardClient, conversation: int, message: int) -> dict[str, Awaitable[object]]:
        wake = {"harness": "claude", "started_at": "2026-11-30T04:00:00Z", "outcome": "ok"}
        trigger = {"trigger": str(message)}
        return {
            "post a root": client.post("let me in", conversation=conversation),
            "reply": client.post("let me in", reply_to=message),
            "read the message": client.message(message),
            "read the thread": client.thread(message),
            "filter by thread": client.messages(thread=message),
            "filter by conversation": client.messages(conversation=conversation),
            "claim": client.claim(message),
            "release": client.request("POST", f"/api/threads/{message}/release", json={}),
            "hand off": client.handoff(message, "pb"),
            "close": client.done(message),
            "watch as goal": client.wake(goal=message),
            "trigger a wake": client.record_wake(**wake, trigger_ids=[message]),
            "own prompt": client.request("GET", "/api/bots/pb2/prompt", params=trigger),
            # pb may read its conversation; whoever asks for pb's prompt must be able to as well
            "a member's prompt": client.request("GET", "/api/bots/pb/prompt", params=trigger),
        }

    before = snapshot(world.board.db_path)
    for outsider in (world.peer, world.admin_bot):
        hidden = calls(outsider, convo_id, root["id"])
        absent = calls(outsider, ABSENT, ABSENT)
        for what in hidden:
            answer = _answer(await refused(hidden[what], "NOT_FOUND"))
            status, code, message, *rest = _answer(await refused(absent[what], "NOT_FOUND"))
            # A refusal that names the id it refuses names the absent one in its place.
            assert answer == (status, code, str(message).replace(str(ABSENT), str(root["id"])), *rest), what
            assert code == "NOT_FOUND", what
    assert snapshot(world.board.db_path) == before
