"""Onboard's tabs and copy buttons, and the audit log newest first with pick-lists and paging, over HTTP."""

from __future__ import annotations

import html
import re

from board.launcher.harnesses import ADAPTERS
from board.server.pages.onboard import LABELS, paragraph
from tests.support.boardtest import World
from tests.support.pages_support import pages_as, sign_in, tab_panels
from tests.support.refusals import refused


def ids(page: str) -> list[int]:
    """The audit ids a page shows, in its order."""
    return [int(i) for i in re.findall(r'<tr id="audit-(\d+)">', page)]


def link(page: str, name: str) -> str | None:
    found = re.search(rf'<a href="([^"]+)" id="{name}"', page)
    return html.unescape(found.group(1)) if found else None


async def test_onboard_has_a_tab_per_harness_with_its_lines_and_says_each_paragraph_once(
    world: World,
) -> None:
    await world.human.create_channel("builds", workspace="proj")
    [(status, page)] = await pages_as(world.board, "alice", "/onboard?workspace=proj")
    assert status == 200
    tabs = re.findall(r'<button type="button" role="tab" id="tab-(\w+)" aria-controls="harness-(\w+)"', page)
    assert [t for t, _ in tabs] == list(ADAPTERS) and all(t == panel for t, panel in tabs)
    assert re.findall(r'role="tab"[^>]*>([^<]+)</button>', page) == [LABELS[h][0] for h in ADAPTERS]
    # The first tab is the one shown; the others are hidden until chosen.
    assert re.findall(r'aria-selected="(\w+)"', page) == ["true"] + ["false"] * (len(ADAPTERS) - 1)
    panels = tab_panels(page)
    assert list(panels) == list(ADAPTERS)
    assert [" hidden>" in m.group(0) for m in re.finditer(r'<section class="tabpanel"[^>]*>', page)] == [
        False
    ] + [True] * (len(ADAPTERS) - 1)
    board = world.board.url
    for harness, panel in panels.items():
        [run] = re.findall(rf'<pre id="run-{harness}" class="line">(.*?)</pre>', panel, re.S)
        run = html.unescape(run)
        assert run.startswith(f"BOARD_URL={board} BOARD_TOKEN=bb_... ") and f"--harness {harness} " in run
        assert run.endswith("--watch builds")  # a channel proj has
    # What holds for every harness is said once, outside the tabs.
    text = html.unescape(page)
    assert text.count(paragraph(board)) == 1 and not any(paragraph(board) in p for p in panels.values())
    sentences = re.findall(r"<p[^>]*>(.*?)</p>", page, re.S)
    assert len(sentences) == len(set(sentences)), [s for s in sentences if sentences.count(s) > 1]
    assert text.count("--watch</code> out") == 1 and text.count("board mcp</code> must be on") == 1


async def test_every_command_and_token_a_page_shows_has_its_copy_button(world: World) -> None:
    alice = await sign_in(world.board)
    _, onboard = await alice.get("/onboard")
    status, workspaces = await alice.post("/workspaces/proj/invite", {"uses": "1"})
    assert status == 200
    status, settings = await alice.post("/settings/tokens", {})
    assert status == 200
    for page in (onboard, workspaces, settings):
        shown = re.findall(r'<(?:pre|code) id="([\w-]+)"', page)
        copied = re.findall(r'<button type="button" class="copy" data-copy="([\w-]+)"', page)
        assert shown and shown == copied
    assert {"register-line", "paste-paragraph"} <= set(re.findall(r'data-copy="([\w-]+)"', onboard))
    assert {"invite-code", "invite-line"} <= set(re.findall(r'data-copy="([\w-]+)"', workspaces))
    assert re.search(r'<code id="new-token">bh_[^<]+</code><button type="button" class="copy"', settings)
    await alice.close()


async def test_the_audit_page_is_newest_first_and_pages_older_and_newer(world: World) -> None:
    for n in range(12):
        await world.human.create_channel(f"topic-{n}", workspace="proj")
    alice = await sign_in(world.board)  # signing in is audited too: read the log after it
    everything = [e["id"] for e in (await world.human.audit(limit=500))["entries"]]
    newest = everything[::-1]
    status, first = await alice.get("/audit?limit=5")
    assert status == 200 and ids(first) == newest[:5]
    assert link(first, "newer") is None
    older = link(first, "older")
    assert older == f"/audit?limit=5&before={newest[4]}"
    _, second = await alice.get(older)
    assert ids(second) == newest[5:10]
    newer = link(second, "newer")
    assert newer == f"/audit?limit=5&since={newest[5]}"
    _, back = await alice.get(newer)
    assert ids(back) == newest[:5] and link(back, "newer") is None and link(back, "older") == older
    # The last page has no Older link; its Newer link leads back up.
    page, pages = second, 1
    while (older := link(page, "older")) is not None:
        _, page = await alice.get(older)
        pages += 1
    assert ids(page)[-1] == everything[0] and pages == -(-len(everything) // 5) - 1
    assert link(page, "newer") is not None
    # Without a limit, a page of 50.
    _, default = await alice.get("/audit")
    assert ids(default) == newest[:50]
    await alice.close()


async def test_the_audit_pick_lists_offer_the_values_present_and_filter_with_paging(world: World) -> None:
    for n in range(4):
        await world.bot.create_channel(f"bot-topic-{n}", workspace="proj")
        await world.human.create_channel(f"human-topic-{n}", workspace="proj")
    alice = await sign_in(world.board)
    entries = (await world.human.audit(limit=500))["entries"]
    status, page = await alice.get("/audit")
    assert status == 200

    def options(name: str) -> list[str]:
        select = re.search(rf'<select name="{name}">(.*?)</select>', page, re.S)
        assert select is not None
        return re.findall(r"<option[^>]*>([^<]*)</option>", select.group(1))

    assert options("actor") == ["any", *sorted({e["actor"] for e in entries})]
    assert options("action") == ["any", *sorted({e["action"] for e in entries})]
    pb = [e["id"] for e in entries if e["actor"] == "pb" and e["action"] == "channel.create"][::-1]
    _, mine = await alice.get("/audit?actor=pb&action=channel.create&limit=3")
    assert ids(mine) == pb[:3]
    assert re.search(r"<option selected>pb</option>", mine) and "selected>channel.create<" in mine
    older = link(mine, "older")
    assert older == f"/audit?actor=pb&action=channel.create&limit=3&before={pb[2]}"
    _, rest = await alice.get(older)
    assert ids(rest) == pb[3:6]
    # A value in the address that the log lacks stays chosen, and matches nothing.
    _, nobody = await alice.get("/audit?actor=nobody")
    assert "<option selected>nobody</option>" in nobody and ids(nobody) == []
    assert link(nobody, "older") is None and link(nobody, "newer") is None
    await alice.close()


async def test_audit_cursors_that_cannot_be_read_are_refused_and_bots_read_no_audit(world: World) -> None:
    bads = ("before=0", "before=x", "since=-1", "limit=501")
    answers = await pages_as(world.board, "alice", *(f"/audit?{bad}" for bad in bads))
    for bad, (status, page) in zip(bads, answers, strict=True):
        assert status == 422, bad
        assert bad.split("=")[0] in page
    await refused(world.human.audit(before=0), "INVALID_ARGUMENT", message="before", unchanged=world.board)
    await refused(world.bot.audit(before=10**6), "FORBIDDEN", unchanged=world.board)
    answer = await world.human.audit(before=10**6, limit=2)
    newest = [e["id"] for e in answer["entries"]]
    assert (
        newest == sorted(newest, reverse=True) and answer["has_more"] and answer["next_before"] == newest[-1]
    )
    below = await world.human.audit(before=newest[-1], limit=2)
    assert all(e["id"] < newest[-1] for e in below["entries"])
