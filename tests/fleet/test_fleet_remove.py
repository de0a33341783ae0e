"""Removing a machine: its bots are unassigned first, then the board forgets it and its keeper.

Only a human may; everyone else is refused and nothing changes. The removal is
audited bot by bot and as a whole, the bots' tokens stop, and the removed
machine's keeper is refused on its next report (``UNAUTHENTICATED``) without the
machine coming back. The page asks first, naming the bots it will unassign.
"""

from __future__ import annotations

from tests.support.boardtest import World, db_rows, snapshot
from tests.support.fleettest import enroll_keeper, keeper_with_bots
from tests.support.pages_support import sign_in
from tests.support.refusals import refused


async def test_removing_a_machine_unassigns_its_bots_and_stops_its_keeper(world: World) -> None:
    box1 = await keeper_with_bots(world, "box1", "rb1", "rb2")
    box2 = await keeper_with_bots(world, "box2", "stays")
    await box1.client.fleet_report(
        {"interval": 10, "bots": [{"handle": "rb1", "state": "running", "pid": 9}]}
    )
    tokens = {h: (await box1.client.bot_token(h))["token"] for h in ("rb1", "rb2")}
    assert (await world.board.client(tokens["rb1"]).me())["handle"] == "rb1"

    answer = await world.human.remove_machine("box1")

    assert answer == {"machine": "box1", "removed": True, "unassigned": ["rb1", "rb2"]}
    machines = (await world.human.fleet())["machines"]
    assert [(m["name"], [b["handle"] for b in m["bots"]]) for m in machines] == [("box2", ["stays"])]
    for handle, token in tokens.items():  # the bots' tokens stopped with them
        await refused(world.board.client(token).me(), "UNAUTHENTICATED")
        assert (await world.human.agent(handle))["handle"] == handle  # the bot itself stays
    audit = db_rows(
        world.board.db_path,
        "SELECT action, target, reason FROM audit WHERE action IN (?, ?) ORDER BY id",
        ("fleet.unassign", "fleet.machine.remove"),
    )
    assert audit == [
        ("fleet.unassign", "rb1", "its machine was removed"),
        ("fleet.unassign", "rb2", "its machine was removed"),
        ("fleet.machine.remove", "box1", ""),
    ]
    # The removed machine's keeper, reporting as usual, is refused and brings nothing back.
    await refused(
        box1.client.fleet_report({"interval": 10, "bots": []}), "UNAUTHENTICATED", unchanged=world.board
    )
    await box2.client.fleet_report({"interval": 10, "bots": []})  # the other keeper is untouched
    # The name is free: adding the machine again enrolls a new one, with no bots.
    again = await enroll_keeper(world.board, world.human, "box1")
    assert (await again.client.fleet_report({"interval": 10}))["bots"] == []


async def test_only_a_human_removes_a_machine_and_an_unknown_one_is_not_found(world: World) -> None:
    box1 = await keeper_with_bots(world, "box1", "rb1", "rb2")
    for caller in (world.bot, world.admin_bot):
        await refused(
            caller.remove_machine("box1"),
            "FORBIDDEN",
            message="Only a human may remove a machine.",
            unchanged=world.board,
        )
    await refused(
        box1.client.remove_machine("box1"), "FORBIDDEN", message="fleet calls only", unchanged=world.board
    )
    await refused(world.anon.remove_machine("box1"), "UNAUTHENTICATED", unchanged=world.board)
    await refused(world.human.remove_machine("box9"), "NOT_FOUND", unchanged=world.board)
    bots = (await world.human.fleet())["machines"][0]["bots"]
    assert [b["handle"] for b in bots] == ["rb1", "rb2"]


async def test_the_page_asks_first_naming_the_bots_then_removes(world: World) -> None:
    await keeper_with_bots(world, "box1", "rb1", "rb2")
    alice = await sign_in(world.board, "alice")
    try:
        status, fleet = await alice.get("/fleet")
        assert status == 200 and 'href="/fleet/machines/box1/remove"' in fleet
        before = snapshot(world.board.db_path)
        status, confirm = await alice.get("/fleet/machines/box1/remove")
        assert status == 200 and snapshot(world.board.db_path) == before  # asking changes nothing
        assert "<li>rb1 <small>proj/proj-dev, not reported</small></li>" in confirm
        assert "<li>rb2 <small>proj/proj-dev, not reported</small></li>" in confirm
        assert "Remove box1 and unassign 2 bots</button>" in confirm
        status, _ = await alice.get("/fleet/machines/box9/remove")
        assert status == 404
        status, _ = await alice.post("/fleet/machines/box1/remove", {})
        assert status == 303
        assert (await world.human.fleet())["machines"] == []
        status, fleet = await alice.get("/fleet")
        assert 'id="machine-box1"' not in fleet and 'id="no-machines"' in fleet
    finally:
        await alice.close()


async def test_a_removed_machine_cannot_be_steered_through_its_old_bots(world: World) -> None:
    await keeper_with_bots(world, "box1", "rb1", "rb2")
    await world.human.remove_machine("box1")
    await refused(world.human.fleet_order("rb1", "start"), "NOT_FOUND", unchanged=world.board)
