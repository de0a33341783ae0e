"""/fleet in a real browser, with a real keeper running a real ``bot run`` daemon.

Stopping the bot with its button ends its process group, and the card turns
to ``stopped`` over the page's live stream without a reload; its Start button
brings it back. The add-a-machine form shows the installer's one line. A bot
whose profile names a missing repo says why in one line on its card, the line
``board doctor`` prints too.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import Browser, expect

from tests.keeper.keeperrun import KeeperProcess, daemons, group_gone, running, state
from tests.launcher.botrun import LiveBoard
from tests.support.boardtest import World, eventually
from tests.support.browser_support import Tab, new_tab
from tests.support.doctor_support import doctor_async, doctor_env
from tests.support.pages_support import login_link

pytestmark = pytest.mark.timeout(240)


async def fleet_tab(chromium: Browser, world: World, tmp_path: Path) -> Tab:
    """A tab signed in as alice, on /fleet."""
    tab = await new_tab(chromium, tmp_path)
    await tab.page.goto(world.board.url + await login_link(world.board, "alice"))
    await tab.page.click("#use-link")
    await tab.page.wait_for_url("**/c/**")
    await tab.page.goto(world.board.url + "/fleet")
    return tab


async def test_stop_and_start_a_bot_from_its_card(
    chromium: Browser, world: World, keeper: KeeperProcess, tmp_path: Path
) -> None:
    await world.human.assign_bot("box1", "proj-dev", "fb")
    bot = await running(world, "fb")
    pgid = bot["pid"]
    tab = await fleet_tab(chromium, world, tmp_path)
    card = tab.page.locator("#machine-box1")
    await expect(card).to_have_attribute("data-status", "online")
    row = tab.page.locator("#bot-fb")
    await expect(row).to_have_attribute("data-state", "running")
    await expect(row).to_have_attribute("data-pid", str(bot["pid"]))
    await tab.shot("01-running")
    tab.page.on("framenavigated", lambda frame: tab.dialogs.append(f"navigated to {frame.url}"))

    await row.locator("button[name=stop]").click()
    await expect(tab.page.locator("#bot-fb")).to_have_attribute("data-state", "stopped", timeout=60_000)
    await state(world, "fb", "stopped")
    await eventually(lambda: group_gone(pgid), "the bot's process group to end", 30)
    assert daemons(keeper, "fb") == []
    await expect(tab.page.locator("#bot-fb")).to_have_attribute("data-pid", "")
    await tab.shot("02-stopped")

    await tab.page.locator("#bot-fb button[name=start]").click()
    await expect(tab.page.locator("#bot-fb")).to_have_attribute("data-state", "running", timeout=60_000)
    again = await running(world, "fb")
    assert again["pid"] != bot["pid"] and len(daemons(keeper, "fb")) == 1
    await expect(tab.page.locator("#bot-fb")).to_have_attribute("data-pid", str(again["pid"]))
    await tab.shot("03-started-again")
    assert tab.dialogs == [] and tab.errors == []  # no reload: the page never navigated

    await tab.page.fill("#add-machine input[name=machine_name]", "box2")
    await tab.page.click("#add-machine button")
    line = tab.page.locator("#enroll-line")
    await expect(line).to_contain_text(f"curl -fsSL {world.board.url}/install.sh | KEEPER_ENROLL_CODE=bk_")
    await tab.shot("04-add-a-machine")
    await tab.page.click("#bot-fb a")
    await expect(tab.page.locator("#log-tail")).not_to_be_empty()
    await tab.shot("05-bot")


async def test_a_broken_bot_says_why_in_one_line_on_its_card_and_in_board_doctor(
    chromium: Browser, world: World, keeper: KeeperProcess, live: LiveBoard, tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-repo"
    await world.human.create_profile("broken", "proj", "claude", repo=str(missing))
    await world.human.assign_bot("box1", "broken", "confused")
    await state(world, "confused", "misconfigured")
    why = f"bot: repo {missing} is not a directory"

    tab = await fleet_tab(chromium, world, tmp_path)
    row = tab.page.locator("#bot-confused")
    await expect(row).to_have_attribute("data-state", "misconfigured")
    await expect(row.locator(".why")).to_have_text(why)
    await tab.shot("06-misconfigured")

    env = doctor_env(tmp_path / "doctor", live.port, BOARD_DB=str(live.db_path))
    found = await doctor_async(env)
    (line,) = found.lines("bot confused")
    assert line.startswith(f"FAIL  bot confused on box1: misconfigured: {why} — fix its profile broken")
    assert tab.errors == []
