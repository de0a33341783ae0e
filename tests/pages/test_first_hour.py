"""What a new person meets in their first hour on the pages: forms the browser checks before
they are sent and the board takes as a browser sends them, no dead links, nothing thrown away
for being too long, and right-to-left writing laid out as it reads."""

from __future__ import annotations

import dataclasses
import re
from importlib import resources
from pathlib import Path

from playwright.async_api import Browser, expect

from board.server.services import posting, workspaces
from tests.support.boardtest import Board, World
from tests.support.browser_support import signed_in_tab
from tests.support.pages_support import pages_as, sign_in

TEMPLATES = resources.files("board.server.pages").joinpath("templates")
PATTERN = re.compile(r'\bpattern="([^"]*)"')


async def test_every_form_pattern_compiles_as_the_browser_reads_it(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    """Chromium compiles a pattern attribute with the ``v`` flag, where a bare ``-`` in a class
    is a syntax error: such a pattern is ignored and the form goes out unchecked."""
    patterns = sorted(
        {p for t in TEMPLATES.iterdir() if t.name.endswith(".html") for p in PATTERN.findall(t.read_text())}
    )
    assert patterns
    tab = await signed_in_tab(chromium, world, tmp_path)
    refused = await tab.page.evaluate(
        "ps => ps.filter(p => { try { new RegExp(p, 'v'); return false } catch { return true } })", patterns
    )
    assert refused == []
    await tab.page.goto(world.board.url + "/workspaces")
    await tab.page.fill("#new-workspace input[name=slug]", "Not A Slug!")
    assert not await tab.page.evaluate("document.querySelector('#new-workspace').checkValidity()")
    assert not [line for line in tab.console if "Pattern attribute" in line], tab.console


async def test_a_page_asks_the_board_for_nothing_it_lacks(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    """Not even the tab's icon: a 404 on every page is a console error a person reads as a fault."""
    tab = await signed_in_tab(chromium, world, tmp_path)
    await tab.page.goto(world.board.url + "/workspaces")
    await expect(tab.page.locator("#new-workspace")).to_be_visible()
    await tab.page.wait_for_timeout(500)
    assert [line for line in tab.console if "Failed to load resource" in line] == []


async def test_the_boards_own_posts_name_it_without_a_dead_link(world: World) -> None:
    """A seeded workspace's request in the admin lobby is the board's: its author is no agent page."""
    alice = await sign_in(world.board, "alice")
    try:
        status, _ = await alice.post("/workspaces", {"slug": "seeded", "seed": "Read the README."})
        assert status == 303
        status, page = await alice.get("/c/lobby?workspace=admin")
        assert status == 200 and "Read the README." in page
        for handle in sorted(set(re.findall(r'href="/a/([^"/?#]+)"', page))):
            status, _ = await alice.get(f"/a/{handle}")
            assert status == 200, handle
    finally:
        await alice.close()


async def test_a_form_stops_at_the_length_the_board_takes(world: World) -> None:
    """Past the service's limit the board answers with an error page and what was typed is lost,
    so each box holds no more than the board takes."""
    limit = {f.name: f.metadata["max_len"] for f in dataclasses.fields(workspaces.NewWorkspace)}
    root = await world.bot.post("hi", channel="lobby", workspace="proj")
    (_, listed), (_, lobby), (_, thread) = await pages_as(
        world.board, "alice", "/workspaces", "/c/lobby?workspace=proj", f"/t/{root['id']}"
    )
    names = re.findall(r'<input name="name"[^>]*>', listed)
    assert len(names) >= 2 and all(f'maxlength="{limit["name"]}"' in n for n in names), names
    seed = re.findall(r'<textarea name="seed"[^>]*>', listed)
    assert seed and f'maxlength="{limit["seed"]}"' in seed[0], seed
    bodies = re.findall(r'<textarea name="body"[^>]*>', lobby + thread)
    assert len(bodies) >= 2 and all(f'maxlength="{posting.MAX_BODY}"' in b for b in bodies), bodies


async def test_each_kind_of_destination_is_added_from_the_settings_form(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    """The add form holds every kind's fields, and a browser sends them all (the email's
    security choice among them): each kind is added with only its own."""
    tab = await signed_in_tab(chromium, world, tmp_path)
    filled = {
        "webhook": {"url": "https://hooks.example/board", "secret": "s" * 16},
        "slack": {"url": "https://hooks.slack.example/T0/B0/x"},
        "ntfy": {"url": "https://ntfy.example/board"},
        "email": {
            "host": "smtp.example",
            "port": "587",
            "from": "board@example.org",
            "to": "alice@example.org",
        },
    }
    for kind, fields in filled.items():
        await tab.page.goto(world.board.url + "/settings")
        form = tab.page.locator("form[action='/settings/destinations']")
        await tab.page.get_by_text("Add a destination").click()
        await form.locator("input[name=name]").fill(f"my {kind}")
        await form.locator("select[name=kind]").select_option(kind)
        for name, value in fields.items():
            await form.locator(f"input[name={name}]").fill(value)
        await form.locator("button[type=submit]").click()
        await tab.page.wait_for_url("**/settings/destinations/*")
    made = await world.human.request("GET", "/api/destinations")
    assert sorted(d["kind"] for d in made["destinations"]) == sorted(filled)


async def test_a_paragraph_in_a_right_to_left_script_starts_at_the_right(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    """Each paragraph of a message or a document takes its direction from its own first letter,
    so Hebrew or Arabic starts at the right with its punctuation in place, beside English."""
    text = "שלום, מה שלומך?\n\nA line in English."
    await world.bot.post(text, channel="lobby", workspace="proj")
    await world.bot.put_document("rtl.md", f"# כותרת\n\n{text}\n", 0, "both directions")
    tab = await signed_in_tab(chromium, world, tmp_path)
    sides = (
        "sel => [...document.querySelectorAll(sel)].map(p => { const r = document.createRange();"
        " r.selectNodeContents(p); const t = r.getBoundingClientRect(), b = p.getBoundingClientRect();"
        " return t.left - b.left < b.right - t.right ? 'left' : 'right' })"
    )
    for path, paragraphs in (
        ("/c/lobby?workspace=proj", "#roots .body p"),
        ("/kb/proj/rtl.md", ".doc-body p"),
    ):
        await tab.page.goto(world.board.url + path)
        await expect(tab.page.locator(paragraphs).first).to_be_visible()
        assert await tab.page.evaluate(sides, paragraphs) == ["right", "left"], path
    await tab.shot("rtl-document")


async def test_the_steps_to_a_fleet_stay_until_a_bot_runs(board: Board) -> None:
    """A workspace is the first of three steps: the welcome stays, with that step marked done,
    until a bot has joined, so the profile and Fleet steps are still there to follow."""
    alice = await sign_in(board, "alice")
    try:
        status, _ = await alice.post("/workspaces", {"slug": "shop", "name": "Shop"})
        assert status == 303
        _, page = await alice.get("/c/lobby?workspace=shop")
        assert 'id="get-started"' in page and 'href="/fleet"' in page, page
        assert re.search(r'<li class="done">[^<]*<a href="/workspaces">', page), page
        await board.bot("sb", "shop")
        _, page = await alice.get("/c/lobby?workspace=shop")
        assert 'id="get-started"' not in page
    finally:
        await alice.close()


def test_no_page_sends_a_person_to_a_file_of_the_source() -> None:
    """An installed board has no checkout: a page that says "see docs/..." names a file its
    reader does not have, so what they need is on the page."""
    named = {
        t.name: re.findall(r"\bdocs/[\w./-]+", t.read_text())
        for t in TEMPLATES.iterdir()
        if t.name.endswith(".html")
    }
    assert {name: files for name, files in named.items() if files} == {}


async def test_a_source_tells_what_to_set_on_its_forge(world: World) -> None:
    """What docs/intake.md says step by step, each source's card says in short for its forge."""
    for forge in ("github", "forgejo"):
        source = {"forge": forge, "secret": "s" * 20}
        await world.human.request("PUT", f"/api/intake/sources/acme-{forge}", json=source)
    [(_, page)] = await pages_as(world.board, "alice", "/intake")
    cards = dict(
        re.findall(r'<section class="card intake-source" id="source-([\w-]+)">(.*?)</section>', page, re.S)
    )
    assert "application/json" in cards["acme-github"] and "Issue comments" in cards["acme-github"]
    assert "Issue labeled" in cards["acme-forgejo"] and "Issue comment" in cards["acme-forgejo"]


def quotes(depth: int) -> str:
    """A quote nested ``depth`` deep, one line at each level, and a paragraph after it."""
    return "".join("> " * level + f"level {level}\n" for level in range(1, depth + 1)) + "\nthe end"


async def test_deeply_nested_quotes_and_lists_are_read_whole_and_fit(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    """Markdown stops at 20 levels and dropped the rest of the body unseen; at 19 levels the
    browser's own indents (80 px a quote) stacked the words a letter a line and pushed the
    page sideways. The deepest quote that renders keeps its words on a line, on a phone too, and
    a deeper one is shown whole as its text."""
    lists = "".join("  " * level + f"- item {level}\n" for level in range(9))
    root = await world.bot.post(quotes(19), channel="lobby", workspace="proj")
    listed = await world.bot.post(lists, reply_to=root["id"])
    deeper = await world.peer.post(quotes(30), reply_to=root["id"])
    for width, height, path in (
        (390, 844, f"/t/{root['id']}"),
        (1280, 800, f"/c/lobby?workspace=proj&thread={root['id']}"),
    ):
        tab = await signed_in_tab(chromium, world, tmp_path, width=width, height=height)
        page = tab.page
        await page.goto(world.board.url + path)
        body = page.locator(f"#m{deeper['id']} .body").last
        await expect(body).to_contain_text("> > level 30")
        await expect(body).to_contain_text("the end")
        assert await page.evaluate("document.documentElement.scrollWidth") <= width
        for message, words in ((root, "level 19"), (listed, "item 8")):
            line = page.locator(f"#m{message['id']} .body").last.get_by_text(words, exact=True)
            box = await line.bounding_box()
            assert box is not None and box["height"] < 30, (width, words, box)  # one line
        await tab.shot(f"nested-{width}")
        await page.context.close()


async def test_a_channels_topic_is_shown_under_its_name(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    """A channel's topic says what it is for, and may name the repo its bots clone: the page
    showed it nowhere. The longest one, in a right-to-left script, fits a phone as text."""
    topic = ("מאגר הקוד: git@example.org:acme/app.git <script>alert(1)</script> ✅ " * 8)[:500]
    await world.human.patch_channel("lobby", workspace="proj", topic=topic)
    await world.human.create_channel("quiet", workspace="proj")
    tab = await signed_in_tab(chromium, world, tmp_path, width=390, height=844)
    page = tab.page
    await page.goto(world.board.url + "/c/lobby?workspace=proj")
    await expect(page.locator("#topic")).to_have_text(topic)
    assert await page.evaluate("document.documentElement.scrollWidth") <= 390
    await tab.shot("channel-topic-phone")
    await page.goto(world.board.url + "/c/quiet?workspace=proj")
    await expect(page.locator("#topic")).to_have_count(0)
    assert tab.errors == []


async def test_a_messages_headings_stay_under_the_pages_own(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    """A bot's "# Title" rendered at twice the thread panel's own heading there, and as big as
    the channel's name in the stream: one message, two sizes, both over the page's headings."""
    root = await world.bot.post("# Build report\n\n## Failures\n\nnone", channel="lobby", workspace="proj")
    tab = await signed_in_tab(chromium, world, tmp_path)
    page = tab.page
    await page.goto(world.board.url + f"/c/lobby?workspace=proj&thread={root['id']}")
    size = "(e) => parseFloat(getComputedStyle(e).fontSize)"
    in_stream = page.locator(f"#roots #m{root['id']} .body h1")
    in_panel = page.locator(f".thread-panel #m{root['id']} .body h1")
    assert await in_stream.evaluate(size) == await in_panel.evaluate(size)
    assert await in_panel.evaluate(size) < await page.locator(".thread-panel > h2").evaluate(size)
    assert await in_stream.evaluate(size) < await page.locator(".stream > h1").evaluate(size)
    h2 = await page.locator(f"#roots #m{root['id']} .body h2").evaluate(size)
    assert h2 < await in_stream.evaluate(size)
    await tab.shot("message-headings")


async def test_every_reply_of_a_long_thread_is_reached_from_its_pages(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    """A thread is shown a page at a time, cut by the list's byte cap (a dozen long replies): the
    thread page's "Later replies" link ignored its place and showed the first page again, and
    the board's thread panel had no link at all, so the later replies could not be read."""
    root = await world.bot.post("a long review", channel="lobby", workspace="proj")
    replies = [
        (await world.bot.post(f"part {n} " + "word " * 600, reply_to=root["id"]))["id"] for n in range(24)
    ]
    tab = await signed_in_tab(chromium, world, tmp_path)
    page = tab.page
    await page.goto(world.board.url + f"/c/lobby?workspace=proj&thread={root['id']}")
    await expect(page.locator(".thread-panel #later-replies")).to_be_visible()
    await page.goto(world.board.url + f"/t/{root['id']}")
    first = await page.locator("#thread-messages article.msg").count()
    assert first < 1 + len(replies)
    # A reply posted now comes after the unread ones: it is not placed under the first page.
    count = page.locator(f"#m{root['id']} [data-replies-for]")
    replied = int(await count.inner_text())
    late = await world.peer.post("a late reply", reply_to=root["id"])
    await expect(count).to_have_text(str(replied + 1))  # the live event has come
    await expect(page.locator(f"#m{late['id']}")).to_have_count(0)
    seen: list[str] = []
    for _ in range(len(replies)):
        ids = await page.locator("#thread-messages article.msg").evaluate_all("ns => ns.map(n => n.id)")
        assert ids[0] == f"m{root['id']}"  # the root heads each page
        seen += ids[1:]
        if not await page.locator("#later-replies").count():
            break
        await page.locator("#later-replies").click()
        await page.wait_for_url(f"**/t/{root['id']}?since=*")
    numbers = [int(n[1:]) for n in seen]  # the loop guard's event among them, in its place
    assert numbers == sorted(set(numbers)) and {*replies, late["id"]} <= set(numbers), numbers
    await tab.shot("long-thread-last-page")
    assert tab.errors == []
