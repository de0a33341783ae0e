"""Profiles: how to launch a bot, per workspace; humans write, bots read their own workspace's."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from board.client import BoardClient
from tests.support.boardtest import World
from tests.support.refusals import refused


async def make_profile(world: World, **fields: Any) -> dict[str, Any]:
    await world.human.create_skill("review", "Review it.\n")
    goal = await world.human.post("Ship wordsnap 1.0", channel="plan", workspace="proj")
    values: dict[str, Any] = {
        "model": "opus",
        "flags": ["--verbose"],
        "repo": "~/src/wordsnap",
        "watch": ["builds", "help"],
        "goal": goal["id"],
        "skills": ["review"],
        "identity": "You keep the wordsnap build green.",
        "bots": ["pb"],
    }
    values.update(fields)
    return await world.human.create_profile("proj-dev", "proj", "claude", **values)


async def test_a_human_creates_a_profile_with_every_field(world: World) -> None:
    profile = await make_profile(world)
    assert profile["name"] == "proj-dev"
    assert profile["workspace"] == "proj"
    assert profile["harness"] == "claude"
    assert profile["model"] == "opus"
    assert profile["flags"] == ["--verbose"]
    assert profile["repo"] == "~/src/wordsnap"
    assert profile["watch"] == ["builds", "help"]
    assert isinstance(profile["goal"], int)
    assert profile["skills"] == ["review"]
    assert profile["identity"] == "You keep the wordsnap build green."
    assert profile["bots"] == ["pb"]
    assert profile["version"] == 1
    assert profile["updated_by"] == "alice"
    entries = (await world.human.audit(action="profile.create"))["entries"]
    assert [(e["target"], e["workspace"]) for e in entries] == [("proj-dev", "proj")]


async def test_a_reply_as_goal_is_stored_as_its_thread(world: World) -> None:
    root = await world.human.post("Ship it", channel="plan", workspace="proj")
    reply = await world.human.post("first step", reply_to=root["id"])
    profile = await world.human.create_profile("p1", "proj", "codex", goal=reply["id"])
    assert profile["goal"] == root["id"]


async def test_bots_read_profiles_of_their_own_workspace_only(world: World) -> None:
    await make_profile(world)
    await world.human.create_profile("other-dev", "other", "gemini")
    assert (await world.bot.profile("proj-dev"))["identity"].startswith("You keep")
    assert (await world.peer.profile("proj-dev"))["name"] == "proj-dev"
    assert (await world.admin_bot.profile("other-dev"))["workspace"] == "other"
    hidden = await refused(world.other.profile("proj-dev"), "NOT_FOUND", unchanged=world.board)
    absent = await refused(world.other.profile("no-such"), "NOT_FOUND", unchanged=world.board)
    assert hidden.message == absent.message and hidden.details == absent.details

    assert [p["name"] for p in (await world.bot.profiles())["profiles"]] == ["proj-dev"]
    assert [p["name"] for p in (await world.other.profiles())["profiles"]] == ["other-dev"]
    assert [p["name"] for p in (await world.human.profiles())["profiles"]] == ["other-dev", "proj-dev"]
    assert [p["name"] for p in (await world.admin_bot.profiles())["profiles"]] == ["other-dev", "proj-dev"]
    assert [p["name"] for p in (await world.human.profiles(workspace="other"))["profiles"]] == ["other-dev"]
    await refused(world.bot.profiles(workspace="other"), "NOT_FOUND", unchanged=world.board)
    row = (await world.bot.profiles())["profiles"][0]
    assert "identity" not in row and row["identity_chars"] == len("You keep the wordsnap build green.")


async def test_put_changes_only_the_fields_given(world: World) -> None:
    await make_profile(world)
    updated = await world.human.update_profile("proj-dev", model="sonnet", watch=["builds"], base_version=1)
    assert updated["model"] == "sonnet"
    assert updated["watch"] == ["builds"]
    assert updated["flags"] == ["--verbose"] and updated["skills"] == ["review"] and updated["bots"] == ["pb"]
    assert updated["version"] == 2
    cleared = await world.human.update_profile("proj-dev", goal=0, skills=[], bots=[], identity="")
    assert (cleared["goal"], cleared["skills"], cleared["bots"], cleared["identity"]) == (None, [], [], "")
    assert cleared["version"] == 3
    assert cleared["harness"] == "claude"
    entries = (await world.human.audit(action="profile.update"))["entries"]
    assert entries[-1]["details"]["changed"] == ["goal", "skills", "identity", "bots"]


async def test_a_bot_runs_with_at_most_one_profile(world: World) -> None:
    await make_profile(world)
    conflict = await refused(
        world.human.create_profile("second", "proj", "codex", bots=["pb"]),
        "NAME_CONFLICT",
        unchanged=world.board,
    )
    assert conflict.details == {"bot": "pb", "profile": "proj-dev"}
    await world.human.update_profile("proj-dev", bots=["pb2"])
    moved = await world.human.create_profile("second", "proj", "codex", bots=["pb"])
    assert moved["bots"] == ["pb"]
    assert (await world.human.update_profile("proj-dev", bots=["pb2"]))["bots"] == ["pb2"]


async def test_a_bot_moved_to_another_workspace_leaves_its_old_profile(world: World) -> None:
    await make_profile(world)
    await world.human.set_bots("other", ["ob", "pb"])
    assert (await world.human.profile("proj-dev"))["bots"] == []
    relinked = await world.human.create_profile("other-dev", "other", "codex", bots=["pb"])
    assert relinked["bots"] == ["pb"]


async def test_refusals_change_nothing(world: World) -> None:
    await make_profile(world)
    secret = await world.human.post("in other", channel="lobby", workspace="other")
    room = await world.human.open_conversation(["pb2"], workspace="proj")
    private = await world.human.post("private", conversation=room["conversation"]["id"])

    def new(c: BoardClient, **fields: Any) -> Awaitable[dict[str, Any]]:
        return c.create_profile(fields.pop("name", "fresh"), fields.pop("ws", "proj"), "codex", **fields)

    await refused(new(world.bot), "FORBIDDEN", unchanged=world.board)
    await refused(new(world.admin_bot), "FORBIDDEN", unchanged=world.board)
    await refused(new(world.anon), "UNAUTHENTICATED", unchanged=world.board)
    await refused(world.anon.profiles(), "UNAUTHENTICATED", unchanged=world.board)
    await refused(world.bot.update_profile("proj-dev", model="x"), "FORBIDDEN", unchanged=world.board)
    await refused(world.admin_bot.update_profile("proj-dev", model="x"), "FORBIDDEN", unchanged=world.board)
    await refused(new(world.human, name="proj-dev"), "NAME_CONFLICT", unchanged=world.board)
    await refused(new(world.human, name="proj-dev", ws="other"), "NAME_CONFLICT", unchanged=world.board)
    await refused(new(world.human, ws="nowhere"), "NOT_FOUND", unchanged=world.board)
    await refused(new(world.human, skills=["review", "absent"]), "NOT_FOUND", unchanged=world.board)
    await refused(new(world.human, bots=["ob"]), "NOT_FOUND", unchanged=world.board)
    await refused(new(world.human, bots=["alice"]), "NOT_FOUND", unchanged=world.board)
    await refused(new(world.human, bots=["ghost"]), "NOT_FOUND", unchanged=world.board)
    await refused(new(world.human, goal=secret["id"]), "NOT_FOUND", unchanged=world.board)
    await refused(new(world.human, goal=10**9), "NOT_FOUND", unchanged=world.board)
    await refused(new(world.human, goal=private["id"]), "INVALID_ARGUMENT", unchanged=world.board)
    await refused(new(world.human, name="Bad Name"), "INVALID_ARGUMENT", unchanged=world.board)
    await refused(new(world.human, watch=["Not A Slug"]), "INVALID_ARGUMENT", unchanged=world.board)
    await refused(new(world.human, flags=["--a\n--b"]), "INVALID_ARGUMENT", unchanged=world.board)
    await refused(new(world.human, colour="red"), "INVALID_ARGUMENT", unchanged=world.board)
    await refused(
        world.human.create_profile("fresh", "proj", "vim"), "INVALID_ARGUMENT", unchanged=world.board
    )
    await refused(new(world.human, identity="x" * 8_001), "LIMIT_EXCEEDED", unchanged=world.board)
    await refused(new(world.human, flags=["-x"] * 51), "LIMIT_EXCEEDED", unchanged=world.board)
    await refused(world.human.update_profile("absent", model="x"), "NOT_FOUND", unchanged=world.board)
    await refused(
        world.human.update_profile("proj-dev", skills=["absent"]), "NOT_FOUND", unchanged=world.board
    )
    await refused(
        world.human.update_profile("proj-dev", workspace="other"),
        "INVALID_ARGUMENT",
        unchanged=world.board,
    )
    conflict = await refused(
        world.human.update_profile("proj-dev", model="x", base_version=9),
        "VERSION_CONFLICT",
        unchanged=world.board,
    )
    assert conflict.details["version"] == 1


async def test_an_archived_workspace_keeps_its_profiles_read_only(world: World) -> None:
    await make_profile(world)
    await world.human.archive_workspace("proj")
    assert (await world.bot.profile("proj-dev"))["name"] == "proj-dev"
    await refused(world.human.update_profile("proj-dev", model="x"), "FORBIDDEN", unchanged=world.board)
    await refused(world.human.create_profile("late", "proj", "claude"), "FORBIDDEN", unchanged=world.board)


async def test_deleting_a_workspace_removes_its_profiles(world: World) -> None:
    await make_profile(world)
    await world.human.archive_workspace("proj")
    await world.human.delete_workspace("proj", "proj")
    assert (await world.human.profiles())["profiles"] == []
    assert [s["name"] for s in (await world.human.skills())["skills"]] == ["review"]


async def test_rotation_limits_are_set_cleared_and_refused_when_negative(world: World) -> None:
    profile = await make_profile(world, rotate_after_turns=10)
    assert profile["rotate_after_turns"] == 10 and profile["rotate_after_tokens"] is None  # unset: never
    changed = await world.human.update_profile("proj-dev", rotate_after_tokens=200_000)
    assert (changed["rotate_after_turns"], changed["rotate_after_tokens"]) == (10, 200_000)
    cleared = await world.human.update_profile("proj-dev", rotate_after_turns=0)
    assert (cleared["rotate_after_turns"], cleared["rotate_after_tokens"]) == (None, 200_000)

    await refused(
        world.human.update_profile("proj-dev", rotate_after_turns=-1),
        "INVALID_ARGUMENT",
        message="rotate_after_turns",
        unchanged=world.board,
    )
    await refused(
        world.human.create_profile("proj-two", "proj", "codex", rotate_after_tokens="lots"),
        "INVALID_ARGUMENT",
        unchanged=world.board,
    )
    after = await world.human.profile("proj-dev")
    assert (after["rotate_after_turns"], after["rotate_after_tokens"], after["version"]) == (
        None,
        200_000,
        cleared["version"],
    )
