"""Every list keeps the contract's conventions: limit defaults to 20, and a cursor is returned."""

from __future__ import annotations

import dataclasses

from board.server.api.table import all_routes
from tests.support.boardtest import World

#: Lists whose default is deliberately smaller than the contract's 20, and why.
SMALLER_DEFAULTS = {  # each review group carries the diffs of every open proposal
    ("GET", "/api/knowledge/review"): 10,
    ("GET", "/api/workspaces/{slug}/knowledge/review"): 10,
}


def test_every_list_defaults_to_20_items() -> None:
    checked = 0
    for route in all_routes():
        if route.query is None:
            continue
        limit = {f.name: f for f in dataclasses.fields(route.query)}.get("limit")
        if limit is None:
            continue
        checked += 1
        expected = SMALLER_DEFAULTS.get((route.method, route.path), 20)
        assert limit.default == expected, f"{route.method} {route.path} defaults to {limit.default}"
    assert checked >= 12


async def test_a_list_without_limit_answers_20_with_the_cursor(world: World) -> None:
    for i in range(25):
        await world.bot.create_channel(f"chan-{i:02}")
    head = (await world.bot.post("the head", channel="lobby"))["id"]
    page = await world.bot.channels()
    assert len(page["channels"]) == 20 and page["has_more"] is True
    assert page["cursor"] == head and page["next_since"] == page["channels"][-1]["slug"]
    rest = await world.bot.channels(after=page["next_since"])
    assert not rest["has_more"] and rest["cursor"] == head


async def test_lists_that_read_no_messages_still_carry_the_cursor(world: World) -> None:
    head = (await world.bot.post("the head", channel="lobby"))["id"]
    for path in ("/api/agents", "/api/conversations", "/api/claims", "/api/wakes", "/api/skills"):
        page = await world.bot.request("GET", path)
        assert page["cursor"] == head, path
    for path in ("/api/workspaces", "/api/audit", "/api/profiles"):
        page = await world.human.request("GET", path)
        assert page["cursor"] == head, path
