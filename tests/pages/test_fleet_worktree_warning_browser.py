"""/fleet's Remove on a kept worktree in Chromium: one its daemon kept with uncommitted work
says so on its row and asks before the order goes (its keeper would refuse it); one kept with
nothing uncommitted, or whose uncommitted work the board was never told of, asks nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.async_api import Browser, expect

from tests.support.boardtest import World, eventually
from tests.support.browser_support import axe_findings, signed_in_tab
from tests.support.fleettest import keeper_with_bots


def kept(thread: int, **uncommitted: Any) -> dict[str, Any]:
    """A kept worktree as a keeper reports it."""
    return {
        "thread": thread,
        "branch": f"bot/fb/t{thread}",
        "path": f"/srv/app.worktrees/fb-t{thread}",
        "state": "kept",
        "age_s": 7200.0,
        "disk_bytes": 1048576,
        **uncommitted,
    }


async def test_remove_warns_of_the_uncommitted_paths_the_board_knows_before_the_order_goes(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    box1 = await keeper_with_bots(world, "box1", "fb")
    dirty, clean, unknown = [
        int((await world.human.post(f"task {n}", channel="lobby", workspace="proj"))["id"]) for n in range(3)
    ]
    paths = ["src/parser.py", "notes.txt", "src/lexer.py", "docs/a.md", "docs/b.md"]
    report = [
        kept(dirty, uncommitted=1234, uncommitted_paths=paths),
        kept(clean, uncommitted=0, uncommitted_paths=[]),
        kept(unknown),  # a keeper older than the count: nothing known, nothing said
    ]
    await box1.client.fleet_report({"bots": [{"handle": "fb", "state": "running", "worktrees": report}]})

    tab = await signed_in_tab(chromium, world, tmp_path)
    await tab.page.goto(world.board.url + "/fleet")
    row = tab.page.locator(f"#worktree-fb-{dirty}")
    shown = "1,234 uncommitted paths when kept: src/parser.py, notes.txt, src/lexer.py, docs/a.md, docs/b.md"
    await expect(row.locator("p.uncommitted")).to_have_text(shown + " and 1,229 more")
    for quiet in (clean, unknown):
        await expect(tab.page.locator(f"#worktree-fb-{quiet} p.uncommitted")).to_have_count(0)
    await tab.shot("fleet-worktree-uncommitted")
    assert await axe_findings(tab.page) == []

    # Asked first; dismissed (the tab's default), nothing is sent and the row stays as it was.
    await row.locator("button").click()
    await expect(row).to_have_attribute("data-state", "kept")
    assert tab.dialogs == [
        f"When @fb kept this worktree it had 1,234 uncommitted paths (src/parser.py, notes.txt, "
        f"src/lexer.py, docs/a.md, docs/b.md and 1,229 more). Its keeper refuses to remove a worktree "
        f"with uncommitted work: commit it to bot/fb/t{dirty} first, or remove the folder by hand. "
        "Send the order anyway?"
    ]
    assert await row.get_attribute("data-removing") == "" and (await world.human.fleet())["orders"] == []

    # The clean and the unknown ones ask nothing; the dirty one, accepted, sends its order too.
    for thread in (clean, unknown):
        await tab.page.locator(f"#worktree-fb-{thread} button").click()
        await expect(tab.page.locator(f"#worktree-fb-{thread}")).to_have_attribute("data-removing", "true")
    assert len(tab.dialogs) == 1
    await tab.page.evaluate("window.confirm = (said) => { window.asked = said; return true; }")
    await row.locator("button").click()
    await expect(row).to_have_attribute("data-removing", "true")
    assert await tab.page.evaluate("window.asked") == tab.dialogs[0]

    async def sent() -> list[int] | None:  # the row reads "removing…" before its order is posted
        targets = sorted(o["target"] for o in (await world.human.fleet())["orders"])
        return targets if len(targets) == 3 else None

    assert await eventually(sent, "the three orders") == sorted((dirty, clean, unknown))
    assert tab.errors == []
