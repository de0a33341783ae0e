"""The fleet on the board: enrollment, reports, desired state, orders, bot tokens, scope.

A keeper here is a client holding a keeper token (the real daemon is in
tests/keeper/). Every refusal is checked to change nothing in the database.
"""

from __future__ import annotations

import asyncio
from typing import Any

from click.testing import CliRunner

from board.cli import main
from board.client import BoardClient
from board.server.clock import ManualClock
from tests.support.boardtest import World, held
from tests.support.fleettest import Keeper, enroll_keeper, keeper_with_bots
from tests.support.refusals import refused


async def fleet_setup(world: World) -> tuple[Keeper, Keeper]:
    box1 = await keeper_with_bots(world, "box1", "fb1")
    await world.human.create_profile("other-dev", "other", "codex")
    box2 = await keeper_with_bots(world, "box2", "fb2", profile="other-dev")
    return box1, box2


def bot_report(handle: str, state: str = "running", **extra: Any) -> dict[str, Any]:
    return {"handle": handle, "state": state, "pid": 4242, "restarts": 0, **extra}


async def test_an_enroll_code_is_used_once_and_expires(clocked_world: World, clock: ManualClock) -> None:
    world = clocked_world
    code = await world.human.enroll_code("box1", expires_in=60)
    line = f"curl -fsSL {world.board.url}/install.sh | KEEPER_ENROLL_CODE={code['code']} bash -s -- keeper"
    assert code["command"] == line
    enrolled = await world.anon.enroll(code["code"], hostname="box1.local")
    assert enrolled["machine"] == "box1" and enrolled["token"].startswith("bk_")
    await refused(world.anon.enroll(code["code"]), "UNAUTHENTICATED", unchanged=world.board)
    late = (await world.human.enroll_code("box2", expires_in=60))["code"]
    clock.advance(61)
    await refused(world.anon.enroll(late), "UNAUTHENTICATED", unchanged=world.board)


async def test_enrolling_again_replaces_the_keeper_token(world: World) -> None:
    first = await enroll_keeper(world.board, world.human, "box1")
    await first.client.fleet_report({})
    second = await enroll_keeper(world.board, world.human, "box1")
    await refused(first.client.fleet_report({}), "UNAUTHENTICATED", unchanged=world.board)
    assert (await second.client.fleet_report({}))["machine"] == "box1"


async def test_only_humans_issue_codes_and_steer_the_fleet(world: World) -> None:
    box1, _ = await fleet_setup(world)
    for caller in (world.bot, world.admin_bot, box1.client):
        await refused(caller.enroll_code("box9"), "FORBIDDEN", unchanged=world.board)
        await refused(caller.fleet(), "FORBIDDEN", unchanged=world.board)
        await refused(caller.assign_bot("box1", "proj-dev", "new-one"), "FORBIDDEN", unchanged=world.board)
        await refused(caller.fleet_order("fb1", "stop"), "FORBIDDEN", unchanged=world.board)
        await refused(caller.unassign_bot("fb1"), "FORBIDDEN", unchanged=world.board)
    for caller in (world.bot, world.human):
        await refused(caller.fleet_report({}), "FORBIDDEN", unchanged=world.board)
        await refused(caller.bot_token("fb1"), "FORBIDDEN", unchanged=world.board)


async def test_a_keeper_mints_tokens_for_its_own_bots_only(world: World) -> None:
    box1, box2 = await fleet_setup(world)
    await refused(box1.client.bot_token("fb2"), "NOT_FOUND", unchanged=world.board)
    await refused(box2.client.bot_token("fb1"), "NOT_FOUND", unchanged=world.board)
    await refused(box1.client.bot_token("pb"), "NOT_FOUND", unchanged=world.board)  # a bot on no machine
    await refused(box1.client.bot_token("nobody"), "NOT_FOUND", unchanged=world.board)
    minted = await box1.client.bot_token("fb1")
    assert minted["workspace"] == "proj" and minted["token"].startswith("bb_")
    bot = world.board.client(minted["token"])
    assert (await bot.me())["handle"] == "fb1"
    again = await box1.client.bot_token("fb1")
    await refused(bot.me(), "UNAUTHENTICATED", unchanged=world.board)  # the earlier token stopped
    assert (await world.board.client(again["token"]).me())["handle"] == "fb1"


async def test_a_report_answers_desired_state_and_orders_once(world: World) -> None:
    box1, _ = await fleet_setup(world)
    answer = await box1.client.fleet_report({"interval": 5, "bots": [bot_report("fb1")]})
    assert answer["bots"] == [
        {"handle": "fb1", "workspace": "proj", "profile": "proj-dev", "desired": "running"}
    ]
    assert answer["orders"] == []

    stop = await world.human.fleet_order("fb1", "stop")
    answer = await box1.client.fleet_report({"interval": 5})
    assert answer["bots"][0]["desired"] == "stopped"
    assert [(o["id"], o["kind"], o["handle"]) for o in answer["orders"]] == [
        (stop["order"]["id"], "stop", "fb1")
    ]
    # Until acknowledged the order comes back; acknowledged, never again.
    assert (await box1.client.fleet_report({}))["orders"] == answer["orders"]
    ack = {"id": stop["order"]["id"], "ok": True, "detail": "stopped"}
    assert (await box1.client.fleet_report({"acks": [ack]}))["orders"] == []
    assert (await box1.client.fleet_report({"acks": [ack]}))["orders"] == []
    audit = (await world.human.audit(action="fleet.order.done"))["entries"]
    assert len(audit) == 1 and audit[0]["details"]["order"] == stop["order"]["id"]


async def test_a_keeper_sees_and_acknowledges_its_own_machine_only(world: World) -> None:
    box1, box2 = await fleet_setup(world)
    order = await world.human.fleet_order("fb1", "restart")
    answer = await box2.client.fleet_report({"bots": [bot_report("fb1", "crashed")]})
    assert [b["handle"] for b in answer["bots"]] == ["fb2"] and answer["orders"] == []
    await box2.client.fleet_report({"acks": [{"id": order["order"]["id"]}]})
    answer = await box1.client.fleet_report({})
    assert [o["id"] for o in answer["orders"]] == [order["order"]["id"]]
    fb1 = [b for m in (await world.human.fleet())["machines"] for b in m["bots"] if b["handle"] == "fb1"]
    assert fb1[0]["state"] == "unknown"  # box2's word about fb1 was not taken


async def test_reported_state_changes_are_audited_once(world: World) -> None:
    box1, _ = await fleet_setup(world)
    events = [
        {"seq": 1, "at": "2026-11-30T04:00:00Z", "handle": "fb1", "state": "starting"},
        {"seq": 2, "at": "2026-11-30T04:00:01Z", "handle": "fb1", "state": "running"},
    ]
    first = await box1.client.fleet_report({"events": events})
    assert first["event_seq"] == 2
    more = [
        *events,
        {"seq": 3, "at": "2026-11-30T04:00:09Z", "handle": "fb1", "state": "backoff", "exit_code": 1},
    ]
    await box1.client.fleet_report({"events": more})  # a retry carrying the first two again
    rows = (await world.human.audit(action="fleet.bot.state"))["entries"]
    assert [(r["details"]["state"], r["details"]["at"]) for r in rows] == [
        ("starting", "2026-11-30T04:00:00Z"),
        ("running", "2026-11-30T04:00:01Z"),
        ("backoff", "2026-11-30T04:00:09Z"),
    ]
    assert all(r["actor"] == "keeper:box1" and r["workspace"] == "proj" for r in rows)


async def test_online_then_stale_from_the_age_of_the_last_report(
    clocked_world: World, clock: ManualClock
) -> None:
    world = clocked_world
    box1, _ = await fleet_setup(world)
    machines = {m["name"]: m for m in (await world.human.fleet())["machines"]}
    assert machines["box1"]["status"] == "never" and not machines["box1"]["online"]
    report = {
        "interval": 10,
        "machine": {"hostname": "box1.local", "cpus": 8, "load": [0.5, 0.4, 0.3]},
        "bots": [
            bot_report(
                "fb1", rss=1000, cpu_percent=1.5, last_wake={"at": "2026-11-30T04:00:00Z", "cost_usd": 0.01}
            )
        ],
    }
    await box1.client.fleet_report(report)
    clock.advance(31)
    machine = (await world.human.fleet())["machines"][0]
    assert machine["status"] == "online" and machine["cpus"] == 8 and machine["load"] == [0.5, 0.4, 0.3]
    bot = machine["bots"][0]
    assert (bot["state"], bot["pid"], bot["rss"], bot["profile"]) == ("running", 4242, 1000, "proj-dev")
    assert machine["bots"][0]["last_wake"]["cost_usd"] == 0.01
    clock.advance(2)
    machine = (await world.human.fleet())["machines"][0]
    assert machine["status"] == "stale" and machine["stale_for_s"] == 33.0
    await box1.client.fleet_report(report)
    back = (await world.human.audit(action="fleet.machine.back"))["entries"]
    assert len(back) == 1 and back[0]["details"]["silent_s"] == 33.0


async def test_assign_refuses_what_does_not_fit(world: World) -> None:
    await fleet_setup(world)
    human = world.human
    await refused(human.assign_bot("box9", "proj-dev", "x1"), "NOT_FOUND", unchanged=world.board)
    await refused(human.assign_bot("box1", "nope", "x1"), "NOT_FOUND", unchanged=world.board)
    await refused(
        human.assign_bot("box1", "proj-dev", "fb1"), "NAME_CONFLICT", unchanged=world.board
    )  # on box1
    await refused(
        human.assign_bot("box2", "proj-dev", "ob"), "NAME_CONFLICT", unchanged=world.board
    )  # other workspace
    await refused(
        human.assign_bot("box2", "proj-dev", "alice"), "NAME_CONFLICT", unchanged=world.board
    )  # a human
    await refused(
        human.assign_bot("box1", "proj-dev", "bad handle"), "INVALID_ARGUMENT", unchanged=world.board
    )
    await refused(human.fleet_order("pb", "start"), "NOT_FOUND", unchanged=world.board)  # on no machine
    # A bot of the profile's workspace that no machine runs is taken as it is.
    assigned = await human.assign_bot("box2", "proj-dev", "pb")
    assert (assigned["machine"], assigned["profile"], assigned["desired"]) == ("box2", "proj-dev", "running")
    assert "pb" in (await human.profile("proj-dev"))["bots"]


async def test_assigning_a_streaming_bot_to_a_profile_ends_its_stream_for_the_profiles_watch(
    world: World,
) -> None:
    """Assigning links the bot to the profile, whose watch and goal its wake feed then takes: a
    stream the bot already held ends (``rescoped``), to be opened again with them."""
    await world.human.create_profile("ops-watch", "proj", "claude", watch=["ops"])
    await enroll_keeper(world.board, world.human, "m1")
    since = int((await world.bot.me())["cursor"])
    async with await world.bot.wake_stream(since=since, beat=60) as stream:
        await held(world.board)
        await world.human.assign_bot("m1", "ops-watch", "pb")
        rest = await asyncio.wait_for(_rest(stream), 10)
    assert rest == [{"cursor": since, "end": "rescoped"}]


async def _rest(lines: Any) -> list[dict[str, Any]]:
    return [line async for line in lines]


async def test_unassign_stops_the_bot_and_revokes_its_tokens(world: World) -> None:
    box1, _ = await fleet_setup(world)
    bot = world.board.client((await box1.client.bot_token("fb1"))["token"])
    assert (await bot.me())["handle"] == "fb1"
    assert (await world.human.unassign_bot("fb1"))["unassigned"]
    await refused(bot.me(), "UNAUTHENTICATED", unchanged=world.board)
    assert (await box1.client.fleet_report({}))["bots"] == []
    await refused(box1.client.bot_token("fb1"), "NOT_FOUND", unchanged=world.board)
    actions = [e["action"] for e in (await world.human.audit(limit=500))["entries"]]
    for action in ("fleet.enroll_code", "fleet.enroll", "fleet.assign", "fleet.bot_token", "fleet.unassign"):
        assert action in actions


async def fleet_cli(world: World, *args: str) -> Any:
    env = {"BOARD_URL": world.board.url, "BOARD_TOKEN": world.human.token or ""}
    return await asyncio.to_thread(CliRunner().invoke, main, ["fleet", *args], env=env)


async def test_board_fleet_verbs(world: World) -> None:
    box1, _ = await fleet_setup(world)
    assigned = await fleet_cli(world, "assign", "fb3", "--machine", "box1", "--profile", "proj-dev")
    assert assigned.exit_code == 0, assigned.output
    await box1.client.fleet_report({"bots": [bot_report("fb3")]})
    listed = await fleet_cli(world, "ls")
    assert listed.exit_code == 0, listed.output
    assert "box1 (box1.local): online" in listed.output
    assert "  fb3 (proj/proj-dev): running pid 4242, should be running" in listed.output
    for kind in ("stop", "start", "restart"):
        result = await fleet_cli(world, kind, "fb3")
        assert result.exit_code == 0 and f'"kind": "{kind}"' in result.output
    gone = await fleet_cli(world, "unassign", "fb3")
    assert gone.exit_code == 0 and '"unassigned": true' in gone.output
    missing = await fleet_cli(world, "stop", "fb3")
    assert missing.exit_code != 0 and "NOT_FOUND" in missing.output
    kept = await fleet_cli(world, "remove-machine", "box1")  # asks; no answer is no
    assert kept.exit_code != 0 and "Remove it?" in kept.output
    assert [m["name"] for m in (await world.human.fleet())["machines"]] == ["box1", "box2"]
    removed = await fleet_cli(world, "remove-machine", "box1", "--yes")
    assert removed.exit_code == 0 and '"removed": true' in removed.output, removed.output
    assert [m["name"] for m in (await world.human.fleet())["machines"]] == ["box2"]


async def test_a_bad_report_is_refused_whole(world: World) -> None:
    box1, _ = await fleet_setup(world)
    bad = {"bots": [bot_report("fb1", state="dancing")]}
    await refused(box1.client.fleet_report(bad), "INVALID_ARGUMENT", unchanged=world.board)
    await refused(box1.client.fleet_report({"surprise": 1}), "INVALID_ARGUMENT", unchanged=world.board)
    unknown = BoardClient(world.board.url, "bk_" + "x" * 43)
    world.board.clients.append(unknown)
    await refused(unknown.fleet_report({}), "UNAUTHENTICATED", unchanged=world.board)
