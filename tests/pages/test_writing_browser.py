"""Writing and the keyboard in a real browser: Ctrl+Enter, the preview, mentions, drafts, j/k/r,
the g shortcuts and ?."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Browser, Locator, Page, expect

from board.client import JSON
from tests.pages.test_preview import MIXED
from tests.support.boardtest import World, db_rows
from tests.support.browser_support import Tab, axe_findings, no_sideways_scroll, signed_in_tab


async def two_roots(chromium: Browser, world: World, tmp_path: Path) -> tuple[Tab, JSON, JSON]:
    """Alice's tab on a board where pb has posted two roots in proj's #lobby."""
    first = await world.bot.post("the first root", channel="lobby", workspace="proj")
    second = await world.bot.post("the second root", channel="lobby", workspace="proj")
    return await signed_in_tab(chromium, world, tmp_path), first, second


async def lobby(chromium: Browser, world: World, tmp_path: Path) -> tuple[Tab, Locator]:
    """Alice's tab on proj's #lobby, and the field that posts a new root there."""
    tab = await signed_in_tab(chromium, world, tmp_path)
    await tab.page.goto(world.board.url + "/c/lobby?workspace=proj")
    return tab, tab.page.locator(".stream textarea[name=body]")


async def inner_html(page: Page, selector: str) -> str:
    return await page.locator(selector).evaluate("node => node.innerHTML")


async def test_ctrl_enter_posts_what_the_preview_showed(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    tab, area = await lobby(chromium, world, tmp_path)
    page = tab.page
    await area.fill(MIXED)
    toggle = page.get_by_role("button", name="Preview").first
    await toggle.click()
    await expect(toggle).to_have_attribute("aria-pressed", "true")
    preview = page.locator(".stream .preview")
    await expect(preview.locator("table td em")).to_have_text("a")
    await expect(preview.locator("pre code.language-python")).to_contain_text('print("<b>hi</b>")')
    await expect(preview.locator("a[href='https://example.com/docs']")).to_have_attribute(
        "rel", "noopener nofollow"
    )
    await expect(preview).to_contain_text("@pb")
    shown = await inner_html(page, ".stream .preview")
    await tab.shot("20-preview")
    await area.press("Control+Enter")
    await page.wait_for_url("**thread=*")
    root = int(page.url.rsplit("=", 1)[1])
    assert db_rows(world.board.db_path, f"SELECT body FROM messages WHERE id = {root}") == [(MIXED,)]
    assert await inner_html(page, f"#roots #m{root} .body") == shown
    await tab.shot("21-posted-as-previewed")
    # The preview follows what is typed, and says so when there is nothing to show.
    await page.locator(".stream textarea[name=body]").fill("")
    await page.get_by_role("button", name="Preview").first.click()
    await expect(page.locator(".stream .preview")).to_have_text("Nothing to preview.")
    # In the thread panel too: Ctrl+Enter sends the reply.
    reply = page.locator(".thread-panel textarea[name=body]")
    await expect(reply).to_have_accessible_name(f"Reply in thread {root}")
    await reply.fill("a reply by keyboard")
    await reply.press("Control+Enter")
    await expect(page.locator("#thread-messages .msg").last).to_contain_text("a reply by keyboard")
    assert db_rows(world.board.db_path, f"SELECT count(*) FROM messages WHERE reply_to = {root}") == [(1,)]
    assert tab.errors == []


async def test_mention_completion_offers_the_workspaces_handles(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    tab, area = await lobby(chromium, world, tmp_path)
    page = tab.page
    await area.press_sequentially("ping @p")
    listbox = page.get_by_role("listbox", name="Mention")
    await expect(listbox.get_by_role("option")).to_have_text(["@pb", "@pb2"])
    await expect(area).to_have_attribute("aria-activedescendant", "mentions-0-0")  # the first, chosen
    await area.press("ArrowDown")
    await expect(listbox.get_by_role("option", selected=True)).to_have_text("@pb2")
    await tab.shot("22-mention-completion")
    await area.press("Enter")
    await expect(area).to_have_value("ping @pb2 ")
    await expect(listbox).to_be_hidden()
    # A bot of another workspace is not offered; the lookup answered, with nobody.
    async with page.expect_response(lambda r: "/api/agents?" in r.url and "prefix=o" in r.url) as answer:
        await area.press_sequentially("and @o")
    assert (await (await answer.value).json())["agents"] == []
    await expect(listbox).to_be_hidden()
    await area.press("Control+Enter")
    await page.wait_for_url("**thread=*")
    root = int(page.url.rsplit("=", 1)[1])
    assert db_rows(world.board.db_path, f"SELECT body FROM messages WHERE id = {root}") == [
        ("ping @pb2 and @o",)
    ]
    assert tab.errors == []


async def test_a_draft_survives_a_reload_and_is_gone_once_sent(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    tab, first, second = await two_roots(chromium, world, tmp_path)
    page = tab.page
    await page.goto(world.board.url + f"/t/{first['id']}")
    area = page.locator(".thread-main textarea[name=body]")
    await area.press_sequentially("half a thought")
    await page.reload()
    await expect(area).to_have_value("half a thought")
    await tab.shot("23-draft-after-reload")
    await page.goto(world.board.url + f"/t/{second['id']}")
    await expect(area).to_have_value("")  # drafts are kept per thread
    # A refused send keeps the draft: the board refuses a body of spaces.
    await area.fill("   ")
    await area.press("Control+Enter")
    await expect(page.locator("#reply-form .refusal")).to_contain_text("The body is empty")
    await expect(area).to_have_value("   ")  # the thread page again, the text in its form
    await page.goto(world.board.url + f"/t/{second['id']}")
    await expect(area).to_have_value("   ")
    # A send that went through spends it.
    await page.goto(world.board.url + f"/t/{first['id']}")
    await expect(area).to_have_value("half a thought")
    await area.press("Control+Enter")
    await expect(page.locator("#thread-messages .msg").last).to_contain_text("half a thought")
    await expect(area).to_have_value("")
    await page.reload()
    await expect(area).to_have_value("")
    drafts = await page.evaluate("Object.keys(localStorage).filter(k => k.startsWith('board-draft:'))")
    assert drafts == [f"board-draft:/t/{second['id']}||"]
    assert tab.errors == []


async def test_the_keyboard_moves_replies_and_goes_places(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    tab, older, root = await two_roots(chromium, world, tmp_path)
    later = await world.peer.post("a reply in it", reply_to=root["id"])
    page = tab.page
    await page.goto(world.board.url + f"/c/lobby?workspace=proj&thread={root['id']}")

    async def focused() -> int:
        """Which message has the focus, by its place on the page (the open root is on it twice)."""
        at = await page.evaluate(
            "[...document.querySelectorAll('article.msg')].indexOf(document.activeElement)"
        )
        return int(at)

    ids = await page.locator("article.msg").evaluate_all("nodes => nodes.map(n => n.id)")
    assert ids == [f"m{older['id']}", f"m{root['id']}", f"m{root['id']}", f"m{later['id']}"]
    assert await focused() == -1
    await page.keyboard.press("j")
    assert await focused() == 0
    for _ in range(5):
        await page.keyboard.press("j")
    assert await focused() == 3  # stops at the last
    await page.keyboard.press("k")
    assert await focused() == 2
    outline = await page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline == "solid"  # the focus is visible
    await tab.shot("24-focused-message")
    # r on a message of the open thread: its reply form has the keyboard; typing j there types.
    await page.keyboard.press("r")
    reply = page.locator(".thread-panel textarea[name=body]")
    await expect(reply).to_be_focused()
    await page.keyboard.type("jk?gi")
    await expect(reply).to_have_value("jk?gi")
    assert page.url.endswith(f"thread={root['id']}") and await page.locator("#shortcuts").count() == 0
    # r on a root whose thread is not open: the page opens it at its reply form.
    await page.locator(f"#m{older['id']} header .author").focus()
    await page.keyboard.press("r")
    await page.wait_for_url(f"**thread={older['id']}#reply")
    await expect(page.locator(".thread-panel textarea[name=body]")).to_be_focused()
    await page.locator("body").click(position={"x": 5, "y": 400})
    # ? lists the shortcuts; Escape closes the list.
    await page.keyboard.press("?")
    dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
    await expect(dialog).to_be_visible()
    await expect(dialog).to_contain_text("Go to Inbox")
    await expect(dialog.locator("dt")).to_have_count(8)
    await tab.shot("25-shortcuts")
    await page.keyboard.press("Escape")
    await expect(dialog).to_be_hidden()
    for key, path in (("i", "/inbox"), ("f", "/fleet"), ("r", "/routines")):
        await page.keyboard.press("g")
        await page.keyboard.press(key)
        await page.wait_for_url(f"**{path}")
        await page.goto(world.board.url + f"/c/lobby?workspace=proj&thread={root['id']}")
    # A g long ago is no prefix: i alone goes nowhere.
    await page.keyboard.press("i")
    assert page.url.endswith(f"thread={root['id']}")
    assert tab.errors == []


TABLE = """| file | lines | status |
| --- | --- | --- |
| board/server/services/knowledge/reconcile_{}.py | 412 | failed |
| 9f2c4e1d7a3b5c6d8e0f1a2b3c4d5e6f7a8b9c0d | 1290 | passed |
"""


async def test_a_table_in_a_message_keeps_its_words_whole_and_scrolls_sideways(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    """A message's table, and a document's, is its author's: a short cell ("412", "status")
    stays on one line, its rows are not stacked on a phone as the page's own tables are, and a
    table wider than the message scrolls in its own box, not the page."""
    said = await world.bot.post(TABLE.format("x" * 60), channel="lobby", workspace="proj")
    await world.bot.put_document("table.md", TABLE.format("y" * 60), 0, "a table")
    lines = """cell => { const r = document.createRange(); r.selectNodeContents(cell);
                         return new Set([...r.getClientRects()].map((rect) => rect.top)).size; }"""
    for width, name, path, where in (
        (1280, "desktop", f"/t/{said['id']}", f"#m{said['id']} .body"),
        (390, "phone", f"/t/{said['id']}", f"#m{said['id']} .body"),
        (390, "document-phone", "/kb/proj/table.md", ".doc-body"),
    ):
        tab = await signed_in_tab(chromium, world, tmp_path, width=width, height=844)
        await tab.page.goto(world.board.url + path)
        table = tab.page.locator(f"{where} table")
        await expect(table).to_be_visible()
        for word in ("lines", "status", "412", "failed", "1290", "passed"):
            cell = table.locator("th, td").filter(has_text=word).first
            assert await cell.evaluate(lines) == 1, f"{word} is broken across lines at {width}px"
        if width == 390:
            assert await table.evaluate("t => t.scrollWidth > t.clientWidth")  # it scrolls in its box
            await table.focus()  # and the keyboard scrolls it (axe: scrollable-region-focusable)
            await tab.page.keyboard.press("ArrowRight")
            await expect(table).to_be_focused()
            # The browser scrolls smoothly: the box moves over the next frames, not at once.
            await tab.page.wait_for_function("() => document.activeElement.scrollLeft > 0", timeout=5000)
            assert await axe_findings(tab.page) == []
            assert await table.locator("tr").first.evaluate("r => getComputedStyle(r).display") == "table-row"
            assert await table.locator("td[data-label]").count() == 0  # no column name before a cell
        await tab.shot(f"22-message-table-{name}")
        await no_sideways_scroll(tab)
        assert tab.errors == []


async def test_a_channel_opens_at_its_newest_roots_and_stays_there_as_roots_arrive(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    """Roots are listed oldest first: the page opens at the newest and the box to post in, as a
    chat does, and keeps to the end as a root arrives there. A thread opens from the top."""
    body = "\n\n".join(["a line"] * 6)
    roots = [
        await world.human.post(f"root {n}\n\n{body}", channel="lobby", workspace="proj") for n in range(25)
    ]
    tab = await signed_in_tab(chromium, world, tmp_path, width=1280, height=800)
    page = tab.page
    await page.goto(world.board.url + "/c/lobby?workspace=proj")
    area = page.locator(".stream textarea[name=body]")
    await expect(area).to_be_in_viewport()
    await expect(page.locator(f"#m{roots[-1]['id']}")).to_be_in_viewport()
    await expect(page.locator(f"#m{roots[0]['id']}")).not_to_be_in_viewport()
    await page.screenshot(path=str(tab.out / "23-a-channel-opens-at-its-newest.png"))  # what shows
    arrived = await world.bot.post(f"a root that arrives\n\n{body}", channel="lobby", workspace="proj")
    await expect(page.locator(f"#m{arrived['id']}")).to_be_in_viewport()
    await expect(area).to_be_in_viewport()
    # Scrolled up to read, the page stays where it is when a root arrives.
    await page.evaluate("window.scrollTo(0, 0)")
    later = await world.bot.post("another one", channel="lobby", workspace="proj")
    await expect(page.locator(f"#m{later['id']}")).to_have_count(1)
    assert await page.evaluate("window.scrollY") == 0
    await page.goto(f"{world.board.url}/c/lobby?workspace=proj&thread={roots[0]['id']}")
    assert await page.evaluate("window.scrollY") == 0
    assert tab.errors == []


async def test_the_audit_and_a_documents_history_keep_short_columns_whole_and_compare_shows_its_diff(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    """A reason of one long token used to let the table squeeze its short columns to a letter a
    line ("wor/dsn/ap", "sett/led"). Compare opens at its diff with the pair it compared."""
    long = "because-" + "x" * 124
    for revision, reason in enumerate((long, "second look", "third look")):
        await world.bot.put_document("notes.md", f"# Notes\n\nrevision {revision}\n", revision, reason)
    lines = """cell => { const r = document.createRange(); r.selectNodeContents(cell);
                         return new Set([...r.getClientRects()].map((rect) => rect.top)).size; }"""
    tab = await signed_in_tab(chromium, world, tmp_path, width=1280, height=800)
    page = tab.page
    await page.goto(world.board.url + "/audit")
    row = page.locator("table.audit tr", has_text="because-").first
    for label in ("actor", "workspace", "action", "time", "target"):
        assert await row.locator(f'td[data-label="{label}"]').evaluate(lines) == 1, label
    await tab.shot("24-audit-long-reason")
    await no_sideways_scroll(tab)

    await page.goto(world.board.url + "/kb/proj/notes.md")
    first = page.locator("table.history tr#rev-1")
    for cell in (2, 3, 4, 6):  # r1, its status, its author, when
        assert await first.locator(f"td:nth-child({cell + 1})").evaluate(lines) == 1, cell
    await page.locator('input[name="from"][value="1"]').check()
    await page.locator('input[name="to"][value="3"]').check()
    await page.get_by_role("button", name="Compare").click()
    await expect(page.locator("#diff")).to_be_in_viewport()
    assert page.url.endswith("#diff") and "from=1" in page.url and "to=3" in page.url
    await expect(page.locator('input[name="from"][value="1"]')).to_be_checked()
    await expect(page.locator('input[name="to"][value="3"]')).to_be_checked()
    await page.screenshot(path=str(tab.out / "25-compare-opens-at-its-diff.png"))
    await no_sideways_scroll(tab)
    assert tab.errors == []
