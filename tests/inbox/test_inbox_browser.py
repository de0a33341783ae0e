"""The inbox in a real browser: a mention raises a notification in a hidden tab, is
highlighted and counted in the title; reading it in one tab clears it in every tab; the
inbox page groups threads and follows along live. Nothing on the board is stubbed: the
mention is posted with a bot's token. On the browser's side, the Notification constructor is
wrapped to record what the page raised (headless Chromium shows no notification), and a tab
is put in the background by setting what ``document.hidden`` answers: every headless tab is
visible, and no protocol call changes that."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, BrowserContext, Page, expect

from board.server.services import auth
from tests.support.boardtest import World
from tests.support.browser_support import Tab, use_login_link
from tests.support.pages_support import login_link

LIVE = re.compile(r"\blive\b")
FOR_ME = re.compile(r"\bfor-me\b")

#: Records every notification the page constructs, then constructs it as usual.
RECORD_NOTIFICATIONS = """
(() => {
  const Real = window.Notification;
  window.raised = [];
  window.asked = 0;
  class Recorded extends Real {
    constructor(title, options) {
      super(title, options);
      window.raised.push({ title, body: (options || {}).body, tag: (options || {}).tag });
    }
  }
  Object.defineProperty(Recorded, "permission", { get: () => Real.permission });
  Recorded.requestPermission = (...args) => { window.asked += 1; return Real.requestPermission(...args); };
  window.Notification = Recorded;
  let hidden = false;
  Object.defineProperty(document, "hidden", { get: () => hidden });
  Object.defineProperty(document, "visibilityState", { get: () => (hidden ? "hidden" : "visible") });
  window.setHidden = (value) => { hidden = value; document.dispatchEvent(new Event("visibilitychange")); };
})();
"""


async def _tab(context: BrowserContext, out: Path) -> Tab:
    page = await context.new_page()
    tab = Tab(page, out)
    page.on("pageerror", lambda exc: tab.errors.append(str(exc)))
    page.set_default_timeout(15_000)
    return tab


async def _open(context: BrowserContext, world: World, out: Path, path: str) -> Tab:
    """A tab of the context on ``path``, its live stream open."""
    tab = await _tab(context, out)
    await tab.page.goto(world.board.url + path)
    await expect(tab.page.locator("body")).to_have_class(LIVE)
    return tab


async def _signed_in(chromium: Browser, world: World, out: Path, path: str) -> tuple[BrowserContext, Tab]:
    """A browser with notifications allowed and recorded, alice signed in, a tab on ``path``."""
    context = await chromium.new_context(viewport={"width": 1280, "height": 800})
    await context.grant_permissions(["notifications"], origin=world.board.url)
    await context.add_init_script(RECORD_NOTIFICATIONS)
    tab = await use_login_link(
        await _tab(context, out), world.board.url + await login_link(world.board, "alice")
    )
    await tab.page.goto(world.board.url + path)
    await expect(tab.page.locator("body")).to_have_class(LIVE)
    return context, tab


async def _hide(page: Page, hidden: bool) -> None:
    await page.evaluate(f"setHidden({'true' if hidden else 'false'})")


async def test_a_mention_notifies_a_hidden_tab_and_reading_it_clears_every_tab(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    context, board = await _signed_in(chromium, world, tmp_path, "/c/lobby?workspace=proj")
    inbox = await _open(context, world, tmp_path, "/inbox")  # a second tab of the same session
    await _hide(board.page, True)
    await expect(inbox.page.locator("#nav-unread")).to_be_hidden()

    posted = await world.bot.post("@alice the release needs your go-ahead", channel="lobby")
    item = board.page.locator(f"#m{posted['id']}")
    await expect(item).to_have_class(FOR_ME)
    await expect(board.page).to_have_title(re.compile(r"^\(1\) .*Bot Board$"))
    raised = await board.page.evaluate("window.raised")
    assert raised == [
        {
            "title": "pb mentioned you in #lobby: @alice the release needs your go-ahead",
            "body": "@alice the release needs your go-ahead",
            "tag": f"m{posted['id']}",
        }
    ]
    assert await inbox.page.evaluate("window.raised") == []  # the tab in front raises none
    group = inbox.page.locator(f"#group-{posted['id']}")
    await expect(group).to_contain_text("1 unread")  # arrived in the inbox page without a reload
    await expect(group.locator(f"#m{posted['id']}")).to_have_class(FOR_ME)
    await expect(inbox.page.locator("#nav-unread")).to_have_text("1")
    await expect(inbox.page).to_have_title("(1) Inbox · Bot Board")
    await inbox.shot("01-inbox-live-group")
    await _hide(board.page, False)
    await board.shot("02-board-highlighted-mention")

    await item.locator("button.mark-read").click()
    await expect(item).not_to_have_class(FOR_ME)
    await expect(board.page).not_to_have_title(re.compile(r"^\("))
    await expect(board.page.locator("#nav-unread")).to_be_hidden()
    await expect(inbox.page.locator("#nav-unread")).to_be_hidden()  # the other tab, live
    await expect(inbox.page).to_have_title("Inbox · Bot Board")
    await expect(group).not_to_have_class(re.compile(r"\bhas-unread\b"))
    await board.shot("03-board-read")
    await inbox.shot("04-inbox-read")
    assert board.errors == [] and inbox.errors == []
    await context.close()


async def test_the_inbox_groups_marks_read_and_done_and_a_second_tab_follows(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    plan = await world.bot.post("@alice the plan for the release", channel="lobby")
    await world.peer.post("@alice and a risk in it", reply_to=plan["id"])
    docs = await world.other.post("@alice the docs of the other project", channel="lobby")
    context, first = await _signed_in(chromium, world, tmp_path, "/inbox")
    second = await _open(context, world, tmp_path, "/inbox")
    groups = first.page.locator(".inbox-group")
    await expect(groups).to_have_count(2)
    await expect(groups.nth(0)).to_contain_text("the docs of the other project")  # newest first
    await expect(groups.nth(1)).to_contain_text("2 messages")
    await expect(groups.nth(1)).to_contain_text("2 unread")
    await expect(first.page.locator("#nav-unread")).to_have_text("3")
    await first.shot("05-inbox-grouped")

    await first.page.locator(f"#group-{plan['id']} button.mark-seen").click()
    await expect(first.page.locator(f"#group-{plan['id']}")).not_to_contain_text("unread")
    await expect(second.page.locator(f"#group-{plan['id']}")).not_to_contain_text("unread")  # live
    await expect(second.page.locator("#nav-unread")).to_have_text("1")
    await first.page.locator(f"#group-{docs['id']} button.mark-done").click()
    await expect(second.page.locator(f"#group-{docs['id']}")).to_have_count(0)
    await expect(second.page.locator(".inbox-group")).to_have_count(1)
    await expect(second.page.locator("#nav-unread")).to_be_hidden()
    await second.shot("06-inbox-second-tab-after-read-and-done")

    later = await world.bot.post("@alice one more thing", channel="builds")
    await expect(second.page.locator(f"#group-{later['id']}")).to_contain_text("1 unread")
    await second.page.locator("#mark-all-read").click()
    await expect(first.page.locator("#nav-unread")).to_be_hidden()
    await expect(first.page.locator(f"#group-{later['id']}")).not_to_contain_text("unread")
    await first.shot("07-inbox-all-read")
    assert first.errors == [] and second.errors == []
    await context.close()


async def test_the_inbox_drawn_anew_keeps_the_focus_and_waits_for_a_press_to_end(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    """A mention that arrives redraws the groups. Drawn while a button (or a message j moved
    to) has the focus, the focus stays there; drawn between the press on a link and its release, it would
    take the link away and the click with it, so it waits for the click."""
    plan = await world.bot.post("@alice the plan for the release", channel="lobby")
    context, tab = await _signed_in(chromium, world, tmp_path, "/inbox")
    page = tab.page
    done = page.locator(f"#group-{plan['id']} button.mark-done")
    await done.focus()
    await done.evaluate("b => { b.dataset.before = 'yes'; }")
    risk = await world.peer.post("@alice a risk in it", channel="builds")
    await expect(page.locator(f"#group-{risk['id']}")).to_be_visible()
    await expect(done).not_to_have_attribute("data-before", "yes")  # drawn anew
    await expect(done).to_be_focused()
    await tab.shot("08a-inbox-focus-kept")
    await page.keyboard.press("j")  # to the newest group's message
    risen = page.locator(f"#m{risk['id']}")
    await expect(risen).to_be_focused()
    await world.peer.post("@alice and a second one", channel="builds")
    await expect(page.locator(".inbox-group")).to_have_count(3)
    await expect(risen).to_be_focused()

    title = page.locator(f"#group-{plan['id']} a.group-title")
    box = await title.bounding_box()
    assert box is not None
    await page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    await page.mouse.down()
    docs = await world.other.post("@alice the docs", channel="lobby")
    await expect(page.locator("body")).to_have_attribute("data-waiting", "render")
    await expect(page.locator(f"#group-{docs['id']}")).to_have_count(0)
    await page.mouse.up()
    await page.wait_for_url(f"**/t/{plan['id']}")
    assert tab.errors == []
    await context.close()


async def test_settings_ask_permission_from_a_button_and_keep_each_kind(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    context, tab = await _signed_in(chromium, world, tmp_path, "/settings")
    await expect(tab.page).to_have_title("Settings · Bot Board")
    assert await tab.page.evaluate("window.asked") == 0  # never on load
    await tab.page.click("#allow-notifications")
    assert await tab.page.evaluate("window.asked") == 1
    await expect(tab.page.locator("#notify-permission")).to_have_text("Permission: granted")
    await tab.page.uncheck("#notify-form input[name=dm]")
    await tab.page.uncheck("#notify-form input[name=crashed]")
    await tab.page.click("#notify-form button[type=submit]")
    await tab.page.wait_for_url("**/settings#notifications")
    await expect(tab.page.locator("#notify-form input[name=dm]")).not_to_be_checked()
    await expect(tab.page.locator("#notify-form input[name=mention]")).to_be_checked()
    await tab.shot("08-settings-notifications")
    stored = await world.human.request_object("GET", "/api/notifications")
    assert stored == {
        "mention": True,
        "dm": False,
        "held": True,
        "crashed": False,
        "routine": True,
        "run_failed": True,
        "review": True,
    }
    assert tab.errors == []
    await context.close()


async def _raised(page: Page, count: int) -> list[dict[str, Any]]:
    """What the page raised once it raised ``count`` (the page's policy forbids a string eval)."""
    for _ in range(150):
        raised: list[dict[str, Any]] = await page.evaluate("window.raised")
        if len(raised) >= count:
            return raised
        await asyncio.sleep(0.1)
    raise AssertionError(f"raised {raised}, not {count}")


async def _fail_a_run(world: World, scheduled_for: str, told: Page | None = None) -> int:
    """A run of routine tidy (proposed and approved the first time) that fails; its id.

    ``told``: a hidden tab that raises the proposal before it is approved. Approved at once,
    the proposal may no longer await anyone by the time the tab's stream reads it (a busy
    machine), and a version nobody needs to approve raises nothing."""
    runner = world.board.client(await auth.runner_token(world.board.ctx))
    if scheduled_for.startswith("2026-11-30"):
        fields = {"workspace": "proj", "schedule": "0 2 * * *", "bot": "pb", "prompt": "Do it."}
        await world.bot.propose_routine("tidy", **fields)
        if told is not None:
            await _raised(told, 1)
        await world.human.approve_version("tidy", 1, "go")
    run = await runner.create_run("tidy", 1, scheduled_for)
    await runner.start_run("tidy", run["id"])
    await runner.finish_run("tidy", run["id"], "failed", "the wake ended failed")
    return int(run["id"])


async def test_a_failed_run_and_a_proposal_to_review_notify_a_hidden_tab_each_kind_as_set(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    """The kinds heard out of band reach an open page too, through the same live stream."""
    await world.human.patch_workspace("proj", review="all")  # alice's own writes too
    context, tab = await _signed_in(chromium, world, tmp_path, "/c/lobby?workspace=proj")
    await _hide(tab.page, True)
    first = await _fail_a_run(world, "2026-11-30T02:00:00Z", told=tab.page)
    await world.bot.put_document("rules.md", "# Rules\n\nBe kind.\n", 0, "seed the rules")
    await world.human.put_document("mine.md", "# Mine\n", 0, "my own", workspace="proj")  # not told
    raised = await _raised(tab.page, 3)
    assert raised[1:] == [
        {
            "title": f"Run {first} of routine tidy failed",
            "body": "the wake ended failed",
            "tag": f"run-{first}",
        },
        {"title": "pb proposes a change to rules.md in proj", "body": "seed the rules", "tag": "kb-1-1"},
    ]
    assert raised[0]["tag"].startswith("routine-tidy-1")  # the version that awaited approval

    settings = await _open(context, world, tmp_path, "/settings#notifications")
    await settings.page.uncheck("#notify-form input[name=run_failed]")
    await settings.page.click("#notify-form button[type=submit]")
    await settings.page.wait_for_url("**/settings#notifications")
    await expect(settings.page.locator("#notify-form input[name=run_failed]")).not_to_be_checked()
    await expect(settings.page.locator("#notify-form input[name=review]")).to_be_checked()
    await settings.shot("09-settings-every-kind")
    await _fail_a_run(world, "2026-12-01T02:00:00Z")  # turned off: not told
    await world.bot.put_document("rules.md", "# Rules\n\nBe kinder.\n", 1, "kinder")
    await _raised(tab.page, 4)
    await tab.page.wait_for_timeout(500)  # what a turned-off kind would raise has had its time
    raised = await tab.page.evaluate("window.raised")
    assert [n["title"] for n in raised[3:]] == ["pb proposes a change to rules.md in proj"]
    assert tab.errors == [] and settings.errors == []
    await context.close()
