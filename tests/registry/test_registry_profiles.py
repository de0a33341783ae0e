"""Profiles: how to launch a bot, per workspace; humans write, bots read their own workspace's."""

from __future__ import annotations

from typing import Any

import pytest

from board.client import BoardAPIError, BoardClient
from tests.support.boardtest import World, snapshot


async def refused(world: World, caller: BoardClient, code: str, call: Any) -> BoardAPIError:
    """The call fails with ``code`` and leaves every table as it was."""
    before = snapshot(world.board.db_path)
    with pytest.raises(BoardAPIError) as caught:
        await call(caller)
    assert caught.value.code == code, caught.value.message
    assert snapshot(world.board.db_path) == before
    return caught.value


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
    hidden = await refused(world, world.other, "NOT_FOUND", lambda c: c.profile("proj-dev"))
    absent = await refused(world, world.other, "NOT_FOUND", lambda c: c.profile("no-such"))
    assert hidden.message == absent.message and hidden.details == absent.details

    assert [p["name"] for p in (await world.bot.profiles())["profiles"]] == ["proj-dev"]
    assert [p["name"] for p in (await world.other.profiles())["profiles"]] == ["other-dev"]
    assert [p["name"] for p in (await world.human.profiles())["profiles"]] == ["other-dev", "proj-dev"]
    assert [p["name"] for p in (await world.admin_bot.profiles())["profiles"]] == ["other-dev", "proj-dev"]
    assert [p["name"] for p in (await world.human.profiles(workspace="other"))["profiles"]] == ["other-dev"]
    await refused(world, world.bot, "NOT_FOUND", lambda c: c.profiles(workspace="other"))
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
        world,
        world.human,
        "NAME_CONFLICT",
        lambda c: c.create_profile("second", "proj", "codex", bots=["pb"]),
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

    def new(**fields: Any) -> Any:
        return lambda c: c.create_profile(
            fields.pop("name", "fresh"), fields.pop("ws", "proj"), "codex", **fields
        )

    await refused(world, world.bot, "FORBIDDEN", new())
    await refused(world, world.admin_bot, "FORBIDDEN", new())
    await refused(world, world.anon, "UNAUTHENTICATED", new())
    await refused(world, world.anon, "UNAUTHENTICATED", lambda c: c.profiles())
    await refused(world, world.bot, "FORBIDDEN", lambda c: c.update_profile("proj-dev", model="x"))
    await refused(world, world.admin_bot, "FORBIDDEN", lambda c: c.update_profile("proj-dev", model="x"))
    await refused(world, world.human, "NAME_CONFLICT", new(name="proj-dev"))
    await refused(world, world.human, "NAME_CONFLICT", new(name="proj-dev", ws="other"))
    await refused(world, world.human, "NOT_FOUND", new(ws="nowhere"))
    await refused(world, world.human, "NOT_FOUND", new(skills=["review", "absent"]))
    await refused(world, world.human, "NOT_FOUND", new(bots=["ob"]))
    await refused(world, world.human, "NOT_FOUND", new(bots=["alice"]))
    await refused(world, world.human, "NOT_FOUND", new(bots=["ghost"]))
    await refused(world, world.human, "NOT_FOUND", new(goal=secret["id"]))
    await refused(world, world.human, "NOT_FOUND", new(goal=10**9))
    await refused(world, world.human, "INVALID_ARGUMENT", new(goal=private["id"]))
    await refused(world, world.human, "INVALID_ARGUMENT", new(name="Bad Name"))
    await refused(world, world.human, "INVALID_ARGUMENT", new(watch=["Not A Slug"]))
    await refused(world, world.human, "INVALID_ARGUMENT", new(flags=["--a\n--b"]))
    await refused(world, world.human, "INVALID_ARGUMENT", new(colour="red"))
    await refused(world, world.human, "INVALID_ARGUMENT", lambda c: c.create_profile("fresh", "proj", "vim"))
    await refused(world, world.human, "LIMIT_EXCEEDED", new(identity="x" * 8_001))
    await refused(world, world.human, "LIMIT_EXCEEDED", new(flags=["-x"] * 51))
    await refused(world, world.human, "NOT_FOUND", lambda c: c.update_profile("absent", model="x"))
    await refused(world, world.human, "NOT_FOUND", lambda c: c.update_profile("proj-dev", skills=["absent"]))
    await refused(
        world, world.human, "INVALID_ARGUMENT", lambda c: c.update_profile("proj-dev", workspace="other")
    )
    conflict = await refused(
        world,
        world.human,
        "VERSION_CONFLICT",
        lambda c: c.update_profile("proj-dev", model="x", base_version=9),
    )
    assert conflict.details["version"] == 1


async def test_an_archived_workspace_keeps_its_profiles_read_only(world: World) -> None:
    await make_profile(world)
    await world.human.archive_workspace("proj")
    assert (await world.bot.profile("proj-dev"))["name"] == "proj-dev"
    await refused(world, world.human, "FORBIDDEN", lambda c: c.update_profile("proj-dev", model="x"))
    await refused(world, world.human, "FORBIDDEN", lambda c: c.create_profile("late", "proj", "claude"))


async def test_deleting_a_workspace_removes_its_profiles(world: World) -> None:
    await make_profile(world)
    await world.human.archive_workspace("proj")
    await world.human.delete_workspace("proj", "proj")
    assert (await world.human.profiles())["profiles"] == []
    assert [s["name"] for s in (await world.human.skills())["skills"]] == ["review"]
