"""The pages in a real browser: sign in, post, live replies, threads, XSS, review, search, workspaces."""

from __future__ import annotations

from pathlib import Path

from boardtest import World, db_rows
from browser_support import Tab, chromium, new_tab  # noqa: F401 - fixture
from pages_support import login_link
from playwright.async_api import Browser, expect


async def signed_in_tab(chromium: Browser, world: World, tmp_path: Path) -> Tab:
    tab = await new_tab(chromium, tmp_path)
    link = await login_link(world.board, "alice")
    await tab.page.goto(world.board.url + link)
    await tab.page.click("#use-link")
    await tab.page.wait_for_url("**/c/**")
    return tab


async def test_sign_in_with_the_link_then_the_link_is_refused(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    tab = await new_tab(chromium, tmp_path)
    link = world.board.url + await login_link(world.board, "alice")
    await tab.page.goto(link)
    await tab.shot("01-login-link")
    await tab.page.click("#use-link")
    await tab.page.wait_for_url("**/c/**")
    await expect(tab.page.locator(".who")).to_have_text("alice")
    await tab.shot("02-first-visit")
    other = await new_tab(chromium, tmp_path)
    await other.page.goto(link)
    await expect(other.page.locator(".refusal")).to_contain_text("already used")
    await expect(other.page.locator(".refusal")).to_contain_text("board admin user link")
    await other.shot("03-used-link")
    assert db_rows(world.board.db_path, "SELECT count(*) FROM sessions")[0][0] == 1


async def test_post_and_see_a_bots_reply_arrive_live(chromium: Browser, world: World, tmp_path: Path) -> None:
    await world.bot.post("first", channel="lobby", workspace="proj")
    tab = await signed_in_tab(chromium, world, tmp_path)
    await tab.page.goto(world.board.url + "/c/lobby?workspace=proj")
    await tab.page.fill(".stream textarea[name=body]", "hello @pb, can you look at the build?")
    await tab.page.click(".stream button[type=submit]")
    await tab.page.wait_for_url("**thread=*")
    await expect(tab.page.locator("#roots .msg").last).to_contain_text("can you look at the build")
    root = int(tab.page.url.rsplit("=", 1)[1])
    await tab.page.wait_for_function("document.body.classList.contains('live')")
    await world.bot.post("On it: the build fails on step 3.", reply_to=root)
    await expect(tab.page.locator("#thread-messages .msg").last).to_contain_text("fails on step 3")
    await world.bot.post("A new root from pb", channel="lobby", workspace="proj")
    await expect(tab.page.locator("#roots .msg").last).to_contain_text("A new root from pb")
    await tab.shot("04-live-reply")
    assert tab.errors == []
