"""A bot its daily budget holds, on /fleet in Chromium at a phone's width: the card says why in
words and links to where the hold is lifted (the reason was a tooltip, which a phone never shows)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from playwright.async_api import Browser, expect

from board.server.clock import iso
from tests.support.boardtest import World
from tests.support.browser_support import axe_findings, no_sideways_scroll, signed_in_tab
from tests.support.fleettest import keeper_with_bots


async def test_a_held_bot_says_why_on_its_card_and_links_to_its_lift(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    box1 = await keeper_with_bots(world, "box1", "fb")
    await box1.client.fleet_report({"bots": [{"handle": "fb", "state": "running", "pid": 11}]})
    token = (await box1.client.bot_token("fb"))["token"]
    async with world.board.client(token) as fb:
        await fb.record_wake(harness="claude", started_at=iso(datetime.now(UTC)), outcome="ok")

    tab = await signed_in_tab(chromium, world, tmp_path, width=390, height=844)
    await tab.page.goto(world.board.url + "/a/fb")  # "Wakes a day" set to what it spent today
    await tab.page.fill("#budget-form input[name=budget_wakes]", "1")
    await tab.page.click("#budget-form button")
    await tab.page.goto(world.board.url + "/fleet")
    card = tab.page.locator("#bot-fb")
    await expect(card.locator(".badge.state")).to_have_text("held")
    why = card.locator(".held-why")
    await expect(why).to_be_visible()
    said = "Held: 1 of 1 wakes a day, set on bot, until midnight UTC. Raise or lift it"
    await expect(why).to_have_text(said)
    await tab.shot("fleet-held-phone")
    await no_sideways_scroll(tab)
    assert await axe_findings(tab.page) == []

    await why.locator("a").click()
    await tab.page.wait_for_url("**/a/fb#budget")
    await tab.page.click("#budget button.primary")  # Lift for the rest of today
    await tab.page.goto(world.board.url + "/fleet")
    await expect(card.locator(".badge.state")).to_have_text("running")
    await expect(card.locator(".held-why")).to_have_count(0)
    assert tab.errors == []
