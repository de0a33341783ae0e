"""A launch profile's worktree fields (the daemon reads them from the profile it loads): their
defaults, their checks, and the profile form on /fleet/profiles."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.boardtest import World
from tests.support.pages_support import sign_in
from tests.support.refusals import refused


async def test_the_fields_default_to_one_checkout_and_are_saved_and_cleared(world: World) -> None:
    w = world
    made = await w.human.create_profile("proj-dev", "proj", "claude")
    assert (made["worktrees"], made["max_worktrees"], made["base_branch"]) == (False, 4, None)
    changed = await w.human.update_profile(
        "proj-dev", worktrees=True, max_worktrees=8, base_branch="release/9"
    )
    assert (changed["worktrees"], changed["max_worktrees"], changed["base_branch"]) == (True, 8, "release/9")
    kept = await w.human.update_profile("proj-dev", model="opus")  # left out: kept
    assert (kept["worktrees"], kept["max_worktrees"], kept["base_branch"]) == (True, 8, "release/9")
    cleared = await w.human.update_profile("proj-dev", base_branch="", worktrees=False)
    assert (cleared["worktrees"], cleared["base_branch"]) == (False, None)
    # What the daemon loads: the bot's own profile, with the fields.
    seen = await w.bot.profile("proj-dev")
    assert (seen["worktrees"], seen["max_worktrees"], seen["base_branch"]) == (False, 8, None)
    made = await w.human.create_profile("proj-wt", "proj", "codex", worktrees=True, base_branch="main")
    assert (made["worktrees"], made["max_worktrees"], made["base_branch"]) == (True, 4, "main")


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"max_worktrees": 0}, "max_worktrees"),
        ({"max_worktrees": 33}, "max_worktrees"),
        ({"max_worktrees": 2.5}, "max_worktrees"),
        ({"worktrees": "yes"}, "worktrees"),
        ({"base_branch": "-f"}, "base_branch"),
        ({"base_branch": "a b"}, "base_branch"),
        ({"base_branch": "x" * 201}, "base_branch"),
    ],
)
async def test_bad_values_are_refused_naming_the_field_and_nothing_changes(
    world: World, fields: dict[str, Any], field: str
) -> None:
    w = world
    await w.human.create_profile("proj-dev", "proj", "claude")
    error = await refused(w.human.update_profile("proj-dev", **fields), "INVALID_ARGUMENT", unchanged=w.board)
    assert error.details.get("field") == field
    error = await refused(
        w.human.create_profile("proj-new", "proj", "claude", **fields), "INVALID_ARGUMENT", unchanged=w.board
    )
    assert error.details.get("field") == field
    assert (await w.human.profile("proj-dev"))["version"] == 1


async def test_the_profile_form_sets_and_shows_them(world: World) -> None:
    w = world
    browser = await sign_in(w.board)
    try:
        form = {"name": "proj-dev", "workspace": "proj", "harness": "claude"}
        status, _ = await browser.post(
            "/fleet/profiles", {**form, "worktrees": "true", "max_worktrees": "6", "base_branch": "develop"}
        )
        assert status == 303
        saved = await w.human.profile("proj-dev")
        assert (saved["worktrees"], saved["max_worktrees"], saved["base_branch"]) == (True, 6, "develop")
        status, page = await browser.get("/fleet/profiles/proj-dev")
        assert status == 200
        assert 'name="worktrees" value="true" checked' in page
        assert 'name="max_worktrees" type="number" min="1" max="32" value="6"' in page
        assert 'name="base_branch" value="develop"' in page
        # Unticked, emptied: off, the default number, the checkout's branch.
        edit = {"harness": "claude", "base_version": "1", "max_worktrees": "", "base_branch": ""}
        status, _ = await browser.post("/fleet/profiles/proj-dev", edit)
        assert status == 303
        saved = await w.human.profile("proj-dev")
        assert (saved["worktrees"], saved["max_worktrees"], saved["base_branch"]) == (False, 4, None)
        # A refused value is shown beside its field, and nothing is saved.
        status, page = await browser.post(
            "/fleet/profiles/proj-dev", {"harness": "claude", "base_version": "2", "max_worktrees": "99"}
        )
        assert status == 422 and 'name="max_worktrees"' in page and 'aria-invalid="true"' in page
        assert (await w.human.profile("proj-dev"))["version"] == 2
    finally:
        await browser.close()
