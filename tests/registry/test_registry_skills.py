"""Skills: board-wide SKILL.md bundles, written by humans and admin bots, read by everyone."""

from __future__ import annotations

import pytest

from tests.support.boardtest import INTEGRITY_ERRORS, World, db_execute, db_rows
from tests.support.refusals import refused

SKILL_MD = "---\nname: review\ndescription: Review a diff.\n---\n\n1. Read the diff.\n2. Say what breaks.\n"


async def test_a_human_adds_a_skill_and_every_bot_reads_it(world: World) -> None:
    created = await world.human.create_skill(
        "review", SKILL_MD, description="Review a diff.", source="https://example.org/skills.git"
    )
    assert created["name"] == "review"
    assert created["version"] == created["latest_version"] == 1
    assert created["text"] == SKILL_MD
    assert created["bytes"] == len(SKILL_MD.encode())
    assert created["created_by"] == created["updated_by"] == "alice"
    for caller in (world.bot, world.other, world.admin_bot, world.human):
        assert (await caller.skill("review"))["text"] == SKILL_MD
        listed = await caller.skills()
        assert [s["name"] for s in listed["skills"]] == ["review"]
        assert "text" not in listed["skills"][0]
        assert listed["has_more"] is False


async def test_an_admin_bot_may_write_skills(world: World) -> None:
    created = await world.admin_bot.create_skill("deploy", "Deploy it.\n")
    assert created["created_by"] == "ab"
    updated = await world.admin_bot.update_skill("deploy", text="Deploy it carefully.\n")
    assert updated["version"] == 2


async def test_every_put_is_a_new_version_and_old_ones_stay_readable(world: World) -> None:
    await world.human.create_skill("review", SKILL_MD, description="first")
    second = await world.human.update_skill("review", description="second", reason="clearer")
    assert second["version"] == 2
    assert second["text"] == SKILL_MD  # left out: kept
    assert second["description"] == "second"
    third = await world.human.update_skill("review", text="new text\n", base_version=2)
    assert third["version"] == 3
    assert third["description"] == "second"
    first = await world.bot.skill("review", version=1)
    assert (first["description"], first["version"], first["latest_version"]) == ("first", 1, 3)
    assert (await world.bot.skill("review"))["text"] == "new text\n"
    versions = db_rows(world.board.db_path, "SELECT version FROM skill_versions ORDER BY version")
    assert versions == [(1,), (2,), (3,)]
    actions = [e["action"] for e in (await world.human.audit(action="skill.update"))["entries"]]
    assert actions == ["skill.update", "skill.update"]


async def test_skill_versions_are_append_only(world: World) -> None:
    await world.human.create_skill("review", SKILL_MD)
    with pytest.raises(INTEGRITY_ERRORS, match="append-only"):
        db_execute(world.board.db_path, "UPDATE skill_versions SET text = 'rewritten'")
    assert (await world.bot.skill("review"))["text"] == SKILL_MD


async def test_refusals_change_nothing(world: World) -> None:
    await world.human.create_skill("review", SKILL_MD)
    await refused(world.bot.create_skill("mine", "x"), "FORBIDDEN", unchanged=world.board)
    await refused(world.other.update_skill("review", text="x"), "FORBIDDEN", unchanged=world.board)
    await refused(world.anon.create_skill("mine", "x"), "UNAUTHENTICATED", unchanged=world.board)
    await refused(world.anon.skills(), "UNAUTHENTICATED", unchanged=world.board)
    await refused(world.human.create_skill("review", "again"), "NAME_CONFLICT", unchanged=world.board)
    await refused(world.human.update_skill("nope", text="x"), "NOT_FOUND", unchanged=world.board)
    await refused(world.bot.skill("nope"), "NOT_FOUND", unchanged=world.board)
    await refused(world.bot.skill("review", version=7), "NOT_FOUND", unchanged=world.board)
    conflict = await refused(
        world.human.update_skill("review", text="x", base_version=5),
        "VERSION_CONFLICT",
        unchanged=world.board,
    )
    assert conflict.details["version"] == 1
    for bad in ("Review", "-review", "re--view", "a_b", "x" * 65):
        await refused(world.human.create_skill(bad, "x"), "INVALID_ARGUMENT", unchanged=world.board)
    await refused(world.human.create_skill("blank", "  \n"), "INVALID_ARGUMENT", unchanged=world.board)
    await refused(
        world.human.create_skill("odd", "x", colour="red"), "INVALID_ARGUMENT", unchanged=world.board
    )
    await refused(
        world.human.create_skill("odd", "x", description="a\nb"),
        "INVALID_ARGUMENT",
        unchanged=world.board,
    )


async def test_skill_md_is_bounded_in_characters_and_bytes(world: World) -> None:
    await refused(world.human.create_skill("big", "x" * 100_001), "LIMIT_EXCEEDED", unchanged=world.board)
    wide = "é" * 60_000  # 60,000 characters, 120,000 bytes
    await refused(world.human.create_skill("big", wide), "LIMIT_EXCEEDED", unchanged=world.board)
    await world.human.create_skill("big", "x" * 100_000)
    await refused(world.human.update_skill("big", text=wide), "LIMIT_EXCEEDED", unchanged=world.board)
    assert (await world.bot.skill("big"))["version"] == 1


async def test_the_skill_list_is_bounded_and_pages_by_name(world: World) -> None:
    for name in ("a1", "b2", "c3"):
        await world.human.create_skill(name, "text\n")
    first = await world.bot.skills(limit=2)
    assert [s["name"] for s in first["skills"]] == ["a1", "b2"]
    assert first["has_more"] is True and first["next_since"] == "b2"
    rest = await world.bot.skills(after=first["next_since"])
    assert [s["name"] for s in rest["skills"]] == ["c3"]
    assert rest["has_more"] is False
