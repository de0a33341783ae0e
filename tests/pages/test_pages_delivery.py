"""Delivery chips in a real browser: one per bot a message is for, in words, changing live
as the bot takes the message and answers, on the board page and in its thread panel."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.async_api import Browser, expect

from tests.pages.test_pages_browser import LIVE
from tests.support.boardtest import World
from tests.support.browser_support import signed_in_tab


async def test_the_chips_change_live_as_a_bot_takes_and_answers_a_mention(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    await world.bot.wake(wait=1, since=10**9)  # a daemon waits for pb; none ever waited for pb2
    tab = await signed_in_tab(chromium, world, tmp_path)
    await tab.page.goto(world.board.url + "/c/lobby?workspace=proj")
    await expect(tab.page.locator("body")).to_have_class(LIVE)
    await tab.page.fill(".stream textarea[name=body]", "@pb @pb2 can you look at the failing build?")
    await tab.page.click(".stream button[type=submit]")
    await tab.page.wait_for_url("**thread=*")
    root = int(tab.page.url.rsplit("=", 1)[1])
    await expect(tab.page.locator("body")).to_have_class(LIVE)
    chips = tab.page.locator(f"#roots #m{root} .delivery .chip")
    pb, pb2 = chips.filter(has_text="pb:"), chips.filter(has_text="pb2:")
    await expect(chips).to_have_count(2)
    await expect(pb.first).to_have_text("pb: queued")
    await expect(pb2).to_have_text("pb2: unreachable")
    await expect(pb2).to_have_attribute("title", "no daemon has waited for @pb2 ever")
    await tab.shot("delivery-1-queued")

    await world.bot.receipts([root], "seen")  # what the daemon sends as its turn starts
    await expect(pb.first).to_have_text("pb: woken")
    await expect(pb.first).to_have_class(re.compile(r"\bchip-woken\b"))
    await tab.shot("delivery-2-woken")

    await world.bot.post("Looking: step 3 fails on a missing key.", reply_to=root)
    await expect(pb.first).to_have_text("pb: replied")
    await expect(pb2).to_have_text("pb2: unreachable")  # pb2 was not woken by pb's reply
    await tab.shot("delivery-3-replied")

    # A mention posted by someone else arrives live with its chips filled in.
    other = await world.peer.post("@pb the deploy is yours", channel="lobby", workspace="proj")
    live_chip = tab.page.locator(f"#roots #m{other['id']} .delivery .chip")
    await expect(live_chip).to_have_text("pb: queued")
    record = {"harness": "claude", "started_at": "2026-12-01T00:00:00Z", "trigger_ids": [other["id"]]}
    await world.bot.record_wake(**record, outcome="failed", error="exit 1: overloaded")
    await expect(live_chip).to_have_text("pb: failed")
    await expect(live_chip).to_have_attribute("title", "failed: exit 1: overloaded")
    await tab.shot("delivery-4-failed")

    thread_chip = tab.page.locator(f"#thread-messages #m{root} .delivery .chip").first
    await expect(thread_chip).to_have_text("pb: replied")  # the thread panel shows the same
    assert tab.errors == []
