"""/fleet's forms in Chromium with the longest names the board takes: nothing wider than a phone."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Browser, expect

from tests.support.boardtest import World
from tests.support.browser_support import no_sideways_scroll, signed_in_tab
from tests.support.fleettest import enroll_keeper


async def test_add_a_bot_with_a_long_profile_name_fits_a_phone(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    """A profile's name may be 64 characters; its option in "Add a bot" stretched the form, and the
    page, past a phone's width."""
    long_name = "wordsnap-" + "p" * 55
    await world.human.create_profile(long_name, "proj", "claude")
    await enroll_keeper(world.board, world.human, "m" * 64)
    tab = await signed_in_tab(chromium, world, tmp_path, width=390, height=844)
    await tab.page.goto(world.board.url + "/fleet")
    await expect(tab.page.locator("#add-bot select[name=profile]")).to_have_value(long_name)
    await tab.shot("fleet-long-names-phone")
    await no_sideways_scroll(tab)
    assert tab.errors == []
