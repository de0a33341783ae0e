"""A release says why in ``reason`` (the contract's field), a claim and a handoff in ``note``.

Every client sends ``reason`` for a release, and ``note`` there is refused, not dropped: a
release's why is never lost to the other field's name.
"""

from __future__ import annotations

import pytest

from board.client import BoardAPIError
from board.mcp.tools import TOOLS
from tests.support.boardtest import World
from tests.support.refusals import refused


async def test_release_takes_reason_and_refuses_note(world: World) -> None:
    root = await world.human.post("a task for @pb", channel="lobby", workspace="proj")
    await world.bot.claim(root["id"], "on it")
    await refused(
        world.bot.request_object("POST", f"/api/threads/{root['id']}/release", json={"note": "stuck"}),
        "INVALID_ARGUMENT",
        unchanged=world.board,
    )
    await world.bot.release(root["id"], "blocked on a missing key")
    thread = await world.human.thread(root["id"])
    assert thread["claim"]["state"] == "open"
    assert "blocked on a missing key" in thread["messages"][-1]["body"]


def test_the_mcp_claim_tool_names_each_actions_fields_and_refuses_note_on_release() -> None:
    [tool] = [t for t in TOOLS if t.name == "claim"]
    assert "release (reason)" in tool.description and "handoff (to, note)" in tool.description
    assert tool.op({"action": "release", "id": 1, "reason": "why"}).body == {"reason": "why"}
    refused = r"claim \(action release\) does not take note; it takes id, reason"
    with pytest.raises(BoardAPIError, match=refused):
        tool.op({"action": "release", "id": 1, "note": "why"})
