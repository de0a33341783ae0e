"""Onboard's tabs and copy buttons and the audit log's paging in Chromium, on a desktop and a phone."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Browser, expect

from board.launcher.harnesses import ADAPTERS
from board.server.pages.onboard import LABELS
from tests.support.boardtest import World
from tests.support.browser_support import Tab, no_sideways_scroll, signed_in_tab

SIZES = (("desktop", 1280, 800), ("phone", 390, 844))


def csp_refusals(tab: Tab) -> list[str]:
    return [line for line in tab.console if "Content Security Policy" in line] + tab.errors


async def test_onboard_tabs_by_mouse_and_keyboard_with_copy_buttons(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    labels = [LABELS[h][0] for h in ADAPTERS]
    for name, width, height in SIZES:
        tab = await signed_in_tab(chromium, world, tmp_path, width, height)
        await tab.page.context.grant_permissions(["clipboard-read", "clipboard-write"])
        page = tab.page
        await page.goto(world.board.url + "/onboard?workspace=proj")
        tabs = page.get_by_role("tab")
        await expect(tabs).to_have_text(labels)
        await expect(page.locator("#harness-claude")).to_be_visible()
        await expect(page.locator("#harness-codex")).to_be_hidden()
        await no_sideways_scroll(tab)
        await tab.shot(f"onboard-{name}")

        # The mouse: Codex's panel alone, and the address keeps it.
        await page.get_by_role("tab", name="Codex").click()
        await expect(page.locator("#harness-codex")).to_be_visible()
        await expect(page.locator("#harness-claude")).to_be_hidden()
        await expect(page.get_by_role("tab", name="Codex")).to_have_attribute("aria-selected", "true")
        assert page.url.endswith("#harness-codex")
        await no_sideways_scroll(tab)
        await tab.shot(f"onboard-codex-{name}")

        # Its copy button puts exactly the line shown on the clipboard.
        line = await page.locator("#run-codex").inner_text()
        assert line.startswith(f"BOARD_URL={world.board.url} ") and "--harness codex" in line
        await page.locator("button[data-copy='run-codex']").click()
        await expect(page.locator("button[data-copy='run-codex']")).to_have_text("Copied")
        assert await page.evaluate("navigator.clipboard.readText()") == line

        # The keyboard: arrows move along the tabs and wrap, Home and End go to the ends.
        await page.get_by_role("tab", name="Codex").focus()
        await page.keyboard.press("ArrowRight")
        await expect(page.get_by_role("tab", name=labels[2])).to_be_focused()
        await expect(page.locator(f"#harness-{list(ADAPTERS)[2]}")).to_be_visible()
        await page.keyboard.press("End")
        await expect(page.get_by_role("tab", name=labels[-1])).to_be_focused()
        await page.keyboard.press("ArrowRight")
        await expect(page.get_by_role("tab", name=labels[0])).to_be_focused()
        await expect(page.locator("#harness-claude")).to_be_visible()
        await page.keyboard.press("ArrowLeft")
        await expect(page.locator("#harness-command")).to_be_visible()
        await expect(page.locator("#harness-claude")).to_be_hidden()
        # Only the chosen tab is in the Tab order; Tab moves on into its panel.
        assert await page.evaluate("[...document.querySelectorAll('[role=tab]')].map(t => t.tabIndex)") == [
            -1
        ] * (len(labels) - 1) + [0]
        await tab.shot(f"onboard-command-{name}")

        # A reload (or a shared link) opens the tab the address names.
        await page.reload()
        await expect(page.locator("#harness-command")).to_be_visible()
        await expect(page.locator("#harness-claude")).to_be_hidden()
        assert csp_refusals(tab) == []
        await page.context.close()


async def test_audit_newest_first_with_pick_lists_and_older_newer_links(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    for n in range(12):
        await world.bot.create_channel(f"bot-topic-{n}", workspace="proj")
    for name, width, height in SIZES:
        tab = await signed_in_tab(chromium, world, tmp_path, width, height)
        page = tab.page
        entries = (await world.human.audit(limit=500))["entries"]
        newest = [e["id"] for e in entries][::-1]
        await page.goto(world.board.url + "/audit?limit=5")
        rows = page.locator("table.audit tbody tr")
        await expect(rows).to_have_count(5)
        assert [int(i) for i in await rows.locator("td:first-child").all_inner_texts()] == newest[:5]
        await expect(page.locator("#newer")).to_have_count(0)
        await no_sideways_scroll(tab)
        await tab.shot(f"audit-{name}")

        await page.click("#older")
        await expect(rows.first).to_have_id(f"audit-{newest[5]}")
        await tab.shot(f"audit-older-{name}")
        await page.click("#newer")
        await expect(rows.first).to_have_id(f"audit-{newest[0]}")
        await expect(page.locator("#newer")).to_have_count(0)

        # The pick-lists: one bot's channel creations, paged with the filter kept.
        await page.select_option("select[name=actor]", "pb")
        await page.select_option("select[name=action]", "channel.create")
        await page.click(".filters button[type=submit]")
        await page.wait_for_url("**actor=pb**")
        texts = await rows.all_inner_texts()
        assert len(texts) == 5 and all("pb" in t and "channel.create" in t for t in texts)
        await page.click("#older")
        await page.wait_for_url("**before=**")
        assert "actor=pb" in page.url and "action=channel.create" in page.url
        mine = [e["id"] for e in entries if e["actor"] == "pb" and e["action"] == "channel.create"][::-1]
        assert [int(i) for i in await rows.locator("td:first-child").all_inner_texts()] == mine[5:10]
        await no_sideways_scroll(tab)
        await tab.shot(f"audit-filtered-{name}")
        assert csp_refusals(tab) == []
        await page.context.close()
