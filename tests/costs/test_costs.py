"""/costs and GET /api/costs: the wake records' totals per UTC day, workspace, bot and routine.

Wakes are recorded through the real ``POST /api/wakes`` with each bot's token, on
three UTC days moved by the board's clock (one a few seconds before midnight). The
API and the page must show the sums the wake records add up to, computed here
from ``GET /api/wakes`` on their own; a cost a harness did not report is priced from
its tokens and marked an estimate; a bot of another workspace sees none of it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, ConsoleMessage, expect

from board.client import BoardClient
from board.server.clock import ManualClock, iso
from board.server.services.prices import PRICES
from tests.support.boardtest import StoreChoice, World, populate, start_board, stop_board
from tests.support.browser_support import new_tab, use_login_link
from tests.support.pages_support import login_link, pages_as
from tests.support.refusals import refused


@pytest.fixture
async def spent(tmp_path: Any, store: StoreChoice) -> Any:
    """A populated board on a manual clock, with wakes on 2026-11-28, -29 and -30 (UTC), on each store."""
    clock = ManualClock(datetime(2026, 11, 28, 10, 0, tzinfo=UTC))
    board = await start_board(tmp_path, clock=clock, store=store)
    try:
        world = await populate(board)
        await world.bot.propose_routine(
            "nightly", workspace="proj", schedule="0 2 * * *", bot="pb", prompt="Tidy."
        )
        thread = (await world.human.routine("nightly"))["thread_id"]
        elsewhere = (await world.bot.post("not a routine's", channel="lobby", workspace="proj"))["id"]

        async def wake(client: BoardClient, harness: str = "claude", **fields: Any) -> None:
            await client.record_wake(harness=harness, started_at=iso(clock.now()), outcome="ok", **fields)

        # 2026-11-28: two reported wakes of pb, a codex wake of pb2 with tokens and no cost.
        await wake(
            world.bot,
            cost_usd=0.10,
            input_tokens=6300,  # the cached ones included, as a wake record counts them
            output_tokens=200,
            cache_read_tokens=5000,
            cache_write_tokens=300,
        )
        await wake(world.bot, cost_usd=0.05, input_tokens=500, output_tokens=100, trigger_ids=[elsewhere])
        await wake(
            world.peer, "codex", input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=200_000
        )
        clock.advance((datetime(2026, 11, 28, 23, 59, 50, tzinfo=UTC) - clock.now()).total_seconds())
        await wake(world.bot, cost_usd=0.01)  # ten seconds before midnight UTC: still the 28th
        clock.advance(20)
        # 2026-11-29: another workspace's bot, and a wake of pb's woken in the routine's thread.
        await wake(world.other, cost_usd=0.70, input_tokens=10)
        await wake(world.bot, cost_usd=0.30, trigger_ids=[thread, elsewhere])  # the earliest is the routine's
        clock.advance(24 * 3600)
        # 2026-11-30: a wake with neither cost nor tokens (unpriced), and the admin bot's.
        await wake(world.bot, "copilot")
        await wake(world.admin_bot, cost_usd=0.02)
        yield world
    finally:
        await stop_board(board)


def expected_sums(wakes: list[dict[str, Any]], key: Any) -> dict[Any, dict[str, Any]]:
    """What the wake records add up to, per ``key(wake)``: computed here, apart from the board."""
    sums: dict[Any, dict[str, Any]] = defaultdict(
        lambda: {
            "wakes": 0,
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_read_tokens": 0,
            "cache_write_tokens": 0,
            "cost_usd": 0.0,
            "estimated_usd": 0.0,
            "unpriced_wakes": 0,
        }
    )
    for w in wakes:
        s = sums[key(w)]
        s["wakes"] += 1
        for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
            s[name] += w[name] or 0
        if w["cost_usd"] is not None:
            s["cost_usd"] += w["cost_usd"]
        elif w["harness"] in PRICES and (w["input_tokens"] is not None or w["output_tokens"] is not None):
            p = PRICES[w["harness"]]
            cached = (w["cache_read_tokens"] or 0) + (w["cache_write_tokens"] or 0)
            estimate = (
                max(0, (w["input_tokens"] or 0) - cached) * p.input  # input counts the cached too
                + (w["output_tokens"] or 0) * p.output
                + (w["cache_read_tokens"] or 0) * p.cache_read
                + (w["cache_write_tokens"] or 0) * p.cache_write
            ) / 1e6
            s["cost_usd"] += estimate
            s["estimated_usd"] += estimate
        else:
            s["unpriced_wakes"] += 1
    return dict(sums)


def same(answer: dict[str, Any], sums: dict[str, Any]) -> None:
    for name, value in sums.items():
        assert answer[name] == pytest.approx(value), (name, answer, sums)
    assert answer["estimate"] is (sums["estimated_usd"] > 0)


async def test_the_api_sums_the_wake_records_per_day_workspace_bot_and_routine(spent: World) -> None:
    records = (await spent.human.wakes(limit=500))["wakes"]
    assert len(records) == 8
    answer = await spent.human.costs(days=3)
    assert (answer["timezone"], answer["from"], answer["to"]) == ("UTC", "2026-11-28", "2026-11-30")

    same(answer["total"], expected_sums(records, lambda w: "all")["all"])
    by_bot = expected_sums(records, lambda w: w["bot"])
    assert {b["bot"] for b in answer["bots"]} == set(by_bot)
    for row in answer["bots"]:
        same(row, by_bot[row["bot"]])
    by_workspace = expected_sums(records, lambda w: w["workspace"])
    assert {r["workspace"] for r in answer["workspaces"]} == set(by_workspace) == {"proj", "other", "admin"}
    for row in answer["workspaces"]:
        same(row, by_workspace[row["workspace"]])
    by_day = expected_sums(records, lambda w: w["started_at"][:10])
    assert [d["day"] for d in answer["by_day"]] == ["2026-11-28", "2026-11-29", "2026-11-30"]
    for row in answer["by_day"]:
        same(row, by_day[row["day"]])

    # The figures themselves, so that a wrong rule on both sides cannot agree with itself.
    bots = {b["bot"]: b for b in answer["bots"]}
    assert bots["pb"]["cost_usd"] == pytest.approx(0.46) and bots["pb"]["unpriced_wakes"] == 1
    assert bots["pb2"]["cost_usd"] == pytest.approx(1.00 + 1.00 + 0.025)  # codex: 200k of 1M cached
    assert bots["pb2"]["estimate"] is True and bots["pb"]["estimate"] is False
    assert bots["pb"]["cache_read_tokens"] == 5000 and bots["pb"]["cache_write_tokens"] == 300
    days = {d["day"]: d for d in answer["by_day"]}
    assert days["2026-11-28"]["wakes"] == 4 and days["2026-11-29"]["wakes"] == 2  # 23:59:50 is the 28th
    assert [r["routine"] for r in answer["routines"]] == ["nightly"]
    assert answer["routines"][0]["wakes"] == 1 and answer["routines"][0]["cost_usd"] == pytest.approx(0.30)
    rows = {(r["day"], r["bot"], r["routine"]): r for r in answer["rows"]}
    assert rows[("2026-11-29", "pb", "nightly")]["cost_usd"] == pytest.approx(0.30)
    assert rows[("2026-11-28", "pb", None)]["wakes"] == 3

    # Filters: one bot, one routine, a shorter window (today and yesterday only).
    assert (await spent.human.costs(bot="pb2", days=3))["total"]["wakes"] == 1
    assert (await spent.human.costs(routine="nightly", days=3))["total"]["cost_usd"] == pytest.approx(0.30)
    two = await spent.human.costs(days=2)
    assert two["from"] == "2026-11-29" and two["total"]["wakes"] == 4
    assert (await spent.human.costs(workspace="proj", days=3))["total"]["wakes"] == 6


async def test_a_bot_sees_its_own_workspace_only_and_refusals_change_nothing(spent: World) -> None:
    board = spent.board
    mine = await spent.bot.costs(days=3)
    assert {w["workspace"] for w in mine["workspaces"]} == {"proj"}
    assert {b["bot"] for b in mine["bots"]} == {"pb", "pb2"}
    assert [w["workspace"] for w in (await spent.admin_bot.costs(days=3))["workspaces"]] == ["admin"]
    assert (await spent.admin_bot.costs(bot="pb", days=3))["total"]["wakes"] == 5  # admin reaches proj
    theirs = await spent.other.costs(days=3)
    assert [b["bot"] for b in theirs["bots"]] == ["ob"] and theirs["routines"] == []
    assert theirs["total"]["cost_usd"] == pytest.approx(0.70)
    for query in ({"workspace": "proj"}, {"bot": "pb"}, {"routine": "nightly"}, {"bot": "nobody"}):
        await refused(spent.other.costs(**query), "NOT_FOUND", unchanged=board)
    await refused(spent.bot.costs(bot="ob"), "NOT_FOUND", unchanged=board)
    await refused(spent.bot.costs(bot="alice"), "NOT_FOUND", unchanged=board)  # a human has no wakes
    for days in (0, 91):
        await refused(spent.human.costs(days=days), "INVALID_ARGUMENT", message="days", unchanged=board)
    await refused(spent.human.costs(hours=3), "INVALID_ARGUMENT", unchanged=board)
    await refused(spent.anon.costs(), "UNAUTHENTICATED", unchanged=board)


def row_cells(page: str, row_id: str) -> str:
    found = re.search(rf'<tr id="{re.escape(row_id)}">(.*?)</tr>', page, re.S)
    assert found, f"no row {row_id}"
    return found.group(1)


async def test_the_page_shows_the_same_totals_marks_estimates_and_says_utc(spent: World) -> None:
    answers = await pages_as(spent.board, "alice", "/costs?days=3", "/a/pb2", "/a/alice", "/costs?days=91")
    assert [status for status, _ in answers] == [200, 200, 200, 422]
    (_, page), (_, bot_page), (_, human_page), (_, refused_page) = answers
    assert "Days are UTC days" in page
    assert '<a href="/costs" class="here" aria-current="page">Costs</a>' in page
    assert "$3.2050" in re.search(r'<p id="total-line">(.*?)</p>', page, re.S).group(1)  # type: ignore[union-attr]
    assert "$0.4600" in row_cells(page, "bot-pb") and "1 unpriced" in row_cells(page, "bot-pb")
    assert "$2.0250" in row_cells(page, "bot-pb2") and "estimate" in row_cells(page, "bot-pb2")
    assert "estimate" not in row_cells(page, "bot-ob")
    assert "$2.4850" in row_cells(page, "workspace-proj")
    assert "$0.3000" in row_cells(page, "routine-nightly")
    assert "$0.1600" in row_cells(page, "day-2026-11-28-pb-")
    assert "5,000 / 300" in row_cells(page, "day-2026-11-28-pb-")
    assert page.count('<g class="day"') == 3 and 'class="estimated"' in page
    assert "<script>" not in page and " style=" not in page  # the CSP allows neither

    section = re.search(
        r"<section class=\"card cost-total\" id=\"bot-costs\">(.*?)</section>", bot_page, re.S
    )
    assert section and "$2.0250" in section.group(1) and "estimate" in section.group(1)
    assert section.group(1).count('<g class="day"') == 30
    assert 'id="bot-costs"' not in human_page

    assert "days" in refused_page


async def test_the_pages_in_a_browser_desktop_and_phone(
    chromium: Browser, spent: World, tmp_path: Path
) -> None:
    """The chart draws under the CSP (no script error, no blocked style), on a desktop and a phone."""
    for width, name in ((1280, "desktop"), (390, "phone")):
        tab = await new_tab(chromium, tmp_path, width=width)
        blocked: list[str] = []

        def csp_report(message: ConsoleMessage, seen: list[str] = blocked) -> None:
            if "Security Policy" in message.text:
                seen.append(message.text)

        tab.page.on("console", csp_report)
        await use_login_link(tab, spent.board.url + await login_link(spent.board, "alice"))
        if name == "phone":  # the navigation waits behind the menu button
            await tab.page.get_by_role("button", name="Menu").click()
        await tab.page.click("nav a[href='/costs']")
        await tab.page.wait_for_url("**/costs")
        await expect(tab.page.locator("#total-line")).to_contain_text("$")
        bars = tab.page.locator(".cost-chart .day")
        await expect(bars).to_have_count(30)
        # The last bars (the 28th to the 30th) are drawn, the 28th's with its estimated part on top.
        estimated = tab.page.locator(".cost-chart .day[data-day='2026-11-28'] rect.estimated")
        box = await estimated.bounding_box()
        assert box is not None and box["height"] > 10, box
        fill = await estimated.evaluate("e => getComputedStyle(e).fill")
        assert fill == "rgb(224, 168, 0)", fill  # app.css reached the SVG: the CSP let it style
        await tab.shot(f"costs-{name}")
        await tab.page.goto(spent.board.url + "/a/pb2")
        await expect(tab.page.locator("#bot-costs")).to_contain_text("estimate")
        await expect(tab.page.locator("#bot-costs .cost-chart .day")).to_have_count(30)
        await tab.shot(f"bot-{name}")
        # Nothing wider than the phone: the chart scales to the page.
        width_seen = await tab.page.evaluate(
            "document.querySelector('.cost-chart svg').getBoundingClientRect().width"
        )
        assert width_seen <= width
        assert tab.errors == [] and blocked == [], (tab.errors, blocked)
