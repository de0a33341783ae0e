"""Worktrees per thread in a real browser, with a real keeper and a real git repository.

The thread page shows each bot's worktree: its branch, state, commits ahead and the
diffstat as preformatted text. On /fleet a bot's kept worktree is a row with its
thread, branch, state, age and size; its Remove button reads ``removing…`` at once,
and still after a render that raced the click; the keeper removes the worktree on
the machine (the branch stays), the row leaves the card over the live stream
without a reload, and the thread's record reads ``removed``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from playwright.async_api import Browser, expect

from board.client import BoardClient
from tests.keeper.keeperrun import KeeperProcess, running, state
from tests.keeper.test_keeper_worktrees import add_worktree, branches, make_repo
from tests.support.boardtest import World, eventually
from tests.support.browser_support import Tab, axe_findings, signed_in_tab
from tests.support.held_stream import hold_fleet_stream

pytestmark = pytest.mark.timeout(240)

DIFFSTAT = " fix.py | 100 ++++++++++\n 1 file changed, 100 insertions(+)"


async def test_the_thread_shows_the_branch_and_remove_on_fleet_removes_the_kept_worktree(
    chromium: Browser, world: World, keeper: KeeperProcess, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "machine")
    thread_id = int((await world.human.post("fix the parser, @fb", channel="lobby", workspace="proj"))["id"])
    await world.human.assign_bot("box1", "proj-dev", "fb")
    await running(world, "fb")
    # The daemon on this machine is stopped, so that only the test writes its state file.
    await world.human.call("POST", "/api/fleet/bots/fb/stop")
    await state(world, "fb", "stopped")
    kept = add_worktree(repo, "fb", thread_id)
    bot_dir = keeper.bots_dir / "fb"
    fb = BoardClient(world.board.url, (bot_dir / "token").read_text().strip())
    try:
        await fb.set_worktree(
            thread_id,
            state="kept",
            branch=f"bot/fb/t{thread_id}",
            base="main",
            path=str(kept),
            ahead=1,
            commits=[{"sha": "1234567abc", "subject": "Fix it"}],
            diffstat=DIFFSTAT,
        )
    finally:
        await fb.close()
    saved = json.loads((bot_dir / "state.json").read_text())
    saved["worktrees"] = {
        str(thread_id): {
            "path": str(kept),
            "branch": f"bot/fb/t{thread_id}",
            "base": "main",
            "state": "kept",
            "created_at": time.time() - 3 * 3600,
            "session": None,
        }
    }
    (bot_dir / "state.json").write_text(json.dumps(saved))

    tab: Tab = await signed_in_tab(chromium, world, tmp_path)
    await tab.page.goto(f"{world.board.url}/t/{thread_id}")
    record = tab.page.locator("#worktrees li.worktree[data-bot=fb]")
    await expect(record).to_have_attribute("data-state", "kept")
    await expect(record.locator("code.branch")).to_have_text(f"bot/fb/t{thread_id}")
    await expect(record).to_contain_text("1 commit ahead of main")
    assert await record.locator("pre.diffstat").text_content() == DIFFSTAT
    await tab.shot("01-thread-kept")
    assert await axe_findings(tab.page) == []
    await tab.page.set_viewport_size(
        {"width": 390, "height": 800}
    )  # a phone: the page does not scroll sideways
    width = await tab.page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], width
    await tab.shot("01b-thread-kept-phone")
    await tab.page.set_viewport_size({"width": 1280, "height": 800})

    await tab.page.goto(world.board.url + "/fleet")
    row = tab.page.locator(f"#worktree-fb-{thread_id}")
    await expect(row).to_have_attribute("data-state", "kept", timeout=30_000)
    await expect(row.locator("td").nth(1)).to_have_text(f"bot/fb/t{thread_id}")
    await expect(row.locator("td").nth(3)).to_have_text("3 h")
    await expect(tab.page.locator("#worktrees-fb .facts")).to_contain_text("worktrees 1 ·")
    await tab.shot("02-fleet-kept")
    assert await axe_findings(tab.page) == []
    held = await hold_fleet_stream(tab.page, tab.page.url)
    await expect(row).to_have_attribute("data-state", "kept")
    tab.page.on("framenavigated", lambda frame: tab.dialogs.append(f"navigated to {frame.url}"))

    before = await held.drawn()
    await row.locator("button").click()
    assert await row.locator(".worktree-state").text_content() == "removing…"  # at once
    # A render from before the order was recorded, drawn after the click: still removing, no button.
    await held.replay(before)
    assert await row.locator(".worktree-state").text_content() == "removing…"
    assert await row.locator("button").get_attribute("aria-disabled") == "true"
    await held.let_go()
    await expect(tab.page.locator(f"#worktree-fb-{thread_id}")).to_have_count(0, timeout=60_000)
    await expect(tab.page.locator("#last-orders li").first).to_contain_text(
        f"remove_worktree fb #{thread_id} on box1 by alice"
    )
    # Acknowledged in a report after the one that no longer lists the worktree.
    await expect(tab.page.locator("#last-orders li").first).to_contain_text("done", timeout=30_000)
    await tab.shot("03-fleet-removed")
    assert tab.dialogs == [] and tab.errors == []  # no reload: the page never navigated
    assert not kept.exists() and f"bot/fb/t{thread_id}" in branches(repo)

    async def removed() -> bool:
        return [r["state"] for r in (await world.human.thread(thread_id))["worktrees"]] == ["removed"]

    await eventually(removed, "the thread's record to read removed", 30)
    await tab.page.goto(f"{world.board.url}/t/{thread_id}")
    await expect(tab.page.locator("#worktrees li.worktree[data-bot=fb]")).to_have_attribute(
        "data-state", "removed"
    )
    await tab.shot("04-thread-removed")
    assert tab.errors == []
