"""The budget forms in Chromium: a bot's page raises, clears and lifts its budget; the profile
form and the workspace settings carry their limits. Screenshots go to the test's directory."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from playwright.async_api import Browser, expect

from board.server.clock import iso
from tests.support.boardtest import World
from tests.support.browser_support import signed_in_tab
from tests.support.pages_support import pages_as


async def test_a_human_raises_clears_and_lifts_a_bots_budget_on_its_page(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    await world.human.create_profile("pb-dev", "proj", "claude", budget_wakes=2, bots=["pb"])
    for _ in range(2):
        await world.bot.record_wake(harness="claude", started_at=iso(datetime.now(UTC)), outcome="ok")
    tab = await signed_in_tab(chromium, world, tmp_path)
    page = tab.page
    await page.goto(world.board.url + "/a/pb")
    budget = page.locator("#budget")
    await expect(budget).to_contain_text("Held: 2 of 2 wakes a day, set on profile pb-dev")
    await tab.shot("budget-1-held")

    form = page.locator("#budget-form")
    await form.locator("input[name=budget_wakes]").fill("5")
    await form.get_by_role("button", name="Save limits").click()
    await page.wait_for_url("**/a/pb#budget")
    await expect(budget).not_to_contain_text("Held")
    await expect(form.locator("input[name=budget_wakes]")).to_have_value("5")
    assert (await world.human.agent("pb"))["budget"]["limits"]["wakes"] == {"limit": 5, "from": "bot"}
    assert "held" not in await world.bot.wake()
    await tab.shot("budget-2-raised")

    await form.locator("input[name=budget_wakes]").fill("")  # empty: the profile's limit again
    await form.get_by_role("button", name="Save limits").click()
    await expect(budget).to_contain_text("Held: 2 of 2 wakes")
    assert (await world.human.agent("pb"))["budget"]["budget_wakes"] is None

    await budget.get_by_role("button", name="Lift for the rest of today").click()
    await expect(budget).to_contain_text("Lifted: no budget holds it until")
    await expect(budget).not_to_contain_text("Held")
    lifted = (await world.human.agent("pb"))["budget"]["lifted_until"]
    assert lifted is not None and lifted.endswith("T00:00:00Z")
    assert "held" not in await world.bot.wake()
    await tab.shot("budget-3-lifted")
    entries = (await world.human.audit(action="budget.set"))["entries"]
    assert [e["actor"] for e in entries] == ["alice"] * 3

    # The profile form and the workspace settings carry their limits too.
    await page.goto(world.board.url + "/fleet/profiles/pb-dev")
    profile_form = page.locator("#profile-form")
    await expect(profile_form.locator("input[name=budget_wakes]")).to_have_value("2")
    await profile_form.locator("input[name=budget_cost_usd]").fill("1.25")
    await page.click("#save-profile")
    await expect(page.locator("#saved")).to_contain_text("Saved: version 2")
    await tab.shot("budget-4-profile-form")
    profile = await world.human.profile("pb-dev")
    assert (profile["budget_wakes"], profile["budget_tokens"], profile["budget_cost_usd"]) == (2, None, 1.25)

    await page.goto(world.board.url + "/workspaces")
    settings = page.locator("form[action='/workspaces/proj/settings']")
    await settings.locator("input[name=budget_tokens]").fill("200000")
    await settings.get_by_role("button", name="Save").click()
    await page.wait_for_url("**/workspaces")
    await expect(settings.locator("input[name=budget_tokens]")).to_have_value("200000")
    assert (await world.human.workspace("proj"))["budget_tokens"] == 200_000
    await tab.shot("budget-5-workspace-settings")
    assert tab.errors == [], tab.errors


async def test_a_held_bots_page_says_when_the_hold_ends_in_a_sentence(world: World) -> None:
    """The hold's time is relative ('in 45 min'): after 'until' it read 'wait in its inbox
    until in 45 min'."""
    await world.human.set_budget("pb", budget_wakes=1)
    await world.bot.record_wake(harness="claude", started_at=iso(datetime.now(UTC)), outcome="ok")
    [(status, page)] = await pages_as(world.board, "alice", "/a/pb")
    held = re.sub(r"<[^>]+>", "", re.findall(r'<p class="paused" role="status">(.*?)</p>', page)[0])
    assert status == 200 and re.fullmatch(
        r"Held: 1 of 1 wakes a day, set on bot\. Its wakes wait in its inbox; the hold ends in [^.]+\.",
        held,
    ), held


async def test_a_bots_budget_form_says_what_an_empty_box_means_for_it(world: World) -> None:
    """Empty means the profile's limit, but a bot with no profile has none: its boxes read
    'profile's' while the table beside them said 'no limit'."""
    await world.human.create_profile("pb-dev", "proj", "claude", budget_wakes=2, bots=["pb"])
    (_, with_profile), (_, without) = await pages_as(world.board, "alice", "/a/pb", "/a/pb2")
    assert (await world.human.agent("pb"))["budget"]["profile"] == "pb-dev"
    assert (await world.human.agent("pb2"))["budget"]["profile"] is None
    assert with_profile.count('placeholder="profile pb-dev&#39;s"') == 3
    assert 'href="/fleet/profiles/pb-dev"' in with_profile
    assert without.count('placeholder="no limit"') == 3 and "profile&#39;s" not in without
    assert "Empty: no limit; pb2 runs with no profile." in without


async def test_a_holds_notice_links_to_where_it_is_lifted(world: World) -> None:
    """The notice in #lobby and the inbox ended 'raise or lift it on /a/pb' as plain text:
    the human had to type the address of the page with the Lift button."""
    await world.human.set_budget("pb", budget_wakes=1)
    await world.bot.record_wake(harness="claude", started_at=iso(datetime.now(UTC)), outcome="ok")
    assert "held" in await world.bot.wake(since=0, wait=0)
    await world.human.patch_workspace("proj", budget_wakes=1)
    await world.peer.record_wake(harness="claude", started_at=iso(datetime.now(UTC)), outcome="ok")
    assert "held" in await world.peer.wake(since=0, wait=0)
    for _, page in await pages_as(world.board, "alice", "/c/lobby?workspace=proj", "/inbox"):
        assert 'lift it on <a href="/a/pb" rel="noopener nofollow">' in page
        assert 'lift it on <a href="/workspaces" rel="noopener nofollow">' in page


async def test_a_bots_budget_card_says_its_cost_is_what_harnesses_report(world: World) -> None:
    """A codex wake reports tokens and no cost: the card's cost row stays $0 while the chart
    beside it prices the tokens, so the row says it counts only what harnesses report."""
    await world.bot.record_wake(
        harness="codex", started_at=iso(datetime.now(UTC)), outcome="ok", input_tokens=5000, output_tokens=700
    )
    [(_, page)] = await pages_as(world.board, "alice", "/a/pb")
    row = re.search(r"<tr><td>Cost, USD as harnesses report it</td><td>([^<]*)</td>", page)
    assert row is not None and row.group(1) == "$0.0000", page


async def test_a_lift_is_offered_where_a_limit_is_and_urged_only_on_a_hold(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    """A bot with no limit anywhere was offered "Lift for the rest of today" as the page's main
    button, lifting nothing; a bot under its limit was urged to it as much as a held one."""
    tab = await signed_in_tab(chromium, world, tmp_path, width=390, height=844)
    page = tab.page
    await page.goto(world.board.url + "/a/pb")
    lift = page.locator("#budget").get_by_role("button", name="Lift for the rest of today")
    await expect(page.locator("#budget-form")).to_be_visible()
    await expect(lift).to_have_count(0)
    await tab.shot("budget-no-limit")
    await world.human.create_profile("pb-dev", "proj", "claude", budget_wakes=1, bots=["pb"])
    await page.reload()
    await expect(lift).to_be_visible()
    await expect(lift).not_to_have_class(re.compile(r"\bprimary\b"))
    await world.bot.record_wake(harness="claude", started_at=iso(datetime.now(UTC)), outcome="ok")
    await page.reload()
    await expect(page.locator("#budget")).to_contain_text("Held: 1 of 1 wakes a day")
    await expect(lift).to_have_class(re.compile(r"\bprimary\b"))
    await tab.shot("budget-held-phone")
    assert tab.errors == []
