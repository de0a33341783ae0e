"""Daily budgets through the real API: the wake feed holds a bot whose wakes today reach a limit.

Wakes are recorded with ``POST /api/wakes`` and each bot's token, on a board whose clock
the test moves (ManualClock, 2026-11-30 04:00 UTC). A held feed answers no messages, the
``held`` object and the cursor it was given; the messages wait and come once the hold
ends: at UTC midnight, on a higher limit, or on a human's lift.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from board.client import BoardClient
from board.server.clock import ManualClock, iso, parse_time
from tests.support.boardtest import Board, World
from tests.support.refusals import refused

MIDNIGHT = "2026-12-01T00:00:00Z"  # the end of the clock's day


async def wake(client: BoardClient, clock: ManualClock, **fields: Any) -> None:
    await client.record_wake(harness="claude", started_at=iso(clock.now()), outcome="ok", **fields)


async def feed(client: BoardClient, since: int = 0, wait: int = 0) -> dict[str, Any]:
    return await client.wake(since=since, wait=wait)


async def waiting(world: World, body: str = "@pb please look") -> int:
    """A message for pb: what a held feed keeps back."""
    return int((await world.human.post(body, channel="lobby", workspace="proj"))["id"])


async def notices(world: World) -> list[dict[str, Any]]:
    listed = await world.human.messages(workspace="proj", channel="lobby", tag="budget-held", limit=50)
    return list(listed["messages"])


MEASURES = [
    ("wakes", {"budget_wakes": 2}, [{}, {}], 2),
    (
        "tokens",
        {"budget_tokens": 1000},
        [{"input_tokens": 600, "output_tokens": 100}, {"input_tokens": 300}],
        1000,
    ),
    # 0.7 + 0.1 is 0.7999999999999999 in floats: the sum must still reach 0.8.
    ("cost_usd", {"budget_cost_usd": 0.8}, [{"cost_usd": 0.7}, {"cost_usd": 0.1}], 0.8),
]


@pytest.mark.parametrize(("measure", "limit", "wakes", "spent"), MEASURES, ids=[m[0] for m in MEASURES])
async def test_each_measure_holds_the_bot_once_spent_today_reaches_it(
    clocked_world: World,
    clock: ManualClock,
    measure: str,
    limit: dict[str, Any],
    wakes: list[Any],
    spent: float,
) -> None:
    world = clocked_world
    await world.human.set_budget("pb", **limit)
    first = await waiting(world)
    await wake(world.bot, clock, **wakes[0])
    page = await feed(world.bot)
    assert "held" not in page and [m["id"] for m in page["messages"]] == [first]  # below the limit
    await wake(world.bot, clock, **wakes[1])
    second = await waiting(world, "@pb one more")
    page = await feed(world.bot, since=first)
    assert page["messages"] == [] and page["cursor"] == first  # the cursor stays: nothing is lost
    held = page["held"]
    assert (held["reason"], held["scope"], held["source"], held["measure"]) == (
        "budget",
        "bot",
        "bot",
        measure,
    )
    assert (held["limit"], held["spent"], held["resets_at"]) == (spent, spent, MIDNIGHT)  # at the limit
    assert held["which"], held
    budget = (await world.human.agent("pb"))["budget"]
    assert budget["held"] == held and budget["spent_today"][measure] == spent
    assert "held" not in await feed(world.peer)  # pb2 is not held
    await world.human.set_budget("pb", lift=True)
    assert [m["id"] for m in (await feed(world.bot, since=first))["messages"]] == [second]


async def test_a_bot_limit_wins_over_its_profile_and_the_workspace_holds_all_its_bots(
    clocked_world: World, clock: ManualClock
) -> None:
    world = clocked_world
    profile = await world.human.create_profile("pb-dev", "proj", "claude", budget_wakes=3, bots=["pb"])
    assert (profile["budget_wakes"], profile["budget_tokens"], profile["budget_cost_usd"]) == (3, None, None)
    for _ in range(3):
        await wake(world.bot, clock)
    held = (await feed(world.bot))["held"]
    assert (held["source"], held["limit"], held["spent"]) == ("profile pb-dev", 3, 3)
    budget = await world.human.set_budget("pb", budget_wakes=5)  # the bot's own limit wins
    assert budget["limits"]["wakes"] == {"limit": 5, "from": "bot"} and budget["held"] is None
    assert "held" not in await feed(world.bot)
    await wake(world.bot, clock)
    await wake(world.bot, clock)
    assert (await feed(world.bot))["held"]["source"] == "bot"
    budget = await world.human.set_budget("pb", budget_wakes=0)  # 0 clears: the profile's again
    assert budget["budget_wakes"] is None and budget["limits"]["wakes"]["from"] == "profile pb-dev"
    await world.human.update_profile("pb-dev", budget_wakes=0)  # and no limit at all
    assert "held" not in await feed(world.bot)

    # The workspace's limit counts every bot's wakes together: pb's 5 and pb2's 2.
    workspace = await world.human.patch_workspace("proj", budget_wakes=7)
    assert workspace["budget_wakes"] == 7 and (await world.human.workspace("proj"))["budget_wakes"] == 7
    await wake(world.peer, clock)
    assert "held" not in await feed(world.peer)
    await wake(world.peer, clock)
    for client in (world.bot, world.peer):
        held = (await feed(client))["held"]
        assert (held["scope"], held["source"], held["spent"], held["limit"]) == (
            "workspace",
            "workspace proj",
            7,
            7,
        )
    assert "held" not in await feed(world.other)  # another workspace's bot
    await world.human.set_budget("pb2", lift=True)  # a lift frees one bot from the workspace's too
    assert "held" not in await feed(world.peer) and "held" in await feed(world.bot)


async def test_the_hold_ends_at_utc_midnight_and_a_lift_lasts_the_day(
    clocked_world: World, clock: ManualClock
) -> None:
    world = clocked_world
    await world.human.set_budget("pb", budget_wakes=1)
    await wake(world.bot, clock)
    pending = await waiting(world)
    clock.advance((parse_time(MIDNIGHT) - clock.now()).total_seconds() - 1)  # 23:59:59
    assert (await feed(world.bot))["held"]["resets_at"] == MIDNIGHT
    clock.advance(1)  # midnight: a new day, nothing spent
    page = await feed(world.bot)
    assert "held" not in page and [m["id"] for m in page["messages"]] == [pending]
    await wake(world.bot, clock)
    assert (await feed(world.bot))["held"]["resets_at"] == "2026-12-02T00:00:00Z"
    budget = await world.human.set_budget("pb", lift=True)
    assert budget["lifted_until"] == "2026-12-02T00:00:00Z" and budget["held"] is None
    await wake(world.bot, clock)
    assert "held" not in await feed(world.bot)  # lifted: spending on
    clock.advance(24 * 3600)
    await wake(world.bot, clock)
    held = (await feed(world.bot))["held"]  # the lift was for that day only
    assert held["spent"] == 1 and held["resets_at"] == "2026-12-03T00:00:00Z"
    actions = [row["action"] for row in (await world.human.audit(action="budget.set"))["entries"]]
    assert actions == ["budget.set"] * 2


async def test_one_notice_per_hold_for_the_humans_only(clocked_world: World, clock: ManualClock) -> None:
    world = clocked_world
    await world.human.set_budget("pb", budget_cost_usd=0.1)
    await wake(world.bot, clock, cost_usd=0.1)
    cursor = int((await world.peer.wake(since=0, watch="lobby"))["cursor"])
    watching = asyncio.create_task(world.peer.wake(since=cursor, watch="lobby", wait=2))
    await asyncio.sleep(0.3)  # the peer's long-poll waits before the notice is posted
    for _ in range(3):  # three polls of one hold
        assert "held" in await feed(world.bot)
    assert (await watching)["messages"] == []  # the notice woke no waiting bot
    [notice] = await notices(world)
    assert notice["kind"] == "event" and "@pb" in notice["body"] and "$0.10 of $0.10" in notice["body"]
    assert notice["tags"] == ["budget-held"]  # its own tag: no loop held it
    # A person reads when it ends, not a machine timestamp.
    assert f"until midnight UTC ({MIDNIGHT[:10]} 00:00 UTC)" in notice["body"]
    assert "T00:00:00Z" not in notice["body"]
    inbox = await world.human.inbox(limit=50)
    assert notice["id"] in [m["id"] for m in inbox["messages"]]
    for bot in (world.bot, world.peer):  # no bot is woken by it, watching the lobby or not
        assert notice["id"] not in [m["id"] for m in (await bot.wake(since=0, watch="lobby"))["messages"]]
    await world.human.set_budget("pb", budget_cost_usd=0.2)  # raised: free again ...
    assert "held" not in await feed(world.bot)
    await wake(world.bot, clock, cost_usd=0.1)  # ... until the new limit: a new hold, a new notice
    assert "held" in await feed(world.bot)
    assert len(await notices(world)) == 2


async def test_a_lift_answers_a_held_long_poll_at_once(clocked_world: World, clock: ManualClock) -> None:
    world = clocked_world
    await world.human.set_budget("pb", budget_wakes=1)
    await wake(world.bot, clock)
    pending = await waiting(world)
    started = time.monotonic()
    polling = asyncio.ensure_future(feed(world.bot, wait=20))
    await asyncio.sleep(0.5)
    assert not polling.done()  # held: the feed waits instead of answering
    await world.human.set_budget("pb", lift=True)
    page = await asyncio.wait_for(polling, 5)
    assert [m["id"] for m in page["messages"]] == [pending] and "held" not in page
    assert time.monotonic() - started < 5


async def test_bots_cannot_change_budgets(clocked_world: World, clock: ManualClock) -> None:
    world = clocked_world
    board: Board = world.board
    await world.human.set_budget("pb", budget_wakes=1)
    before = (await world.human.agent("pb"))["budget"]
    for client in (world.bot, world.admin_bot):
        await refused(client.set_budget("pb", lift=True), "FORBIDDEN", unchanged=board)
        await refused(client.set_budget("pb2", budget_wakes=99), "FORBIDDEN", unchanged=board)
    await refused(world.bot.patch_workspace("proj", budget_wakes=99), "FORBIDDEN", unchanged=board)
    await refused(world.other.set_budget("pb", budget_wakes=99), ("FORBIDDEN", "NOT_FOUND"), unchanged=board)
    assert (await world.human.agent("pb"))["budget"] == before
    assert (await world.human.workspace("proj"))["budget_wakes"] is None


BAD = [
    ({"budget_wakes": -1}, "budget_wakes"),
    ({"budget_wakes": 1.5}, "budget_wakes"),
    ({"budget_tokens": "lots"}, "budget_tokens"),
    ({"budget_cost_usd": -0.01}, "budget_cost_usd"),
    ({"budget_cost_usd": 2_000_000}, "budget_cost_usd"),
    ({"lift": "yes"}, "lift"),
    ({}, "Nothing to change"),
]


@pytest.mark.parametrize(("body", "named"), BAD, ids=[b[1] + str(i) for i, b in enumerate(BAD)])
async def test_bad_values_are_refused_and_nothing_is_written(
    clocked_world: World, body: dict[str, Any], named: str
) -> None:
    world = clocked_world
    await world.human.set_budget("pb", budget_wakes=4)
    before = (await world.human.agent("pb"))["budget"]
    await refused(
        world.human.set_budget("pb", **body), "INVALID_ARGUMENT", message=named, unchanged=world.board
    )
    assert (await world.human.agent("pb"))["budget"] == before
    limits = {k: v for k, v in body.items() if k.startswith("budget_")}
    if limits:
        await refused(world.human.patch_workspace("proj", **limits), "INVALID_ARGUMENT", message=named)
        await refused(
            world.human.create_profile("pb-dev", "proj", "claude", **limits),
            "INVALID_ARGUMENT",
            message=named,
        )
        assert (await world.human.workspace("proj"))["budget_wakes"] is None
    await refused(
        world.human.set_budget("alice", budget_wakes=3),
        "INVALID_ARGUMENT",
        message="not a bot",
        unchanged=world.board,
    )
