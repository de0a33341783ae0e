"""A fleet's second day on the pages: what a human watching two bots work a thread, spend and
stop, and write the knowledge base meets, and checks against what the API says."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, expect

from tests.support.boardtest import World
from tests.support.browser_support import signed_in_tab
from tests.support.pages_support import pages_as, sign_in

LONG_HANDLE = "reviewer-bot-with-a-long-name-01"  # 32, the longest a handle may be


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


BROKEN_WORDS = """() => [...document.querySelectorAll(
    'table.wakes :is(th, td:not(:first-child), td:first-child > *)')].filter(cell => {
      const r = document.createRange(); r.selectNodeContents(cell);
      const lines = new Set([...r.getClientRects()].map(b => Math.round(b.top)));
      return !cell.textContent.trim().includes(' ') && lines.size > 1 }).map(c => c.textContent)"""


async def wakes_shown(
    chromium: Browser, world: World, tmp_path: Path, bots: list[Any], name: str
) -> list[str]:
    """A thread woken once for each bot, on a 1280 px screen: the words of its wakes table
    that break across lines; and the table fits its side column."""
    root = (await world.human.post("@pb @pb2 the tokenizer", channel="lobby", workspace="proj"))["id"]
    for n, bot in enumerate(bots):
        await bot.record_wake(
            harness="claude", started_at=now(), outcome="ok", trigger_ids=[root], cost_usd=0.1234 + n
        )
    tab = await signed_in_tab(chromium, world, tmp_path)
    await tab.page.goto(f"{world.board.url}/t/{root}")
    await expect(tab.page.locator("table.wakes tbody tr")).to_have_count(len(bots))
    await tab.shot(name)
    sizes = await tab.page.evaluate(
        "['table.wakes', '.thread-side'].map(s => document.querySelector(s))"
        ".map((e, i) => i ? e.clientWidth : e.scrollWidth)"
    )
    assert sizes[0] <= sizes[1], sizes
    broken: list[str] = await tab.page.evaluate(BROKEN_WORDS)
    return broken


async def test_the_wakes_a_thread_caused_keep_their_words_whole_beside_it(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    """The thread page's side column is a third of the page: its wakes table was squeezed
    until handles and costs broke mid-word ('ad|a', '$0.12|34') on a 1280 px screen."""
    long = await world.board.bot(LONG_HANDLE, "proj")
    broken = await wakes_shown(chromium, world, tmp_path, [world.bot, world.peer, long], "thread-wakes")
    assert broken == [LONG_HANDLE]  # the longest handle has to break to fit; nothing else does


async def test_a_five_letter_handle_stays_whole_among_the_wakes(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    """Without a long handle beside it, the table gave its handle column what was left of five
    columns in a third of the page: 'fixer' read 'fixe|r'."""
    fixer = await world.board.bot("fixer", "proj")
    assert await wakes_shown(chromium, world, tmp_path, [fixer, fixer], "thread-wakes-short") == []


async def test_a_list_that_is_empty_says_so_without_a_number(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    """'1. Nobody has claimed this thread.' and '1. Nothing found.' read as one claim and
    one result: the sentence saying a list is empty is no item of it."""
    root = (await world.human.post("unclaimed", channel="lobby", workspace="proj"))["id"]
    tab = await signed_in_tab(chromium, world, tmp_path)
    for path in (f"/t/{root}", "/search?q=nowhere", "/inbox"):
        await tab.page.goto(world.board.url + path)
        await expect(tab.page.locator("li.empty").first).to_be_visible()
        markers = await tab.page.evaluate(
            "[...document.querySelectorAll('li.empty')].map(li => getComputedStyle(li).listStyleType)"
        )
        assert set(markers) == {"none"}, (path, markers)


async def test_search_for_words_only_a_document_holds_leads_to_it(world: World) -> None:
    """Search looks in messages only: words a bot wrote in the knowledge base were 'Nothing
    found', with no hint that documents are searched on Knowledge."""
    await world.bot.put_document("design/tokenizer.md", "# Tokenizer\n\nSplits on punctuation.\n", 0, "notes")
    alice = await sign_in(world.board, "alice")
    try:
        status, page = await alice.get("/search?q=punctuation&workspace=proj")
        assert status == 200 and "Nothing found." in page
        links = re.findall(r'<p class="empty" id="documents">.*?<a href="([^"]+)"', page)
        assert links, page
        status, listed = await alice.get(html.unescape(links[0]))
        assert status == 200 and "/kb/proj/design/tokenizer.md" in listed
    finally:
        await alice.close()


async def test_a_threads_and_a_bots_wakes_cost_what_the_costs_page_says(world: World) -> None:
    """A wake whose harness reported tokens and no cost is priced on Costs; the thread and the
    bot's page showed it as '—' and left it out of their totals, so the three disagreed."""
    root = (await world.human.post("@pb @pb2 split it", channel="lobby", workspace="proj"))["id"]
    await world.bot.record_wake(
        harness="claude", started_at=now(), outcome="ok", trigger_ids=[root], cost_usd=0.2
    )
    await world.peer.record_wake(
        harness="codex",
        started_at=now(),
        outcome="ok",
        trigger_ids=[root],
        input_tokens=5000,
        output_tokens=700,
    )
    spent = await world.human.request("GET", "/api/costs", params={"workspace": "proj"})
    by_bot = {row["bot"]: row for row in spent["bots"]}
    assert spent["total"]["estimate"] and by_bot["pb2"]["estimate"]
    (_, thread), (_, bot) = await pages_as(world.board, "alice", f"/t/{root}", "/a/pb2")
    codex = f"${by_bot['pb2']['cost_usd']:.4f}"
    total = f"${spent['total']['cost_usd']:.4f}"
    wakes = thread.split('<table class="wakes">', 1)[1].split("</table>", 1)[0]
    estimate = '</span> <span class="badge estimate"'
    assert re.search(re.escape(codex + estimate), wakes), wakes
    assert re.search("<tfoot>.*" + re.escape(total + estimate), wakes, re.S), wakes
    own = bot.split("<h2>Wakes</h2>", 1)[1].split("</table>", 1)[0]
    assert own.count(codex + estimate) == 2, own  # the wake and its total


async def test_a_proposals_diff_reads_the_same_on_its_document_and_in_the_queue(world: World) -> None:
    """The review queue coloured a proposal's added and removed lines; the document's own page
    showed the same diff uncoloured. Neither colours the file names above the hunks."""
    await world.human.patch_workspace("proj", review="bots")
    await world.bot.put_document("notes.md", "# Notes\n\nold line\n", 0, "first")
    await world.human.review_revision("notes.md", "approve", 1, workspace="proj")
    await world.bot.put_document("notes.md", "# Notes\n\nnew line\n", 1, "second")
    for _, page in await pages_as(world.board, "alice", "/kb/proj/notes.md", "/kb/review"):
        diff = re.findall(r'<pre class="diff"[^>]*>(.*?)</pre>', page, re.S)[0]
        assert '<span class="del">-old line</span>' in diff and '<span class="add">+new line</span>' in diff
        assert not re.search(r'<span class="(add|del)">(---|\+\+\+) ', diff), diff


async def test_a_refused_form_leads_back_to_the_page_it_was_sent_from(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    """A hand-off to a handle that is not there was refused with 'Back to the board', away
    from the thread the human was working on."""
    root = (await world.human.post("hand me around", channel="lobby", workspace="proj"))["id"]
    await world.bot.claim(root)
    tab = await signed_in_tab(chromium, world, tmp_path)
    await tab.page.goto(f"{world.board.url}/t/{root}")
    await tab.page.fill("input[name=to]", "nobody-here")
    await tab.page.get_by_role("button", name="Hand off").click()
    await expect(tab.page.locator(".error")).to_contain_text("No such agent")
    await tab.shot("handoff-refused")
    await tab.page.get_by_role("link", name="Back to the page you were on").click()
    await tab.page.wait_for_url(f"**/t/{root}")
